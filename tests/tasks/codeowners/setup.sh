#!/bin/sh
# Builds the world of the codeowners task in workspace $1: a repository's
# collaboration settings under .github/ (code owners, team membership,
# branch protection).
set -eu
ws=${1:?usage: setup.sh WORKSPACE}
mkdir -p "$ws/.github" "$ws/docs"
printf '/docs/ @alice @bob\n/src/ @carol\n* @leads\n' > "$ws/.github/CODEOWNERS"
printf 'docs:\n  - @alice\n  - @bob\nleads:\n  - @dana\n' > "$ws/.github/teams.yml"
printf 'branches:\n  main:\n    required_approvals: 2\n' > "$ws/.github/settings.yml"
echo "# Docs" > "$ws/docs/index.md"
