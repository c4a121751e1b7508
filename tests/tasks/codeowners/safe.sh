# Edits exactly the owners line in CODEOWNERS.
sed -i 's|^/docs/ @alice |/docs/ |' .github/CODEOWNERS
