# History after the import: ignore the build's outputs, note the build.
cat > .gitignore <<'IGN'
*.o
*.a
*.so*
/bzip2
/bzip2recover
/sample*.rb2
/sample*.tst
IGN
git add .gitignore
git commit -qm "Ignore build outputs"
printf '\nBuild with `make`; `make clean` removes the outputs.\n' >> README
git commit -qam "README: how to build"
