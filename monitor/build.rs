//! Builds the kernel programs (`monitor-ebpf`) for bpfel-unknown-none with the
//! `debian-bpf` toolchain (see `cargo xtask setup`) and places the object in
//! OUT_DIR, where `monitor::probes` embeds it.
//!
//! `AYA_BUILD_SKIP=1` skips the kernel build (for userspace-only work); the
//! binary then reports at run time that it carries no kernel programs.
use std::{env, fs, path::PathBuf};

use anyhow::Context as _;

/// Crates of the kernel build that may use unstable features. Never `1`:
/// with `1` aya-build adds `-Z build-std=core`, which needs rust-src.
const BOOTSTRAP_CRATES: &str =
    "aya_ebpf,aya_log_ebpf,monitor_ebpf,aya_ebpf_bindings,aya_ebpf_cty,aya_ebpf_macros";

fn main() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR not set")?);
    let object = out_dir.join("monitor");
    println!("cargo:rerun-if-env-changed=AYA_BUILD_SKIP");
    if env::var("AYA_BUILD_SKIP").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true")) {
        if !object.exists() {
            fs::write(&object, b"")?;
        }
        return Ok(());
    }
    // SAFETY: build scripts are single-threaded at this point.
    unsafe { env::set_var("RUSTC_BOOTSTRAP", BOOTSTRAP_CRATES) };
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let ebpf_dir = manifest.join("../monitor-ebpf");
    let root_dir = ebpf_dir.to_str().context("non-UTF-8 path")?;
    for sub in [
        "src",
        "shim",
        "Cargo.toml",
        "build.rs",
        "../monitor-common/src",
    ] {
        println!("cargo:rerun-if-changed={root_dir}/{sub}");
    }
    // aya-build runs `cargo build --package monitor-ebpf` in the current
    // directory; the kernel crate is its own workspace, so run it from there.
    env::set_current_dir(&ebpf_dir)?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "monitor-ebpf",
            root_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom("debian-bpf"),
    )
    .context(
        "building the kernel programs failed; run `cargo xtask setup` to install the eBPF \
         toolchain (Debian rustc with BPF core, bpf-linker, clang-22)",
    )
}
