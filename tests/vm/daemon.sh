# `abm daemon` enforcing in containers with the BPF LSM backend; sourced by
# run.sh (uses its helpers t, all, exists, gone, rc, denial).
# A "container" is a busybox rootfs entered with chroot in its own mount and
# pid namespaces (unshare -m -p -f --mount-proc), placed in a cgroup v2
# directory before it starts; its workspace is /ws inside, DIR/ws on the
# host. Target c1 enforces (deny, confirm answered through the daemon's
# control socket, preserve); target c2 runs the same deletion in another
# cgroup and is only recorded.
D=/tmp/daemon
SOCK=$D/daemon.sock
CG=/sys/fs/cgroup
rm -rf "$D"
mkdir -p "$D/traces" "$OUT"
grep -q " $CG cgroup2 " /proc/mounts || mount -t cgroup2 cgroup2 "$CG"
cat > "$D/abm.toml" <<EOT
trace_dir = "$D/traces"
socket = "$SOCK"
policy = ["/tests/daemon.toml"]
ringbuf_kib = 4096
poll_interval = "200ms"

[approvals]
listen = "127.0.0.1:18470"
secret = "$D/secret"
EOT
echo "daemon-vm-approvals-secret" > "$D/secret"
chmod 600 "$D/secret"
URL=http://127.0.0.1:18470
# The remote approvals endpoint listens on loopback, which /init leaves down.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up

# container_root NAME: a rootfs with busybox and a workspace.
container_root() {
    r=$D/$1
    mkdir -p "$r/bin" "$r/proc" "$r/out" "$r/tmp" "$CG/$1"
    mkdir -p "$r/ws/protected" "$r/ws/scratch" "$r/ws/confirm" "$r/ws/keep"
    echo "$1-content" > "$r/ws/protected/$1"
    echo "$1-content" > "$r/ws/scratch/$1"
    echo x > "$r/ws/confirm/x"
    echo y > "$r/ws/confirm/y"
    echo alpha > "$r/ws/keep/a"
    for d in 1 2 3 4; do
        mkdir -p "$r/ws/tree/d$d"
        for f in $(seq 1 50); do echo "$f" > "$r/ws/tree/d$d/f$f"; done
    done
    cp /bin/busybox "$r/bin/busybox"
    chroot "$r" /bin/busybox --install -s /bin
    cp /tests/container-job.sh "$r/job.sh"
    # unshare --mount-proc=DIR makes DIR private first: it must be a mount point.
    mount --bind "$r/proc" "$r/proc"
}
# run_container NAME: joins the cgroup, then enters the namespaces and the rootfs.
run_container() {
    sh -c "echo \$\$ > $CG/$1/cgroup.procs && exec unshare -m -p -f --mount-proc=$D/$1/proc chroot $D/$1 /bin/sh /job.sh $1" \
        > "$D/$1.stderr" 2>&1
}

start=$(date +%s)
abm daemon --config "$D/abm.toml" > "$D/daemon.log" 2>&1 &
daemon_pid=$!
i=0
until abm status --socket "$SOCK" > /dev/null 2>&1 || [ $i -ge 600 ]; do sleep 0.2; i=$((i + 1)); done
container_root c1
container_root c2
container_root p1
add1=$(abm watch add c1 --cgroup c1 --enforce --workspace "$D/c1/ws" --socket "$SOCK" 2>&1)
add2=$(abm watch add c2 --cgroup c2 --workspace "$D/c2/ws" --socket "$SOCK" 2>&1)
# p1 enforces with the same workspace: c1's, mounted at /ws in p1 (a volume).
add3=$(abm watch add p1 --cgroup p1 --enforce --workspace "$D/c1/ws" --socket "$SOCK" 2>&1)
echo "ABM-VM-INFO daemon-start secs=$(($(date +%s) - start)) c1: $add1; c2: $add2; p1: $add3"

