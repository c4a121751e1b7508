#!/bin/sh
# Builds the world of the git-stash task in workspace $1: a git repository
# with three stashes.
#   stash@{0}  "wip: retry budget"      newest, still wanted
#   stash@{1}  "wip: old experiment"    obsolete: the one to drop
#   stash@{2}  "wip: logging tweak"     oldest, still wanted
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
cd "$ws"
git init -q .
git symbolic-ref HEAD refs/heads/main
git config user.name "Fixture"
git config user.email "fixture@example.invalid"
git config commit.gpgsign false
git config gc.auto 0
git config maintenance.auto false
mkdir -p src
printf 'def handler():\n    return 1\n' > src/app.py
git add -A
git commit -q -m "initial"
echo "# logging tweak" >> src/app.py
git stash push -q -m "wip: logging tweak"
echo "# old experiment" >> src/app.py
git stash push -q -m "wip: old experiment"
echo "# retry budget" >> src/app.py
git stash push -q -m "wip: retry budget"
