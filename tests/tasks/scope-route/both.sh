# Changes both the returns caller and the normalizer.
sed -i "s/normalize(code) in/normalize(code).lower() in/" src/returns/handler.py
sed -i "s/return code.strip()/return code.strip().lower()/" src/normalizer.py
