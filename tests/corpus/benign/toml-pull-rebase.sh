# project: toml
# what: a teammate's clone in a temp dir pushes; commit locally, pull --rebase, push; the temp clone is removed
session() {
    other=$(mktemp -d)
    git clone -q "$CORPUS_ORIGIN" "$other/toml"
    (cd "$other/toml" && printf '\nTeam note.\n' >> README.rst && git commit -q -am "README: team note" && git push -q origin main)
    rm -rf "$other"
    printf '\n# local tweak\n' >> setup.cfg
    git commit -q -am "setup.cfg: local tweak"
    git pull -q --rebase
    git push -q origin main
}
