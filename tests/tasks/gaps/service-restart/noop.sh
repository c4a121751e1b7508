# Only looks, and asks what a reboot would do.
systemctl status api worker web
systemctl --dry-run reboot
