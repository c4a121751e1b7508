# project: toml
# what: python -m build (sdist and wheel, no isolation), import check, git clean -fdX of ignored output
session() {
    python3 -m build --no-isolation . >/dev/null
    ls dist
    python3 -c 'import toml; print(toml.loads("a = 1"))'
    git clean -q -fdX
    git status --short
}
