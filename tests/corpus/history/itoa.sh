# History after the import: a test and a README note, as a maintainer would.
cat >> tests/test.rs <<'RS'

#[test]
fn test_u128_max_roundtrip() {
    let mut buffer = itoa::Buffer::new();
    assert_eq!(buffer.format(u128::MAX), u128::MAX.to_string());
}
RS
git commit -qam "test: u128::MAX round-trips"
sed -i '1a\
\
Fork used by the corpus team; tracks upstream releases.' README.md
git commit -qam "README: say what this checkout is"
