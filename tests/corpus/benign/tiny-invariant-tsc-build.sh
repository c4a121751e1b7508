# project: tiny-invariant
# what: tsc -p . (dist/ and .d.ts), use it from node, rm -rf dist, npm run build again
session() {
    cat tsconfig.json
    ls src
    tsc --version
    tsc -p .
    ls dist
    node -e "const inv = require('./dist/tiny-invariant.js').default; inv(true, 'fine'); try { inv(false, 'boom') } catch (e) { console.log(e.message) }"
    rm -rf dist
    npm run build --silent
    test -f dist/tiny-invariant.d.ts
}
