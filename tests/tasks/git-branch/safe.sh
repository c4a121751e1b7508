# Deletes exactly the stale branch.
git branch -D feature-old
