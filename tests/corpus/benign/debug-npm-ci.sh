# project: debug
# what: npm ci offline (production deps), use the module, remove node_modules, npm ci again
session() {
    npm ci --omit=dev --offline --no-audit --no-fund --loglevel=error
    node -e "const d = require('./src')('corpus'); d.enabled = true; d('works')"
    rm -rf node_modules
    npm ci --omit=dev --offline --no-audit --no-fund --loglevel=error
    test -d node_modules/ms
}
