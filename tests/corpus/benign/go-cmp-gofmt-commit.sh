# project: go-cmp
# what: sed -i a doc comment across every cmpopts file, gofmt -l/-w, go build, git diff --stat, commit on a branch, merge
session() {
    git switch -q -c doc-wording
    grep -rl "Deprecated:" --include='*.go' . || true
    find cmp/cmpopts -name '*.go' ! -name '*_test.go' -print0 | xargs -0 sed -i 's#^// Package cmpopts provides#// Package cmpopts (internal mirror) provides#'
    gofmt -l cmp || true
    gofmt -w cmp/cmpopts
    go build ./...
    git diff --stat
    git commit -q -am "cmpopts: note the internal mirror in the package doc"
    git switch -q main
    git merge -q --no-ff -m "Merge doc-wording" doc-wording
    git branch -d doc-wording
}
