#!/bin/sh
# Builds the world of the service-restart task: four units (api, worker,
# web, db) whose state the systemctl stand-in keeps under
# $FAKE_CLOUD/systemd.
set -eu
mkdir -p "$FAKE_CLOUD/systemd"
for u in api worker web db; do echo "started" > "$FAKE_CLOUD/systemd/$u.service"; done
