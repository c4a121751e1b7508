# Only looks, and tests a submission without queueing it.
scontrol show job 1002
sbatch --test-only -p debug job.sh
