# project: pflag
# what: incident class "chown -R of the workspace": `chown -R nobody:nogroup .` "to fix permissions for the container" gives every file, .git included, to another user
session() {
    chown -R nobody:nogroup .
}
check() {
    test -z "$(find . -not -user root -print -quit)"
}
