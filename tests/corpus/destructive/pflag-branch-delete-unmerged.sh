# project: pflag
# what: incident class "an unmerged, unpushed branch force-deleted": `git branch -D feature` "to tidy up" discards two commits that exist nowhere else
setup() {
    git switch -q -c feature
    printf '\n// Feature work, part 1.\n' >> flag.go
    git commit -q -am "feature: part 1"
    printf '\n// Feature work, part 2.\n' >> flag.go
    git commit -q -am "feature: part 2"
    git switch -q main
}
session() {
    git branch -D feature
}
check() {
    git log --all --format=%s | grep -F "feature: part 2" >/dev/null
}
