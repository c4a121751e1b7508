# Deletes the previous, good release instead.
git push -q origin --delete v1.2.0
