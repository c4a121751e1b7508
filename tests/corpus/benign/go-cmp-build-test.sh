# project: go-cmp
# what: look around (ls, cat go.mod, grep, git log), go build, go vet and go test of a package, offline with Debian's Go
session() {
    ls -la
    cat go.mod
    grep -rn "func Equal" --include='*.go' cmp | sed -n '1,5p'
    git log --oneline -5
    git status --short
    go build ./...
    go vet ./cmp/cmpopts
    go test ./cmp/cmpopts
    git status --short
}
