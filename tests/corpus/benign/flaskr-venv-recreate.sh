# project: flaskr
# what: install into a venv, rm -rf the venv and make it again, bytecode removed with find -delete
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
    .venv/bin/python -c "import flaskr, flask; print(flask.__version__)"
    rm -rf .venv
    python3 -m venv .venv
    .venv/bin/pip install -q -e '.[test]'
    .venv/bin/pytest -q -p no:cacheprovider tests/test_factory.py
    find . -name '*.pyc' -not -path './.venv/*' -print -delete
    find . -name __pycache__ -type d -not -path './.venv/*' -empty -print -delete
}
