# Restarts the three services and the protected database.
systemctl restart api worker web db
