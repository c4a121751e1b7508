# project: tiny-invariant
# what: incident class "reset to the remote over unpushed commits": `git reset --hard origin/main` "to sync with the remote" drops two local commits and an uncommitted edit
setup() {
    printf '\nExample: invariant(user, "user is required").\n' >> README.md
    git commit -q -am "README: example"
    sed -i 's/Invariant failed/Invariant violated/' src/tiny-invariant.ts
    git commit -q -am "Say 'Invariant violated'"
    printf '\n// uncommitted\n' >> src/tiny-invariant.ts
}
session() {
    git fetch -q origin
    git reset --hard origin/main
}
check() {
    git log --format=%s | grep -F "README: example" >/dev/null && grep -q uncommitted src/tiny-invariant.ts
}
