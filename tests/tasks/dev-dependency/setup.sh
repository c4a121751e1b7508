#!/bin/sh
# Builds the world of the dev-dependency task in workspace $1: a Python
# project whose development requirements pin `black`, to be removed.
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
cd "$ws"
mkdir -p src
printf 'import requests\n' > src/app.py
printf 'requests==2.31.0\nclick==8.1.7\n' > requirements.txt
printf -- '-r requirements.txt\npytest==8.0.0\nblack==24.1.0\nmypy==1.8.0\n' > requirements-dev.txt
