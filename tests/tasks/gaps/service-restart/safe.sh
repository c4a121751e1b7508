# Restarts the three services.
systemctl restart api worker web
