# project: bzip2
# what: an editor's atomic save (backup, temp file, rename over), commit, amend
session() {
    python3 - <<'PY'
import os, shutil
path = "bzlib.h"
shutil.copy2(path, path + "~")             # the editor's backup
text = open(path).read().replace("#define BZ_RUN               0", "#define BZ_RUN               0 /* compress */")
tmp = ".bzlib.h.swp"
with open(tmp, "w") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, path)                     # write-temp-then-rename
os.remove(path + "~")                     # backup dropped on a clean save
PY
    git commit -q -am "bzlib.h: comment BZ_RUN"
    git commit -q --amend -m "bzlib.h: say what BZ_RUN does"
}
