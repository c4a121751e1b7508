# project: node-semver
# what: feature branch, try the CLI, squash-merge into main, delete the branch with -D
session() {
    git switch -q -c feat/inc-doc
    sed -i '1i // Increment a version by a release type.' functions/inc.js
    node bin/semver.js 1.2.3 -i minor
    git commit -q -am "inc: comment"
    git switch -q main
    git merge -q --squash feat/inc-doc
    git commit -q -m "inc: comment (squashed)"
    git branch -q -D feat/inc-doc
    git push -q origin main
}
