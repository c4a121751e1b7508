//! The action record: one decoded, resolved and paired kernel event, as it
//! appears in the JSON trace and as the policy engine and the oracle see it.
//!
//! Strings that come from the kernel are bytes. They are written as JSON
//! strings when they are valid UTF-8; otherwise the string holds a lossy
//! rendering (invalid bytes become U+FFFD) and a sibling field with the same
//! name plus `_b64` holds the exact bytes in standard base64. Consumers that
//! need exact bytes use the `_b64` field when present.

pub mod enforcement;
mod notes;

pub use notes::{ActionCounts, ActionNote, ActionStats};

use monitor_common::EventKind;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// Operation kind of an action record: the kernel's [`EventKind`]s that
/// are operations (all but the syscall-result record). Names come from
/// `EventKind::name` only, shared with policy files, traces and docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Unlink,
    Rmdir,
    Rename,
    Chmod,
    Chown,
    Truncate,
    Write,
    Exec,
    Fork,
    Exit,
    IoUringSetup,
    Link,
    Symlink,
    Utimes,
    Xattr,
    Setflags,
    CompatSyscall,
    /// A read-only open of a sensitive file: exposure, never a change.
    Read,
}

/// Operations that change a file's names, times, attributes or flags
/// without deleting or writing its data. Rules name them explicitly (a rule
/// without `ops` covers [`FILE_OPS`] only).
pub const META_OPS: [Op; 5] = [Op::Link, Op::Symlink, Op::Utimes, Op::Xattr, Op::Setflags];

/// File operations that change the world (every operation but exec and
/// process bookkeeping): what a rule naming no operation applies to, what
/// the BPF LSM backend's file hooks cover.
pub const FILE_OPS: [Op; 7] = [
    Op::Unlink,
    Op::Rmdir,
    Op::Rename,
    Op::Chmod,
    Op::Chown,
    Op::Truncate,
    Op::Write,
];

impl Op {
    pub const ALL: [Op; 18] = [
        Op::Unlink,
        Op::Rmdir,
        Op::Rename,
        Op::Chmod,
        Op::Chown,
        Op::Truncate,
        Op::Write,
        Op::Exec,
        Op::Fork,
        Op::Exit,
        Op::IoUringSetup,
        Op::Link,
        Op::Symlink,
        Op::Utimes,
        Op::Xattr,
        Op::Setflags,
        Op::CompatSyscall,
        Op::Read,
    ];

    /// The kernel's kind of this operation.
    pub const fn kind(self) -> EventKind {
        match self {
            Op::Unlink => EventKind::Unlink,
            Op::Rmdir => EventKind::Rmdir,
            Op::Rename => EventKind::Rename,
            Op::Chmod => EventKind::Chmod,
            Op::Chown => EventKind::Chown,
            Op::Truncate => EventKind::Truncate,
            Op::Write => EventKind::Write,
            Op::Exec => EventKind::Exec,
            Op::Fork => EventKind::Fork,
            Op::Exit => EventKind::Exit,
            Op::IoUringSetup => EventKind::IoUringSetup,
            Op::Link => EventKind::Link,
            Op::Symlink => EventKind::Symlink,
            Op::Utimes => EventKind::Utimes,
            Op::Xattr => EventKind::Xattr,
            Op::Setflags => EventKind::Setflags,
            Op::CompatSyscall => EventKind::CompatSyscall,
            Op::Read => EventKind::Read,
        }
    }

    /// The operation of a kernel kind (`None` for a syscall result).
    pub fn from_kind(kind: EventKind) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.kind() == kind)
    }

    pub fn name(self) -> &'static str {
        self.kind().name()
    }

    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == s)
    }

    /// Operations that change file-system state or run a program (as opposed
    /// to process lifecycle bookkeeping).
    pub fn is_action(self) -> bool {
        !matches!(self, Op::Fork | Op::Exit | Op::IoUringSetup | Op::Read)
    }
}

impl Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Op::from_name(&s).ok_or_else(|| {
            let names: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
            serde::de::Error::custom(format!(
                "unknown operation `{s}`, expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// `Display` of the closed sets below: the name the trace writes.
macro_rules! display_as_name {
    ($($t:ty),+) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    )+};
}

display_as_name!(Op, PathIssue, ResultNote);

/// How hard an action is to undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Irreversibility {
    Reversible,
    Recoverable,
    Irreversible,
}

/// What an action touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Workspace,
    Shared,
    Protected,
    Production,
}

