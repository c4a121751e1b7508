# Deletes the whole development requirements file.
rm requirements-dev.txt
