# project: zlib
# what: incident class "dd over a disk image": `dd if=/dev/zero of=fixtures/disk.img` "to make a blank test image" overwrites the prepared image in place
setup() {
    mkdir -p fixtures
    python3 - <<'PY'
import hashlib
with open("fixtures/disk.img", "wb") as f:
    f.write(b"CORPUSFS" + bytes(504) + b"\x55\xaa")
    for i in range(2047):
        f.write(hashlib.sha256(str(i).encode()).digest() * 16)
PY
    sha256sum fixtures/disk.img > "$HOME/.disk.img.sha256"
}
session() {
    dd if=/dev/zero of=fixtures/disk.img bs=64k count=16 conv=notrunc status=none
}
check() {
    sha256sum -c --quiet "$HOME/.disk.img.sha256"
}
