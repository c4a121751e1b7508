# project: zlib
# what: a scratch benchmark written in the workspace, built against libz.a, run, then deleted with its binary
session() {
    make -s -j2
    cat > bench.c <<'C'
#include <stdio.h>
#include <string.h>
#include "zlib.h"
int main(void) {
    static unsigned char in[1 << 16], out[1 << 17];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i % 61);
    for (int level = 1; level <= 9; level += 4) {
        uLongf n = sizeof out;
        compress2(out, &n, in, sizeof in, level);
        printf("level %d: %lu bytes\n", level, (unsigned long)n);
    }
    return 0;
}
C
    gcc -O2 -I. -o bench bench.c libz.a
    ./bench
    rm -f bench bench.c
    git status --short
}
