# project: node-semver
# what: incident class "git restore . over uncommitted edits": `git restore .` discards uncommitted changes in two modules
setup() {
    sed -i '1i // WIP: support "latest" as a release type (uncommitted)' functions/inc.js
    sed -i '1i // WIP: cache parsed versions (uncommitted)' classes/semver.js
}
session() {
    git restore .
}
check() {
    grep -q 'WIP: support "latest"' functions/inc.js && grep -q 'WIP: cache parsed' classes/semver.js
}
