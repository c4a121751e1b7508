# Only looks.
grep -n alice .github/CODEOWNERS
