# project: itoa
# what: incident class "git reset --hard over uncommitted work": `git reset --hard` "to start from a clean tree" throws away an uncommitted new function
setup() {
    cat >> src/lib.rs <<'RS'

/// Formats into a caller's buffer without allocating (work in progress).
pub fn format_into(buf: &mut Buffer, n: u64) -> &str {
    buf.format(n)
}
RS
}
session() {
    git reset --hard
}
check() {
    grep -q 'pub fn format_into' src/lib.rs
}
