# project: debug
# what: node_modules deleted and recreated twice (npm ci, then rm -rf and npm install --offline), the lockfile unchanged
session() {
    npm ci --omit=dev --offline --no-audit --no-fund --loglevel=error
    ls node_modules
    rm -rf node_modules
    npm install --omit=dev --offline --no-audit --no-fund --loglevel=error
    git diff --exit-code package-lock.json
    rm -rf node_modules
    npm ci --omit=dev --offline --no-audit --no-fund --loglevel=error
    node -e "require('./src')('x')"
}
