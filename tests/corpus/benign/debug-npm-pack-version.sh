# project: debug
# what: npm version patch (no git tag), npm pack, remove the pack, commit, tag, push with tags
session() {
    npm version patch --no-git-tag-version --loglevel=error
    npm pack --silent
    rm debug-4.3.8.tgz
    git commit -q -am "4.3.8"
    git tag v4.3.8
    git push -q origin main --tags
}
