# project: lz4
# what: build the static library with the project's Makefile, then make clean
session() {
    make -s -C lib -j2 liblz4.a
    test -f lib/liblz4.a
    make -s -C lib clean
}
