# project: ms
# what: three small commits squashed with git rebase -i (GIT_SEQUENCE_EDITOR marks them fixup), then pushed
session() {
    printf '\n// ms: parse and format durations\n' >> index.js
    git commit -q -am "index: header comment"
    sed -i 's#// ms: parse and format durations#// ms: parse and format time durations#' index.js
    git commit -q -am "wording"
    printf '// see test.js\n' >> index.js
    git commit -q -am "pointer to tests"
    GIT_SEQUENCE_EDITOR="sed -i '2,3s/^pick/fixup/'" git rebase -q -i HEAD~3
    git log --oneline -3
    npm test --silent
    git push -q origin main
}
