# project: lz4
# what: an agent finding its way: ls, find, wc, grep, cat, head, git log/status/show/blame, nothing changed
session() {
    ls -la
    find . -name '*.c' -not -path './.git/*' | sed -n '1,20p'
    find . -name '*.c' -not -path './.git/*' -print0 | xargs -0 wc -l | tail -1
    grep -rn "LZ4_VERSION_MAJOR" --include='*.h' . | sed -n '1,3p'
    head -30 README.md
    cat lib/README.md | sed -n '1,20p'
    git log --oneline -5
    git status
    git show --stat HEAD
    git blame -L 1,5 README.md
    git diff HEAD~1 --stat
}
