# BPF LSM enforcement tests, run inside the test VM by /init (see
# xtask/src/vm.rs). Every test prints one line
#   ABM-VM-TEST <name> PASS|FAIL <detail>
# which the host parses; `abm` runs exactly as a user would run it:
#   abm run --enforce --policy FILE -- sh WORKLOAD
WS=/tmp/ws
OUT=/tmp/out
export WS OUT
mkdir -p /tmp/bin
export PATH=/tmp/bin:$PATH

for p in kubectl terraform git; do
    printf '#!/bin/sh\necho "%s $*" >> "$OUT/exec.log"\n' "$p" > /tmp/bin/$p
    chmod 755 /tmp/bin/$p
done

pass() { echo "ABM-VM-TEST $1 PASS $2"; }
fail() { echo "ABM-VM-TEST $1 FAIL $2"; }
# t NAME DETAIL CONDITION...: PASS when the condition (a shell command) holds.
t() {
    name=$1 detail=$2
    shift 2
    if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
rc() { awk -v s="$2" '$1 == s { print $2 }' "$OUT/$1.log"; }
# denial TRACE RULE HOOK: the trace holds an LSM denial by RULE from HOOK.
denial() {
    grep "\"rule\":\"$2\"" "$1" | grep '"backend":"lsm"' | grep "\"hook\":\"$3\"" | grep -q '"decision":"denied"'
}
exists() { [ -e "$1" ]; }
gone() { [ ! -e "$1" ]; }
all() { for c in "$@"; do eval "$c" || return 1; done; }
# pending_id SUBSTRING [SOCKET]: waits (up to 300 s) for a waiting request
# whose path contains SUBSTRING (abm pending --json) and prints its id.
pending_id() {
    pi=0
    while [ $pi -lt 600 ]; do
        pid_=$(abm pending --json ${2:+--socket "$2"} 2>/dev/null |
            awk -v p="$1" '/"id":/ { gsub(/[^0-9]/, ""); id = $0 } /"path":/ && index($0, p) { print id; exit }')
        [ -n "$pid_" ] && { echo "$pid_"; return 0; }
        sleep 0.5
        pi=$((pi + 1))
    done
    return 1
}
# questions TRACE RULE: confirm questions asked for RULE.
questions() {
    grep '"decision":"confirm_requested"' "$1" | grep -c "\"rule\":\"$2\""
}

fixtures() {
    rm -rf "$WS" "$OUT"
    mkdir -p "$WS/protected/allowed" "$WS/protected/d" "$WS/scratch/d" "$WS/confirm" "$WS/keep" "$OUT"
    for f in a b f g h i u v keep-reading; do echo "$f-content" > "$WS/protected/$f"; done
    echo x > "$WS/protected/allowed/x"
    for f in a c e f g h i u; do echo "$f-content" > "$WS/scratch/$f"; done
    chmod 644 "$WS/protected/f" "$WS/scratch/f"
    echo x > "$WS/confirm/x"
    echo y > "$WS/confirm/y"
    echo alpha > "$WS/keep/a"
    echo bravo > "$WS/keep/b"
}

# run_abm NAME POLICY WORKLOAD [abm options...]
run_abm() {
    name=$1 policy=$2 workload=$3
    shift 3
    start=$(date +%s)
    abm --log "monitor::lsm=info" run --enforce --enforce-backend lsm --no-prompt --workspace "$WS" \
        --policy "/tests/$policy" --trace "$OUT/$name.jsonl" --quarantine "$OUT/q-$name" -q "$@" \
        -- sh "/tests/$workload" > "$OUT/$name.stderr" 2>&1
    status=$?
    echo "ABM-VM-INFO $name abm-exit=$status secs=$(($(date +%s) - start))"
    grep "loaded and attached" "$OUT/$name.stderr" | sed "s/^/ABM-VM-INFO   /"
    if [ $status -ne 0 ]; then
        sed 's/^/ABM-VM-INFO   /' "$OUT/$name.stderr" | tail -n 20
    fi
    return $status
}

# --- doctor -----------------------------------------------------------------
start=$(date +%s)
line=$(abm doctor 2>&1 | grep '^bpf_lsm ')
echo "ABM-VM-INFO doctor secs=$(($(date +%s) - start))"
t doctor "abm doctor: $line" sh -c "echo '$line' | grep -q '^bpf_lsm  *yes'"

# --- deny: every hook, exec rules, io_uring ---------------------------------
fixtures
if run_abm deny deny.toml workload-deny.sh; then pass deny-run "abm run --enforce exited 0"; else fail deny-run "abm run failed"; fi
T=$OUT/deny.jsonl
P=$WS/protected S=$WS/scratch
t lsm-path-unlink "rm protected refused (rc $(rc deny unlink-protected)), scratch removed, rule vm.unlink" all \
    '[ "$(rc deny unlink-protected)" != 0 ]' 'exists $P/a' '[ "$(rc deny unlink-scratch)" = 0 ]' 'gone $S/a' \
    'denial $T vm.unlink path_unlink'
t lsm-accept-precedence "an earlier accept rule lets protected/allowed/x go" all \
    '[ "$(rc deny unlink-accepted)" = 0 ]' 'gone $P/allowed/x'
t lsm-path-rmdir "rmdir protected refused, scratch removed, rule vm.rmdir" all \
    '[ "$(rc deny rmdir-protected)" != 0 ]' 'exists $P/d' 'gone $S/d' 'denial $T vm.rmdir path_rmdir'
t lsm-path-rename "renames out of and into the protected tree refused, scratch rename done, rule vm.rename" all \
    '[ "$(rc deny rename-out)" != 0 ]' 'exists $P/b' 'gone $S/b2' '[ "$(rc deny rename-in)" != 0 ]' \
    'exists $S/c' 'gone $P/c' 'exists $S/e2' 'denial $T vm.rename path_rename'
t lsm-path-chmod "chmod protected refused (mode $(stat -c %a $P/f)), scratch $(stat -c %a $S/f), rule vm.chmod" all \
    '[ "$(rc deny chmod-protected)" != 0 ]' '[ "$(stat -c %a $P/f)" = 644 ]' '[ "$(stat -c %a $S/f)" = 600 ]' \
    'denial $T vm.chmod path_chmod'
t lsm-path-chown "chown protected refused (uid $(stat -c %u $P/f)), scratch uid $(stat -c %u $S/f), rule vm.chown" all \
    '[ "$(rc deny chown-protected)" != 0 ]' '[ "$(stat -c %u $P/f)" = 0 ]' '[ "$(stat -c %u $S/f)" = 1 ]' \
    'denial $T vm.chown path_chown'
# busybox truncate opens for writing, then ftruncate(2): path_truncate on
# 6.1, file_truncate since 6.2.
t lsm-path-truncate "truncate protected refused (size $(stat -c %s $P/g)), scratch emptied, rule vm.truncate" all \
    '[ "$(rc deny truncate-protected)" != 0 ]' '[ -s $P/g ]' '[ ! -s $S/g ]' \
    '{ denial $T vm.truncate path_truncate || denial $T vm.truncate file_truncate; }'
t lsm-file-open-trunc "open(O_TRUNC) protected refused, scratch emptied, rule vm.truncate from file_open" all \
    '[ "$(rc deny otrunc-protected)" != 0 ]' '[ -s $P/h ]' '[ ! -s $S/h ]' 'denial $T vm.truncate file_open'
t lsm-file-open-write "append to protected refused ($(wc -l < $P/i) line), scratch appended, rule vm.write" all \
    '[ "$(rc deny append-protected)" != 0 ]' '[ "$(wc -l < $P/i)" = 1 ]' '[ "$(wc -l < $S/i)" = 2 ]' \
    'denial $T vm.write file_open'
t lsm-io-uring "io_uring unlinkat/renameat on protected refused, scratch unlinked; standalone trace record" all \
    '[ "$(rc deny uring-unlink-protected)" != 0 ]' 'exists $P/u' '[ "$(rc deny uring-unlink-scratch)" = 0 ]' \
    'gone $S/u' '[ "$(rc deny uring-rename-protected)" != 0 ]' 'exists $P/v' \
    'grep "\"path\":\"$P/u\"" $T | grep -q "denied_by_lsm"'
E=$OUT/exec.log
t lsm-exec-kubectl "kubectl delete refused before it ran, kubectl get ran, rule vm.kubectl-delete" all \
    '[ "$(rc deny kubectl-delete)" != 0 ]' '! grep -q "kubectl delete" $E' 'grep -q "kubectl get pods" $E' \
    'denial $T vm.kubectl-delete bprm_check_security'
t lsm-exec-terraform "terraform destroy refused, terraform plan ran, rule vm.terraform-destroy" all \
    '[ "$(rc deny terraform-destroy)" != 0 ]' '! grep -q "terraform destroy" $E' 'grep -q "terraform plan" $E' \
    'denial $T vm.terraform-destroy bprm_check_security'
t lsm-exec-git "git push --force and -f refused, git push and --force-with-lease ran, rule vm.git-force-push" all \
    '[ "$(rc deny git-push-force)" != 0 ]' '[ "$(rc deny git-push-f)" != 0 ]' '! grep -q "git push --force origin" $E' \
    '! grep -q "git push -f" $E' 'grep -q "git push origin main" $E' 'grep -q "git push --force-with-lease" $E' \
    'denial $T vm.git-force-push bprm_check_security'
t lsm-exec-late-arg "git push with --force after 41 arguments refused, rule vm.git-force-push" all \
    '[ "$(rc deny git-push-force-late)" != 0 ]' '! grep -q "40 --force" $E' \
    '[ "$(grep "\"rule\":\"vm.git-force-push\"" $T | grep -c "\"decision\":\"denied\"")" -ge 3 ]'
t lsm-exec-argv-unread "git push with 1101 arguments refused (builtin.enforce-argv-unread); env true with 1101 ran" all \
    '[ "$(rc deny git-push-unread)" != 0 ]' '! grep -q "git push origin 1 2 3" $E' \
    'denial $T builtin.enforce-argv-unread bprm_check_security' '[ "$(rc deny unnamed-unread)" = 0 ]'
# argv rewritten after execve's entry: the new image's argv is matched again
# and the exec killed; every kill is a decision record in the trace.
R=$OUT/argvrace.log
cnt() { sed -n "s/^$1 .*$2=\([0-9]*\).*/\1/p" "$R"; }
race_kills=$(( $(cnt unfaulted killed | grep . || echo 0) + $(cnt flip killed | grep . || echo 0) ))
trace_kills=$(grep '"hook":"sched_process_exec"' $T | grep '"rule":"vm.git-force-push"' | grep -c '"decision":"killed"')
t lsm-exec-argv-race "argv changed after execve entry never ran with --force; unfaulted: $(grep unfaulted $R); $(grep flip $R); $trace_kills kills in the trace" all \
    '[ "$(cnt unfaulted killed)" = 1 ]' '[ "$(cnt flip ran)" -ge 1 ]' '[ "$(cnt flip other)" = 0 ]' \
    '! grep -Eq "(race|unfaulted) --force" $E' '[ "$trace_kills" = "$race_kills" ]' \
    'grep "\"decision\":\"killed\"" $T | grep -q "argv changed after the decision"'
t trace-verifies "abm verify accepts the enforcing run's trace" sh -c "abm verify $T > /dev/null 2>&1"

# --- benign: no denials -----------------------------------------------------
fixtures
run_abm benign deny.toml workload-benign.sh
status=$?
B=$OUT/benign.jsonl
n=$(grep -c '"decision":"\(denied\|pending_confirmation\|preserve_pending\)"' "$B")
t benign-no-denials "benign workload exit $status, $n LSM refusals in its trace" all \
    '[ $status = 0 ]' 'grep -q benign-done $OUT/benign.log' '[ "$n" = 0 ]' 'grep -q "\"backends\":\[\"tracepoint\",\"lsm\"\]" $B'

# --- confirm and preserve ---------------------------------------------------
# confirm: the rm is held (stopped, its call restarted when answered) and
# approved from a second process while it waits; another rm is held and
# refused. preserve: refused until a copy is kept, then the retry goes
# through.
fixtures
run_abm treatments treatments.toml workload-treatments.sh &
abm_pid=$!
id=$(pending_id "$WS/confirm/x")
# While the command waits: the BPF LSM guard decides in the kernel, so abm
# runs its control socket but no seccomp supervisor, and the command has
# one seccomp filter, abm's self-protection, not the notification filter.
threads= filters=
for p in $(pidof abm); do threads="$threads $(cat /proc/$p/task/*/comm 2>/dev/null | tr '\n' ' ')"; done
for c in $(grep -l workload-treatments /proc/[0-9]*/cmdline 2>/dev/null); do
    d=${c%/cmdline}
    [ "$(cat $d/comm 2>/dev/null)" = sh ] && filters="$filters $(awk '/^Seccomp_filters:/ { print $2 }' $d/status)"
done
t lsm-no-seccomp-supervisor "abm threads:$threads; seccomp filters of the command:$filters" all \
    'echo "$threads" | grep -q abm-control' '! echo "$threads" | grep -q abm-seccomp' '[ "$(echo $filters)" = 1 ]'
approve_out=$(abm approve "$id" 2>&1)
other_id=$(pending_id "$WS/confirm/y")
deny_out=$(abm deny "$other_id" 2>&1)
wait $abm_pid
C=$OUT/treatments.jsonl
t lsm-confirm "request '$id' held, approved by a second process ($approve_out): rm rc $(rc confirm first); request '$other_id' refused ($deny_out): rm rc $(rc confirm other)" all \
    '[ -n "$id" ]' '[ "$(rc confirm first)" = 0 ]' 'gone $WS/confirm/x' \
    '[ -n "$other_id" ]' '[ "$(rc confirm other)" != 0 ]' 'exists $WS/confirm/y' \
    'grep "\"rule\":\"vm.confirm\"" $C | grep -q "\"decision\":\"held\""' \
    'grep -q "\"decision\":\"approved\"" $C' 'grep -q "\"decision\":\"refused\"" $C' \
    'grep "\"rule\":\"vm.confirm\"" $C | grep -q "\"decision\":\"allowed\""' \
    '[ "$(questions $C vm.confirm)" = 2 ]'
Q=$OUT/q-treatments
t lsm-preserve "unlink and O_TRUNC retried after a copy: $(tr '\n' ' ' < $OUT/preserve.log)" all \
    '[ "$(rc preserve unlink)" = 0 ]' 'gone $WS/keep/a' '[ "$(rc preserve otrunc)" = 0 ]' '[ ! -s $WS/keep/b ]' \
    'grep -rq alpha $Q/data' 'grep -rq bravo $Q/data' \
    'grep "\"rule\":\"vm.preserve\"" $C | grep -q "\"decision\":\"preserve_pending\""' \
    'grep "\"rule\":\"vm.preserve\"" $C | grep -q "\"decision\":\"allowed_once\""'

# --- sensitive reads: the open-exit tracepoint program, decided by inode ------
mkdir -p "$WS/sens"
echo secret > "$WS/sens/id_rsa"
echo plain > "$WS/sens/notes"
abm run --workspace "$WS" --no-default-sensitive --sensitive "$WS/sens/id_rsa" --trace "$OUT/sens.jsonl" -q \
    -- sh -c "cat $WS/sens/id_rsa $WS/sens/notes > /dev/null" > "$OUT/sens.stderr" 2>&1
status=$?
[ $status -ne 0 ] && sed 's/^/ABM-VM-INFO   /' "$OUT/sens.stderr" | tail -n 20
R=$OUT/sens.jsonl
t sensitive-read "cat of a sensitive file recorded as read (abm exit $status), the ordinary file not" all \
    '[ $status = 0 ]' 'grep "\"op\":\"read\"" $R | grep -q "\"path\":\"$WS/sens/id_rsa\""' \
    '! grep -q "\"path\":\"$WS/sens/notes\"" $R'
. /tests/failclosed.sh
. /tests/identity.sh
. /tests/adversarial.sh
. /tests/feedback.sh
. /tests/holds.sh
. /tests/daemon.sh
