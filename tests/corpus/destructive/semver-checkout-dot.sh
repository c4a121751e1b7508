# project: semver
# what: incident class "git checkout . over uncommitted edits": `git checkout -- .` discards a morning of uncommitted edits in two files
setup() {
    printf '\n// WIP: accept a leading "v" in Version::parse (uncommitted)\n' >> src/parse.rs
    printf '\n// WIP: document the leading "v" (uncommitted)\n' >> src/lib.rs
}
session() {
    git checkout -- .
}
check() {
    grep -q 'WIP: accept a leading' src/parse.rs && grep -q 'WIP: document' src/lib.rs
}
