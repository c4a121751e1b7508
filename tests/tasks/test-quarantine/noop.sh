# Only looks.
ls tests
cat pytest.ini
