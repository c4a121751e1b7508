# project: zlib
# what: build, change CFLAGS in the Makefile with sed -i, make clean all, run the check, commit the Makefile
session() {
    make -s -j2
    sed -i 's/^CFLAGS ?= -O2 -Wall$/CFLAGS ?= -O2 -Wall -fPIC/' Makefile
    git diff
    make -s clean
    make -s -j2 all
    make -s check
    git commit -q -am "Makefile: build position-independent objects"
}
