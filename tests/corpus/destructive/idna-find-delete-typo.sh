# project: idna
# what: incident class "find -delete with a too-wide pattern": meant to delete bytecode, `find . -name '*.py*' -delete` also deletes a new, never-committed module
setup() {
    cat > idna/punycode_cache.py <<'PY'
"""A cache for punycode conversions (new, not yet committed)."""
from functools import lru_cache

from . import core


@lru_cache(maxsize=1024)
def encode(label: str) -> bytes:
    return core.encode(label)
PY
    python3 -m compileall -q idna
}
session() {
    find . -name '*.py*' -not -path './.git/*' -delete
}
check() {
    test -f idna/punycode_cache.py
}
