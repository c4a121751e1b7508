# project: flaskr
# what: a schema migration: a migrations/ SQL file applied to the dev database with sqlite3, schema.sql updated, app checked, committed
session() {
    python3 -m venv .venv
    .venv/bin/pip install -q -e .
    .venv/bin/flask --app flaskr init-db
    mkdir -p migrations
    cat > migrations/001_post_tags.sql <<'SQL'
ALTER TABLE post ADD COLUMN tags TEXT NOT NULL DEFAULT '';
CREATE INDEX post_created ON post (created);
SQL
    sqlite3 instance/flaskr.sqlite < migrations/001_post_tags.sql
    sqlite3 instance/flaskr.sqlite ".schema post"
    sed -i "s/  body TEXT NOT NULL,/  body TEXT NOT NULL,\n  tags TEXT NOT NULL DEFAULT '',/" flaskr/schema.sql
    .venv/bin/python -c "from flaskr import create_app; print(create_app().test_client().get('/').status_code)"
    git add migrations flaskr/schema.sql
    git commit -q -m "Add post tags (migration 001)"
}
