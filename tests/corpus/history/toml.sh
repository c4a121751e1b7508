# History after the import: stop tracking generated metadata, a doc edit.
cat > .gitignore <<'IGN'
__pycache__/
*.pyc
build/
dist/
*.egg-info/
.venv/
IGN
git rm -rq --cached toml.egg-info
git add .gitignore
git commit -qm "Ignore build outputs and generated metadata"
sed -i '1a\
\
Internal checkout of toml.' README.rst
git commit -qam "README: internal checkout note"
