# Only looks.
grep -n black requirements-dev.txt
