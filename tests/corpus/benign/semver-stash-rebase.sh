# project: semver
# what: topic branch, main moves on, stash work in progress, rebase the topic, pop, fast-forward main
session() {
    git switch -q -c topic/readme
    printf '\nSee also the `VersionReq` docs.\n' >> README.md
    git commit -q -am "README: mention VersionReq"
    git switch -q main
    printf '// Checked by the corpus team.\n' >> tests/test_identifier.rs
    git commit -q -am "tests: note"
    git switch -q topic/readme
    printf '// wip\n' >> src/lib.rs
    git stash -q
    git rebase -q main
    git stash pop -q
    git commit -q -am "lib: wip note"
    git switch -q main
    git merge -q --ff-only topic/readme
    git push -q origin main
    git branch -q -d topic/readme
}
