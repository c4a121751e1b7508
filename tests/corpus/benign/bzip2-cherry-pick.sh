# project: bzip2
# what: fix on main, cherry-pick it onto a release branch, go back
session() {
    git branch release-1.0.8
    printf '/* corpus: reviewed */\n' >> bzlib.c
    git commit -q -am "bzlib: reviewed"
    git switch -q release-1.0.8
    git cherry-pick main
    git switch -q main
}
