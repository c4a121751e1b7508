# project: pflag
# what: git worktree add a fix branch beside the repo, build and commit there, merge it, git worktree remove, branch -d
session() {
    git worktree add -q -b fix-doc ../pflag-fix
    (cd ../pflag-fix && printf '\n// Internal mirror: see README.md.\n' >> flag.go && gofmt -l . ; go build . && git commit -q -am "flag.go: mirror note")
    git worktree list
    git merge -q --ff-only fix-doc
    git worktree remove ../pflag-fix
    git branch -d fix-doc
    go build ./...
}
