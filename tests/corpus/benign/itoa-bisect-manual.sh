# project: itoa
# what: git bisect start/good/bad by hand over commits the session made, checking a marker with grep; bisect reset
session() {
    for i in 1 2 3 4 5; do
        if [ "$i" = 4 ]; then printf 'REGRESSION\n' >> README.md; fi
        printf '\nNote %s.\n' "$i" >> README.md
        git commit -q -am "note $i"
    done
    git bisect start HEAD HEAD~5
    for _ in 1 2 3 4 5 6; do
        if grep -q REGRESSION README.md; then out=$(git bisect bad); else out=$(git bisect good); fi
        echo "$out" | sed -n '1,1p'
        case "$out" in *"is the first bad commit"*) break ;; esac
    done
    git bisect log | tail -2
    git bisect reset
}
