# project: zlib
# what: make -j2, make check (a round-trip test), make clean
session() {
    ls *.c | wc -l
    make -s -j2
    make -s check
    make -s clean
    git status --short --ignored
}
