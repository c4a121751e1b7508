# Deletes the whole store.
rm -rf artifacts
