//! Telling a blocked process why: one line on the caller's own stderr.
//!
//! When enforcement refuses a call (a `deny` rule, a `confirm` that was
//! refused or timed out, a `preserve` that could not keep a copy), the
//! process that made the call normally sees only `Operation not permitted`.
//! An agent reading that output cannot tell a policy from a broken file
//! system. So abm writes one line, in a fixed greppable form, to the
//! caller's standard error:
//!
//! ```text
//! abm: denied unlink /w/.git/HEAD (repo.git-state-delete: deletes git's state). Ask the user; they can allow it with: abm approve 7
//! abm: denied unlink /etc/passwd (host.system-delete: ...). No approval path: the policy denies this; ask the user to change the policy.
//! ```
//!
//! How: `pidfd_open(pid)` then `pidfd_getfd(pidfd, 2)` duplicates the
//! caller's fd 2 into abm, which writes the line and closes its copy. The
//! line lands wherever the caller's stderr goes: its terminal, the pipe its
//! parent (an agent harness) reads, or the log file it was redirected to.
//!
//! Limits (docs/agents.md):
//! - fd 2 closed, or redirected to `/dev/null`: the line is lost (the
//!   decision is still in the trace). BPF LSM decisions reach abm after
//!   the call returned: the kernel stops the caller until the line is
//!   written (enforce::lsm, `hold_refused`), except where its fd 2 is a
//!   character device; a caller that was not held and has exited gets
//!   the line on its parent's fd 2.
//! - `pidfd_getfd` needs ptrace-mode attach access to the caller
//!   (`PTRACE_MODE_ATTACH_REALCREDS`): abm runs as root, so only a Yama
//!   `ptrace_scope` of 3 or an LSM that forbids ptrace stops it. Failures
//!   are counted, never fatal.
//! - The write never blocks abm: a pipe that stays full for
//!   [`WRITE_WAIT_MS`] loses the line.
//! - At most one line per process, rule and operation (an `rm -rf` of a
//!   protected tree prints one line, not thousands), and at most
//!   [`MAX_LINES`] per run.
use std::{
    collections::HashSet,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use crate::{
    record::{Action, Op},
    trace::note::Notified,
};

/// How long a write may wait for a full pipe.
pub const WRITE_WAIT_MS: i32 = 100;
/// Lines per run at most.
pub const MAX_LINES: u64 = 200;

/// What happened to the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Refused by a `deny` rule (or a failed `preserve`): no approval path.
    Denied,
    /// A `confirm` refused by a human (`abm deny`, `n` at the prompt), or
    /// an earlier refusal of the same action in this run.
    Refused,
    /// A `confirm` nobody answered in time.
    TimedOut,
    /// A `confirm` refused for now (BPF LSM: the kernel refuses first and
    /// an approval lets the retry through).
    AwaitingApproval,
    /// A `confirm` of an action approved before, refused once because the
    /// kernel's one-shot allowance was used (BPF LSM): the retry goes
    /// through without a question.
    ApprovedBefore,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Denied => "denied",
            Outcome::Refused => "refused",
            Outcome::TimedOut => "timed out",
            Outcome::AwaitingApproval => "held for approval",
            Outcome::ApprovedBefore => "refused once",
        }
    }
}

/// The stable one-line message. `request`: the approval id, when there is
/// an approval path.
pub fn message(
    outcome: Outcome,
    a: &Action,
    rule: &str,
    reason: &str,
    request: Option<u64>,
) -> String {
    let op = a.op.map(Op::name).unwrap_or("call");
    let what = match a.op {
        Some(Op::Exec) if a.argv.is_none() => a.path.clone().unwrap_or_default(),
        _ => a.object_text(),
    };
    let what: String = what.chars().filter(|c| !c.is_control()).take(300).collect();
    let reason: String = reason.chars().filter(|c| !c.is_control()).collect();
    let tail = match (outcome, request) {
        (Outcome::AwaitingApproval, Some(id)) => {
            format!("Ask the user; they can allow it with: abm approve {id} (then retry once)")
        }
        (Outcome::ApprovedBefore, Some(id)) => {
            format!("The user approved this action (request {id}): retry once, it goes through.")
        }
        (_, Some(id)) => format!("Ask the user; they can allow it with: abm approve {id}"),
        (_, None) => {
            "No approval path: the policy denies this; ask the user to change the policy.".into()
        }
    };
    format!(
        "abm: {} {op} {what} ({rule}: {reason}). {tail}\n",
        outcome.word()
    )
}

