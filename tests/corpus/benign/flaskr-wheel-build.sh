# project: flaskr
# what: python -m build --no-isolation (sdist and wheel with flit_core), inspect the wheel, rm -rf dist
session() {
    python -m build --no-isolation . >/dev/null
    ls dist
    python -m zipfile -l dist/*.whl | sed -n '1,10p'
    rm -rf dist
    git status --short
}
