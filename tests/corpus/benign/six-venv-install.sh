# project: six
# what: pip install . into a fresh venv (setuptools from the local wheelhouse), import it, remove the venv, build/ and egg-info
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q .
    .venv/bin/python -c "import six; print(six.__version__)"
    rm -rf .venv build six.egg-info
    git status --short
}
