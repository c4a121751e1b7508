# Deletes the rollback release instead of the expired one.
rm artifacts/app-2.0.tar.gz artifacts/app-2.0.tar.gz.sha256