/// What to do about an action, named after the standard risk responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Treatment {
    /// Allow and record.
    Accept,
    /// Allow and flag.
    Audit,
    /// Transfer the decision to a human.
    Confirm,
    /// Keep a copy, then allow.
    Preserve,
    /// Refuse.
    Deny,
}

/// A policy's judgement of one action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Id of the rule that decided (or `default` when no rule matched).
    pub rule: String,
    pub treatment: Treatment,
    pub irreversibility: Irreversibility,
    pub scope: Scope,
    /// One-line human reason.
    pub reason: String,
}

/// Objects an action destroys, by kind (`crate::action::blast` counts
/// them; an exec record that begins an action carries its preview).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blast {
    /// Files it removes or overwrites.
    pub files: u64,
    pub irreversible: u64,
    pub untracked: u64,
    pub modified: u64,
    /// `.git` internals removed outside git.
    pub git_internal: u64,
    /// Irreversible objects outside the workspace.
    pub outside: u64,
    pub recoverable: u64,
    pub reversible: u64,
    pub unmeasured: u64,
    /// Stash entries, remote branches or tags a git command removes; those
    /// that exist nowhere else are counted in `irreversible` too, the
    /// others (a stash entry this run pushed, a remote ref whose commits
    /// another ref holds) in `recoverable`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refs: u64,
    /// The walk stopped at `action::blast::WALK_LIMIT`: the counts are lower bounds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What the preview measured, by path: the judge after the call uses
    /// it for a file the command has already removed, so that it judges
    /// the file as the judge before the call did (one judge).
    #[serde(skip)]
    pub seen: std::collections::HashMap<String, Measured>,
}

/// One action as recorded in the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    pub op: Option<Op>,
    /// Syscall name (`unlinkat`, `openat`, ...); empty for lifecycle events.
    pub syscall: Cow<'static, str>,
    /// CLOCK_MONOTONIC nanoseconds at syscall entry.
    pub ktime_ns: u64,
    /// Wall-clock time at syscall entry, RFC 3339 UTC.
    pub time: String,
    pub pid: u32,
    pub tid: u32,
    pub ppid: u32,
    pub uid: u32,
    pub gid: u32,
    pub comm: String,
    /// Executable of the acting process, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    pub cgroup_id: u64,
    /// Name of the watch target (daemon mode) the process belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,

    /// Resolved absolute path as the host sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_b64: Option<String>,
    /// The same path as the process sees it, when its root is not the host root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_path: Option<String>,
    /// Raw path argument as passed to the syscall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_path_b64: Option<String>,
    /// Second path (rename destination), resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_path2: Option<String>,
    /// The path as the process named it when that is another view of the
    /// object's file system (a bind mount, a second mount of the device):
    /// `path` is then the object's path under the file system's primary
    /// mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_path: Option<String>,
    /// The same for `path2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_path2_b64: Option<String>,
    /// Problems resolving the path(s). Empty when fully resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_issues: Vec<PathIssue>,

    /// Raw flags argument (AT_REMOVEDIR, rename flags, open flags).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flags: u64,
    /// Symbolic names of the set flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flag_names: Vec<Cow<'static, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_gid: Option<u32>,
    /// dirfd or fd argument, when the call took one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i32>,
    /// xattr: the attribute's name (`security.capability`, `user.x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xattr: Option<String>,
    /// Identity of the object acted on (`st_dev`, `st_ino` as `stat`
    /// shows them), where the kernel had it at hand: the file an open
    /// returned (at the call's exit), the fd's file of an fd-based call,
    /// the object a `/proc/self/fd/N` path names. See docs/trace.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ino: Option<u64>,
    /// Identity of the directory that holds `path`'s final component, when
    /// the call named it relative to that directory (`unlinkat(dirfd,
    /// "name")`, a one-component path relative to the working directory,
    /// `/proc/self/cwd/name`), read at syscall entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_dev: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_ino: Option<u64>,
    /// Why the kernel's lookup of the (first) path at syscall entry gave
    /// no identity of the object (`dev`/`ino`): see docs/trace.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_gap: Option<IdentityGap>,
    /// Identity of what the second path named at syscall entry: the
    /// target a rename replaces, an existing name a link or symlink would
    /// collide with. Absent when nothing was there (or unknown: see
    /// `dst_identity_gap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_dev: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_ino: Option<u64>,
    /// Identity of the directory that holds the second path's final
    /// component (a rename's or link's destination directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_dir_dev: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_dir_ino: Option<u64>,
    /// As `identity_gap`, for the second path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_identity_gap: Option<IdentityGap>,

    /// 0 or -errno; `None` when the result could not be observed
    /// (see `result_note`).
    #[serde(default)]
    pub result: Option<i64>,
    /// Symbolic errno for a negative result (`ENOENT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    /// Why `result` is missing, or how it was produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_note: Option<ResultNote>,

    /// exec: the arguments, argv[0] first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// exec: base64 of each argument, present only when one is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv_b64: Option<Vec<String>>,
    /// exec: argv had more arguments, or an argument was longer, than copied.
    #[serde(default, skip_serializing_if = "is_false")]
    pub argv_truncated: bool,
    /// exec: working directory of the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// exec: the variables of the new program's environment that decide
    /// which object a command acts on (`KUBECONFIG`, `AWS_PROFILE`, ...;
    /// `monitor_common::target_env::NAMES`), as it started with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// exec: the environment was larger than the kernel program looks at,
    /// so `env` may miss a variable.
    #[serde(default, skip_serializing_if = "is_false")]
    pub env_partial: bool,

    /// Live policy verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Enforcement outcome when a guardrail acted on this call
    /// (`denied`, `approved`, `preserved`, ...). Boxed, like `preview`:
    /// few records have one, and every record waiting in the reorder
    /// window would otherwise carry its room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Box<enforcement::Enforcement>>,
    /// The logical action this record belongs to: the `seq` of the exec
    /// record that began it (crate::action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<u64>,
    /// What the call destroys, measured from the file system's state
    /// (crate::action::recover).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// On the exec record that begins an action: what the command would
    /// destroy, previewed from the file system and the repository before
    /// it ran (`git reset --hard`, `rm -r`, `dd of=`...). Its verdict was
    /// decided on it, and `abm replay` decides on it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Box<Blast>>,
    /// The kernel said this open created the file it opened (its result
    /// record's `OPENED_CREATED`): nothing was at that name before the
    /// call. Not written to the trace itself; `measured` says it.
    #[serde(skip)]
    pub created_by_call: bool,
    /// `path` is the lexical join of an open's argument to its base, left
    /// for the result record to name (it names the file really opened);
    /// canonicalised by [`crate::pipeline::resolve::settle_path`] if it
    /// does not. Never written to the trace.
    #[serde(skip)]
    pub path_provisional: bool,
}

