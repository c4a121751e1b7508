#!/bin/sh
# Builds, once, a Debian trixie root (Python 3.13) for running Harbor, which
# needs Python >= 3.12: debootstrap of python3, python3-venv and
# ca-certificates. Idempotent: a stamp beside the root records the recipe it
# was built from; a changed recipe rebuilds it.
#
# usage: build-root.sh ROOT [MIRROR]
set -eu
ROOT=$1
MIRROR=${2:-http://deb.debian.org/debian}
SUITE=trixie
INCLUDE=python3,python3-venv,ca-certificates
RECIPE="suite $SUITE
variant minbase
include $INCLUDE
mirror $MIRROR"
STAMP=$ROOT.stamp
if [ -x "$ROOT/usr/bin/python3" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$RECIPE" ]; then
  exit 0
fi
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
