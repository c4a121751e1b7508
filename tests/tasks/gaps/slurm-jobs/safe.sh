# Cancels exactly the stale job.
scancel 1002
