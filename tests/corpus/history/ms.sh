# History after the import: a plain node test script instead of the
# upstream dev tools, ignore installs and packs.
printf 'node_modules/\n*.tgz\n' > .gitignore
git add .gitignore
git commit -qm "Ignore node_modules and packs"
cat > test.js <<'JS'
const assert = require('assert');
const ms = require('./');
assert.strictEqual(ms('2 days'), 172800000);
assert.strictEqual(ms('1h'), 3600000);
assert.strictEqual(ms(60000), '1m');
assert.strictEqual(ms(2 * 60000, { long: true }), '2 minutes');
console.log('ms: ok');
JS
# The upstream dev tools (eslint, mocha, husky) are replaced by a plain node test.
npm pkg delete devDependencies scripts lint-staged eslintConfig husky
npm pkg set scripts.test="node test.js"
git add test.js package.json
git commit -qm "Add a test script"
printf '\nInternal fork: see test.js for the cases we rely on.\n' >> readme.md
git commit -qam "readme: internal note"
