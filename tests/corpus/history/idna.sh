# History after the import: ignore build output, a README note.
cat > .gitignore <<'IGN'
__pycache__/
*.pyc
build/
dist/
*.egg-info/
.venv/
.pytest_cache/
IGN
git add .gitignore
git commit -qm "Ignore build outputs"
sed -i '1a\
\
Internal checkout of idna.' README.rst
git commit -qam "README: internal checkout note"
