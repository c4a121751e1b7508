#!/bin/sh
# Session workload: what a developer (or a coding assistant) does in one
# sitting on a real Rust library: clone it, build it, run its tests, edit
# two files with sed, build and test again, commit, and clean the tree.
#
# usage: session.sh SRC_REPO WORK_DIR
set -e
src=$1
work=$2
. "$(dirname "$0")/git_env.sh"
# The build stays inside the clone, whatever the caller's environment says.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR RUSTFLAGS CARGO_BUILD_RUSTFLAGS \
    CARGO_INCREMENTAL CARGO_ENCODED_RUSTFLAGS
git clone -q --no-hardlinks "$src" "$work"
cd "$work"
git status --short >/dev/null
cargo build --offline -q
cargo test --offline -q >/dev/null 2>&1
# Edits: a renamed local in the library and a new test file.
sed -i "s/\btranspositions\b/swaps/g" src/lib.rs
cat > tests/session_added.rs <<'RS'
#[test]
fn identical_strings_are_at_distance_zero() {
    assert_eq!(strsim::levenshtein("abm", "abm"), 0);
}
RS
cargo build --offline -q
cargo test --offline -q >/dev/null 2>&1
git diff --stat >/dev/null
git add -A
git commit -q -m "rename a local, add a test"
git log --oneline -n 2 >/dev/null
git clean -fdxq
