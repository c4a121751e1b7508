#!/bin/sh
# Builds the world of the git-branch task in workspace $1: a git repository
# on `main` with three more branches.
#   feature-old   merged into main, packed (the stale branch to delete)
#   feature-done  merged into main, packed
#   feature-new   one commit ahead of main, loose ref (active work)
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
echo 'print("hello")' > src/app.py
echo "# demo" > README.md
git add -A
git commit -q -m "initial"
git branch feature-old
git branch feature-done
git pack-refs --all
# Created after packing, so feature-new has a loose ref: both storage forms
# are present.
git checkout -q -b feature-new
echo 'print("new")' >> src/app.py
git commit -q -am "work in progress"
git checkout -q main
