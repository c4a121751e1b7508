# Only looks.
git stash list
git stash show -p 'stash@{1}' > /dev/null
