//! abm protecting itself and its trace from the watched tree, which may run
//! as root.
//!
//! - [`SelfGuard`]: a plain seccomp filter (no notification) installed in
//!   the launched command between fork and exec, in observe mode too. It
//!   refuses with `EPERM` the calls that reach abm's process: `kill` of
//!   abm's pid or any of its threads, of its process group, of every
//!   process (`-1`) or of the caller's own group (`0`, which is abm's);
//!   `tkill` (obsolete; `tgkill` is what libc uses); `tgkill`, `ptrace`,
//!   `process_vm_readv`/`writev`, `pidfd_open` aimed at abm's pid or one of
//!   its threads. The same numbers of the ia32 table are checked for
//!   `int 0x80`. Threads abm creates after the command started are not in
//!   the filter (their ids were not known), see docs/security.md.
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

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_SET_MODE_FILTER: libc::c_long = 1;
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
/// Threads of abm named in the filter (a classic BPF jump is 8 bits).
const MAX_IDS: usize = 24;

/// Syscall numbers per ABI: kill, tkill, tgkill, ptrace,
/// process_vm_readv, process_vm_writev, pidfd_open.
struct Abi {
    arch: u32,
    kill: u32,
    tkill: u32,
    tgkill: u32,
    ptrace: u32,
    vm_readv: u32,
    vm_writev: u32,
    pidfd_open: u32,
}

const ABIS: [Abi; 2] = [
    Abi {
        arch: AUDIT_ARCH_X86_64,
        kill: 62,
        tkill: 200,
        tgkill: 234,
        ptrace: 101,
        vm_readv: 310,
        vm_writev: 311,
        pidfd_open: 434,
    },
    Abi {
        arch: AUDIT_ARCH_I386,
        kill: 37,
        tkill: 238,
        tgkill: 270,
        ptrace: 26,
        vm_readv: 347,
        vm_writev: 348,
        pidfd_open: 434,
    },
];

/// The filter that keeps the watched tree's hands off abm's process.
pub struct SelfGuard {
    filter: Vec<libc::sock_filter>,
}

fn ld(off: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_LD_W_ABS,
        jt: 0,
        jf: 0,
        k: off,
    }
}

fn ret(k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JMP_JEQ_K,
        jt,
        jf,
        k,
    }
}

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn arg_lo(i: u32) -> u32 {
    16 + 8 * i
}

/// Appends: if the low word of argument `arg` is one of `vals`, refuse;
/// else allow. Emitted after a syscall-number match.
fn refuse_if_arg(p: &mut Vec<libc::sock_filter>, arg: u32, vals: &[u32]) {
    p.push(ld(arg_lo(arg)));
    for (i, v) in vals.iter().enumerate() {
        // On a match jump to the ERRNO return after the remaining tests
        // and the ALLOW: (vals.len() - 1 - i) tests, then ALLOW.
        let skip = (vals.len() - 1 - i + 1) as u8;
        p.push(jeq(*v, skip, 0));
    }
    p.push(ret(SECCOMP_RET_ALLOW));
    p.push(ret(SECCOMP_RET_ERRNO | libc::EPERM as u32));
}

