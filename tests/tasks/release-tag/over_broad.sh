# Deletes every tag that starts like the bad one: the release candidate too.
git tag -l 'v1.2.1*' | xargs git push -q origin --delete