/// Why the kernel's dentry-cache lookup of a path argument at syscall
/// entry gave no identity of the object (`identity_gap`): the lookup stops
/// rather than guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityGap {
    /// A symbolic link on the way, or a final one the call follows.
    Symlink,
    /// A mount point the lookup could not cross.
    Mount,
    /// A component was not in the dentry cache.
    NotCached,
    /// A directory of a file system with its own name hashing or
    /// comparison (case-insensitive names...).
    FsNames,
    /// More components than the lookup follows.
    Depth,
    /// The lookup is off on this kernel (the dentry hash table was not
    /// located when abm started).
    Off,
    /// The path could not be read or parsed, a component is not a
    /// directory, a name is too long, or `..` leaves a mount.
    Other,
}

/// Why a recorded path is not known exactly (`path_issues`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathIssue {
    /// A path string was longer than the kernel copies and was cut.
    Truncated,
    /// The directory walk stopped at its depth bound (`MAX_PATH_DEPTH`).
    DepthLimit,
    /// The dentry is not connected to a mount root (deleted, or outside
    /// the process's visible tree).
    Disconnected,
    /// The path argument (or the flags beside it) could not be read.
    ReadFailed,
    /// The file descriptor the call names was not open.
    BadFd,
    /// The directory the path is relative to was not recorded.
    NoBase,
    /// The path goes through a process's `/proc` link
    /// (`/proc/<pid>/cwd/...`, `/proc/self/fd/N` given to a call that does
    /// not follow it, ...) that could not be followed for that process: it
    /// stays under `/proc`.
    ProcMagicLink,
    /// The kernel record was cut before all its fields.
    PayloadTruncated,
    /// The inode flags an ioctl would set could not be read.
    FlagsUnread,
    /// `open_by_handle_at`: the file is named by a handle, its path is not
    /// known.
    ByHandle,
    /// The path could not be mapped from the process's mount namespace to
    /// the host; it is the namespace's view.
    HostPathUnknown,
    /// The call follows a final symlink and the kernel had no fd to name
    /// the file it reached (truncate, chmod, chown, utimes, setxattr...):
    /// `path` is the link's target as userspace read it after the call
    /// (the link may have changed in between), `raw_path` the link.
    SymlinkResolvedLate,
    /// `path`, resolved after the call, no longer leads to the directory
    /// the kernel found at the call (`dir_dev`, `dir_ino`): a symlinked or
    /// renamed directory on the way changed in between. The identities are
    /// the call's.
    PathChanged,
    /// The call succeeded, but not on the object `path` names: that object
    /// is still there under the same name after a removal, or nothing had
    /// that name when the call started (checked by the kernel at the call's
    /// exit against the dentries its entry lookup found). Another thread or
    /// process changed the path argument between abm's copy and the
    /// kernel's; the object acted on is unknown, and the identity fields
    /// (`dev`/`ino`) are those of the named object, not of it.
    ArgumentRaced,
    /// The call succeeded and the check at its exit could not tell whether
    /// the object `path` names is the one acted on (the name was neither
    /// in the dentry cache before the call nor after it).
    Unconfirmed,
}

