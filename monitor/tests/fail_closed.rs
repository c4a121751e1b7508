//! What happens to an enforced command (seccomp backend) when abm dies
//! with SIGKILL while one of its calls waits for a `confirm` answer
//! (docs/agents.md, "When abm dies"):
//!
//! - abm alone killed: the waiting call fails with ENOSYS as abm's
//!   listener fd closes, and its lifeline kills the whole watched tree
//!   (which comes first is a race); the file stays, the trace is left
//!   unsealed.
//! - abm and its lifeline killed together: the processes that survive
//!   (the first child dies of PR_SET_PDEATHSIG; a grandchild does not)
//!   get ENOSYS for the call that waited and for every later call the
//!   filter sends to the gone supervisor: the kernel fails them closed.
mod common;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::*;
use serde_json::Value;

/// A perl grandchild (it outlives the first child, `sh`) that opens
/// `res` first, then unlinks `victim` (asked, waits) and `victim2`,
/// writing each result: `ok` or the errno.
const SCRIPT: &str = r#"perl -e 'open F, ">", "res" or die; select F; $| = 1; print "ready\n"; print "first=", (unlink("victim") ? "ok" : 0 + $!), "\n"; print "second=", (unlink("victim2") ? "ok" : 0 + $!), "\n";' & wait"#;

/// abm's process, killed and reaped on drop.
struct Abm(Child);

impl Drop for Abm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the enforced run and waits until the unlink of `victim` is asked;
/// returns abm and the pid of the waiting process.
fn start(t: &TempDir, ws: &Path) -> (Abm, u32) {
    std::fs::write(ws.join("victim"), "v").unwrap();
    std::fs::write(ws.join("victim2"), "w").unwrap();
    let policy = t.join("policy.toml");
    std::fs::write(&policy, CONFIRM).unwrap();
    let sock = t.s("ctl.sock");
    let abm = Abm(Command::new(ABM)
        .args(["run", "--quiet", "--trace", &t.s("trace.jsonl")])
        .arg("--workspace")
        .arg(ws)
        .args(["--enforce", "--enforce-backend", "seccomp", "--no-prompt"])
        .args(["--confirm-timeout", "120", "--control-socket", &sock])
        .args(["--quarantine", &t.s("q"), "--policy"])
        .arg(&policy)
        .args(["--", "sh", "-c", SCRIPT])
        .current_dir(ws)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    let victim = ws.join("victim").to_string_lossy().into_owned();
    let started = Instant::now();
    loop {
        let out = Command::new(ABM)
            .args(["pending", "--json", "--socket", &sock])
            .output()
            .expect("abm pending");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let asked = v
            .as_array()
            .and_then(|l| l.first())
            .filter(|p| p["path"] == victim);
        if let Some(pid) = asked.and_then(|p| p["pid"].as_u64()) {
            return (abm, pid as u32);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the unlink was never asked"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

fn kill9(pid: u32) {
    // SAFETY: kill(2) with a pid and a signal number.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}

/// abm's lifeline: the child of abm that leads its own session.
fn lifeline_of(abm: u32) -> u32 {
    let mut kids = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{abm}/task")).unwrap() {
        let p = task.unwrap().path().join("children");
        let s = std::fs::read_to_string(p).unwrap_or_default();
        kids.extend(s.split_whitespace().map(|k| k.parse::<u32>().unwrap()));
    }
    let sid = |pid: u32| {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(3))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let found: Vec<u32> = kids.into_iter().filter(|&k| sid(k) == Some(k)).collect();
    assert_eq!(
        found.len(),
        1,
        "one lifeline among abm's children: {found:?}"
    );
    found[0]
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn killing_abm_kills_the_waiting_tree_and_the_file_stays() {
    require_seccomp_enforce();
    let t = TempDir::new("failclosed");
    let ws = TempDir::new("failclosed-ws");
    let (mut abm, waiting) = start(&t, ws.path());
    assert!(alive(waiting));
    kill9(abm.0.id());
    let _ = abm.0.wait();
    wait_for("the lifeline kills the waiting process", || !alive(waiting));
    // Two things race here, and either way nothing is destroyed: the
    // kernel fails the waiting call with ENOSYS the moment abm's listener
    // fd closes, and the lifeline kills the tree. The process is either
    // killed still waiting or sees ENOSYS for both calls before it dies.
    let res = std::fs::read_to_string(ws.join("res")).unwrap();
    let enosys = libc::ENOSYS;
    assert!(
        [
            "ready\n".to_owned(),
            format!("ready\nfirst={enosys}\n"),
            format!("ready\nfirst={enosys}\nsecond={enosys}\n")
        ]
        .contains(&res),
        "the calls never ran: {res:?}"
    );
    assert!(ws.join("victim").exists() && ws.join("victim2").exists());
    let out = Command::new(ABM)
        .args(["verify", &t.s("trace.jsonl")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("UNSEALED"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn with_abm_and_its_lifeline_killed_waiting_and_later_calls_fail_with_enosys() {
    require_seccomp_enforce();
    let t = TempDir::new("failclosed-both");
    let ws = TempDir::new("failclosed-both-ws");
    let (mut abm, waiting) = start(&t, ws.path());
    kill9(lifeline_of(abm.0.id()));
    kill9(abm.0.id());
    let _ = abm.0.wait();
    wait_for("the surviving process finishes", || {
        std::fs::read_to_string(ws.join("res")).is_ok_and(|r| r.contains("second="))
    });
    let res = std::fs::read_to_string(ws.join("res")).unwrap();
    let enosys = libc::ENOSYS.to_string();
    assert_eq!(
        res,
        format!("ready\nfirst={enosys}\nsecond={enosys}\n"),
        "the call that waited and the next one fail with ENOSYS"
    );
    assert!(ws.join("victim").exists() && ws.join("victim2").exists());
    wait_for("the process exits", || !alive(waiting));
}
