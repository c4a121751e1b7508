# project: debug
# what: pin a dependency in package.json with npm pkg set, check the manifest, commit
session() {
    npm pkg set dependencies.ms=2.1.3
    node -e "const p = require('./package.json'); if (p.dependencies.ms !== '2.1.3') process.exit(1)"
    git commit -q -am "Pin ms 2.1.3"
}
