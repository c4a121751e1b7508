#!/usr/bin/env python3
"""Generates the C project the build workload compiles (once per bench run,
outside timing): UNITS translation units of ordinary integer and string
code, a main.c that calls them all, and a Makefile (`make` builds `app`,
`make clean` removes the objects and the binary).

usage: c_project.py DIR [UNITS]
"""
import os
import sys

out = sys.argv[1]
units = int(sys.argv[2]) if len(sys.argv) > 2 else 50
os.makedirs(out, exist_ok=True)

UNIT = r"""
#include <stdint.h>
#include <string.h>
#include "units.h"

struct rec%(n)d { uint32_t key; char name[24]; uint64_t acc; };

static uint64_t mix%(n)d(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return x;
}

static int cmp%(n)d(const struct rec%(n)d *a, const struct rec%(n)d *b) {
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void sort%(n)d(struct rec%(n)d *v, int len) {
    for (int i = 1; i < len; i++) {
        struct rec%(n)d t = v[i];
        int j = i - 1;
        while (j >= 0 && cmp%(n)d(&v[j], &t) > 0) { v[j + 1] = v[j]; j--; }
        v[j + 1] = t;
    }
}
%(funcs)s
uint64_t unit%(n)d(uint64_t seed) {
    struct rec%(n)d v[32];
    for (int i = 0; i < 32; i++) {
        v[i].key = (uint32_t)mix%(n)d(seed + i);
        memset(v[i].name, 'a' + i %% 26, sizeof v[i].name - 1);
        v[i].name[sizeof v[i].name - 1] = 0;
        v[i].acc = 0;
    }
    sort%(n)d(v, 32);
    uint64_t h = 0;
%(calls)s
    for (int i = 0; i < 32; i++) h = mix%(n)d(h ^ v[i].key ^ v[i].acc);
    return h;
}
"""

FUNC = r"""
static uint64_t step%(n)d_%(k)d(uint64_t h, const char *s) {
    for (int i = 0; s[i]; i++) {
        switch ((s[i] + %(k)d) %% 5) {
        case 0: h = h * 31 + s[i]; break;
        case 1: h ^= (uint64_t)s[i] << (i %% 56); break;
        case 2: h = mix%(n)d(h + %(k)d); break;
        case 3: h += h >> 7; break;
        default: h -= (uint64_t)i * %(k)d;
        }
    }
    return h;
}
"""

header = ["#include <stdint.h>"]
main_calls = []
for n in range(units):
    funcs = "".join(FUNC % {"n": n, "k": k} for k in range(4))
    calls = "".join("    h = step%d_%d(h, v[%d].name);\n" % (n, k, k) for k in range(4))
    with open(os.path.join(out, "unit%02d.c" % n), "w") as f:
        f.write(UNIT % {"n": n, "funcs": funcs, "calls": calls})
    header.append("uint64_t unit%d(uint64_t seed);" % n)
    main_calls.append("    h ^= unit%d(h + %d);" % (n, n))

with open(os.path.join(out, "units.h"), "w") as f:
    f.write("\n".join(header) + "\n")
with open(os.path.join(out, "main.c"), "w") as f:
    f.write('#include <stdio.h>\n#include "units.h"\nint main(void) {\n    uint64_t h = 1;\n'
            + "\n".join(main_calls) + '\n    printf("%llx\\n", (unsigned long long)h);\n    return 0;\n}\n')
with open(os.path.join(out, "Makefile"), "w") as f:
    f.write("""CC ?= cc
CFLAGS ?= -O2 -Wall
SRCS := $(wildcard unit*.c) main.c
OBJS := $(SRCS:.c=.o)

app: $(OBJS)
\t$(CC) $(CFLAGS) -o $@ $(OBJS)

%.o: %.c units.h
\t$(CC) $(CFLAGS) -c -o $@ $<

clean:
\trm -f $(OBJS) app

.PHONY: clean
""")
