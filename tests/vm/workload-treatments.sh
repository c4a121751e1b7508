# Runs under `abm run --enforce` with treatments.toml.
# confirm: each rm is held until run.sh answers from a second process
# (`abm approve`, then `abm deny`); stderr is /dev/null, not a terminal.
rm "$WS/confirm/x" 2>/dev/null; echo "first $?" >> "$OUT/confirm.log"
rm "$WS/confirm/y" 2>/dev/null; echo "other $?" >> "$OUT/confirm.log"
# preserve: the first attempt is refused while abm keeps a copy; the retry
# (as an agent would retry) succeeds.
retry() {
    name=$1
    shift
    n=0 rc=1
    while [ $n -lt 50 ]; do
        "$@" 2>/dev/null && { rc=0; break; }
        n=$((n + 1))
        sleep 0.1
    done
    echo "$name $rc $n" >> "$OUT/preserve.log"
}
retry unlink rm "$WS/keep/a"
retry otrunc sh -c ": > '$WS/keep/b'"
exit 0
