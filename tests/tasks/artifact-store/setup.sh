#!/bin/sh
# Builds the world of the artifact-store task in workspace $1: a local store
# of release archives, each with a checksum file.
#   app-1.0   expired (see RETENTION.md): the one to delete
#   app-2.0   previous release, kept for rollback
#   app-2.1   current release
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
cd "$ws"
mkdir -p artifacts
for v in 1.0 2.0 2.1; do
  printf 'archive %s\n' "$v" > "artifacts/app-$v.tar.gz"
  printf '%064d  app-%s.tar.gz\n' 0 "$v" > "artifacts/app-$v.tar.gz.sha256"
done
cat > RETENTION.md <<'DOC'
# Retention
Keep the current release and the previous one. app-1.0 expired on 2024-01-31.
DOC
