#!/bin/sh
# Runs a command chrooted into a root built by build-root.sh, in a private
# mount namespace with this machine's /proc, /sys (BTF, cgroups), /dev and
# the checkout (at its own path) bind-mounted, and its DNS configuration and
# CA certificates (the root trusts what this machine trusts, proxies included).
#
# usage: in-root.sh ROOT CMD ARGS...
set -eu
ROOT=$(realpath "$1")
shift
CHECKOUT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck disable=SC2016 # the script expands its own arguments
exec unshare --mount --propagation private sh -eu -c '
ROOT=$1 CHECKOUT=$2
shift 2
mount --rbind /proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
mkdir -p "$ROOT$CHECKOUT"
mount --bind "$CHECKOUT" "$ROOT$CHECKOUT"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
fi
exec chroot "$ROOT" "$@"
' in-root "$ROOT" "$CHECKOUT" "$@"
