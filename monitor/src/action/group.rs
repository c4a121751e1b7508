//! Grouping records into the logical actions a person would name.
//!
//! An exec begins an action when the process runs no action yet, or when
//! the action it belongs to is a *driver*: a shell, an interpreter, a task
//! runner or a wrapper whose job is to run other commands (`bash -c`,
//! `make`, `env`, `xargs`, `npm run`, an agent written in Python). Any
//! other program's children belong to its action: git's internal children
//! (`libexec/git-core/*`, `git reset --hard` run by `git stash`, `git
//! reflog expire` run by `git gc`), the compiler and linker a `cargo build`
//! runs, the `rm` a `find -exec` runs. A failed exec followed by the same
//! argv in the same process (the PATH search) stays one action.

use std::collections::{HashMap, HashSet};

use crate::record::{Action, Op};

/// Programs whose children are actions of their own.
const DRIVERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "busybox", "make", "gmake", "just",
    "xargs", "env", "timeout", "nice", "nohup", "time", "stdbuf", "setsid", "sudo", "su", "doas",
    "runuser", "python", "python3", "node", "deno", "bun", "perl", "ruby", "npm", "npx", "yarn",
    "pnpm", "tox", "nox", "uv", "poetry", "watch", "parallel", "script", "abm", "pytest", "invoke",
    "rake",
];

/// Programs that build: files their actions write are build output.
pub const BUILDERS: &[&str] = &[
    "cargo", "rustc", "cc", "c++", "gcc", "g++", "clang", "clang++", "ld", "ld.bfd", "ld.gold",
    "ld.lld", "lld", "mold", "collect2", "cc1", "cc1plus", "as", "ar", "ranlib", "strip", "make",
    "gmake", "cmake", "ninja", "go", "javac", "tsc", "esbuild", "webpack", "vite", "rollup", "npm",
    "pnpm", "yarn", "pip", "pip3", "uv", "maturin", "meson", "bazel",
];

/// The base name of a program path or argv[0].
pub fn program_name(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

pub fn is_driver(program: &str) -> bool {
    DRIVERS.contains(&program) || program.starts_with("python")
}

pub fn is_builder(program: &str) -> bool {
    BUILDERS.contains(&program) || program.starts_with("ld.") || program.starts_with("x86_64-")
}

/// One logical action.
#[derive(Clone, Debug, Default)]
pub struct ActionState {
    pub key: u64,
    pub argv: std::sync::Arc<[String]>,
    pub cwd: Option<String>,
    pub program: String,
    /// The exec that began it failed (a PATH search may retry it).
    pub exec_failed: bool,
    pub pids: HashSet<u32>,
    pub ended: bool,
}

impl ActionState {
    pub fn is_git(&self) -> bool {
        self.program == "git" || self.program.starts_with("git-")
    }
    pub fn is_builder(&self) -> bool {
        is_builder(&self.program)
    }
}

/// What an exec record did to the grouping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecRole {
    /// It began a new action.
    Begins,
    /// A PATH-search retry of the exec that began its action.
    Retry,
    /// It runs inside an existing action (git's internal children, ...).
    Inside,
}

/// Process → action bookkeeping. Keys are chosen by the caller (the exec
/// record's provisional id).
#[derive(Debug, Default)]
pub struct Grouper {
    pub procs: HashMap<u32, u64>,
    pub actions: HashMap<u64, ActionState>,
    /// Look up unknown processes' ancestors in /proc (live use).
    pub ancestry: bool,
    /// Processes that ran a program of their own since they were forked
    /// (a later exec by one of them replaces that program).
    execed: HashSet<u32>,
}

impl Grouper {
    /// The action a process belongs to.
    pub fn of(&self, pid: u32) -> Option<u64> {
        self.procs.get(&pid).copied()
    }