/// Delivers [`message`]s to callers; shared by the backends of one run.
pub struct Notifier {
    enabled: bool,
    seen: Mutex<HashSet<(u32, String, &'static str)>>,
    pub sent: AtomicU64,
    pub failed: AtomicU64,
    pub suppressed: AtomicU64,
}

impl Notifier {
    pub fn new(enabled: bool) -> Notifier {
        Notifier {
            enabled,
            seen: Mutex::new(HashSet::new()),
            sent: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Tells the caller of `a` (or, when it is gone, its parent) why its
    /// call failed. Never blocks longer than [`WRITE_WAIT_MS`].
    pub fn tell(
        &self,
        outcome: Outcome,
        a: &Action,
        rule: &str,
        reason: &str,
        request: Option<u64>,
    ) {
        if !self.enabled {
            return;
        }
        let op = a.op.map(Op::name).unwrap_or("call");
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if !seen.insert((a.pid, rule.to_owned(), op))
                || self.sent.load(Ordering::Relaxed) >= MAX_LINES
            {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let line = message(outcome, a, rule, reason, request);
        let targets = [a.tid, a.pid, a.ppid];
        let mut last = None;
        for pid in targets.into_iter().filter(|p| *p > 1) {
            match write_stderr_of(pid, line.as_bytes()) {
                Ok(()) => {
                    self.sent.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(e) => last = Some(e),
            }
        }
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(e) = last {
            tracing::debug!("could not tell pid {} why: {e}", a.pid);
        }
    }

    /// Counts for the trace's enforcement summary.
    pub fn counts(&self) -> Notified {
        Notified {
            enabled: self.enabled,
            sent: self.sent.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            suppressed: self.suppressed.load(Ordering::Relaxed),
        }
    }
}

/// Writes `bytes` to fd 2 of process `pid` through `pidfd_getfd`.
pub fn write_stderr_of(pid: u32, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: raw syscalls with integer arguments; the returned fds are
    // owned here and closed on drop.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
    if pidfd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pidfd_open returned a new fd.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    // SAFETY: as above.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), 2, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pidfd_getfd returned a new fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // O_NONBLOCK would change the caller's open file description too, so
    // wait for room with poll instead (a line is < PIPE_BUF: one write).
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut pfd, 1, WRITE_WAIT_MS) };
    if r <= 0 || pfd.revents & libc::POLLOUT == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "the caller's stderr is not writable",
        ));
    }
    let bytes = &bytes[..bytes.len().min(libc::PIPE_BUF)];
    // SAFETY: writing a valid buffer to an owned fd.
    let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Recent judged actions of the run, for agent-harness hooks
/// (`abm hook`, PostToolUse): the control socket's `recent` request
/// returns those in a time window. Kept: execs, and every action with a
/// verdict other than `accept` or with an enforcement decision; at most
/// [`RECENT_MAX`], oldest dropped first (the drop is counted).
#[derive(Default)]
pub struct Recent {
    inner: Mutex<RecentState>,
}

#[derive(Default)]
struct RecentState {
    items: std::collections::VecDeque<serde_json::Value>,
    dropped: u64,
    /// All actions seen, to report how many a window held.
    counts: std::collections::VecDeque<(u64, u64)>,
}

/// Records kept for `recent` at most.
pub const RECENT_MAX: usize = 4096;

impl Recent {
    /// Called with every batch of released records.
    pub fn record(&self, acts: &[Action]) {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for a in acts {
            let Some(op) = a.op else { continue };
            if !op.is_action() {
                continue;
            }
            if st.counts.back().map(|(t, _)| *t / 1_000_000_000) == Some(a.ktime_ns / 1_000_000_000)
            {
                if let Some(b) = st.counts.back_mut() {
                    b.1 += 1;
                }
            } else {
                st.counts.push_back((a.ktime_ns, 1));
                if st.counts.len() > 3600 {
                    st.counts.pop_front();
                }
            }
            let flagged = a
                .verdict
                .as_ref()
                .is_some_and(|v| v.treatment != crate::record::Treatment::Accept);
            if op != Op::Exec && !flagged && a.enforcement.is_none() {
                continue;
            }
            st.items.push_back(serde_json::json!({
                "ktime_ns": a.ktime_ns,
                "time": a.time,
                "pid": a.pid,
                "comm": a.comm,
                "op": op.name(),
                "path": a.path,
                "path2": a.path2,
                "argv": a.argv,
                "cwd": a.cwd,
                "result": a.result,
                "errno": a.errno,
                "verdict": a.verdict,
                "enforcement": a.enforcement,
            }));
            if st.items.len() > RECENT_MAX {
                st.items.pop_front();
                st.dropped += 1;
            }
        }
    }

