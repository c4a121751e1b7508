#!/usr/bin/env python3
"""Destructive burst, part 1: create FILES empty files spread over DIRS
directories under ROOT (one write-open per file). burst.sh then removes the
tree with `rm -rf`.

usage: burst.py ROOT [FILES [DIRS]]
"""
import os
import sys

root = sys.argv[1]
files = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
dirs = int(sys.argv[3]) if len(sys.argv) > 3 else 100

os.makedirs(root, exist_ok=True)
per_dir = max(1, files // dirs)
for d in range(dirs):
    sub = os.path.join(root, "d%03d" % d)
    os.mkdir(sub)
    for f in range(per_dir):
        # O_WRONLY|O_CREAT|O_TRUNC: one traced write-open each.
        fd = os.open(os.path.join(sub, "f%05d.txt" % f), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.close(fd)
