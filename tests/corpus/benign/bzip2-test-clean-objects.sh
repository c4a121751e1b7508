# project: bzip2
# what: make and make test, then find . -name '*.o' -delete and the binaries removed by name
session() {
    make -s -j2 >/dev/null
    make -s test >/dev/null
    find . -name '*.o' -delete
    rm -f bzip2 bzip2recover libbz2.a
    git status --short
}
