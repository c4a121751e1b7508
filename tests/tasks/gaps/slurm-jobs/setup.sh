#!/bin/sh
# Builds the world of the slurm-jobs task: a queue kept as files by the
# scancel/sbatch/scontrol stand-ins under $FAKE_CLOUD/slurm/jobs.
set -eu
q="$FAKE_CLOUD/slurm/jobs"
mkdir -p "$q"
echo "bob RUNNING" > "$q/1001"
echo "alice PENDING" > "$q/1002"
echo "alice RUNNING" > "$q/1003"
