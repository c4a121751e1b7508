# project: go-cmp
# what: go test -c to a test binary and a cover profile, run them, then remove them, go clean -testcache and -cache
session() {
    go test -c -o cmpopts.test ./cmp/cmpopts
    ./cmpopts.test -test.run TestEquateEmpty -test.v | tail -3
    go test -coverprofile=cover.out ./cmp/cmpopts
    go tool cover -func=cover.out | tail -1
    rm -f cmpopts.test cover.out
    go clean -testcache
    go clean -cache
    git status --short
}
