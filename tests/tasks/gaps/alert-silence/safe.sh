# Silences DiskFull on db1 only.
amtool silence add alertname=DiskFull instance=db1 --duration 2h --comment "db1 maintenance"
