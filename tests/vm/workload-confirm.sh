# Runs under `abm run --enforce` with confirm.toml: the first delete is
# refused pending a human; run.sh approves it from a second process; the
# retry goes through.
rm "$WS/confirm/x" 2>/dev/null; echo "first $?" >> "$OUT/confirm.log"
i=0
while [ ! -e "$OUT/approved" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
rm "$WS/confirm/x" 2>/dev/null; echo "retry $?" >> "$OUT/confirm.log"
rm "$WS/confirm/y" 2>/dev/null; echo "other $?" >> "$OUT/confirm.log"
exit 0
