# Runs under `abm run --enforce` with holds.toml (tests/vm/holds.sh): each
# `rm -rf` of a 200-file tree is held at its first call until holds.sh
# answers its one question; the retry after the "no" is not asked again.
rm -rf "$WS/tree" 2> "$OUT/hold-approve.err"
echo "approve $?" >> "$OUT/holds.log"
rm -rf "$WS/tree2" 2> "$OUT/hold-deny.err"
echo "deny $?" >> "$OUT/holds.log"
rm -rf "$WS/tree2" 2> "$OUT/hold-retry.err"
echo "retry $?" >> "$OUT/holds.log"
exit 0
