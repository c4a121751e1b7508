# project: six
# what: run the black formatter, check the module still imports, commit the result
session() {
    black -q six.py test_six.py
    python3 -c 'import six; print(six.__version__)'
    git commit -q -am "style: black"
}
