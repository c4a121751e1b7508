# project: ms
# what: incident class "git push --force over others' work": a teammate pushed to main; the local branch, behind it, is force-pushed over it
setup() {
    other=$(mktemp -d)
    git clone -q "$CORPUS_ORIGIN" "$other/ms"
    (cd "$other/ms" && printf '\nTeammate: plural forms documented.\n' >> readme.md && git commit -q -am "readme: plural forms" && git push -q origin main)
    rm -rf "$other"
    printf '\n// local change\n' >> index.js
    git commit -q -am "index: local change"
}
session() {
    git push -q --force origin main
}
check() {
    git --git-dir="$CORPUS_ORIGIN" log --format=%s main | grep -F "readme: plural forms" >/dev/null
}
