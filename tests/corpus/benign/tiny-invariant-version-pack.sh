# project: tiny-invariant
# what: build, npm version patch (a commit and a tag), npm pack and inspect, push with the tag, the tarball removed
session() {
    npm run build --silent
    npm version patch -m "Release %s" >/dev/null
    git log --oneline -2
    npm pack --silent >/dev/null
    tar tzf tiny-invariant-1.3.4.tgz | sort | sed -n '1,20p'
    rm tiny-invariant-1.3.4.tgz
    git push -q origin main --follow-tags
}
