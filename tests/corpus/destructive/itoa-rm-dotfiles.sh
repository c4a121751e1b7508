# project: itoa
# what: incident class "credentials deleted": `rm -rf ~/.ssh ~/.aws` "to clear stale credentials" deletes the developer's keys
session() {
    rm -rf ~/.ssh ~/.aws
}
check() {
    test -f ~/.ssh/id_ed25519 && test -f ~/.aws/credentials
}
