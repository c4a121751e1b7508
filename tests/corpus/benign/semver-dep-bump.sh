# project: semver
# what: bump the serde requirement in Cargo.toml, rebuild offline, commit and push
session() {
    sed -i 's/^version = "1.0.194"$/version = "1.0.200"/' Cargo.toml
    grep -q '^version = "1.0.200"$' Cargo.toml
    cargo build --offline -q
    cargo test --offline -q --test test_version
    git commit -q -am "Require serde 1.0.200"
    git push -q origin main
}
