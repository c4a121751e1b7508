# project: toml
# what: a branch with sed -i edits, scratch files in a mktemp dir, merge and push
session() {
    git switch -q -c fix/doc
    sed -i 's/^"""Python module which parses and emits TOML\.$/"""Python module that parses and emits TOML./' toml/__init__.py
    tmp=$(mktemp -d)
    printf 'title = "scratch"\n[owner]\nname = "x"\n' > "$tmp/sample.toml"
    python3 -c 'import sys, toml; print(toml.load(sys.argv[1]))' "$tmp/sample.toml"
    rm -rf "$tmp"
    git commit -q -am "docs: module docstring"
    git switch -q main
    git merge -q --no-ff -m "Merge fix/doc" fix/doc
    git push -q origin main
    git branch -q -d fix/doc
}