    /// The records with `since_ns <= ktime_ns <= until_ns` (CLOCK_MONOTONIC),
    /// the number of actions in the window, and whether older records
    /// were dropped.
    pub fn window(&self, since_ns: u64, until_ns: u64) -> serde_json::Value {
        let st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let items: Vec<&serde_json::Value> = st
            .items
            .iter()
            .filter(|v| {
                let t = v["ktime_ns"].as_u64().unwrap_or(0);
                t >= since_ns && t <= until_ns
            })
            .collect();
        let oldest = st.items.front().and_then(|v| v["ktime_ns"].as_u64());
        let total: u64 = st
            .counts
            .iter()
            .filter(|(t, _)| *t + 1_000_000_000 > since_ns && *t <= until_ns)
            .map(|(_, n)| n)
            .sum();
        serde_json::json!({
            "records": items,
            "actions_in_window_approx": total,
            "incomplete": st.dropped > 0 && oldest.is_some_and(|o| o > since_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unlink(path: &str) -> Action {
        Action {
            op: Some(Op::Unlink),
            path: Some(path.into()),
            pid: 10,
            tid: 10,
            ..Default::default()
        }
    }

    #[test]
    fn message_forms_are_stable() {
        let a = unlink("/w/.git/HEAD");
        assert_eq!(
            message(Outcome::Refused, &a, "repo.git-state-delete", "deletes git's state", Some(7)),
            "abm: refused unlink /w/.git/HEAD (repo.git-state-delete: deletes git's state). Ask the user; they can allow it with: abm approve 7\n"
        );
        let m = message(Outcome::Denied, &a, "host.system-delete", "r", None);
        assert!(
            m.starts_with(
                "abm: denied unlink /w/.git/HEAD (host.system-delete: r). No approval path"
            ),
            "{m}"
        );
        let mut e = Action {
            op: Some(Op::Exec),
            argv: Some(vec!["git".into(), "reset".into(), "--hard\n".into()]),
            ..Default::default()
        };
        e.path = Some("/usr/bin/git".into());
        let m = message(Outcome::TimedOut, &e, "repo.reset-hard", "x", Some(2));
        assert!(
            m.starts_with("abm: timed out exec git reset --hard (repo.reset-hard: x)"),
            "{m}"
        );
        assert_eq!(m.matches('\n').count(), 1);
    }

    #[test]
    fn writes_to_a_pipe_of_another_process_and_once_per_rule() {
        use std::io::Read as _;
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let n = Notifier::new(true);
        let mut a = unlink("/x");
        a.pid = pid;
        a.tid = pid;
        n.tell(Outcome::Denied, &a, "r.one", "why", None);
        n.tell(Outcome::Denied, &a, "r.one", "why", None);
        child.kill().unwrap();
        child.wait().unwrap();
        let mut out = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, message(Outcome::Denied, &a, "r.one", "why", None));
        assert_eq!(n.sent.load(Ordering::Relaxed), 1);
        assert_eq!(n.suppressed.load(Ordering::Relaxed), 1);
        let off = Notifier::new(false);
        off.tell(Outcome::Denied, &a, "r.two", "why", None);
        assert_eq!(off.sent.load(Ordering::Relaxed), 0);
    }
}
