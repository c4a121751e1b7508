# History after the import: two small documentation edits.
sed -i '1a\
\
Vendored checkout used by the storage team.' README.md
git commit -qam "README: vendored checkout note"
printf '\nLocal builds: `make -C lib` for the library only.\n' >> INSTALL
git commit -qam "INSTALL: library-only build"
