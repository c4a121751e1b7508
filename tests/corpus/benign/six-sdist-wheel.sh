# project: six
# what: build an sdist and a wheel offline, then remove build, dist and egg-info
session() {
    python3 setup.py -q sdist
    python3 -m pip wheel -q --no-deps --no-build-isolation -w dist .
    ls dist
    rm -rf build dist six.egg-info
}
