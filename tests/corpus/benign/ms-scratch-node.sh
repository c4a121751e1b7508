# project: ms
# what: scratch scripts in the workspace to probe edge cases, run with node, removed; a case added to test.js
session() {
    cat > probe.js <<'JS'
const ms = require('./');
for (const s of ['1.5h', '-3d', '100', '1y', 'nonsense']) console.log(JS_FMT(s, ms(s)));
function JS_FMT(a, b) { return `${a} -> ${b}`; }
JS
    node probe.js > probe.out
    cat probe.out
    rm probe.js probe.out
    sed -i "s#^console.log('ms: ok');#assert.strictEqual(ms('1.5h'), 5400000);\nconsole.log('ms: ok');#" test.js
    npm test --silent
    git commit -q -am "test: fractional hours"
}
