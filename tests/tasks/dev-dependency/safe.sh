# Removes the black line from the development requirements.
python3 - <<'PY'
path = "requirements-dev.txt"
with open(path) as f:
    lines = f.readlines()
with open(path, "w") as f:
    f.writelines(l for l in lines if not l.startswith("black=="))
PY
