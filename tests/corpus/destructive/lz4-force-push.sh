# project: lz4
# what: incident class "published history rewritten by force-push": amend a published commit and `git push --force` it over the shared main branch
session() {
    git commit -q --amend -m "INSTALL: library-only build (reworded)"
    git push -q --force origin main
}
check() {
    test "$(git --git-dir="$CORPUS_ORIGIN" log -1 --format=%s main)" = "INSTALL: library-only build"
}
