#!/bin/sh
# Builds, once, a Debian trixie root (Python 3.13) for running Harbor, which
# needs Python >= 3.12:
#   1. debootstrap of python3, python3-venv and ca-certificates;
#   2. a venv, /opt/harbor in the root, with Harbor from PyPI and the
#      checkout's integrations/harbor (editable, so it follows the checkout).
# Idempotent: stamps record the recipe each stage was built from; a changed
# recipe rebuilds that stage.
#
# usage: build-root.sh ROOT [MIRROR]
set -eu
ROOT=$1
MIRROR=${2:-http://deb.debian.org/debian}
HERE=$(cd "$(dirname "$0")" && pwd)
CHECKOUT=$(cd "$HERE/../.." && pwd)
HARBOR=harbor==0.25.0
SUITE=trixie
INCLUDE=python3,python3-venv,ca-certificates
RECIPE="suite $SUITE
variant minbase
include $INCLUDE
mirror $MIRROR"
STAMP=$ROOT.stamp
if ! { [ -x "$ROOT/usr/bin/python3" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ]; }; then
  command -v debootstrap >/dev/null || {
    echo "build-root.sh: debootstrap is missing: apt-get install debootstrap" >&2
    exit 1
  }
  rm -f "$STAMP"
  rm -rf "$ROOT" "$ROOT.tmp"
  mkdir -p "$(dirname "$ROOT")"
  echo "build-root.sh: debootstrap $SUITE ($INCLUDE) from $MIRROR into $ROOT, once" >&2
  if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOT.tmp" "$MIRROR" >"$ROOT.log" 2>&1; then
    echo "build-root.sh: debootstrap failed (it needs $MIRROR); see $ROOT.log and $ROOT.tmp/debootstrap/debootstrap.log" >&2
    tail -20 "$ROOT.log" >&2
    exit 1
  fi
  rm -rf "$ROOT.tmp/var/cache/apt/archives"/*.deb
  mv "$ROOT.tmp" "$ROOT"
  printf '%s' "$RECIPE" >"$STAMP"
fi

REQS="$HARBOR -e $CHECKOUT/integrations/harbor"
VSTAMP=$ROOT/opt/harbor/.abm-requirements
if [ -x "$ROOT/opt/harbor/bin/harbor" ] && [ -f "$VSTAMP" ] && [ "$(cat "$VSTAMP")" = "$REQS" ]; then
  exit 0
fi
echo "build-root.sh: pip install $REQS into $ROOT/opt/harbor, once" >&2
# shellcheck disable=SC2086 # REQS is a list of requirements
if ! "$HERE/in-root.sh" "$ROOT" sh -eu -c '
rm -rf /opt/harbor
python3 -m venv /opt/harbor
/opt/harbor/bin/pip install --quiet --disable-pip-version-check "$@"
' venv $REQS >"$ROOT.venv.log" 2>&1; then
  echo "build-root.sh: pip install into the root failed (it needs PyPI); $ROOT.venv.log:" >&2
  tail -20 "$ROOT.venv.log" >&2
  exit 1
fi
printf '%s' "$REQS" >"$VSTAMP"
