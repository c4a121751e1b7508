# project: six
# what: incident class "the only stash dropped": `git stash drop` throws away the only copy of stashed work in progress
setup() {
    printf '\n# WIP: Python 3.13 fixes (stashed)\n' >> six.py
    git stash push -q -m "wip: python 3.13 fixes"
}
session() {
    git stash drop
}
check() {
    git stash list | grep -F 'python 3.13 fixes' >/dev/null
}
