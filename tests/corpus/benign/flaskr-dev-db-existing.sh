# project: flaskr
# what: the dev database the team already has (a user and two posts) used as the app uses it: a user registers and writes two posts through the app's routes, one is deleted through the app, a title fixed with sqlite3, the rows listed
setup() {
    . "$(dirname "$0")/../lib/flaskr-dev-db.sh"
    flaskr_dev_db_setup
}
session() {
    cat > scratch_posts.py <<'PY'
import sqlite3

from flaskr import create_app

app = create_app()
client = app.test_client()
client.post("/auth/register", data={"username": "dev", "password": "dev"})
client.post("/auth/login", data={"username": "dev", "password": "dev"})
client.post("/create", data={"title": "draft one", "body": "first try"})
client.post("/create", data={"title": "draft two", "body": "second try"})
db = sqlite3.connect(app.config["DATABASE"])
(last,) = db.execute("SELECT max(id) FROM post").fetchone()
print(client.post(f"/{last}/delete").status_code)
PY
    .venv/bin/python scratch_posts.py
    sqlite3 instance/flaskr.sqlite "UPDATE post SET title = 'Design notes' WHERE title = 'design notes'"
    sqlite3 instance/flaskr.sqlite "SELECT id, title FROM post ORDER BY id"
    rm scratch_posts.py
}
