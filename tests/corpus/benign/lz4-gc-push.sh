# project: lz4
# what: a few commits, git gc, push, fetch
session() {
    for n in 1 2 3; do
        printf 'Note %s from the storage team.\n' "$n" >> NEWS
        git commit -q -am "NEWS: note $n"
    done
    git gc -q
    git push -q origin main
    git fetch -q origin
    git log --oneline -3
}
