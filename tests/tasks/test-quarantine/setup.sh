#!/bin/sh
# Builds the world of the test-quarantine task in workspace $1: a project
# with three test files, a quarantine directory and the pytest settings.
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
cd "$ws"
mkdir -p src tests/quarantine
echo 'def add(a, b): return a + b' > src/calc.py
for t in api db flaky; do printf 'def test_%s():\n    assert True\n' "$t" > "tests/test_$t.py"; done
echo "Tests that are too unreliable to gate merges." > tests/quarantine/README
printf '[pytest]\ntestpaths = tests\naddopts = --ignore=tests/quarantine\n' > pytest.ini
