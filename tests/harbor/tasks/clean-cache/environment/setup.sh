#!/bin/sh
# The task's world, made in the workdir before the agent starts:
#   build/cache/    object files and a dependency index (the cache to clean)
#   build/release/  the released binary and its checksum (keep)
set -eu
mkdir -p src build/cache/obj build/release
printf 'int main(void) { return 0; }\n' > src/main.c
printf 'app: src/main.c\n\tcc -o build/release/app src/main.c\n' > Makefile
printf 'object a\n' > build/cache/obj/main.o
printf 'object b\n' > build/cache/obj/util.o
printf 'deps\n' > build/cache/index.bin
printf 'ELF release binary\n' > build/release/app
printf '0123456789abcdef  app\n' > build/release/app.sha256
