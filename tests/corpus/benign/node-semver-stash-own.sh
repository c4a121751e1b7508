# project: node-semver
# what: stash a scratch change (git stash push), look at it, drop it; stash -u of a temp file, pop it, remove it
session() {
    sed -i 's/^const SEMVER_SPEC_VERSION = .*/&\n\/\/ scratch/' internal/constants.js
    git stash push -q -m "scratch"
    git stash show -p | sed -n '1,8p'
    git stash drop -q
    printf 'tmp notes\n' > notes.tmp
    git stash push -q -u -m "notes"
    git stash pop -q
    rm notes.tmp
    git stash list
    git status --short
}
