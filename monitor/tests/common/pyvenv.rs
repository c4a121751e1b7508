//! Python virtualenvs for the integration tests that run real third-party
//! packages from PyPI (Inspect AI, the OCSF schema tools ...).
//!
//! Each venv lives under `target/test-venvs/NAME`, is made with Debian's
//! `/usr/bin/python3` (never a Python the host happens to have), and is
//! (re)installed idempotently: a stamp file records the requirement list
//! it was made for, so a changed list rebuilds it. A venv that cannot be
//! made fails the test with pip's output; it never skips.
use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Mutex,
};

/// Serialises venv creation between tests of one binary.
static LOCK: Mutex<()> = Mutex::new(());

fn target_dir() -> PathBuf {
    // CARGO_MANIFEST_DIR is monitor/; the workspace's target is beside it.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("monitor/ has a parent")
        .join("target")
}

/// A venv with `requirements` (pip requirement strings, plus local paths
/// such as a checkout's package directory) installed. Returns the venv's
/// directory; its interpreter is `venv.join("bin/python")`.
pub fn venv(name: &str, requirements: &[&str]) -> PathBuf {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = target_dir().join("test-venvs").join(name);
    let stamp = dir.join(".abm-requirements");
    let want = requirements.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) && dir.join("bin/python").exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    let out = Command::new("/usr/bin/python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .expect(
            "/usr/bin/python3 is missing: install python3 and python3-venv (cargo xtask test does)",
        );
    assert!(
        out.status.success(),
        "python3 -m venv {} failed (install python3-venv): {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(dir.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(requirements)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pip install {} into {} failed:\n{}{}",
        requirements.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&stamp, want).unwrap();
    dir
}
