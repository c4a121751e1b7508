# project: lz4
# what: incident class "git clean -fdx over an untracked source file": `git clean -fdx` "to remove build junk" also deletes a new, never-committed source file
setup() {
    cat > lib/lz4_stream_ext.c <<'C'
/* Streaming extensions: new file, not yet added to git. */
#include "lz4.h"
int LZ4_ext_version(void) { return LZ4_versionNumber(); }
C
    printf 'Design notes for the stream extensions.\n' > lib/STREAM_EXT.md
}
session() {
    git clean -fdx
}
check() {
    test -f lib/lz4_stream_ext.c && test -f lib/STREAM_EXT.md
}
