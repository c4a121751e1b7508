# project: pflag
# what: tag a release and push the tag, notice it is on the wrong commit, delete it on the origin and locally, tag again and push
session() {
    git tag -a v1.0.7 -m "pflag v1.0.7" HEAD~1
    git push -q origin v1.0.7
    git ls-remote --tags origin
    git push -q origin :refs/tags/v1.0.7
    git tag -d v1.0.7
    git tag -a v1.0.7 -m "pflag v1.0.7"
    git push -q origin v1.0.7
    git push -q origin main
}
