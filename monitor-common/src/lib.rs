//! Types shared by the kernel programs (`monitor-ebpf`) and the daemon
//! (`monitor`). Everything here is `#[repr(C)]`, has no hidden padding and
//! is guarded by size assertions so both sides agree byte for byte.
//!
//! Wire format of one ring-buffer record:
//!
//! ```text
//! +----------------------+----------------------------------------------+
//! | EventHeader (fixed)  | payload: Field* (tag, flags, len, bytes)      |
//! +----------------------+----------------------------------------------+
//! ```
//!
//! Each payload field is a 4-byte [`FieldHeader`] followed by `len` bytes.
//! Fields are written in kernel order; userspace decodes them in
//! `monitor::events`.
#![no_std]

use core::mem::size_of;

/// Operation kinds. The single string name of each kind (see [`EventKind::name`])
/// is shared by policy files, JSON traces and docs.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Unlink = 1,
    Rmdir = 2,
    Rename = 3,
    Chmod = 4,
    Chown = 5,
    /// truncate/ftruncate, and opens with `O_TRUNC`.
    Truncate = 6,
    /// Opens for writing without `O_TRUNC`.
    Write = 7,
    Exec = 8,
    Fork = 9,
    Exit = 10,
    /// The result of a traced syscall, paired in userspace with the enter
    /// record of the same thread.
    SyscallExit = 11,
    /// `io_uring_setup` by an in-scope process: its later ring operations
    /// bypass syscall tracepoints.
    IoUringSetup = 12,
}

impl EventKind {
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            1 => Self::Unlink,
            2 => Self::Rmdir,
            3 => Self::Rename,
            4 => Self::Chmod,
            5 => Self::Chown,
            6 => Self::Truncate,
            7 => Self::Write,
            8 => Self::Exec,
            9 => Self::Fork,
            10 => Self::Exit,
            11 => Self::SyscallExit,
            12 => Self::IoUringSetup,
            _ => return None,
        })
    }

    /// The name used in policies, JSON traces and docs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Unlink => "unlink",
            Self::Rmdir => "rmdir",
            Self::Rename => "rename",
            Self::Chmod => "chmod",
            Self::Chown => "chown",
            Self::Truncate => "truncate",
            Self::Write => "write",
            Self::Exec => "exec",
            Self::Fork => "fork",
            Self::Exit => "exit",
            Self::SyscallExit => "syscall_exit",
            Self::IoUringSetup => "io_uring_setup",
        }
    }

    pub const ALL: [EventKind; 12] = [
        Self::Unlink,
        Self::Rmdir,
        Self::Rename,
        Self::Chmod,
        Self::Chown,
        Self::Truncate,
        Self::Write,
        Self::Exec,
        Self::Fork,
        Self::Exit,
        Self::SyscallExit,
        Self::IoUringSetup,
    ];
}

/// Fixed part of every ring-buffer record.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EventHeader {
    /// [`EventKind`] as u32.
    pub kind: u32,
    /// x86_64 syscall number (or 0 for lifecycle events).
    pub syscall: u32,
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) at the event.
    pub ktime_ns: u64,
    /// Thread id (kernel `pid`).
    pub tid: u32,
    /// Process id (kernel `tgid`).
    pub pid: u32,
    /// Parent process id; for [`EventKind::Fork`], the parent of the new process.
    pub ppid: u32,
    pub uid: u32,
    pub gid: u32,
    /// Number of payload bytes that follow the header.
    pub payload_len: u32,
    pub cgroup_id: u64,
    pub comm: [u8; 16],
    /// Syscall result (SyscallExit), exit code (Exit), child pid (Fork).
    pub result: i64,
    /// Operation flags: `AT_REMOVEDIR`, rename flags, open flags, `AT_*` flags.
    pub flags: u64,
    /// Mode for chmod/open, or -1.
    pub mode: u32,
    /// New owner for chown (`u32::MAX` = unchanged).
    pub owner_uid: u32,
    pub owner_gid: u32,
    /// dirfd argument (`AT_FDCWD` = -100), or fd for fd-based calls.
    pub fd: i32,
    /// [`header_flags`] bits.
    pub hflags: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<EventHeader>() == 104);

/// Bits of [`EventHeader::hflags`].
pub mod header_flags {
    /// The payload was cut because the record buffer was full.
    pub const PAYLOAD_TRUNCATED: u32 = 1 << 0;
    /// execve had more arguments than the kernel program copies.
    pub const ARGV_TRUNCATED: u32 = 1 << 1;
    /// The syscall was execveat with `AT_EMPTY_PATH` (exec of an fd).
    pub const EXEC_FD: u32 = 1 << 2;
}

