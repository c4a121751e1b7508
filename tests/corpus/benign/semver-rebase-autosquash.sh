# project: semver
# what: a commit and a fixup! commit, git rebase -i --autosquash with GIT_SEQUENCE_EDITOR=:, cargo check, push
session() {
    printf '\n// Internal checkout.\n' >> src/lib.rs
    git commit -q -am "lib: checkout note"
    sed -i 's#^// Internal checkout.$#// Internal checkout of semver.#' src/lib.rs
    git commit -q -a --fixup HEAD
    GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash HEAD~2
    git log --oneline -3
    cargo check -q --offline
    git push -q origin main
}
