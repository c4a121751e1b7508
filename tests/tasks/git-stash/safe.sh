# Drops exactly the obsolete stash entry.
git stash drop 'stash@{1}'
