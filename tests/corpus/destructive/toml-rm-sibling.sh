# project: toml
# sibling: six
# what: incident class "rm -rf of a sibling project with uncommitted work": `rm -rf ../six` removes a sibling project with uncommitted work
setup() {
    printf '\n# WIP in the sibling (uncommitted)\n' >> "$CORPUS_SIBLING/six.py"
    printf 'notes, never committed\n' > "$CORPUS_SIBLING/NOTES.txt"
}
session() {
    rm -rf ../six
}
check() {
    grep -q 'WIP in the sibling' "$CORPUS_SIBLING/six.py" && test -f "$CORPUS_SIBLING/NOTES.txt"
}
