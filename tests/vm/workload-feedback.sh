# Runs under `abm run --enforce` with feedback.toml (tests/vm/feedback.sh).
# Every refused command's stderr goes to its own file, which abm does not
# open: a reason line there was written through the command's own fd 2.
F=$WS/fb
P=/tmp/pa:/tmp/pb:/tmp/pc:/bin
if [ -n "$FB_QUIET" ]; then
    rm "$F/keep.txt" 2> "$OUT/fb-quiet.err"
    echo "quiet $?" >> "$OUT/fb.log"
    exit 0
fi
rm "$F/keep.txt" 2> "$OUT/fb-deny.err"
rm "$F/victim.txt" 2> "$OUT/fb-ask.err"
# busybox sh tries every PATH entry when an exec fails.
(export PATH=$P; git reset --hard) 2> "$OUT/fb-reset1.err"
echo "reset1 $?" >> "$OUT/fb.log"
i=0
while [ ! -e "$OUT/fb-answered" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
(export PATH=$P; git reset --hard) 2> "$OUT/fb-reset2.err"
echo "reset2 $?" >> "$OUT/fb.log"
rm "$F/victim.txt" 2> "$OUT/fb-ask2.err"
echo "ask2 $?" >> "$OUT/fb.log"
# After `abm approve` of the refused request: the action goes through, and
# is not asked again.
i=0
while [ ! -e "$OUT/fb-approved" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
for n in 3 4 5; do
    (export PATH=$P; git reset --hard) 2> "$OUT/fb-reset$n.err"
    echo "reset$n $?" >> "$OUT/fb.log"
done
exit 0