/// Header of one payload field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldHeader {
    /// [`field_tag`] value.
    pub tag: u8,
    /// [`field_flags`] bits.
    pub flags: u8,
    /// Number of data bytes that follow (string fields include no NUL).
    pub len: u16,
}
const _: () = assert!(size_of::<FieldHeader>() == 4);

/// Payload field tags.
pub mod field_tag {
    /// Raw first path argument, as the process passed it.
    pub const RAW_PATH: u8 = 1;
    /// Raw second path argument (rename target).
    pub const RAW_PATH2: u8 = 2;
    /// Components of the directory the first path is relative to (cwd, dirfd
    /// or root), leaf first, NUL-separated, walked to the global root.
    pub const BASE: u8 = 3;
    /// Same for the second path.
    pub const BASE2: u8 = 4;
    /// Components of the file behind an fd (fchmod, ftruncate, ...), leaf first.
    pub const FD_PATH: u8 = 5;
    /// One execve argument.
    pub const ARG: u8 = 6;
    /// Components of the calling task's root directory, leaf first (empty for
    /// the host root): the prefix that turns container paths into host paths.
    pub const ROOT: u8 = 7;
    /// Components of the current working directory, leaf first (exec only).
    pub const CWD: u8 = 8;
}

/// Bits of [`FieldHeader::flags`].
pub mod field_flags {
    /// The string filled its buffer: it may be longer than what was copied.
    pub const TRUNCATED: u8 = 1 << 0;
    /// A component walk hit `MAX_PATH_DEPTH` before reaching the root.
    pub const DEPTH_LIMIT: u8 = 1 << 1;
    /// A component walk ended at a dentry that is not a mount root (unlinked
    /// or disconnected tree).
    pub const DISCONNECTED: u8 = 1 << 2;
    /// Reading the kernel or user memory failed.
    pub const READ_FAILED: u8 = 1 << 3;
}

/// Limits compiled into the kernel programs.
pub mod limits {
    /// Components walked from a dentry to the root.
    pub const MAX_PATH_DEPTH: u32 = 48;
    /// Bytes of one user path argument (PATH_MAX).
    pub const MAX_RAW_PATH: usize = 4096;
    /// Bytes of one dentry name (NAME_MAX + NUL).
    pub const MAX_NAME: usize = 256;
    /// execve arguments copied.
    pub const MAX_ARGS: u32 = 32;
    /// Bytes of one execve argument.
    pub const MAX_ARG_LEN: usize = 256;
    /// Payload capacity of one record (power of two: offsets are masked with it).
    pub const PAYLOAD_CAP: usize = 16384;
    /// Slack after the payload so a masked offset plus one maximal write
    /// always stays inside the buffer (verifier bound).
    pub const PAYLOAD_SLACK: usize = MAX_RAW_PATH + 8;
}

/// Reasons the kernel side could not deliver an event; index into the
/// per-CPU `LOSSES` array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// `bpf_ringbuf_output` failed: the ring buffer was full.
    RingbufFull = 0,
    /// The in-flight syscall table was full: an exit could not be paired.
    InflightFull = 1,
    /// The scope table was full: a new process could not be added.
    ScopeFull = 2,
}

impl LossCause {
    pub const COUNT: u32 = 3;
    pub const ALL: [LossCause; 3] = [Self::RingbufFull, Self::InflightFull, Self::ScopeFull];
    pub const fn name(self) -> &'static str {
        match self {
            Self::RingbufFull => "ringbuf_full",
            Self::InflightFull => "inflight_full",
            Self::ScopeFull => "scope_full",
        }
    }
}

/// Value of the `SCOPE` map: why a process is in scope.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ScopeEntry {
    /// Id of the watch target the process belongs to.
    pub target: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<ScopeEntry>() == 8);

/// `open` flags (x86_64 values) the kernel filter uses.
pub mod open_flags {
    pub const O_WRONLY: u64 = 0o1;
    pub const O_RDWR: u64 = 0o2;
    pub const O_CREAT: u64 = 0o100;
    pub const O_TRUNC: u64 = 0o1000;
}

#[cfg(feature = "user")]
mod pod {
    unsafe impl aya::Pod for super::EventHeader {}
    unsafe impl aya::Pod for super::FieldHeader {}
    unsafe impl aya::Pod for super::ScopeEntry {}
}
