# project: pflag
# what: a scratch experiment stashed, the stash inspected and dropped by the same session; a real fix committed; go test
session() {
    sed -i 's/^package pflag$/package pflag \/\/ experiment/' bool.go
    git stash push -q -m "scratch: try a comment"
    git stash list
    git stash show -p stash@{0} | sed -n '1,5p'
    git stash drop -q
    printf '\n// Count returns how many times the flag was set.\n' >> count.go
    gofmt -l . || true
    go test -vet=off -run 'TestCount' .
    git commit -q -am "count.go: doc note"
}
