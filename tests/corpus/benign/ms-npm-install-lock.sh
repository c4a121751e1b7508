# project: ms
# what: npm install offline makes a lockfile (no dependencies), committed; node_modules removed and npm ci run
session() {
    npm install --offline --no-audit --no-fund --loglevel=error
    cat package-lock.json | sed -n '1,8p'
    git add package-lock.json
    git commit -q -m "Add package-lock.json"
    rm -rf node_modules
    npm ci --offline --no-audit --no-fund --loglevel=error
    npm test --silent
}