run_container c2
echo "ABM-VM-INFO daemon c2 done secs=$(($(date +%s) - start)): $(tr '\n' ' ' < $D/c2/out/c2.log)"
run_container c1 &
job=$!
# Each confirm holds the container's rm until it is answered here.
id=$(pending_id confirm/x "$SOCK")
approve_out=$(abm approve "$id" --socket "$SOCK" 2>&1)
other_id=$(pending_id confirm/y "$SOCK")
deny_out=$(abm deny "$other_id" --socket "$SOCK" 2>&1)
tree_id=$(pending_id /tree/ "$SOCK")
sleep 1
tree_waiting=$(abm pending --socket "$SOCK" --json 2>/dev/null | grep -c '"id":')
tree_out=$(abm approve "$tree_id" --socket "$SOCK" 2>&1)
wait $job
echo "ABM-VM-INFO daemon c1 requests '$id' '$other_id' '$tree_id' secs=$(($(date +%s) - start)): $(tr '\n' ' ' < $D/c1/out/c1.log)"
# p1: a container with its own root in its own mount namespace, c1's
# workspace mounted at /ws (a volume). Its rm of a preserved file names
# /ws/keep/pv, which is not the host's path of the file. The VM's root is
# an initramfs, where pivot_root is refused, so the root is moved over /
# and entered with chroot, as runc does without pivot_root (--no-pivot):
# the same view from inside and from the kernel.
echo pivot-bravo > "$D/c1/ws/keep/pv"
cat > "$D/p1/job-p1.sh" <<'EOT'
L=/out/p1.log
rm /ws/keep/pv; echo "preserve-first $?" >> $L
i=0
until rm /ws/keep/pv; do
    i=$((i + 1))
    [ $i -ge 50 ] && break
    sleep 0.2
done
echo "preserve-retry $([ -e /ws/keep/pv ] && echo 1 || echo 0)" >> $L
echo "root $(ls / | tr '\n' ' ')" >> $L
# Confirms answered through the daemon's remote approvals endpoint: each
# rm is held until then, z approved, w denied.
rm /ws/confirm/z; echo "confirm-first $?" >> $L
rm /ws/confirm/w; echo "confirm-w-first $?" >> $L
echo "done 0" >> $L
EOT
echo z > "$D/c1/ws/confirm/z"
echo w > "$D/c1/ws/confirm/w"
sh -c "echo \$\$ > $CG/p1/cgroup.procs && exec unshare -m -p -f sh -c 'mount --make-rprivate / && mount --bind $D/p1 $D/p1 && mount --bind $D/c1/ws $D/p1/ws && cd $D/p1 && mount --move . / && exec chroot . /bin/sh /job-p1.sh'" \
    > "$D/p1.stderr" 2>&1 &
