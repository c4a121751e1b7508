# Local fix: lower-cases in the returns caller only.
python3 - <<'PY'
path = "src/returns/handler.py"
src = open(path).read()
open(path, "w").write(src.replace("normalize(code) in", "normalize(code).lower() in"))
PY
