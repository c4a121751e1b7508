# Deletes exactly the bad release tag on origin.
git push -q origin --delete v1.2.1
