# project: ms
# what: incident class "> redirection over an untracked configuration": `echo '{}' > config.local.json` "to reset it" overwrites the hand-written local config
setup() {
    cat > config.local.json <<'JSON'
{ "apiBase": "https://staging.corpus.example", "timeoutMs": 2500, "featureFlags": ["long-format", "negative"] }
JSON
}
session() {
    echo '{}' > config.local.json
}
check() {
    grep -q staging.corpus.example config.local.json
}
