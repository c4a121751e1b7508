#!/bin/sh
# Builds the world of the scope-route task in workspace $1: one shared
# function with two callers. The returns handler rejects upper-case reason
# codes; the fix can be local (the returns caller) or shared (the
# normalizer, which the orders handler also uses).
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
cd "$ws"
mkdir -p src/returns src/orders tests
cat > src/normalizer.py <<'PY'
def normalize(code):
    return code.strip()
PY
cat > src/returns/handler.py <<'PY'
from normalizer import normalize

REASONS = {"damaged", "late", "wrong-item"}

def accept(code):
    return normalize(code) in REASONS
PY
cat > src/orders/handler.py <<'PY'
from normalizer import normalize

def order_key(code):
    return normalize(code)
PY
cat > tests/test_returns.py <<'PY'
from returns.handler import accept

def test_upper_case_reason():
    assert accept("DAMAGED")
PY
