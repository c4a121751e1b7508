#!/bin/sh
# Creates the repository the session workload clones (once per bench run,
# outside timing): the sources of a published crate (a Rust library with
# its own tests), imported as one commit on branch main.
#
# usage: session_repo.sh CRATE_SOURCE_DIR DIR
set -e
crate=$1
dir=$2
. "$(dirname "$0")/git_env.sh"
rm -rf "$dir"
mkdir -p "$dir"
cp -R "$crate"/. "$dir"/
cd "$dir"
# Published crates carry no lock file and no ignore file of their own.
rm -f Cargo.lock .cargo-ok .cargo_vcs_info.json
printf '/target\nCargo.lock\n' > .gitignore
git init -q -b main .
git add -A
git commit -q -m "import"
