//! abm protecting its trace from the watched tree under `--enforce`
//! (the seccomp backend's supervisor consults it). What protects abm's
//! own process in every run is `crate::self_guard`.
//!
//! - [`TraceGuard`]: under `--enforce` the supervisor refuses writes,
//!   truncation, links, renames, attribute, flag, time and mode changes of
//!   the trace's inode, and renames of its directory or any ancestor,
//!   decided by (device, inode) after following the caller's path, so
//!   hard links and `/proc/self/fd/N` reopen do not get around it; and any
//!   change under `/proc/<abm pid>/` (its memory).
use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use crate::record::{Action, Irreversibility, Op, Scope, Treatment, Verdict};

/// Rule id of the refusals of [`TraceGuard`].
pub const RULE_TRACE_IDENTITY: &str = "builtin.trace-identity";

/// (device, inode) of a path, following symlinks (as an open does).
fn id_of(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

fn lid_of(p: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(p)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// The trace's identity and its directories', for the supervisor.
pub struct TraceGuard {
    path: PathBuf,
    trace: Option<(u64, u64)>,
    /// The trace's directory and its ancestors (not `/`).
    dirs: Vec<(u64, u64)>,
    /// `/proc/<abm pid>/`.
    proc_self: String,
}

impl TraceGuard {
    /// Takes the trace path (the file may not exist yet: its identity is
    /// read on the first check after it does).
    pub fn new(trace: &Path) -> TraceGuard {
        let mut g = TraceGuard {
            path: crate::core::absolute(trace),
            trace: None,
            dirs: Vec::new(),
            proc_self: format!("/proc/{}/", std::process::id()),
        };
        g.identify();
        g
    }

    fn identify(&mut self) {
        if self.trace.is_some() {
            return;
        }
        let trace = self.path.clone();
        let mut dirs = Vec::new();
        let mut d: Option<PathBuf> = trace.parent().map(Path::to_path_buf);
        while let Some(p) = d {
            if p.parent().is_none() {
                break; // `/` itself
            }
            if let Some(id) = id_of(&p) {
                dirs.push(id);
            }
            d = p.parent().map(Path::to_path_buf);
        }
        self.trace = id_of(&trace);
        self.dirs = dirs;
    }

    /// The object a path of the caller names: `/proc/self`, `/dev/fd` ...
    /// are the caller's, not abm's.
    fn caller_path(tid: u32, raw: Option<&str>, resolved: Option<&str>) -> Option<PathBuf> {
        if let Some(p) =
            raw.and_then(|r| crate::pipeline::resolve::caller_proc_path(r.as_bytes(), tid))
        {
            return Some(PathBuf::from(String::from_utf8_lossy(&p).into_owned()));
        }
        resolved.map(PathBuf::from)
    }

    /// A refusal when the call touches the trace or abm's process.
    pub fn check(&mut self, a: &Action) -> Option<Verdict> {
        self.identify();
        let op = a.op?;
        if op == Op::Exec {
            return None;
        }
        let deny = |why: &str| {
            Some(Verdict {
                rule: RULE_TRACE_IDENTITY.into(),
                treatment: Treatment::Deny,
                irreversibility: Irreversibility::Irreversible,
                scope: Scope::Protected,
                reason: why.into(),
            })
        };
        let p1 = Self::caller_path(a.tid, a.raw_path.as_deref(), a.path.as_deref());
        let p2 = Self::caller_path(a.tid, a.raw_path2.as_deref(), a.path2.as_deref());
        for p in [&p1, &p2].into_iter().flatten() {
            let s = p.to_string_lossy();
            // `/proc/<abm pid>/task/...` is under it too.
            if s.starts_with(&self.proc_self) {
                return deny(
                    "abm's own process (its memory, fds, attributes) belongs to the monitor",
                );
            }
        }
        // The object itself (followed like an open follows it), for every
        // operation but a new name's destination.
        let follows = !matches!(op, Op::Unlink | Op::Rmdir | Op::Rename | Op::Symlink);
        let first = p1
            .as_deref()
            .and_then(|p| if follows { id_of(p) } else { lid_of(p) });
        if first.is_some() && first == self.trace {
            return deny(
                "the trace's inode belongs to the monitor (decided by identity, not path)",
            );
        }
        match op {
            Op::Rename => {
                let src = p1.as_deref().and_then(lid_of);
                let dst = p2.as_deref().and_then(lid_of);
                if src.is_some_and(|s| self.dirs.contains(&s))
                    || (dst.is_some()
                        && (dst == self.trace || dst.is_some_and(|d| self.dirs.contains(&d))))
                {
                    return deny("renames the trace, its directory or an ancestor of it");
                }
            }
            Op::Setflags | Op::Xattr | Op::Chmod | Op::Chown
                if first.is_some_and(|f| self.dirs.first() == Some(&f)) =>
            {
                return deny("changes the trace's directory");
            }
            _ => {}
        }
        None
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_guard_decides_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let tdir = dir.path().join("traces");
        std::fs::create_dir(&tdir).unwrap();
        let trace = tdir.join("run.jsonl");
        std::fs::write(&trace, "x").unwrap();
        std::fs::hard_link(&trace, dir.path().join("hard")).unwrap();
        std::os::unix::fs::symlink(&trace, dir.path().join("sym")).unwrap();
        std::fs::write(dir.path().join("other"), "y").unwrap();
        let mut g = TraceGuard::new(&trace);
        let act = |op: Op, p: &Path, p2: Option<&Path>| Action {
            op: Some(op),
            path: Some(p.to_string_lossy().into_owned()),
            path2: p2.map(|p| p.to_string_lossy().into_owned()),
            tid: std::process::id(),
            ..Default::default()
        };
        let mut denied = |a: &Action| g.check(a).is_some_and(|v| v.rule == RULE_TRACE_IDENTITY);
        let d = dir.path();
        assert!(denied(&act(Op::Write, &d.join("hard"), None)));
        assert!(denied(&act(Op::Truncate, &d.join("sym"), None)));
        assert!(denied(&act(Op::Setflags, &trace, None)));
        assert!(denied(&act(Op::Link, &d.join("hard"), Some(&d.join("h2")))));
        assert!(denied(&act(Op::Rename, &tdir, Some(&d.join("moved")))));
        assert!(denied(&act(Op::Rename, &d.join("other"), Some(&trace))));
        assert!(!denied(&act(Op::Write, &d.join("other"), None)));
        assert!(!denied(&act(
            Op::Rename,
            &d.join("other"),
            Some(&d.join("o2"))
        )));
        // A symlink itself (not its target) may be removed.
        assert!(!denied(&act(Op::Unlink, &d.join("sym"), None)));
        // /proc/self in the caller's raw path is the caller's, not abm's.
        assert_eq!(
            TraceGuard::caller_path(77, Some("/proc/self/fd/3"), Some("/proc/1/fd/3")),
            Some(PathBuf::from("/proc/77/fd/3"))
        );
        // So are the links into it (a jobserver client opens /dev/fd/N).
        assert_eq!(
            TraceGuard::caller_path(77, Some("/dev/fd/9"), Some("/proc/1/fd/9")),
            Some(PathBuf::from("/proc/77/fd/9"))
        );
        assert_eq!(
            TraceGuard::caller_path(77, Some("/dev/stderr"), Some("/proc/1/fd/2")),
            Some(PathBuf::from("/proc/77/fd/2"))
        );
        assert_eq!(
            TraceGuard::caller_path(77, Some("/dev/stdinx"), Some("/dev/stdinx")),
            Some(PathBuf::from("/dev/stdinx"))
        );
        assert_eq!(
            TraceGuard::caller_path(77, Some("x"), Some("/w/x")),
            Some(PathBuf::from("/w/x"))
        );
        let mem = act(
            Op::Write,
            Path::new(&format!("/proc/{}/mem", std::process::id())),
            None,
        );
        assert!(denied(&mem));
    }
}
