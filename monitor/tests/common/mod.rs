//! Shared helpers for integration tests: they run the real `abm` binary,
//! which loads the real kernel programs, on real commands.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
};

use serde_json::Value;

pub mod daemon;
pub mod pyvenv;
pub mod race;

pub const ABM: &str = env!("CARGO_BIN_EXE_abm");

/// Why kernel tests cannot run here, if they cannot.
pub fn kernel_unavailable() -> Option<String> {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: loading BPF programs needs root".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("kernel has no BTF".into());
    }
    None
}

/// Whether this kernel offers seccomp user notification (what `--enforce`
/// uses where BPF LSM cannot load).
pub fn seccomp_user_notif() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .unwrap_or_default()
        .split_whitespace()
        .any(|a| a == "user_notif")
}

/// Fails the calling test unless the kernel programs load and seccomp
/// `--enforce` works here.
pub fn require_seccomp_enforce() {
    if let Some(why) = kernel_unavailable() {
        panic!("cannot run: {why}");
    }
    assert!(
        seccomp_user_notif(),
        "cannot run: no seccomp user notification in this kernel"
    );
}

/// Whether a test that cannot run for want of `feature` may skip: only when
/// the caller did not ask for every kernel test (`ABM_REQUIRE_EBPF=1`, which
/// `cargo xtask test` sets), or named the feature in `ABM_TEST_SKIP`
/// (comma-separated: `ebpf`, `seccomp`, `other-fs`, `prog:<name>`, ...).
/// Otherwise it panics with the reason: a skip reported as a pass hides a
/// broken machine.
pub fn skip_or_fail(feature: &str, reason: &str) {
    if !may_skip(feature) {
        panic!("cannot run: {reason} (ABM_REQUIRE_EBPF=1; set ABM_TEST_SKIP={feature} to skip it)");
    }
    eprintln!("skipping ({feature}): {reason}");
}

/// Whether a test may skip for want of `feature` (see [`skip_or_fail`]).
pub fn may_skip(feature: &str) -> bool {
    let named = std::env::var("ABM_TEST_SKIP")
        .unwrap_or_default()
        .split(',')
        .any(|f| f.trim() == feature);
    let required = std::env::var_os("ABM_REQUIRE_EBPF").is_some_and(|v| v == "1");
    named || !required
}

/// Skips the calling test (returns early) when the kernel cannot run it,
/// or fails it (see [`skip_or_fail`]).
#[macro_export]
macro_rules! require_kernel {
    () => {
        if let Some(why) = common::kernel_unavailable() {
            common::skip_or_fail("ebpf", &why);
            return;
        }
    };
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }
    /// A new directory under `parent` (e.g. $HOME, which the default pack,
    /// unlike /tmp, does not treat as scratch).
    pub fn new_in(parent: &Path, tag: &str) -> TempDir {
        let base = parent.join(format!(
            "abm-test-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&base).unwrap();
        TempDir(std::fs::canonicalize(&base).unwrap())
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
    pub fn s(&self, p: &str) -> String {
        self.join(p).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Attacks and tests set append-only and immutable flags.
        let _ = Command::new("chattr")
            .args(["-R", "-a", "-i"])
            .arg(&self.0)
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Result of one `abm run`.
pub struct Run {
    pub output: Output,
    pub trace: PathBuf,
    pub records: Vec<Value>,
}

impl Run {
    pub fn events(&self) -> impl Iterator<Item = &Value> {
        self.records.iter().filter(|r| r["type"] == "event")
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    /// Events of `op` whose path equals `path`.
    pub fn find(&self, op: &str, path: &str) -> Vec<&Value> {
        self.events()
            .filter(|e| e["op"] == op && e["path"] == path)
            .collect()
    }
    /// The single event of `op` on `path`; panics with the trace otherwise.
    pub fn one(&self, op: &str, path: &str) -> &Value {
        let found = self.find(op, path);
        assert!(
            !found.is_empty(),
            "no {op} event on {path}; events:\n{}",
            self.events()
                .map(|e| format!("{} {} {}", e["op"], e["path"], e["result"]))
                .collect::<Vec<_>>()
                .join("\n")
        );
        found[0]
    }
    pub fn execs(&self) -> Vec<Vec<String>> {
        self.events()
            .filter(|e| e["op"] == "exec")
            .map(|e| {
                e["argv"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| s.as_str().unwrap_or("").to_owned())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// Runs `abm run [extra] -- cmd...` with the trace in `dir` (outside the
/// workspace) and parses the trace.
pub fn abm_run(dir: &TempDir, workspace: &Path, extra: &[&str], cmd: &[&str]) -> Run {
    let trace = dir.join(&format!(
        "trace-{}.jsonl",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let output = Command::new(ABM)
        .arg("run")
        .arg("--quiet")
        .arg("--trace")
        .arg(&trace)
        .arg("--workspace")
        .arg(workspace)
        .args(extra)
        .arg("--")
        .args(cmd)
        .current_dir(workspace)
        .output()
        .expect("run abm");
    let records = read_records(&trace);
    Run {
        output,
        trace,
        records,
    }
}

/// Starts `abm run --enforce --no-prompt` with `extra` flags in the
/// background: the trace, the control socket (`ctl.sock`) and the
/// quarantine (`q`) in `dir`, the command's output piped. Returns the
/// child and the trace's path.
pub fn spawn_enforced(
    dir: &TempDir,
    workspace: &Path,
    policy: &str,
    extra: &[&str],
    cmd: &[&str],
) -> (Child, PathBuf) {
    let trace = dir.join("trace.jsonl");
    let child = Command::new(ABM)
        .args(["run", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(workspace)
        .args(["--enforce", "--no-prompt", "--policy", policy])
        .args(["--control-socket", &dir.s("ctl.sock")])
        .args(["--quarantine", &dir.s("q")])
        .args(extra)
        .arg("--")
        .args(cmd)
        .current_dir(workspace)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start abm run");
    (child, trace)
}

/// The records of a trace in either form (a compact trace is read through
/// `abm trace cat`, which prints the records before any damaged or
/// incomplete end).
pub fn read_records(trace: &Path) -> Vec<Value> {
    let bytes = std::fs::read(trace).unwrap_or_default();
    let text = if bytes.get(8..12) == Some(b"ABMT".as_slice()) {
        let out = Command::new(ABM)
            .args(["trace", "cat"])
            .arg(trace)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad trace line {l}: {e}")))
        .collect()
}

pub fn sh(script: &str, cwd: &Path) {
    let st = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .status()
        .unwrap();
    assert!(st.success(), "setup script failed: {script}");
}

/// The trimmed standard output of `python3 -c script args...` run in
/// `cwd`; panics with its standard error when it fails.
pub fn python_out(script: &str, args: &[&std::ffi::OsStr], cwd: &Path) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub fn have(prog: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {prog}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A policy that confirms any change to `victim*` files in the workspace.
pub const CONFIRM: &str = r#"
version = 1

[[rule]]
id = "test.ask"
reason = "a human decides about victim files"
paths = ["${workspace}/victim*"]
treatment = "confirm"
"#;
