# Cancels alice's running job instead.
scancel 1003
