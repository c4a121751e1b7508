# History after the import: ignore installs and packs, a README note.
printf 'node_modules/\n*.tgz\n' > .gitignore
git add .gitignore
git commit -qm "Ignore node_modules and packs"
sed -i '1a\
\
Internal checkout of node-semver.' README.md
git commit -qam "README: internal checkout note"
