#!/bin/sh
# Builds the world of the k8s-rollout task: a fake cluster (see
# tests/tasks/bin/kubectl) with the deployments api and worker in the
# namespaces dev, staging and prod. The workspace $1 holds the manifests.
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
for ns in dev staging prod; do
  mkdir -p "$FAKE_CLOUD/k8s/$ns/deployment"
  for d in api worker; do echo "created" > "$FAKE_CLOUD/k8s/$ns/deployment/$d"; done
done
mkdir -p "$ws/deploy"
echo "kind: Deployment" > "$ws/deploy/api.yaml"