impl SelfGuard {
    /// The filter for abm's pid `pid`, its threads `tids` and its process
    /// group `pgid`.
    pub fn new(pid: u32, tids: &[u32], pgid: u32) -> SelfGuard {
        let mut ids: Vec<u32> = vec![pid];
        ids.extend(tids.iter().copied().filter(|t| *t != pid));
        ids.truncate(MAX_IDS);
        // kill(): abm by any of its thread ids, its group, everyone, the
        // caller's own group (abm's: the command inherits it).
        let mut kill_vals = ids.clone();
        kill_vals.extend([pgid.wrapping_neg(), u32::MAX, 0]);
        let mut p = Vec::new();
        for abi in &ABIS {
            // Per ABI block: arch check, then per-syscall tests; each
            // syscall test jumps over the following ones to its own block.
            let calls: [(u32, u32, &[u32]); 7] = [
                (abi.kill, 0, &kill_vals),
                (abi.tkill, 0, &[]),
                (abi.tgkill, 0, &ids),
                (abi.ptrace, 1, &ids),
                (abi.vm_readv, 0, &ids),
                (abi.vm_writev, 0, &ids),
                (abi.pidfd_open, 0, &ids),
            ];
            let block_len = |vals: &[u32]| -> usize {
                if vals.is_empty() {
                    1
                } else {
                    vals.len() + 3
                }
            };
            let body: usize = calls.iter().map(|(_, _, v)| block_len(v)).sum();
            // Number tests (7) + ALLOW (1) + the blocks.
            let abi_len = 1 + calls.len() + 1 + body;
            p.push(ld(OFF_ARCH));
            // Not this ABI: skip its whole block.
            p.push(jeq(abi.arch, 0, abi_len as u8));
            p.push(ld(OFF_NR));
            let mut before = 0usize; // block lengths before this call's
            for (i, (nr, _, vals)) in calls.iter().enumerate() {
                // From the test after this one: the rest of the tests,
                // the ALLOW, then the blocks before this call's.
                let jt = (calls.len() - 1 - i) + 1 + before;
                p.push(jeq(*nr, jt as u8, 0));
                before += block_len(vals);
            }
            p.push(ret(SECCOMP_RET_ALLOW));
            for (_, arg, vals) in &calls {
                if vals.is_empty() {
                    p.push(ret(SECCOMP_RET_ERRNO | libc::EPERM as u32));
                } else {
                    refuse_if_arg(&mut p, *arg, vals);
                }
            }
        }
        p.push(ret(SECCOMP_RET_ALLOW));
        SelfGuard { filter: p }
    }

    /// For the current process: its pid, threads and process group.
    pub fn for_self() -> SelfGuard {
        let pid = std::process::id();
        let tids: Vec<u32> = std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        // SAFETY: getpgrp has no arguments and cannot fail.
        let pgid = unsafe { libc::getpgrp() } as u32;
        SelfGuard::new(pid, &tids, pgid)
    }

    /// Installs the filter in the calling process (between fork and exec:
    /// raw syscalls only, no allocation). Needs `PR_SET_NO_NEW_PRIVS` or
    /// CAP_SYS_ADMIN; abm runs as root, so setuid programs in the tree
    /// keep working.
    pub fn install(&self) -> std::io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.filter.len() as u16,
            filter: self.filter.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: seccomp(2) reads the program, which lives for the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Evaluates the filter for one call (tests).
    pub fn run(&self, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let ins = &self.filter[pc];
            pc += 1;
            match ins.code {
                BPF_LD_W_ABS => {
                    let o = ins.k as usize;
                    acc = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap());
                }
                BPF_RET_K => return ins.k,
                _ => {
                    pc += usize::from(if acc == ins.k { ins.jt } else { ins.jf });
                }
            }
        }
    }
}

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
            if s.starts_with(&self.proc_self)
                || s.starts_with(&format!("/proc/{}/task/", std::process::id()))
            {
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

    const ERRNO: u32 = SECCOMP_RET_ERRNO | libc::EPERM as u32;

    #[test]
    fn self_guard_refuses_signals_and_tracing_aimed_at_abm_only() {
        let g = SelfGuard::new(1000, &[1000, 1001, 1002], 900);
        let x = AUDIT_ARCH_X86_64;
        let neg = |v: i64| v as u64;
        // kill
        for target in [1000, 1001, 1002, neg(-900), neg(-1), 0] {
            assert_eq!(
                g.run(x, 62, [target, 9, 0, 0, 0, 0]),
                ERRNO,
                "kill {target}"
            );
        }
        for target in [1003, 1, neg(-1000), 2000] {
            assert_eq!(g.run(x, 62, [target, 9, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        }
        // tkill always; tgkill, ptrace (arg 1), process_vm_*, pidfd_open.
        assert_eq!(g.run(x, 200, [5, 9, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 234, [1000, 1001, 9, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 234, [5, 5, 9, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 101, [16, 1001, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 101, [16, 5, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 311, [1000, 0, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 310, [1002, 0, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 310, [5, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 434, [1000, 0, 0, 0, 0, 0]), ERRNO);
        // Unrelated syscalls.
        for nr in [0, 1, 39, 87, 59] {
            assert_eq!(g.run(x, nr, [1000, 1000, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        }
        // ia32: kill is 37 there; 62 is ustat.
        let i = AUDIT_ARCH_I386;
        assert_eq!(g.run(i, 37, [1000, 9, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(i, 62, [1000, 9, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(i, 26, [16, 1000, 0, 0, 0, 0]), ERRNO);
    }

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
