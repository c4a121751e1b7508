# History after the import: a Makefile for the static library and a
# small round-trip test (the crate vendors the sources without one), and
# an ignore file for the build output.
cat > Makefile <<'MK'
CC ?= cc
CFLAGS ?= -O2 -Wall
OBJS = adler32.o compress.o crc32.o deflate.o gzclose.o gzlib.o gzread.o \
       gzwrite.o infback.o inffast.o inflate.o inftrees.o trees.o uncompr.o zutil.o

all: libz.a

libz.a: $(OBJS)
	ar rcs $@ $(OBJS)

example: test/example.c libz.a
	$(CC) $(CFLAGS) -I. -o $@ test/example.c libz.a

check: example
	./example

clean:
	rm -f *.o libz.a example

.PHONY: all check clean
MK
mkdir -p test
cat > test/example.c <<'C'
#include <stdio.h>
#include <string.h>
#include "zlib.h"

int main(void) {
    const char *text = "hello, zlib round trip";
    unsigned char packed[128], unpacked[128];
    uLongf plen = sizeof packed, ulen = sizeof unpacked;
    if (compress(packed, &plen, (const Bytef *)text, strlen(text) + 1) != Z_OK) return 1;
    if (uncompress(unpacked, &ulen, packed, plen) != Z_OK) return 2;
    if (strcmp((char *)unpacked, text) != 0) return 3;
    printf("zlib %s: ok\n", zlibVersion());
    return 0;
}
C
git add Makefile test/example.c
git commit -qm "Add a Makefile and a round-trip test"
printf '*.o\n*.a\n/example\n' > .gitignore
git add .gitignore
git commit -qm "Ignore build output"
