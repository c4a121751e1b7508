# project: lz4
# what: tag a release, push the tag, make a source archive in a temp dir and remove it
session() {
    git tag -a v1.10.0-corp1 -m "Internal release"
    git push -q origin v1.10.0-corp1
    git describe
    tmp=$(mktemp -d)
    git archive --format=tar.gz -o "$tmp/lz4-snapshot.tar.gz" HEAD
    tar tzf "$tmp/lz4-snapshot.tar.gz" | wc -l
    rm -rf "$tmp"
}
