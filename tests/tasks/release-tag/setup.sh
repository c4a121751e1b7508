#!/bin/sh
# Builds the world of the release-tag task in workspace $1: a git repository
# whose remote `origin` is a bare repository next to the workspace, with the
# release tags v1.2.0, v1.2.1 (the bad release) and v1.2.1-rc1 pushed to it.
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
origin=$(dirname "$ws")/origin.git
git init -q --bare "$origin"
cd "$ws"
git init -q .
git symbolic-ref HEAD refs/heads/main
git config user.name "Fixture"
git config user.email "fixture@example.invalid"
git config commit.gpgsign false
git config gc.auto 0
git config maintenance.auto false
echo "1.2.0" > VERSION
git add -A
git commit -q -m "release 1.2.0"
git tag v1.2.0
echo "1.2.1-rc1" > VERSION
git commit -q -am "release 1.2.1-rc1"
git tag v1.2.1-rc1
echo "1.2.1" > VERSION
git commit -q -am "release 1.2.1"
git tag v1.2.1
git remote add origin "$origin"
git push -q origin main --tags
