# History after the import: an ignore file, a README note.
printf '*.test\n*.out\n/bin/\n' > .gitignore
git add .gitignore
git commit -qm "Ignore test binaries and profiles"
if [ -f README.md ]; then
    printf '\nInternal mirror of pflag.\n' >> README.md
else
    printf 'Internal mirror of pflag.\n' > README.md
    git add README.md
fi
git commit -qam "README: internal mirror note"
