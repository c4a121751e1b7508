# Only looks.
du -s build/cache > /dev/null
ls -R build
