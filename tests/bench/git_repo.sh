#!/bin/sh
# Creates the source repository the git workload clones (once per bench run,
# outside timing): FILES files in 50 directories, two commits, branch main.
#
# usage: git_repo.sh DIR [FILES]
set -e
dir=$1
files=${2:-3000}
. "$(dirname "$0")/git_env.sh"
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
git init -q -b main .
/usr/bin/python3 - "$files" <<'PY'
import os, sys
n = int(sys.argv[1])
for i in range(n):
    d = "src/m%02d" % (i % 50)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%05d.txt" % (d, i), "w") as f:
        f.write("file %d\n" % i + "".join("line %d\n" % k for k in range(20 + i % 40)))
PY
printf 'build/\n*.o\n' > .gitignore
git add -A
git commit -q -m "initial import"
for f in src/m0*/f0000*.txt; do echo "more" >> "$f"; done
git commit -q -am "second commit"
