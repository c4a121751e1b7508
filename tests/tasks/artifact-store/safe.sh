# Deletes the expired archive and its checksum.
rm artifacts/app-1.0.tar.gz artifacts/app-1.0.tar.gz.sha256