    /// Record an exec by `pid` (whose parent is `ppid`) and return the
    /// action it belongs to and its role. `key` is used if it begins one.
    pub fn exec(&mut self, a: &Action, key: u64) -> (u64, ExecRole) {
        let argv: std::sync::Arc<[String]> = a.argv.clone().unwrap_or_default().into();
        let program = program_name(
            a.argv
                .as_ref()
                .and_then(|v| v.first())
                .map(String::as_str)
                .or(a.path.as_deref())
                .unwrap_or(""),
        )
        .to_owned();
        let current = self
            .of(a.pid)
            .or_else(|| self.of(a.ppid))
            .or_else(|| self.ancestor(a.ppid));
        if let Some(cur) = current {
            let st = &self.actions[&cur];
            if st.exec_failed && st.argv == argv && st.cwd == a.cwd {
                let st = self.actions.get_mut(&cur).expect("present");
                st.exec_failed = !a.succeeded();
                st.pids.insert(a.pid);
                self.procs.insert(a.pid, cur);
                return (cur, ExecRole::Retry);
            }
            let via_git_core = a.path.as_deref().is_some_and(|p| p.contains("/git-core/"));
            let replaces_own = self.execed.contains(&a.pid) && self.of(a.pid) == Some(cur);
            if (!is_driver(&st.program) && !replaces_own) || (st.is_git() && via_git_core) {
                self.actions
                    .get_mut(&cur)
                    .expect("present")
                    .pids
                    .insert(a.pid);
                self.procs.insert(a.pid, cur);
                if runs(a) {
                    self.execed.insert(a.pid);
                }
                return (cur, ExecRole::Inside);
            }
        }
        if let Some(old) = self.procs.insert(a.pid, key) {
            self.leave(old, a.pid);
        }
        if runs(a) {
            self.execed.insert(a.pid);
        }
        self.actions.insert(
            key,
            ActionState {
                key,
                argv,
                cwd: a.cwd.clone(),
                program,
                exec_failed: !a.succeeded(),
                pids: HashSet::from([a.pid]),
                ended: false,
            },
        );
        (key, ExecRole::Begins)
    }

    /// A fork: the child runs in its parent's action.
    pub fn fork(&mut self, parent: u32, child: u32) {
        self.execed.remove(&child);
        if let Some(k) = self.of(parent) {
            self.procs.insert(child, k);
            if let Some(st) = self.actions.get_mut(&k) {
                st.pids.insert(child);
            }
        }
    }

    /// A process exited; returns the action if that ended it.
    pub fn exit(&mut self, pid: u32) -> Option<u64> {
        self.execed.remove(&pid);
        let k = self.procs.remove(&pid)?;
        self.leave(k, pid)
    }

    fn leave(&mut self, k: u64, pid: u32) -> Option<u64> {
        let st = self.actions.get_mut(&k)?;
        st.pids.remove(&pid);
        if st.pids.is_empty() && !st.ended {
            st.ended = true;
            return Some(k);
        }
        None
    }

    /// Assign a lifecycle or file record to its action (processes first
    /// seen here join their parent's).
    pub fn place(&mut self, a: &Action) -> Option<u64> {
        if let Some(k) = self.of(a.pid) {
            return Some(k);
        }
        let k = self.of(a.ppid).or_else(|| self.ancestor(a.ppid))?;
        self.procs.insert(a.pid, k);
        if let Some(st) = self.actions.get_mut(&k) {
            st.pids.insert(a.pid);
        }
        Some(k)
    }

    /// The action of the nearest known ancestor, through /proc.
    fn ancestor(&self, mut pid: u32) -> Option<u64> {
        if !self.ancestry {
            return None;
        }
        for _ in 0..16 {
            let ppid = procfs::process::Process::new(pid as i32)
                .and_then(|p| p.stat())
                .ok()?
                .ppid;
            pid = u32::try_from(ppid).ok()?;
            if pid <= 1 {
                return None;
            }
            if let Some(k) = self.of(pid) {
                return Some(k);
            }
        }
        None
    }
}

/// Whether an exec runs its program: it succeeded, or it is judged before
/// it runs (the seccomp supervisor), where a failed PATH-search attempt is
/// told apart by the retry with the same argv.
fn runs(a: &Action) -> bool {
    a.result.is_none_or(|r| r >= 0)
}

/// Whether a record is one an action is judged by (not lifecycle).
pub fn is_effect(a: &Action) -> bool {
    a.op.is_some_and(|o| o.is_action() && o != Op::Exec)
}
