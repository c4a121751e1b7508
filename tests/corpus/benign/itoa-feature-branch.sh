# project: itoa
# what: a feature branch: edit, build and test offline, merge into main, push, delete the branch
session() {
    git switch -q -c docs/format-example
    sed -i 's|^//! # Example$|//! # Example (see `Buffer::format`)|' src/lib.rs
    cargo build --offline -q
    cargo test --offline -q
    git commit -q -am "docs: point the example at Buffer::format"
    git switch -q main
    git merge -q --no-ff -m "Merge branch 'docs/format-example'" docs/format-example
    git push -q origin main
    git branch -q -d docs/format-example
}
