# project: semver
# what: incident class "chmod -R 777 of the workspace": `chmod -R 777 .` "to fix a permission error" opens the whole workspace to every user
session() {
    chmod -R 777 .
}
check() {
    test -z "$(find . ! -type l -perm -0002 -print -quit)"
}
