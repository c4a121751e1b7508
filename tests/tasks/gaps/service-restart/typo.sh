# A typo: systemctl refuses the unknown unit `wbe` and restarts nothing.
systemctl restart api worker wbe
