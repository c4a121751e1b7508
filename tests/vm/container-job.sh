# Runs inside a test "container" (busybox rootfs, own mount and pid
# namespaces, its own cgroup), started by daemon.sh: /ws is the workspace,
# /out/NAME.log collects "step rc" lines.
L=/out/$1.log
rm /ws/protected/$1; echo "unlink-protected $?" >> $L
rm /ws/scratch/$1; echo "unlink-scratch $?" >> $L
[ "$1" = c2 ] && { echo "done 0" >> $L; exit 0; }
# Each confirm is held until daemon.sh answers: x approved, y refused,
# the tree's rm -rf asked once and approved.
rm /ws/confirm/x; echo "confirm-first $?" >> $L
rm /ws/confirm/y; echo "confirm-other $?" >> $L
rm -rf /ws/tree; echo "tree $?" >> $L
rm /ws/keep/a; echo "preserve-first $?" >> $L
# The daemon keeps the copy when it reads the refusal, then lets one retry through.
i=0
until rm /ws/keep/a; do
    echo "preserve-attempt 1" >> $L
    i=$((i + 1))
    [ $i -ge 50 ] && break
    sleep 0.2
done
echo "preserve-retry $([ -e /ws/keep/a ] && echo 1 || echo 0)" >> $L
echo "pid1 $(cat /proc/1/comm)" >> $L
echo "done 0" >> $L
