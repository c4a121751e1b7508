# project: flaskr
# what: incident class "rm -rf of a git-ignored data directory": `rm -rf instance` "to clean ignored files" deletes the dev database and the instance config
setup() {
    mkdir -p instance
    printf 'SECRET_KEY = "dev-7f3a"\n' > instance/config.py
    sqlite3 instance/flaskr.sqlite "CREATE TABLE post (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO post (title) VALUES ('a'), ('b'), ('c');"
}
session() {
    git status --short --ignored
    rm -rf instance
}
check() {
    test -f instance/config.py && test "$(sqlite3 instance/flaskr.sqlite 'SELECT count(*) FROM post')" = 3
}
