# project: idna
# what: a fresh venv, pip install -e . and pytest offline, run the fast tests, venv kept
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e . pytest
    .venv/bin/pytest -q -p no:cacheprovider tests/test_idna.py tests/test_intranges.py
    .venv/bin/python -c "import idna; print(idna.encode('bücher.example'))"
}
