# project: zlib
# what: build and test, then git clean -fX (only ignored build output), git status --ignored shows nothing left
session() {
    make -s -j2 check
    git status --short --ignored
    git clean -fX
    git status --short --ignored
}
