# Removes alice from every collaboration file that names her.
grep -rl '@alice' .github | sort | xargs sed -i 's/ *@alice//; /^  - *$/d'
