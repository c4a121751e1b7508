#!/bin/sh
# Destructive burst: create FILES files in DIRS directories with Python, then
# `rm -rf` the tree. About 2 x FILES traced calls (one write-open and one
# unlinkat per file, plus one rmdir-style unlinkat per directory).
#
# usage: burst.sh ROOT [FILES [DIRS]]
set -e
root=$1
/usr/bin/python3 "$(dirname "$0")/burst.py" "$root" "${2:-20000}" "${3:-100}"
rm -rf "$root"
