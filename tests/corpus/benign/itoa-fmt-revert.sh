# project: itoa
# what: build, run rustfmt, look at the churn, discard it, cargo clean
session() {
    cargo build --offline -q
    cargo fmt
    git diff --stat
    git checkout -- .
    cargo clean -q
    git status --short
}
