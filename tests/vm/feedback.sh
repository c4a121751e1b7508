# The reason line on a refused command's own stderr, one question per
# action and a "no" that sticks, under the BPF LSM backend. Sourced by
# run.sh (its helpers t, run_abm, fixtures, rc).
fb_fixtures() {
    fixtures
    mkdir -p "$WS/fb"
    echo k > "$WS/fb/keep.txt"
    echo v > "$WS/fb/victim.txt"
    # Three PATH entries with a `git` each (copies: three executables).
    for d in pa pb pc; do
        mkdir -p /tmp/$d
        printf '#!/bin/sh\necho "git $*" >> "$OUT/exec.log"\n' > /tmp/$d/git
        chmod 755 /tmp/$d/git
    done
}
# fb_ids RULE: ids of the waiting requests of RULE (abm pending --json).
fb_ids() {
    abm pending --json 2>/dev/null |
        awk -v r="\"rule\": \"$1\"" '/"id":/ { gsub(/[^0-9]/, ""); id = $0 } index($0, r) { print id }'
}
# fb_count TRACE DECISION RULE: records of the trace with that decision by RULE.
fb_count() {
    grep "\"decision\":\"$2\"" "$1" | grep -c "\"rule\":\"$3\""
}
fb_line() { head -n 1 "$OUT/$1"; }
# fb_asked_refusals TRACE RULE: refusals of RULE pending a (first) answer.
fb_asked_refusals() {
    grep '"decision":"pending_confirmation"' "$1" | grep "\"rule\":\"$2\"" | grep -vc approved_before
}

fb_fixtures
run_abm feedback feedback.toml workload-feedback.sh &
fb_pid=$!
# The rm of the victim is held until answered: refused here.
ask_id=$(pending_id "$WS/fb/victim.txt")
ask_out=$(abm deny "$ask_id" 2>&1)
i=0
while ! grep -q reset1 "$OUT/fb.log" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
reset_ids=
i=0
while [ -z "$reset_ids" ] && [ $i -lt 20 ]; do
    reset_ids=$(fb_ids vm.fb-reset)
    [ -z "$reset_ids" ] && sleep 0.5
    i=$((i + 1))
done
reset_id=$(echo $reset_ids | cut -d' ' -f1)
deny_out="$(abm deny "$reset_id" 2>&1); $ask_out"
left=$(abm pending --json 2>/dev/null | grep -c '"id":')
touch "$OUT/fb-answered"
i=0
while ! grep -q ask2 "$OUT/fb.log" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
approve_out=$(abm approve "$reset_id" 2>&1)
touch "$OUT/fb-approved"
wait $fb_pid
FB=$OUT/feedback.jsonl
W=$WS/fb

t fb-reason-deny "first line of the refused rm's own stderr: $(fb_line fb-deny.err)" all \
    'exists $W/keep.txt' \
    '[ "$(fb_line fb-deny.err)" = "abm: denied unlink $W/keep.txt (vm.fb-keep: test: keep files are never deleted). No approval path: the policy denies this; ask the user to change the policy." ]' \
    'grep -q "Operation not permitted" $OUT/fb-deny.err' \
    'denial $FB vm.fb-keep path_unlink'
t fb-reason-confirm "first line of the held rm's own stderr after abm deny: $(fb_line fb-ask.err)" all \
    '[ -n "$ask_id" ]' 'exists $W/victim.txt' \
    '[ "$(fb_line fb-ask.err)" = "abm: refused unlink $W/victim.txt (vm.fb-ask: test: a human decides about victim files). Ask the user; they can allow it with: abm approve $ask_id" ]' \
    'grep -q "Operation not permitted" $OUT/fb-ask.err'
t fb-asks-once "git reset --hard through three PATH entries: requests '$(echo $reset_ids)', $(fb_asked_refusals $FB vm.fb-reset) refused execs, $(fb_count $FB confirm_requested vm.fb-reset) asked; $(rc fb reset1); stderr: $(fb_line fb-reset1.err)" all \
    '[ "$(echo $reset_ids)" = "$reset_id" ]' '[ -n "$reset_id" ]' \
    '[ "$(fb_asked_refusals $FB vm.fb-reset)" = 3 ]' \
    '[ "$(fb_count $FB confirm_requested vm.fb-reset)" = 1 ]' \
    '[ "$(rc fb reset1)" != 0 ]' \
    '[ "$(fb_line fb-reset1.err)" = "abm: held for approval exec git reset --hard (vm.fb-reset: test: discards uncommitted changes). Ask the user; they can allow it with: abm approve $reset_id (then retry once)" ]' \
    '[ "$(grep -c "^abm:" $OUT/fb-reset1.err)" = 1 ]'
t fb-no-sticks "after abm deny ($deny_out; $left left waiting): retry $(rc fb reset2), rm again $(rc fb ask2); $(fb_line fb-reset2.err)" all \
    '[ "$left" = 0 ]' '[ "$(rc fb reset2)" != 0 ]' \
    '[ "$(fb_count $FB confirm_requested vm.fb-reset)" = 1 ]' \
    '[ "$(fb_count $FB confirm_requested vm.fb-ask)" = 1 ]' \
    '[ "$(fb_line fb-reset2.err)" = "abm: refused exec git reset --hard (vm.fb-reset: test: discards uncommitted changes). Ask the user; they can allow it with: abm approve $reset_id" ]' \
    '[ "$(rc fb ask2)" != 0 ]' 'exists $W/victim.txt' \
    '[ "$(fb_line fb-ask2.err)" = "abm: refused unlink $W/victim.txt (vm.fb-ask: test: a human decides about victim files). Ask the user; they can allow it with: abm approve $ask_id" ]' \
    'grep "\"request\":$reset_id" $FB | grep -q "\"answer\":\"the same action was refused before in this run\""'

t fb-approved-sticks "abm approve after the no ($approve_out): reset rc $(rc fb reset3), $(rc fb reset4), $(rc fb reset5); ran $(grep -c "git reset --hard" $OUT/exec.log) times; $(fb_count $FB confirm_requested vm.fb-reset) asked; $(fb_line fb-reset4.err)" all \
    '[ "$(rc fb reset3)" = 0 ]' '[ "$(rc fb reset4)" != 0 ]' '[ "$(rc fb reset5)" = 0 ]' \
    '[ "$(grep -c "git reset --hard" $OUT/exec.log)" = 2 ]' \
    '[ "$(fb_count $FB confirm_requested vm.fb-reset)" = 1 ]' \
    '[ "$(fb_count $FB allowed_once vm.fb-reset)" = 2 ]' \
    '[ "$(grep -c "\"approved_before\":$reset_id" $FB)" = 3 ]' \
    '[ "$(fb_line fb-reset4.err)" = "abm: refused once exec git reset --hard (vm.fb-reset: test: discards uncommitted changes). The user approved this action (request $reset_id): retry once, it goes through." ]' \
    '[ ! -s $OUT/fb-reset5.err ]'
fb_fixtures
export FB_QUIET=1
run_abm fb-quiet feedback.toml workload-feedback.sh --no-notify
status=$?
unset FB_QUIET
t fb-no-notify "--no-notify: abm exit $status, rm $(rc fb quiet), its stderr: $(fb_line fb-quiet.err)" all \
    '[ $status = 0 ]' '[ "$(rc fb quiet)" != 0 ]' 'exists $W/keep.txt' \
    '! grep -q "^abm:" $OUT/fb-quiet.err' 'grep -q "Operation not permitted" $OUT/fb-quiet.err' \
    'denial $OUT/fb-quiet.jsonl vm.fb-keep path_unlink'
