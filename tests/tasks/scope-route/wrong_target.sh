# Edits the other caller of the normalizer.
sed -i "s/return normalize(code)/return normalize(code).lower()/" src/orders/handler.py
