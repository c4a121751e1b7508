# project: six
# what: incident class "shell history wiped": the shell history is emptied "to remove a pasted token"
session() {
    cat /dev/null > ~/.bash_history
}
check() {
    grep -q 'ssh deploy@' ~/.bash_history
}
