//! abm on a host nobody prepared, and `abm doctor` agreeing with what runs
//! then do.
//!
//! Each condition is made in a mount namespace of the abm process's own
//! (created between fork and exec, so nothing outside it changes):
//! - `fresh`: no tracefs, debugfs, bpffs or securityfs mounted and no
//!   /var/lib/abm, as after a boot; `abm run`, `abm run --enforce` and
//!   `abm daemon` must work, and the watched command itself checks that
//!   nothing mounted tracefs or debugfs behind its back;
//! - `no BTF`: /sys/kernel/btf hidden behind an empty tmpfs;
//! - `no seccomp`: a seccomp filter that refuses seccomp(2) itself, as a
//!   container profile might, so no listener can be installed.
//!
//! In each, every line `abm doctor --json` prints is compared with what a
//! run does under the same condition.
mod common;

use std::{
    collections::BTreeMap,
    ffi::CString,
    os::unix::process::CommandExt as _,
    path::Path,
    process::{Command, Output},
};

use common::{daemon::Daemon, read_records, sh, TempDir, ABM};
use monitor::kernel::cgroup::parse_mountinfo;
use serde_json::Value;

/// File system types a fresh boot has not mounted.
const FRESH_UNMOUNTED: &[&str] = &["tracefs", "debugfs", "bpf", "securityfs"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Condition {
    Fresh,
    NoBtf,
    NoSeccomp,
}

/// Mount points of `types` in this process's table, deepest first (so
/// that nested ones go before their parents).
fn mount_points(types: &[&str]) -> Vec<CString> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut v: Vec<Vec<u8>> = parse_mountinfo(&text)
        .into_iter()
        .filter(|m| types.contains(&m.fstype.as_str()))
        .map(|m| m.mount_point)
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.iter().filter(|&&b| b == b'/').count()));
    v.into_iter().map(|p| CString::new(p).unwrap()).collect()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Puts `cmd` under `cond` (see the module documentation).
fn under(cmd: &mut Command, cond: Condition) -> &mut Command {
    // Everything the child needs is allocated here, before fork.
    let unmount = mount_points(FRESH_UNMOUNTED);
    let (root, none, tmpfs) = (c("/"), c("none"), c("tmpfs"));
    let var_lib = c("/var/lib");
    let btf = c("/sys/kernel/btf");
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe system calls on memory prepared above.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return fail();
            }
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            if libc::mount(
                none.as_ptr(),
                root.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            for _ in 0..3 {
                for p in &unmount {
                    libc::umount2(p.as_ptr(), libc::MNT_DETACH);
                }
            }
            let mount_tmpfs = |at: &CString| {
                libc::mount(
                    tmpfs.as_ptr(),
                    at.as_ptr(),
                    tmpfs.as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            // A fresh host has no /var/lib/abm: abm makes what it needs.
            if mount_tmpfs(&var_lib) != 0 {
                return fail();
            }
            match cond {
                Condition::Fresh => {}
                Condition::NoBtf => {
                    if mount_tmpfs(&btf) != 0 {
                        return fail();
                    }
                }
                Condition::NoSeccomp => deny_seccomp()?,
            }
            Ok(())
        })
    }
}

/// Installs a classic seccomp filter that fails seccomp(2) with EPERM.
/// Async-signal-safe: the program lives on the stack.
fn deny_seccomp() -> std::io::Result<()> {
    const NR_OFF: u32 = 0; // offsetof(struct seccomp_data, nr)
    let ld = |k| libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let prog = [
        ld(NR_OFF),
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: libc::SYS_seccomp as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut _,
    };
    // SAFETY: prctl(2) with a valid sock_fprog that outlives the call.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `abm doctor --json` under `cond`: name -> (available, detail), and its
/// exit code.
fn doctor(cond: Condition) -> (BTreeMap<String, (bool, String)>, i32) {
    let o = under(Command::new(ABM).args(["doctor", "--json"]), cond)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor printed no JSON under {cond:?} ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let lines = v
        .as_array()
        .expect("a list of capabilities")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                (
                    c["available"].as_bool().unwrap(),
                    c["detail"].as_str().unwrap_or("").to_owned(),
                ),
            )
        })
        .collect();
    (lines, o.status.code().unwrap_or(-1))
}

/// The watched command: a private key is read, a file deleted, and the
/// command prints how many tracefs and debugfs mounts its own mount table
/// has.
const SCRIPT: &str = "cat \"$HOME/.ssh/id_ed25519\" > /dev/null; rm victim; \
     grep -cE ' - (tracefs|debugfs) ' /proc/self/mountinfo || true";

/// Under `--enforce`: a scratch file the command made itself is removed.
const ENFORCED_SCRIPT: &str = "echo x > scratch.tmp; rm scratch.tmp; echo done";

