# Shared fix: lower-cases in the normalizer, which also changes orders.
sed -i "s/return code.strip()/return code.strip().lower()/" src/normalizer.py
