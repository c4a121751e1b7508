# project: node-semver
# what: a hotfix in a second git worktree beside the project, merged, then the worktree removed
session() {
    git worktree add -q -b hotfix ../node-semver-hotfix
    (cd ../node-semver-hotfix && sed -i '1i // Compare two versions.' functions/compare.js && node bin/semver.js 1.0.0 2.0.0 >/dev/null && git commit -q -am "compare: comment")
    git merge -q --ff-only hotfix
    git worktree remove ../node-semver-hotfix
    git branch -q -d hotfix
}
