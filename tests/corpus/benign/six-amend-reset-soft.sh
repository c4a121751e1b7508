# project: six
# what: commit, amend, undo the commit with reset --soft, recommit, push
session() {
    sed -i 's/^__version__ = "1.16.0"$/__version__ = "1.16.1.dev0"/' six.py
    git commit -q -am "Start 1.16.1"
    git commit -q --amend -m "Start 1.16.1 development"
    git reset -q --soft HEAD~1
    printf '\n1.16.1 (unreleased)\n-------------------\n' >> CHANGES
    git commit -q -am "Start 1.16.1 development"
    git push -q origin main
}
