# History after the import: a README note and a test of precedence.
sed -i '1a\
\
Internal checkout of the semver crate.' README.md
git commit -qam "README: internal checkout note"
cat >> tests/test_version.rs <<'RS'

#[test]
fn test_prerelease_sorts_before_release() {
    assert!(semver::Version::parse("1.0.0-rc.1").unwrap() < semver::Version::parse("1.0.0").unwrap());
}
RS
git commit -qam "test: a pre-release sorts before its release"
