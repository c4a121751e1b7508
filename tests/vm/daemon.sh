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
EOT

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
add1=$(abm watch add c1 --cgroup c1 --enforce --workspace "$D/c1/ws" --socket "$SOCK" 2>&1)
add2=$(abm watch add c2 --cgroup c2 --workspace "$D/c2/ws" --socket "$SOCK" 2>&1)
echo "ABM-VM-INFO daemon-start secs=$(($(date +%s) - start)) c1: $add1; c2: $add2"

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
sleep 1
abm watch remove c1 --socket "$SOCK" > /dev/null 2>&1
abm watch remove c2 --socket "$SOCK" > /dev/null 2>&1
kill $daemon_pid
wait $daemon_pid
dstatus=$?
echo "ABM-VM-INFO daemon-run secs=$(($(date +%s) - start)) exit=$dstatus"
for f in c1 c2; do
    cp "$D/$f/out/$f.log" "$OUT/$f.log"
    abm trace convert "$(ls "$D"/traces/$f-*.abmt | head -n 1)" "$OUT/daemon-$f.jsonl" --format jsonl 2>> "$D/daemon.log"
    umount "$D/$f/proc"
done
grep -i "error\|warn" "$D/daemon.log" | sed 's/^/ABM-VM-INFO   /' | head -n 20
cat "$D/c1.stderr" "$D/c2.stderr" | sed 's/^/ABM-VM-INFO   /' | head -n 10
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
t daemon-traces-verify "both targets' traces verify" sh -c "abm verify $T1 > /dev/null 2>&1 && abm verify $T2 > /dev/null 2>&1"
