# project: idna
# what: compileall, run the tests with the stdlib, then find . -name '*.pyc' -delete and empty __pycache__ dirs removed
session() {
    python3 -m compileall -q idna tests
    python3 -m unittest -q tests.test_intranges
    find . -name '*.pyc' | wc -l
    find . -name '*.pyc' -delete
    find . -name __pycache__ -type d -empty -delete
    git status --short --ignored
}
