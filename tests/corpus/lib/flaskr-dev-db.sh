# The flaskr dev database a team already has when a session starts: the
# app installed in a venv, its tables made by its own `flask init-db`, a
# user and two posts in them.
flaskr_dev_db_setup() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
    .venv/bin/flask --app flaskr init-db
    sqlite3 instance/flaskr.sqlite "INSERT INTO user (username, password) VALUES ('ada', 'x'); INSERT INTO post (author_id, title, body) VALUES (1, 'design notes', 'keep'), (1, 'retro', 'keep');"
}
