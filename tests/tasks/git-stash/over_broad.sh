# Drops every stash entry.
git stash clear
