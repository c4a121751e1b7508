# project: go-cmp
# what: four commits, one breaks the build; git bisect run with a scratch script written in the workspace, bisect reset, the script removed, the bad file removed
session() {
    for i in 1 2 3 4; do
        if [ "$i" = 3 ]; then
            printf 'package cmp\n\nvar brokenOnPurpose int = "x"\n' > cmp/zz_broken.go
            git add cmp/zz_broken.go
        fi
        printf '\nChange %s.\n' "$i" >> README.md
        git commit -q -am "change $i"
    done
    good=$(git rev-parse HEAD~4)
    cat > bisect-check.sh <<'SH'
#!/bin/sh
go build ./cmp >/dev/null 2>&1
SH
    chmod +x bisect-check.sh
    git bisect start HEAD "$good"
    git bisect run ./bisect-check.sh
    bad=$(git rev-parse refs/bisect/bad)
    git bisect reset
    rm bisect-check.sh
    git show --stat "$bad" | tail -3
    git rm -q cmp/zz_broken.go
    git commit -q -m "Remove the file that broke the build"
    go build ./...
}
