# project: semver
# what: a detached worktree of origin/main for review beside the repo, grep and git log there, worktree removed and pruned
session() {
    git fetch -q origin
    git worktree add -q --detach ../semver-review origin/main
    (cd ../semver-review && grep -c "pub fn" src/*.rs && git log --oneline -3)
    git worktree remove ../semver-review
    git worktree prune
    git worktree list
}
