# Removes the whole build tree, cache included.
rm -rf build