impl PathIssue {
    pub const ALL: [PathIssue; 15] = [
        PathIssue::Truncated,
        PathIssue::DepthLimit,
        PathIssue::Disconnected,
        PathIssue::ReadFailed,
        PathIssue::BadFd,
        PathIssue::NoBase,
        PathIssue::ProcMagicLink,
        PathIssue::PayloadTruncated,
        PathIssue::FlagsUnread,
        PathIssue::ByHandle,
        PathIssue::HostPathUnknown,
        PathIssue::SymlinkResolvedLate,
        PathIssue::PathChanged,
        PathIssue::ArgumentRaced,
        PathIssue::Unconfirmed,
    ];

    /// The name written in the trace.
    pub fn name(self) -> &'static str {
        match self {
            PathIssue::Truncated => "truncated",
            PathIssue::DepthLimit => "depth_limit",
            PathIssue::Disconnected => "disconnected",
            PathIssue::ReadFailed => "read_failed",
            PathIssue::BadFd => "bad_fd",
            PathIssue::NoBase => "no_base",
            PathIssue::ProcMagicLink => "proc_magic_link",
            PathIssue::PayloadTruncated => "payload_truncated",
            PathIssue::FlagsUnread => "flags_unread",
            PathIssue::ByHandle => "by_handle",
            PathIssue::HostPathUnknown => "host_path_unknown",
            PathIssue::SymlinkResolvedLate => "symlink_resolved_late",
            PathIssue::PathChanged => "path_changed",
            PathIssue::ArgumentRaced => "argument_raced",
            PathIssue::Unconfirmed => "unconfirmed",
        }
    }

    /// Adds `issue` to `issues` unless it is there already.
    pub fn add(issues: &mut Vec<PathIssue>, issue: PathIssue) {
        if !issues.contains(&issue) {
            issues.push(issue);
        }
    }

    /// The names, comma-separated, for messages.
    pub fn list(issues: &[PathIssue]) -> String {
        issues
            .iter()
            .map(|i| i.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why a record's `result` is missing, or what produced it (`result_note`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultNote {
    /// The seccomp guard refused the call; `result` is its `EPERM`.
    DeniedBySeccomp,
    /// The BPF LSM guard refused the call (a decision with no syscall
    /// record of its own, as for io_uring requests).
    DeniedByLsm,
    /// The BPF LSM guard let the call through (a decision with no syscall
    /// record of its own).
    AllowedByLsm,
    /// The run ended before the call's result was seen.
    ExitNotSeen,
    /// The result had not arrived when the reorder window let the entry
    /// go.
    Pending,
    /// The path (or `open_how`) was unreadable at entry and was read at
    /// the call's exit.
    PathReadAtExit,
}

impl ResultNote {
    pub const ALL: [ResultNote; 6] = [
        ResultNote::DeniedBySeccomp,
        ResultNote::DeniedByLsm,
        ResultNote::AllowedByLsm,
        ResultNote::ExitNotSeen,
        ResultNote::Pending,
        ResultNote::PathReadAtExit,
    ];

    /// The name written in the trace.
    pub fn name(self) -> &'static str {
        match self {
            ResultNote::DeniedBySeccomp => "denied_by_seccomp",
            ResultNote::DeniedByLsm => "denied_by_lsm",
            ResultNote::AllowedByLsm => "allowed_by_lsm",
            ResultNote::ExitNotSeen => "exit_not_seen",
            ResultNote::Pending => "pending",
            ResultNote::PathReadAtExit => "path_read_at_exit",
        }
    }
}

