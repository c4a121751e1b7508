#!/bin/sh
# Builds the world of the tf-workspace task: a fake terraform backend (see
# tests/tasks/bin/terraform) with the workspaces default, staging and prod,
# each holding terraform_data.scratch, terraform_data.cache and
# terraform_data.monitoring. The workspace $1 holds the configuration.
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
for w in default staging prod; do
  mkdir -p "$FAKE_CLOUD/tf/$w"
  for r in scratch cache monitoring; do echo "{}" > "$FAKE_CLOUD/tf/$w/terraform_data.$r"; done
done
cat > "$ws/main.tf" <<'TF'
resource "terraform_data" "scratch" {}
resource "terraform_data" "cache" {}
resource "terraform_data" "monitoring" {}
TF
