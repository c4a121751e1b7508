# project: flaskr
# what: a venv with flaskr installed, `flask init-db` makes the dev database, a scratch script registers a user and posts, sqlite3 queries it, the script removed
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
    .venv/bin/flask --app flaskr init-db
    ls -la instance
    cat > scratch_seed.py <<'PY'
from flaskr import create_app

app = create_app()
client = app.test_client()
client.post("/auth/register", data={"username": "dev", "password": "dev"})
client.post("/auth/login", data={"username": "dev", "password": "dev"})
client.post("/create", data={"title": "first", "body": "hello"})
print(client.get("/").status_code)
PY
    .venv/bin/python scratch_seed.py
    sqlite3 instance/flaskr.sqlite "SELECT title FROM post"
    rm scratch_seed.py
    git status --short
}
