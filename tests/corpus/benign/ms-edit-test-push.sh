# project: ms
# what: read the code (cat, grep, git log), fix a unit with sed, npm test, git diff, commit and push
session() {
    cat package.json
    grep -n "case 'weeks'" index.js
    git log --oneline -3
    sed -i "s/case 'weeks':/case 'weeks':\n    case 'wk':/" index.js
    node -e "console.log(require('./')('2 wk'))"
    npm test --silent
    git diff --stat
    git commit -q -am "Accept 'wk' for weeks"
    git push -q origin main
}