/// `abm run [extra] -- sh -c SCRIPT` under `cond` with HOME = `home`.
fn run(
    t: &TempDir,
    ws: &Path,
    home: &Path,
    cond: Condition,
    extra: &[&str],
    script: &str,
) -> (Output, Vec<Value>) {
    let trace = t.join(&format!("{cond:?}-{}.jsonl", extra.len()));
    let o = under(
        Command::new(ABM)
            .args(["run", "--trace"])
            .arg(&trace)
            .arg("--workspace")
            .arg(ws)
            .args(extra)
            .args(["--", "sh", "-c", script])
            .current_dir(ws)
            .env("HOME", home),
        cond,
    )
    .output()
    .unwrap();
    let records = if trace.exists() {
        read_records(&trace)
    } else {
        Vec::new()
    };
    (o, records)
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Checks one condition: doctor's lines against a run, an enforced run and
/// (where the tracepoint backend works) the daemon.
fn check(cond: Condition) {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        common::skip_or_fail(
            "ebpf",
            "not root: making mount namespaces and loading BPF need root",
        );
        return;
    }
    let t = TempDir::new("fresh");
    let ws = TempDir::new("fresh-ws");
    let home = TempDir::new("fresh-home");
    sh("mkdir -p .ssh && echo KEY > .ssh/id_ed25519", home.path());
    let (caps, doctor_exit) = doctor(cond);
    let has = |name: &str| {
        caps.get(name)
            .unwrap_or_else(|| panic!("doctor has no line {name} under {cond:?}: {caps:?}"))
            .0
    };
    for needed in [
        "root",
        "btf",
        "tracepoint_backend",
        "sensitive_reads",
        "object_identity",
        "container_following",
        "seccomp_user_notif",
        "enforce",
        "self_guard",
    ] {
        assert!(
            caps.contains_key(needed),
            "doctor has no line {needed}: {caps:?}"
        );
    }
    let backend = has("tracepoint_backend");
    assert_eq!(
        doctor_exit == 0,
        backend,
        "doctor's exit code follows tracepoint_backend under {cond:?}"
    );
    match cond {
        Condition::Fresh | Condition::NoSeccomp => {
            assert!(
                backend,
                "no tracefs, debugfs, bpffs or securityfs is needed: {caps:?}"
            );
            assert!(has("sensitive_reads"), "{caps:?}");
        }
        Condition::NoBtf => {
            assert!(!has("btf") && !backend, "{caps:?}");
        }
    }
    assert_eq!(
        has("seccomp_user_notif"),
        cond != Condition::NoSeccomp,
        "{caps:?}"
    );
    assert_eq!(has("self_guard"), cond != Condition::NoSeccomp, "{caps:?}");
    assert_eq!(
        has("enforce"),
        backend && cond != Condition::NoSeccomp,
        "{caps:?}"
    );

    // A plain run.
    sh("echo data > victim", ws.path());
    let (o, records) = run(&t, ws.path(), home.path(), cond, &[], SCRIPT);
    assert_eq!(
        o.status.success(),
        backend,
        "doctor said tracepoint_backend={backend}; the run: {}",
        text(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    if !backend {
        assert!(
            err.contains("BTF"),
            "the run says why it cannot start: {}",
            text(&o)
        );
        assert!(ws.join("victim").exists(), "nothing ran");
    } else {
        let victim = ws.s("victim");
        let unlink = records
            .iter()
            .find(|r| r["type"] == "event" && r["op"] == "unlink" && r["path"] == victim.as_str())
            .unwrap_or_else(|| panic!("no unlink of {victim}: {}", text(&o)));
        assert_eq!(unlink["result"], 0, "{unlink}");
        let key = home.s(".ssh/id_ed25519");
        let read = records
            .iter()
            .any(|r| r["type"] == "event" && r["op"] == "read" && r["path"] == key.as_str());
        assert_eq!(
            read,
            has("sensitive_reads"),
            "doctor's sensitive_reads line and the run agree: {}",
            text(&o)
        );
        assert!(
            !err.contains("not recorded"),
            "no sensitive read was lost: {}",
            text(&o)
        );
        // The self guard (a seccomp filter in the command) is optional: one
        // warning and a header field when seccomp(2) is refused.
        assert_eq!(
            err.contains("self guard off"),
            !has("self_guard"),
            "{}",
            text(&o)
        );
        assert_eq!(
            records[0]["extra"]["self_guard_off"].is_string(),
            !has("self_guard"),
            "{}",
            records[0]
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "0",
            "abm mounted neither tracefs nor debugfs in the command's namespace"
        );
    }

    // An enforced run: seccomp on this host (no BPF LSM here), or the reason.
    let (o, records) = run(
        &t,
        ws.path(),
        home.path(),
        cond,
        &["--enforce", "--no-prompt"],
        ENFORCED_SCRIPT,
    );
    assert_eq!(
        o.status.success(),
        has("enforce"),
        "doctor said enforce={}; the run: {}",
        has("enforce"),
        text(&o)
    );
    if has("enforce") {
        assert_eq!(records[0]["type"], "header");
        let backends = records[0]["backends"].to_string();
        assert!(
            backends.contains("seccomp") || backends.contains("lsm"),
            "{backends}"
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "done",
            "{}",
            text(&o)
        );
        assert!(!ws.join("scratch.tmp").exists(), "{}", text(&o));
    } else {
        let why = if backend { "--enforce" } else { "BTF" };
        assert!(err_of(&o).contains(why), "the run says why: {}", text(&o));
        assert!(
            o.stdout.is_empty(),
            "nothing ran without its guard: {}",
            text(&o)
        );
    }

    // The daemon.
    if backend {
        let dir = TempDir::new("fresh-daemon");
        let mut d = Daemon::start_with(&dir, &common::daemon::config(&dir, ""), |c| {
            under(c, cond);
        });
        let status = d.status();
        assert!(status.is_object(), "{status}");
        assert_eq!(
            d.stop(),
            0,
            "the daemon stops cleanly; log:\n{}",
            d.log_text()
        );
        assert!(!d.log_text().contains("ERROR"), "{}", d.log_text());
    }
}

fn err_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_fresh_host_needs_no_tracefs_debugfs_bpffs_or_securityfs() {
    check(Condition::Fresh);
}

#[test]
fn without_btf_doctor_and_run_both_say_so() {
    check(Condition::NoBtf);
}

#[test]
fn without_seccomp_doctor_and_enforce_both_say_so() {
    check(Condition::NoSeccomp);
}
