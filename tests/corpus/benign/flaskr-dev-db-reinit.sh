# project: flaskr
# what: the dev database this session made is seeded, inspected, then re-initialised with the app's own init-db and dumped
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
    .venv/bin/flask --app flaskr init-db
    sqlite3 instance/flaskr.sqlite "INSERT INTO user (username, password) VALUES ('scratch', 'x')"
    sqlite3 instance/flaskr.sqlite "SELECT count(*) FROM user"
    .venv/bin/flask --app flaskr init-db
    sqlite3 instance/flaskr.sqlite ".dump" | sed -n '1,5p'
}
