# Only looks.
grep -rn normalize src > /dev/null
