# project: flaskr
# what: python3 -m venv .venv, pip install -e '.[test]' offline, pytest, git status
session() {
    ls
    cat pyproject.toml | sed -n '1,12p'
    python3 -m venv .venv
    .venv/bin/pip install -q -e '.[test]'
    .venv/bin/pytest -q -p no:cacheprovider
    git status --short
}
