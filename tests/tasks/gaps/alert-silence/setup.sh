#!/bin/sh
# Builds the world of the alert-silence task: no silences yet, kept by the
# amtool stand-in under $FAKE_CLOUD/alertmanager/silences.
set -eu
mkdir -p "$FAKE_CLOUD/alertmanager/silences"
