# Moves exactly the flaky test.
mv tests/test_flaky.py tests/quarantine/
