# History after the import: ignore installs and packs, commit the lockfile
# (made at fetch time by `npm install --package-lock-only`).
printf 'node_modules/\n*.tgz\ncoverage/\n' > .gitignore
git add .gitignore
git commit -qm "Ignore node_modules and packs"
cp "$CORPUS_PREPARED/package-lock.json" package-lock.json
git add package-lock.json
git commit -qm "Add package-lock.json"