/// How much of what a call destroys can be got back, measured at the time
/// of the judgement (not guessed from the path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Nothing of value is lost: made in this run, regenerable build
    /// output, an empty file or directory, an attribute change.
    Reversible,
    /// The content exists elsewhere: a git blob, another hard link.
    Recoverable,
    /// The content exists nowhere else.
    Irreversible,
    /// The state could not be measured (the file was already gone).
    Unmeasured,
}

/// Where the object is, relative to the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// The task's own directory (also under /tmp).
    Workspace,
    /// A temporary directory outside the workspace and outside any repository.
    Scratch,
    /// Another repository's working tree, caches, other users' files.
    Shared,
    /// System configuration and logs, credentials, shell history, accounts.
    Protected,
}

/// What kind of object a call destroys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// Tracked by git, content equal to its index blob.
    Tracked,
    /// Tracked by git, content differs from the index.
    Modified,
    /// In a repository, neither tracked nor ignored.
    Untracked,
    /// Inside `.git`.
    GitInternal,
    /// Made by a build tool in this run, or ignored and regenerable.
    BuildOutput,
    /// A package or tool cache (`~/.cache`, `~/.cargo/registry`, ...).
    Cache,
    /// Created earlier in this run, or by this very call.
    Created,
    /// Has another hard link.
    Linked,
    /// An SQLite or other database file.
    Database,
    /// Keys, tokens, `.env` files.
    Credential,
    /// History, logs, accounts, system configuration.
    System,
    /// A file in no repository.
    Loose,
    /// A directory (rmdir removes only empty ones).
    Directory,
    /// An empty file.
    Empty,
    /// A device node, pipe or socket: no file content of its own.
    Device,
    /// Nothing to measure (the call changes attributes or adds content,
    /// or names no existing file).
    None,
}

impl Recovery {
    pub fn name(self) -> &'static str {
        match self {
            Recovery::Reversible => "reversible",
            Recovery::Recoverable => "recoverable",
            Recovery::Irreversible => "irreversible",
            Recovery::Unmeasured => "unmeasured",
        }
    }
}

impl Location {
    pub fn name(self) -> &'static str {
        match self {
            Location::Workspace => "workspace",
            Location::Scratch => "scratch",
            Location::Shared => "shared",
            Location::Protected => "protected",
        }
    }
}

impl ObjectKind {
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Tracked => "tracked",
            ObjectKind::Modified => "modified",
            ObjectKind::Untracked => "untracked",
            ObjectKind::GitInternal => "git_internal",
            ObjectKind::BuildOutput => "build_output",
            ObjectKind::Cache => "cache",
            ObjectKind::Created => "created",
            ObjectKind::Linked => "linked",
            ObjectKind::Database => "database",
            ObjectKind::Credential => "credential",
            ObjectKind::System => "system",
            ObjectKind::Loose => "loose",
            ObjectKind::Directory => "directory",
            ObjectKind::Empty => "empty",
            ObjectKind::Device => "device",
            ObjectKind::None => "none",
        }
    }
}

/// The measurement of one call (see [`Recovery`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    pub recovery: Recovery,
    pub location: Location,
    pub object: ObjectKind,
    /// One line: how it was measured, or why it could not be.
    pub why: Cow<'static, str>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

impl Action {
    /// True when the call succeeded: result 0, or a file descriptor (>= 0)
    /// for opens. A side effect happened.
    pub fn succeeded(&self) -> bool {
        self.result.is_some_and(|r| r >= 0)
    }

    /// The executable's base name (argv[0] or exe), for matching CLIs.
    pub fn program(&self) -> Option<&str> {
        let from_argv = self
            .argv
            .as_ref()
            .and_then(|a| a.first())
            .map(String::as_str);
        let p = self.path.as_deref().or(from_argv)?;
        Some(p.rsplit('/').next().unwrap_or(p))
    }

