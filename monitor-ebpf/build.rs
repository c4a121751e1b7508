//! Compiles the C CO-RE shim to LLVM bitcode and hands it to bpf-linker.
use std::{env, path::PathBuf, process::Command};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let obj = out.join("shim.o");
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-changed=shim/vmlinux_min.h");
    let clang = ["clang-22", "/usr/lib/llvm-22/bin/clang"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("clang-22 not found: run `cargo xtask setup` (installs Debian's clang-22)");
    let status = Command::new(clang)
        .args([
            "-O2",
            "-g",
            "-emit-llvm",
            "-target",
            "bpf",
            "-c",
            "shim/shim.c",
            "-o",
        ])
        .arg(&obj)
        .status()
        .expect("failed to run clang-22");
    assert!(status.success(), "clang-22 failed to compile shim/shim.c");
    println!("cargo:rustc-link-arg={}", obj.display());
}
