# Removes alice from the docs team instead.
sed -i '/@alice/d' .github/teams.yml
