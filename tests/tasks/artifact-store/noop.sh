# Only looks.
ls -l artifacts
cat RETENTION.md
