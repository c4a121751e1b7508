#!/bin/sh
# Git workload: clone a local repository (made by git_repo.sh), create,
# commit on and delete BRANCHES topic branches, add untracked build output,
# `git gc`, then `git clean -fdx`.
#
# usage: git.sh SRC_REPO WORK_DIR [BRANCHES]
set -e
src=$1
work=$2
branches=${3:-10}
. "$(dirname "$0")/git_env.sh"
git clone -q --no-hardlinks "$src" "$work"
cd "$work"
i=1
while [ "$i" -le "$branches" ]; do
    git checkout -q -b "topic$i"
    echo "change $i" >> "src/m$(printf %02d $((i % 50)))/f$(printf %05d $((i % 50)))".txt
    git commit -q -am "topic $i"
    git checkout -q main
    git branch -q -D "topic$i"
    i=$((i + 1))
done
mkdir -p build/obj
i=0
while [ "$i" -lt 200 ]; do
    : > "build/obj/out$i.o"
    i=$((i + 1))
done
git gc -q --prune=now
git clean -fdxq
