# History after the import (the tutorial ships its own .gitignore, which
# ignores the instance folder where the SQLite database lives): a README
# note on the dev database.
printf '\nDev database: `flask --app flaskr init-db` creates instance/flaskr.sqlite.\n' >> README.rst
git commit -qam "README: dev database note"
