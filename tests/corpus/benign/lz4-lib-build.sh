# project: lz4
# what: a debug build (CFLAGS=-O0) of the static library with the project's Makefile, then make clean
session() {
    make -s -C lib -j2 liblz4.a CFLAGS=-O0
    test -f lib/liblz4.a
    make -s -C lib clean
}
