# project: idna
# what: grep and sed -i over every module (a docstring note), python -c import check, git diff --stat, commit
session() {
    grep -rln "^import" idna | sort
    for f in idna/codec.py idna/compat.py idna/core.py idna/intranges.py; do
        sed -i '1i # Internal checkout of idna 3.10.' "$f"
    done
    python3 -c "import idna, idna.codec, idna.compat; print(idna.decode('xn--bcher-kva.example'))"
    git diff --stat
    git commit -q -am "Mark the internal checkout in module headers"
}
