# Drops the newest entry instead (what a bare `git stash drop` does).
git stash drop 'stash@{0}'
