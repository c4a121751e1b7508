# project: node-semver
# what: a scratch script in the workspace to check ranges, run, deleted; grep the functions it used
session() {
    cat > scratch-ranges.js <<'JS'
const semver = require('./');
for (const [v, r] of [['1.2.3', '^1.0.0'], ['2.0.0-rc.1', '>=2.0.0'], ['1.2.3', '~1.2']]) {
  console.log(v, r, semver.satisfies(v, r));
}
JS
    node scratch-ranges.js
    rm scratch-ranges.js
    grep -rn "satisfies" functions/satisfies.js | sed -n '1,3p'
    git status --short
}
