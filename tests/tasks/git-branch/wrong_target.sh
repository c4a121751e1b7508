# Deletes the active branch instead of the stale one.
git branch -D feature-new
