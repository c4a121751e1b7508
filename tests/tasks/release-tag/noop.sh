# Only looks at the remote.
git ls-remote --tags origin
