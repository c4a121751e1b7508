# Edits the runtime requirements instead of the development ones.
sed -i "/^click==/d" requirements.txt
