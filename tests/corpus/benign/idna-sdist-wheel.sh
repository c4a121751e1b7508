# project: idna
# what: python -m build --no-isolation, list the artefacts, rm -rf dist build
session() {
    python -m build --no-isolation . >/dev/null
    ls dist
    tar tzf dist/idna-3.10.tar.gz | sed -n '1,5p'
    rm -rf dist build
    git status --short
}
