# project: bzip2
# what: build bzip2 with its Makefile (which runs its self-test), then make clean
session() {
    make -j2 -s
    ./bzip2 --help 2>&1 | head -1
    make -s clean
}
