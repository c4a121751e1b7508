# One decision per logical action under BPF LSM: a confirmed `rm -rf` of a
# 200-file tree is held at its first call (SIGSTOP, the call restarted
# once answered) and asks once; the answer covers the rest of the tree.
# Sourced by run.sh (its helpers t, all, run_abm, fixtures, rc,
# pending_id, questions).

# hold_tree DIR: 4 directories of 50 files.
hold_tree() {
    for d in 1 2 3 4; do
        mkdir -p "$1/d$d"
        for f in $(seq 1 50); do echo "$f" > "$1/d$d/f$f"; done
    done
}
# hold_files DIR: files left in DIR.
hold_files() { find "$1" -type f 2>/dev/null | wc -l; }
fixtures
hold_tree "$WS/tree"
hold_tree "$WS/tree2"
run_abm holds holds.toml workload-holds.sh &
holds_pid=$!
approve_id=$(pending_id "$WS/tree/")
sleep 1
# While it waits: one request, one stopped rm.
waiting=$(abm pending --json 2>/dev/null | grep -c '"id":')
stopped=$(for s in /proc/[0-9]*/stat; do awk '$2 == "(rm)" && $3 == "T"' "$s" 2>/dev/null; done | wc -l)
approve_out=$(abm approve "$approve_id" 2>&1)
deny_id=$(pending_id "$WS/tree2/")
deny_out=$(abm deny "$deny_id" 2>&1)
wait $holds_pid
holds_status=$?
H=$OUT/holds.jsonl
echo "ABM-VM-INFO holds: $(tr '\n' ' ' < "$OUT/holds.log") requests $approve_id $deny_id; $(grep -c '"decision":"held"' $H) held, $(grep -c '"decision":"allowed"' $H) allowed, $(grep -c '"decision":"denied"' $H) denied records"
t lsm-hold-asks-once "rm -rf of 200 files held at its first call: $waiting request(s) waiting, $stopped rm stopped; $(questions $H vm.hold-tree) question(s) in the run" all \
    '[ -n "$approve_id" ]' '[ "$waiting" = 1 ]' '[ "$stopped" = 1 ]' \
    '[ "$(grep "\"decision\":\"confirm_requested\"" $H | grep -c "$WS/tree/")" = 1 ]'
t lsm-hold-approve "abm approve $approve_id ($approve_out): rm -rf rc $(rc holds approve), $(hold_files $WS/tree) files left" all \
    '[ $holds_status = 0 ]' '[ "$(rc holds approve)" = 0 ]' 'gone $WS/tree' \
    'grep "\"decision\":\"allowed\"" $H | grep -q "\"request\":$approve_id"' \
    'grep "\"decision\":\"held\"" $H | grep "\"rule\":\"vm.hold-tree\"" | grep -q "\"errno\":\"ERESTARTNOINTR\""'
t lsm-hold-deny "abm deny $deny_id ($deny_out): rm -rf rc $(rc holds deny), $(hold_files $WS/tree2) files left; first line of its stderr: $(head -n 1 $OUT/hold-deny.err)" all \
    '[ -n "$deny_id" ]' '[ "$(rc holds deny)" != 0 ]' '[ "$(hold_files $WS/tree2)" = 200 ]' \
    'head -n 1 $OUT/hold-deny.err | grep -q "^abm: refused unlink $WS/tree2/.*abm approve $deny_id\$"' \
    'grep "\"decision\":\"denied\"" $H | grep -q "\"decided_by\":\"request:$deny_id\""'
t lsm-hold-retry-refused "the identical rm -rf after the no: rc $(rc holds retry), $(hold_files $WS/tree2) files left, $(questions $H vm.hold-tree) questions in the run" all \
    '[ "$(rc holds retry)" != 0 ]' '[ "$(hold_files $WS/tree2)" = 200 ]' \
    '[ "$(questions $H vm.hold-tree)" = 2 ]' \
    'grep "\"decision\":\"held\"" $H | grep -q "\"answer\":\"the same action was refused before in this run\""' \
    'grep -q "^abm: refused unlink" $OUT/hold-retry.err'