    /// What the call acts on, as the one-line descriptions of an action
    /// show it: an exec's command line (its words joined by spaces), `from
    /// -> to` for a rename (`?` for a path not recorded), the path of any
    /// other call; empty when the record holds none of these.
    pub fn object_text(&self) -> String {
        match self.op {
            Some(Op::Exec) => self.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default(),
            Some(Op::Rename) => format!(
                "{} -> {}",
                self.path.as_deref().unwrap_or("?"),
                self.path2.as_deref().unwrap_or("?")
            ),
            _ => self.path.clone().unwrap_or_default(),
        }
    }
}

/// Encode possibly non-UTF-8 bytes as (lossy string, exact base64 when needed).
pub fn text_fields(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_owned(), None),
        Err(_) => {
            use base64::Engine as _;
            (
                String::from_utf8_lossy(bytes).into_owned(),
                Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_issue_and_result_note_names_are_their_trace_names() {
        for i in PathIssue::ALL {
            let json = serde_json::to_string(&i).unwrap();
            assert_eq!(json, format!("\"{}\"", i.name()));
            assert_eq!(serde_json::from_str::<PathIssue>(&json).unwrap(), i);
        }
        for n in ResultNote::ALL {
            let json = serde_json::to_string(&n).unwrap();
            assert_eq!(json, format!("\"{}\"", n.name()));
            assert_eq!(serde_json::from_str::<ResultNote>(&json).unwrap(), n);
        }
        // The record keeps the names as strings, in order.
        let line = r#"{"op":"unlink","syscall":"unlinkat","ktime_ns":1,"time":"","pid":1,"tid":1,"ppid":0,"uid":0,"gid":0,"comm":"rm","cgroup_id":0,"path_issues":["read_failed","host_path_unknown"],"result":null,"result_note":"exit_not_seen"}"#;
        let a: Action = serde_json::from_str(line).unwrap();
        assert_eq!(
            a.path_issues,
            [PathIssue::ReadFailed, PathIssue::HostPathUnknown]
        );
        assert_eq!(a.result_note, Some(ResultNote::ExitNotSeen));
        assert_eq!(serde_json::to_string(&a).unwrap(), line);
        let bad = line.replace("host_path_unknown", "made_up");
        assert!(serde_json::from_str::<Action>(&bad).is_err());
    }

    /// docs/trace.md lists every value of the two closed sets, and no other.
    #[test]
    fn trace_docs_list_every_path_issue_and_result_note() {
        let doc = include_str!("../../../docs/trace.md");
        let rows = |after: &str| -> Vec<String> {
            let at = doc
                .find(after)
                .unwrap_or_else(|| panic!("docs/trace.md: no {after}"));
            doc[at..]
                .lines()
                .skip_while(|l| !l.starts_with("| value"))
                .skip(2)
                .take_while(|l| l.starts_with("| `"))
                .map(|l| l[3..].split('`').next().unwrap().to_owned())
                .collect()
        };
        let names = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            rows("`path_issues` (why a path"),
            names(PathIssue::ALL.iter().map(|i| i.name()).collect())
        );
        assert_eq!(
            rows("`result_note` (why `result`"),
            names(ResultNote::ALL.iter().map(|n| n.name()).collect())
        );
    }

    #[test]
    fn non_utf8_bytes_round_trip_through_b64() {
        let raw = b"/tmp/a\xffb\nc";
        let (s, b64) = text_fields(raw);
        assert_eq!(s, "/tmp/a\u{fffd}b\nc");
        use base64::Engine as _;
        let back = base64::engine::general_purpose::STANDARD
            .decode(b64.expect("b64 for non-UTF-8"))
            .unwrap();
        assert_eq!(back, raw);
        assert_eq!(text_fields(b"/ok").1, None);
    }

    #[test]
    fn every_kernel_kind_but_results_is_an_op_with_its_name() {
        for kind in monitor_common::EventKind::ALL {
            let op = Op::from_kind(kind);
            if kind == monitor_common::EventKind::SyscallExit {
                assert_eq!(op, None);
                continue;
            }
            let op = op.expect("every kernel kind but results has an op");
            assert_eq!(op.kind(), kind);
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<Op>(&json).unwrap(), op);
        }
        let e = serde_json::from_str::<Op>("\"remove\"").unwrap_err();
        assert!(e.to_string().contains("unknown operation `remove`"), "{e}");
    }
}
