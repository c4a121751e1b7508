# Cancels every job of alice.
scancel -u alice
