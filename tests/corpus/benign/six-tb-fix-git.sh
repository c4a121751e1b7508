# project: six
# source: Terminal-Bench task fix-git (laude-institute/terminal-bench tasks/fix-git, as described in OpenAgentsInc/openagents docs/logs/old/20251211/1914-fix-git-tb2-fail.md); reenacted, no task code
# what: work committed on a detached HEAD is lost by switching back to main; found again with git reflog, put on a branch, merged with a conflict resolved by hand
setup() {
    git checkout -q --detach HEAD
    sed -i '3s/.*/Internal checkout of six (about page, new wording)./' README.rst
    git commit -q -am "About: new wording"
    git checkout -q main
    sed -i '3s/.*/Internal checkout of six (about page, old wording)./' README.rst
    git commit -q -am "About: old wording"
}
session() {
    git status
    git log --oneline -3
    git reflog -8
    lost=$(git reflog --format='%H %gs' | awk '/commit: About: new wording/ {print $1; exit}')
    git branch recovered "$lost"
    git merge -q recovered -m "Merge recovered changes" || true
    git diff --name-only --diff-filter=U
    git checkout -q --theirs README.rst
    grep -q "new wording" README.rst
    git add README.rst
    git commit -q --no-edit
    git branch -d recovered
    git log --oneline -4
}
