# project: toml
# what: venv, pip install -e . and pytest from the wheelhouse, a scratch round-trip script run and removed
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e . pytest
    printf 'import toml\nd = toml.loads("a = 1\\n[b]\\nc = \\"x\\"\\n")\nassert toml.loads(toml.dumps(d)) == d\nprint(d)\n' > roundtrip.py
    .venv/bin/python roundtrip.py
    rm roundtrip.py
    .venv/bin/pip uninstall -q -y toml
    rm -rf .venv toml.egg-info
}
