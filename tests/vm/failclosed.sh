# Fail closed under BPF LSM (sourced by run.sh): abm killed with SIGKILL
# while its enforced tree runs. The lifeline (monitor/src/lifeline.rs)
# kills the tree at once, so nothing the tree would do afterwards runs
# unwatched: the tree waits for a file this script makes only once abm
# is dead and reaped, then removes an ordinary scratch file (the canary:
# had the tree lived on, the file would be gone); the trace is left
# unsealed. Waiting on the file, not on a timer, keeps the test exact on
# a slow emulated machine, where a process killed in the middle of a
# system call can take seconds to die.
fixtures
FC=$OUT/fc
rm -f "$FC.started" "$FC.after" "$FC.go"
abm run --enforce --enforce-backend lsm --no-prompt --workspace "$WS" --policy /tests/deny.toml \
    --trace "$FC.jsonl" --quarantine "$OUT/q-fc" -q \
    -- sh -c "touch $FC.started; while [ ! -e $FC.go ]; do sleep 0.1; done; rm -f $WS/scratch/a; echo \"rm \$?\" > $FC.after; sleep 30" \
    > "$FC.stderr" 2>&1 &
fc_abm=$!
i=0
while [ ! -e "$FC.started" ] && kill -0 $fc_abm 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
started=$([ -e "$FC.started" ] && echo yes || echo no)
kill -9 $fc_abm
wait $fc_abm 2>/dev/null
# abm is gone: a tree that lived on would now remove the file.
touch "$FC.go"
sleep 6
fc_verify=$(abm verify "$FC.jsonl" 2>&1 | grep -o "status: [A-Z]*" | head -n 1)
# The tree's `sleep 30`, had it survived, would show in /proc.
left=0
for c in /proc/[0-9]*/cmdline; do
    [ "$(tr '\0' ' ' < "$c" 2>/dev/null)" = "sleep 30 " ] && left=$((left + 1))
done
t lsm-fail-closed-abm-killed "abm --enforce (BPF LSM) killed with SIGKILL while its tree ran (tree started: $started): the tree's later rm $([ -e "$FC.after" ] && cat "$FC.after" || echo 'never ran'), scratch/a $([ -e "$WS/scratch/a" ] && echo kept || echo removed), sleep processes left: $left, abm verify: $fc_verify" all \
    '[ $started = yes ]' 'exists $WS/scratch/a' '[ ! -e $FC.after ]' '[ $left = 0 ]' '[ "$fc_verify" = "status: UNSEALED" ]'
