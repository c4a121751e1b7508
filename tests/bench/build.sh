#!/bin/sh
# Build workload: `make -j2` the project made by c_project.py, run the
# result once, then `make clean`.
#
# usage: build.sh PROJECT_DIR
set -e
make -s -j2 -C "$1" >/dev/null
"$1/app" >/dev/null
make -s -C "$1" clean