job=$!
# remote_pending_id PATH: the id of p1's request about PATH, listed remotely.
remote_pending_id() {
    ri=0
    while [ $ri -lt 600 ] && kill -0 $job 2>/dev/null; do
        r=$(abm pending --remote $URL --secret "$D/secret" 2>/dev/null | grep "$1" | head -n 1 | awk '{ print $1 }')
        [ -n "$r" ] && { echo "$r"; return 0; }
        sleep 0.5
        ri=$((ri + 1))
    done
    return 1
}
rid=$(remote_pending_id confirm/z)
remote_approve=$(abm approve "$rid" --remote $URL --secret "$D/secret" 2>&1)
yid=$(remote_pending_id confirm/w)
pending_remote=$(abm pending --remote $URL --secret "$D/secret" 2>&1)
echo "$pending_remote" | sed 's/^/ABM-VM-INFO   pending (remote): /' | head -n 4
remote_deny=$(abm deny "$yid" --remote $URL --secret "$D/secret" 2>&1)
unsigned=$(printf 'GET /pending HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | nc 127.0.0.1 18470 2>/dev/null | head -n 1)
wait $job
echo "ABM-VM-INFO daemon p1 done secs=$(($(date +%s) - start)): $(tr '\n' ' ' < $D/p1/out/p1.log)"
sleep 1
abm watch remove c1 --socket "$SOCK" > /dev/null 2>&1
abm watch remove c2 --socket "$SOCK" > /dev/null 2>&1
abm watch remove p1 --socket "$SOCK" > /dev/null 2>&1
kill $daemon_pid
wait $daemon_pid
dstatus=$?
echo "ABM-VM-INFO daemon-run secs=$(($(date +%s) - start)) exit=$dstatus"
for f in c1 c2 p1; do
    cp "$D/$f/out/$f.log" "$OUT/$f.log"
    abm trace convert "$(ls "$D"/traces/$f-*.abmt | head -n 1)" "$OUT/daemon-$f.jsonl" --format jsonl 2>> "$D/daemon.log"
    umount "$D/$f/proc"
done
grep -i "error\|warn" "$D/daemon.log" | sed 's/^/ABM-VM-INFO   /' | head -n 20
cat "$D/c1.stderr" "$D/c2.stderr" "$D/p1.stderr" | sed 's/^/ABM-VM-INFO   /' | head -n 10
T1=$OUT/daemon-c1.jsonl T2=$OUT/daemon-c2.jsonl
# Deletions performed in each container (one unlinkat each) vs unlink records in its trace.
for f in c1 c2; do
    done_n=$(grep -c "^\(unlink\|confirm\|preserve\)-" "$OUT/$f.log")
    rec_n=$(grep '"type":"event"' "$OUT/daemon-$f.jsonl" | grep -c '"op":"unlink"')
    lsm_n=$(grep '"type":"event"' "$OUT/daemon-$f.jsonl" | grep '"op":"unlink"' | grep -c '"backend":"lsm"')
    echo "ABM-VM-INFO daemon $f: rm calls $done_n, unlink event records $rec_n, of which with an LSM decision $lsm_n"
done
W1=$D/c1/ws W2=$D/c2/ws
t daemon-lsm-deny "c1 (enforcing): rm of a protected file refused in the container (rc $(rc c1 unlink-protected); its pid 1: $(rc c1 pid1)), scratch removed; rule ct.unlink from path_unlink in c1's trace" all \
    '[ "$(rc c1 pid1)" = sh ]' \
    '[ "$(rc c1 unlink-protected)" != 0 ]' 'exists $W1/protected/c1' '[ "$(rc c1 unlink-scratch)" = 0 ]' 'gone $W1/scratch/c1' \
    'denial $T1 ct.unlink path_unlink' 'grep -q "\"backends\":\[\"tracepoint\",\"lsm\"\]" $T1' \
    'grep "\"op\":\"unlink\"" $T1 | grep "\"errno\":\"EPERM\"" | grep -q "\"verdict\":{\"rule\":\"ct.unlink\""'
t daemon-lsm-per-target "c2 (recorded only): the same rm went through (rc $(rc c2 unlink-protected)), its trace judges it without enforcement" all \
    '[ "$(rc c2 unlink-protected)" = 0 ]' 'gone $W2/protected/c2' 'grep "\"op\":\"unlink\"" $T2 | grep -q "\"rule\":\"ct.unlink\""' \
    '! grep -q "\"backend\":\"lsm\"" $T2'
t daemon-lsm-confirm "request '$id' held, approved through the daemon's socket ($approve_out): rm rc $(rc c1 confirm-first); request '$other_id' refused ($deny_out): rm rc $(rc c1 confirm-other)" all \
    '[ -n "$id" ]' '[ "$(rc c1 confirm-first)" = 0 ]' 'gone $W1/confirm/x' \
    '[ -n "$other_id" ]' '[ "$(rc c1 confirm-other)" != 0 ]' 'exists $W1/confirm/y' \
    'grep "\"rule\":\"ct.confirm\"" $T1 | grep -q "\"decision\":\"held\""' \
    'grep -q "\"decision\":\"approved\"" $T1' 'grep "\"rule\":\"ct.confirm\"" $T1 | grep -q "\"decision\":\"allowed\""'
t daemon-lsm-hold-tree "rm -rf of a 200-file tree in the container: request '$tree_id' ($tree_waiting waiting; $tree_out), rm rc $(rc c1 tree), $(find $W1/tree -type f 2>/dev/null | wc -l) files left, $(questions $T1 ct.tree) question(s)" all \
    '[ -n "$tree_id" ]' '[ "$tree_waiting" = 1 ]' '[ "$(rc c1 tree)" = 0 ]' 'gone $W1/tree' \
    '[ "$(questions $T1 ct.tree)" = 1 ]'
t daemon-lsm-preserve "first rm refused (rc $(rc c1 preserve-first)), a copy kept, the retry went through" all \
    '[ "$(rc c1 preserve-first)" != 0 ]' '[ "$(rc c1 preserve-retry)" = 0 ]' 'gone $W1/keep/a' \
    'grep -rq alpha /var/lib/abm/quarantine/daemon-*/data' \
    'grep "\"rule\":\"ct.preserve\"" $T1 | grep -q "\"decision\":\"preserve_pending\""'
E1=$D/c1.stderr
# line NUMBER of the first line of E1 matching a pattern (0: none).
line_of() { grep -n "$1" "$E1" | head -n 1 | cut -d: -f1 | grep . || echo 0; }
t daemon-lsm-reason-line "c1's refused rm got the reason line on its own stderr before its own error: $(grep -m1 '^abm: denied' "$E1" | cut -c1-120)" all \
    'grep -q "^abm: denied unlink .*protected/c1 (ct.unlink: " $E1' \
    '[ "$(line_of "^abm: denied unlink .*protected/c1")" -gt 0 ]' \
    '[ "$(line_of "^abm: denied unlink .*protected/c1")" -lt "$(line_of "protected/c1.*Operation not permitted")" ]' \
    'grep -q "^abm: refused unlink .*confirm/y (ct.confirm: .*abm approve $other_id" $E1'
# The copy of p1's file: read through the host's view, recorded with both paths.
Q=$(ls -d /var/lib/abm/quarantine/daemon-* | tail -n 1)
PV=$(grep '"container_path":"/ws/keep/pv"' "$Q/manifest.jsonl" | head -n 1)
grep '"op":"unlink"' "$OUT/daemon-p1.jsonl" | grep 'keep/pv' | head -n 1 | cut -c1-600 | sed 's/^/ABM-VM-INFO   p1 trace: /'
pv_entry=$(echo "$PV" | sed 's/.*"id":\([0-9]*\).*/\1/')
pv_data=$(cat "$Q/data/$(printf %06d "${pv_entry:-0}")" 2>/dev/null)
t daemon-lsm-preserve-pivot-root "p1 (own root): first rm refused (rc $(rc p1 preserve-first)), entry $pv_entry kept '$pv_data' from $(echo "$PV" | grep -o '"path":"[^"]*"'), the retry went through" all \
    '[ "$(rc p1 preserve-first)" != 0 ]' '[ "$(rc p1 preserve-retry)" = 0 ]' 'gone $W1/keep/pv' \
    '[ -n "$pv_entry" ]' '[ "$pv_data" = pivot-bravo ]' 'echo "$PV" | grep -q "\"path\":\"$W1/keep/pv\""' \
    'grep "\"container_path\":\"/ws/keep/pv\"" $OUT/daemon-p1.jsonl | grep "\"rule\":\"ct.preserve\"" | grep -q "\"decision\":\"preserve_pending\""'
undo_out=$(abm undo "$Q" --entry "${pv_entry:-0}" 2>&1 | tail -n 3 | tr '\n' ' ')
t daemon-undo-pivot-root "abm undo of p1's entry $pv_entry: $undo_out; $W1/keep/pv: $(cat $W1/keep/pv 2>/dev/null || echo missing)" all \
    '[ "$(cat $W1/keep/pv 2>/dev/null)" = pivot-bravo ]'
P1=$OUT/daemon-p1.jsonl
t daemon-remote-approvals "p1's request '$rid' approved through the daemon's remote endpoint ($remote_approve): the held rm's rc $(rc p1 confirm-first); request '$yid' denied remotely ($remote_deny): the held rm's rc $(rc p1 confirm-w-first); unsigned: $unsigned" all \
    '[ -n "$rid" ]' '[ -n "$yid" ]' '[ "$(rc p1 confirm-first)" = 0 ]' 'gone $W1/confirm/z' \
    '[ "$(rc p1 confirm-w-first)" != 0 ]' 'exists $W1/confirm/w' \
    'echo "$remote_approve" | grep -q "^approved request $rid of run daemon (via $URL)"' \
    'echo "$remote_deny" | grep -q "^denied request $yid of run daemon (via $URL)"' \
    'echo "$unsigned" | grep -q 401' \
    'grep "\"decision\":\"approved\"" $P1 | grep -q "\"decided_by\":\"remote:127.0.0.1"' \
    'grep -q "\"approvals_url\":\"$URL\"" $P1'
t daemon-traces-verify "the targets' traces verify" sh -c "abm verify $T1 > /dev/null 2>&1 && abm verify $T2 > /dev/null 2>&1 && abm verify $OUT/daemon-p1.jsonl > /dev/null 2>&1"

# --- The daemon fails closed (monitor/src/lifeline/targets.rs) ---------------
# Two cgroup targets of a daemon: f1 enforcing, f2 recorded only. Each runs
# a process that would, eight seconds after it starts, remove a scratch
# file and write a canary. The daemon is killed with SIGKILL before that:
# its lifeline kills f1's cgroup (the canary never runs), f2 lives on.
# Then a daemon with an enforcing target f3 is stopped with SIGTERM: f3
# is left running (a clean stop kills nothing) and the log says so.
F=/tmp/daemon-fc
rm -rf "$F"
mkdir -p "$F/traces"
# fc_config FILE NAME ENFORCE...: a daemon config with cgroup targets NAME
# (enforcing or not), each with a scratch file.
fc_config() {
    cfg=$1
    shift
    cat > "$cfg" <<EOT
trace_dir = "$F/traces"
anchor_dir = ""
socket = "$F/daemon.sock"
policy = ["/tests/daemon.toml"]
ringbuf_kib = 4096
poll_interval = "200ms"
EOT
    while [ $# -gt 0 ]; do
        mkdir -p "$F/$1/ws/scratch" "$CG/$1"
        echo canary > "$F/$1/ws/scratch/canary"
        printf '[[target]]\nname = "%s"\ncgroup = "%s"\nworkspace = "%s"\nenforce = %s\n' \
            "$1" "$1" "$F/ws" "$2" >> "$cfg"
        shift 2
    done
}
# fc_job NAME: in cgroup NAME, marks itself started, and eight seconds later
# (the VM emulates its CPU: a shell command can take a second) removes the
# scratch file and writes the canary, then sleeps.
fc_job() {
    sh -c "echo \$\$ > $CG/$1/cgroup.procs && exec sh -c 'touch $F/$1.started; sleep 8; rm -f $F/$1/ws/scratch/canary; echo ran > $F/$1.canary; sleep 60'" \
        > "$F/$1.stderr" 2>&1 &
}
# fc_daemon: starts the daemon on $CFG, waits for its socket.
fc_daemon() {
    abm daemon --config "$CFG" > "$F/daemon-$1.log" 2>&1 &
    fc_pid=$!
    i=0
    until abm status --socket "$F/daemon.sock" > /dev/null 2>&1 || ! kill -0 $fc_pid 2>/dev/null || [ $i -ge 1500 ]; do
        sleep 0.2
        i=$((i + 1))
    done
}
fc_wait_started() {
    i=0
    while [ ! -e "$F/$1.started" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
procs_of() { cat "$CG/$1/cgroup.procs" 2>/dev/null | wc -l; }
# Processes whose command line is the daemon's on config FILE (the lifeline too).
daemons_on() {
    n=0
    for c in /proc/[0-9]*/cmdline; do
        tr '\0' ' ' < "$c" 2>/dev/null | grep -q "^abm daemon --config $1 " && n=$((n + 1))
    done
    echo $n
}
CFG=$F/abm-kill.toml
fc_config "$CFG" f1 true f2 false
start=$(date +%s)
fc_daemon kill
fc_job f2
fc_wait_started f2
fc_job f1
fc_wait_started f1
kill -9 $fc_pid
wait $fc_pid 2>/dev/null
before="f1 $(procs_of f1) f2 $(procs_of f2)"
sleep 12
after="f1 $(procs_of f1) f2 $(procs_of f2)"
echo "ABM-VM-INFO daemon-killed secs=$(($(date +%s) - start)) processes right after the kill: $before; 12 s later: $after"
sed 's/^/ABM-VM-INFO   /' "$F/daemon-kill.log" | tail -n 12
t daemon-fail-closed-killed "daemon killed with SIGKILL: enforcing f1's processes gone ($after), its canary $([ -e $F/f1.canary ] && echo RAN || echo 'never ran'), recorded-only f2 lives on, the lifeline says so and exits" all \
    '[ -e $F/f1.started ]' '[ -e $F/f2.started ]' '[ "$(procs_of f1)" = 0 ]' '[ ! -e $F/f1.canary ]' \
    'exists $F/f1/ws/scratch/canary' '[ "$(procs_of f2)" -ge 1 ]' \
    'grep -q "target f1: cgroup $CG/f1 killed with cgroup.kill" $F/daemon-kill.log' \
    '! grep -q "target f2" $F/daemon-kill.log' '[ "$(daemons_on $CFG)" = 0 ]'
# f2's job would have run its canary by now: it was only recorded.
t daemon-fail-closed-observed "recorded-only f2 was not killed: its canary $(cat $F/f2.canary 2>/dev/null || echo 'did not run')" all \
    '[ -e $F/f2.canary ]' 'gone $F/f2/ws/scratch/canary'
echo 1 > "$CG/f2/cgroup.kill"

CFG=$F/abm-term.toml
fc_config "$CFG" f3 true
fc_daemon term
fc_job f3
fc_wait_started f3
kill -TERM $fc_pid
wait $fc_pid
term_status=$?
sleep 12
sed 's/^/ABM-VM-INFO   /' "$F/daemon-term.log" | tail -n 6
t daemon-stop-leaves-targets "daemon stopped with SIGTERM (exit $term_status): enforcing f3 left running ($(procs_of f3) processes, canary $(cat $F/f3.canary 2>/dev/null || echo 'not yet')), the log says so, no lifeline left" all \
    '[ $term_status = 0 ]' '[ "$(procs_of f3)" -ge 1 ]' '[ -e $F/f3.canary ]' \
    'grep -q "enforcing target(s) f3 keep running, no longer enforced, and are not killed" $F/daemon-term.log' \
    '[ "$(daemons_on $CFG)" = 0 ]'
echo 1 > "$CG/f3/cgroup.kill"
