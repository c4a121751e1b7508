# project: itoa
# what: cargo build, rm -rf target/debug/incremental, build again, cargo test, git status
session() {
    cargo build -q --offline
    du -sh target/debug/incremental || true
    rm -rf target/debug/incremental
    cargo build -q --offline
    cargo test -q --offline --lib
    git status --short
}
