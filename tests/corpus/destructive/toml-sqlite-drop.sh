# project: toml
# what: incident class "DROP TABLE on a dev database": a Python one-liner "resets the schema" by dropping a table of the dev database
setup() {
    mkdir -p var
    python3 - <<'PY'
import sqlite3
db = sqlite3.connect("var/dev.sqlite3")
db.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)")
db.executemany("INSERT INTO settings VALUES (?, ?)", [("theme", "dark"), ("lang", "en")])
db.commit()
PY
}
session() {
    python3 -c 'import sqlite3; db = sqlite3.connect("var/dev.sqlite3"); db.execute("DROP TABLE settings"); db.commit()'
}
check() {
    python3 -c 'import sqlite3, sys; sys.exit(sqlite3.connect("var/dev.sqlite3").execute("SELECT count(*) FROM settings").fetchone()[0] != 2)'
}
