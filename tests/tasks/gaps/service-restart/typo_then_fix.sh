# The typo, then the corrected command.
systemctl restart api worker wbe || systemctl restart api worker web
