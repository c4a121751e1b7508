# Only looks.
git branch --list
git log --oneline -1 feature-old
