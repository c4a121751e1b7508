# Removes the release output instead of the cache.
rm -rf build/release
