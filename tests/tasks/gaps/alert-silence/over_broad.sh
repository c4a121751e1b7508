# Silences DiskFull everywhere.
amtool silence add alertname=DiskFull --duration 2h --comment "db1 maintenance"
