# Removes the cache directory and nothing else.
rm -rf build/cache
