# project: lz4
# what: stash tracked and untracked work (git stash -u), pull, pop, commit
session() {
    printf 'Benchmark notes: level 1 vs 9.\n' > bench-notes.txt
    printf '\nSee bench-notes.txt.\n' >> README.md
    git stash -q -u
    git pull -q --ff-only
    git stash pop -q
    git add bench-notes.txt
    git commit -q -am "Benchmark notes"
}
