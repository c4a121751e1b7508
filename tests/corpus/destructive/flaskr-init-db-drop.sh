# project: flaskr
# what: incident class "an application's own init command drops its tables": `flask init-db` run "to make sure the schema is current" over the dev database with the team's posts
setup() {
    . "$(dirname "$0")/../lib/flaskr-dev-db.sh"
    flaskr_dev_db_setup
}
session() {
    .venv/bin/flask --app flaskr init-db
}
check() {
    test "$(sqlite3 instance/flaskr.sqlite 'SELECT count(*) FROM post')" = 2
}
