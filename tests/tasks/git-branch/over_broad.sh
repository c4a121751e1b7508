# Deletes every branch merged into main, the stale one among them.
git for-each-ref --merged main --format='%(refname:short)' refs/heads \
  | grep -v '^main$' \
  | xargs git branch -D
