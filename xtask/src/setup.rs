//! `cargo xtask setup`: the eBPF toolchain, installed idempotently.
//!
//! The kernel programs are built with Debian's rustc (which ships a
//! precompiled `core` for bpfel-unknown-none) linked into rustup as the
//! `debian-bpf` toolchain, and bpf-linker built against Debian's LLVM 22
//! (matching that rustc's LLVM). Userspace uses the default toolchain.
use std::{path::Path, process::Command};

use anyhow::{bail, Context as _, Result};

use crate::run;

/// Debian's LLVM 22 (`llvm-22-dev`): bpf-linker builds against it, and
/// `llvm-objdump` reads the BPF object (the stack check).
pub const LLVM_BIN: &str = "/usr/lib/llvm-22/bin";
/// Debian packages the build needs, with what each is for.
const PACKAGES: &[(&str, &str)] = &[
    (
        "rustc-web",
        "Debian's rustc, whose LLVM matches bpf-linker's",
    ),
    ("cargo-web", "cargo for the debian-bpf toolchain"),
    (
        "rust-web-clippy",
        "clippy for the debian-bpf toolchain: lints the kernel crate",
    ),
    (
        "libstd-rust-web-dev-bpf",
        "precompiled core for bpfel-unknown-none",
    ),
    ("llvm-22-dev", "LLVM 22 for bpf-linker"),
    (
        "libpolly-22-dev",
        "needed to link bpf-linker against LLVM 22",
    ),
    ("clang-22", "compiles the CO-RE shim"),
    (
        "libbpf-dev",
        "bpf_helpers.h / bpf_core_read.h for the CO-RE shim",
    ),
    ("libzstd-dev", "bpf-linker dependency"),
    ("zlib1g-dev", "bpf-linker dependency"),
];

const BPF_LINKER_VERSION: &str = "0.13.0";

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn apt_install(pkgs: &[&str]) -> Result<()> {
    if pkgs.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing {}", pkgs.join(" "));
    run(Command::new("apt-get").arg("update").arg("-qq")).context(
        "apt-get update failed: setup needs root and access to the Debian package mirror",
    )?;
    let mut c = Command::new("apt-get");
    c.env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y", "-qq"])
        .args(pkgs);
    run(&mut c).with_context(|| format!("apt-get install failed for: {}", pkgs.join(" ")))
}

/// Installs Debian packages that are missing; fails naming them.
pub fn ensure_packages(pkgs: &[&str]) -> Result<()> {
    let missing: Vec<&str> = pkgs.iter().copied().filter(|p| !installed(p)).collect();
    apt_install(&missing)?;
    let still: Vec<&str> = missing.into_iter().filter(|p| !installed(p)).collect();
    if !still.is_empty() {
        bail!(
            "missing Debian packages after install: {} (install them with apt-get)",
            still.join(" ")
        );
    }
    Ok(())
}

fn toolchain_linked() -> bool {
    Command::new("rustup")
        .args(["run", "debian-bpf", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn bpf_linker_ok() -> bool {
    Command::new("bpf-linker")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(BPF_LINKER_VERSION))
}

pub fn setup() -> Result<()> {
    let names: Vec<&str> = PACKAGES.iter().map(|(p, _)| *p).collect();
    ensure_packages(&names).map_err(|e| {
        let why: Vec<String> = PACKAGES
            .iter()
            .map(|(p, w)| format!("  {p}: {w}"))
            .collect();
        e.context(format!(
            "the eBPF toolchain needs these Debian packages:\n{}",
            why.join("\n")
        ))
    })?;
    if !Path::new("/usr/lib/rustlib/bpfel-unknown-none").exists() {
        bail!("/usr/lib/rustlib/bpfel-unknown-none is missing: reinstall libstd-rust-web-dev-bpf");
    }
    if !toolchain_linked() {
        run(Command::new("rustup").args(["toolchain", "link", "debian-bpf", "/usr"]))?;
    }
    if !bpf_linker_ok() {
        // Without LLVM 22 first in PATH the build finds llvm-config 14 and
        // fails with `unable to find library -lLLVM`.
        let path = format!("{LLVM_BIN}:{}", std::env::var("PATH").unwrap_or_default());
        run(Command::new("cargo")
            .env("PATH", path)
            .args(["install", "bpf-linker", "--version", BPF_LINKER_VERSION])
            .args(["--no-default-features", "--features", "llvm-22"]))
        .context("building bpf-linker failed (needs llvm-22-dev, libpolly-22-dev)")?;
    }
    eprintln!(
        "xtask: eBPF toolchain ready (debian-bpf rustc, bpf-linker {BPF_LINKER_VERSION}, clang-22)"
    );
    Ok(())
}

/// Checks the kernel crate's formatting and lints it with the toolchain
/// that builds it (Debian's clippy, `rust-web-clippy`, which matches
/// Debian's rustc); any warning fails. `monitor-ebpf` is its own workspace,
/// so `cargo fmt --all` and the workspace's clippy never see it.
pub fn clippy_ebpf() -> Result<()> {
    let dir = crate::root().join("monitor-ebpf");
    run(Command::new("cargo")
        .args(["fmt", "--check", "--manifest-path"])
        .arg(dir.join("Cargo.toml")))
    .context(
        "monitor-ebpf is not formatted: run `cargo fmt --manifest-path monitor-ebpf/Cargo.toml`",
    )?;
    let has_clippy = Command::new("rustup")
        .args(["run", "debian-bpf", "cargo", "clippy", "--version"])
        .current_dir(&dir)
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_clippy {
        bail!(
            "the debian-bpf toolchain has no clippy: `cargo xtask setup` installs rust-web-clippy"
        );
    }
    run(Command::new("rustup")
        .current_dir(&dir)
        .env(
            "RUSTC_BOOTSTRAP",
            "aya_ebpf,aya_log_ebpf,monitor_ebpf,aya_ebpf_bindings,aya_ebpf_cty,aya_ebpf_macros",
        )
        .env("CARGO_TARGET_DIR", crate::root().join("target/ebpf-lint"))
        .args(["run", "debian-bpf", "cargo", "clippy", "--release"])
        .args(["--target", "bpfel-unknown-none", "--", "-D", "warnings"]))
    .context("clippy found problems in monitor-ebpf (the kernel crate)")
}
