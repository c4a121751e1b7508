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
    /// A new hard link (`link`, `linkat`): path is the existing file, path2
    /// the new name.
    Link = 13,
    /// A new symbolic link (`symlink`, `symlinkat`): path is the target
    /// (resolved against the new link's directory), path2 the new name.
    Symlink = 14,
    /// Timestamps set (`utimensat`, `futimesat`, `utimes`, `utime`).
    Utimes = 15,
    /// An extended attribute set or removed (`setxattr` family,
    /// `removexattr` family); the attribute name is recorded.
    Xattr = 16,
    /// Inode flags set with `ioctl(FS_IOC_SETFLAGS)` or
    /// `ioctl(FS_IOC_FSSETXATTR)` (`chattr`: immutable, append-only).
    Setflags = 17,
    /// A 32-bit compat syscall (`int 0x80`) of a destructive kind: its
    /// number is the ia32 one; recorded, flagged, not decoded further.
    CompatSyscall = 18,
    /// A successful read-only open of a file whose inode userspace marked
    /// sensitive (`SENSITIVE_INODES`): credentials, keys, `.env` files.
    /// Complete in one record: `result` is the new fd, `flags` the file's
    /// `f_flags`, the path is the fd's (`FD_PATH`).
    Read = 19,
    /// One mount of a mount namespace other than the host's, as the kernel
    /// saw it when a process of that namespace made a traced call (see
    /// [`mountns`]). Consumed by the path views, never a trace record.
    MountInfo = 64,
    /// A cgroup was created while container following was armed (see
    /// [`cgroup_follow`]). Consumed by the command, never a trace record.
    CgroupMkdir = 65,
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
            13 => Self::Link,
            14 => Self::Symlink,
            15 => Self::Utimes,
            16 => Self::Xattr,
            17 => Self::Setflags,
            18 => Self::CompatSyscall,
            19 => Self::Read,
            64 => Self::MountInfo,
            65 => Self::CgroupMkdir,
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
            Self::Link => "link",
            Self::Symlink => "symlink",
            Self::Utimes => "utimes",
            Self::Xattr => "xattr",
            Self::Setflags => "setflags",
            Self::CompatSyscall => "compat_syscall",
            Self::Read => "read",
            Self::MountInfo => "mount_info",
            Self::CgroupMkdir => "cgroup_mkdir",
        }
    }

    pub const ALL: [EventKind; 19] = [
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
        Self::Link,
        Self::Symlink,
        Self::Utimes,
        Self::Xattr,
        Self::Setflags,
        Self::CompatSyscall,
        Self::Read,
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
    /// The call was a 32-bit compat syscall (ia32 number in `syscall`).
    pub const COMPAT: u32 = 1 << 3;
    /// A flags argument in user memory (`ioctl` flags, `open_how`) could
    /// not be read at syscall entry.
    pub const FLAGS_UNREAD: u32 = 1 << 4;
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
    /// Name of an extended attribute (`setxattr`, `removexattr`, ...).
    pub const XATTR_NAME: u8 = 9;
    /// `open_how.flags` of `openat2` (8 bytes, native order), read at
    /// syscall exit when unreadable at entry (then `READ_FAILED` at entry).
    pub const OPEN_HOW: u8 = 10;
    /// The inode number (u64, native endian) of the caller's mount
    /// namespace, present only when it is not the host's: the paths of the
    /// record are in that namespace's coordinates ([`mountns`]).
    pub const MNT_NS: u8 = 32;
    /// [`EventKind::MountInfo`]: the mount point, walked to the root of the
    /// namespace, leaf first.
    pub const MNT_POINT: u8 = 33;
    /// [`EventKind::MountInfo`]: the directory of the file system that is
    /// mounted (mountinfo's `root`), walked to the file system's root.
    pub const MNT_FS_ROOT: u8 = 34;
    /// [`EventKind::CgroupMkdir`]: the new cgroup's path in its hierarchy.
    pub const CGROUP_PATH: u8 = 35;
}

/// Mount tables of mount namespaces, captured by the kernel at the time of
/// the call. A [`EventKind::MountInfo`] record per mount: header `result`
/// = the namespace's inode number, `flags` = the namespace's change counter
/// (`mnt_namespace.event`) when it was captured, `mode` = the mount id,
/// `owner_uid` = the file system's device (kernel `MKDEV` encoding:
/// major << 20 | minor), `fd` = the mount's index in the capture (0 starts
/// a new table), `owner_gid` = [`mountns::LAST`] on the last mount of a
/// capture, [`mountns::CUT`] when the table had more than
/// [`mountns::MAX_MOUNTS`] mounts.
pub mod mountns {
    /// Mounts captured per namespace.
    pub const MAX_MOUNTS: u32 = 512;
    /// `owner_gid` of the last record of a capture.
    pub const LAST: u32 = 1;
    /// `owner_gid` of the last record when the table was cut.
    pub const CUT: u32 = 2;
}

/// Following containers from their cgroup's creation: while armed, every
/// new cgroup whose name matches a container runtime's layout is reported
/// as a [`EventKind::CgroupMkdir`] record (header `result` = the cgroup id,
/// `flags` = its level, `mode` = [`cgroup_follow::ADDED`] when the kernel
/// already put it in scope).
pub mod cgroup_follow {
    /// The kernel added the cgroup to the scope (pending target).
    pub const ADDED: u32 = 1;
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
    pub const MAX_PATH_DEPTH: u32 = 128;
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
    /// The BPF LSM backend's decision ring (`LSM_EVENTS`) was full: a
    /// decision record (a refusal or an allowance used) was not delivered.
    LsmRingbufFull = 3,
}

impl LossCause {
    pub const COUNT: u32 = 4;
    pub const ALL: [LossCause; 4] = [
        Self::RingbufFull,
        Self::InflightFull,
        Self::ScopeFull,
        Self::LsmRingbufFull,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            Self::RingbufFull => "ringbuf_full",
            Self::InflightFull => "inflight_full",
            Self::ScopeFull => "scope_full",
            Self::LsmRingbufFull => "lsm_ringbuf_full",
        }
    }

    /// What one unit of this cause's count is.
    pub const fn unit(self) -> &'static str {
        match self {
            Self::RingbufFull => "ring record (a syscall is an entry and a result record)",
            Self::InflightFull => "syscall whose result cannot be paired",
            Self::ScopeFull => "process that could not be put in scope",
            Self::LsmRingbufFull => "LSM decision record",
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

/// When the seccomp backend's filter sends a traced syscall to the supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// Every call.
    Always,
    /// Only when the open flags (this argument) may write; read-only opens
    /// never leave the kernel.
    IfWrites { flags_arg: u8 },
    /// Only for the [`ioctl_cmd::TRACED`] requests (this argument); every
    /// other ioctl never leaves the kernel.
    IfIoctl { cmd_arg: u8 },
}

/// ioctl requests that change inode flags (`chattr`), the only ioctls traced
/// (include/uapi/linux/fs.h, x86_64 values).
pub mod ioctl_cmd {
    /// `FS_IOC_SETFLAGS` (`_IOW('f', 2, long)`).
    pub const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
    /// `FS_IOC32_SETFLAGS` (`_IOW('f', 2, int)`), the same operation.
    pub const FS_IOC32_SETFLAGS: u32 = 0x4004_6602;
    /// `FS_IOC_FSSETXATTR` (`_IOW('X', 32, struct fsxattr)`): sets the same
    /// immutable and append-only flags through `fsx_xflags`.
    pub const FS_IOC_FSSETXATTR: u32 = 0x401c_5820;
    pub const TRACED: [u32; 3] = [FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR];

    #[inline(always)]
    pub const fn is_traced(cmd: u32) -> bool {
        matches!(cmd, FS_IOC_SETFLAGS | FS_IOC32_SETFLAGS | FS_IOC_FSSETXATTR)
    }
}

/// One traced syscall: the single table the kernel programs, the seccomp
/// filter, the decoder and the docs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    /// x86_64 number (arch/x86/entry/syscalls/syscall_64.tbl).
    pub nr: u32,
    pub name: &'static str,
    /// The operation before flags are looked at: an open with `O_TRUNC` is
    /// `truncate`, `unlinkat` with `AT_REMOVEDIR` is `rmdir`, `creat`
    /// always truncates.
    pub kind: EventKind,
    /// Argument registers (0-5) holding the path (or fd for fd-based calls),
    /// the second path, and the flags, as far as they exist.
    pub path_arg: Option<u8>,
    pub path2_arg: Option<u8>,
    pub flags_arg: Option<u8>,
    pub notify: Notify,
}

macro_rules! syscalls {
    ($($konst:ident = $nr:literal, $name:literal, $kind:ident, $path:expr, $path2:expr, $flags:expr, $notify:expr;)*) => {
        /// x86_64 syscall numbers of the traced syscalls ([`SYSCALLS`]).
        pub mod syscall_nr {
            $(pub const $konst: u32 = $nr;)*
        }

        /// Every traced syscall.
        pub const SYSCALLS: [Syscall; [$($nr),*].len()] = [$(Syscall {
            nr: $nr,
            name: $name,
            kind: EventKind::$kind,
            path_arg: $path,
            path2_arg: $path2,
            flags_arg: $flags,
            notify: $notify,
        }),*];

        /// Whether the kernel programs trace syscall `nr` (a jump table, not
        /// a loop: this runs on every syscall of the machine).
        #[inline(always)]
        pub const fn is_traced(nr: u32) -> bool {
            matches!(nr, $($nr)|*)
        }
    };
}

const ALWAYS: Notify = Notify::Always;

syscalls! {
    OPEN = 2, "open", Write, Some(0), None, Some(1), Notify::IfWrites { flags_arg: 1 };
    EXECVE = 59, "execve", Exec, Some(0), None, None, ALWAYS;
    TRUNCATE = 76, "truncate", Truncate, Some(0), None, None, ALWAYS;
    FTRUNCATE = 77, "ftruncate", Truncate, Some(0), None, None, ALWAYS;
    RENAME = 82, "rename", Rename, Some(0), Some(1), None, ALWAYS;
    RMDIR = 84, "rmdir", Rmdir, Some(0), None, None, ALWAYS;
    CREAT = 85, "creat", Truncate, Some(0), None, None, ALWAYS;
    UNLINK = 87, "unlink", Unlink, Some(0), None, None, ALWAYS;
    CHMOD = 90, "chmod", Chmod, Some(0), None, None, ALWAYS;
    FCHMOD = 91, "fchmod", Chmod, Some(0), None, None, ALWAYS;
    CHOWN = 92, "chown", Chown, Some(0), None, None, ALWAYS;
    FCHOWN = 93, "fchown", Chown, Some(0), None, None, ALWAYS;
    LCHOWN = 94, "lchown", Chown, Some(0), None, None, ALWAYS;
    OPENAT = 257, "openat", Write, Some(1), None, Some(2), Notify::IfWrites { flags_arg: 2 };
    FCHOWNAT = 260, "fchownat", Chown, Some(1), None, Some(4), ALWAYS;
    UNLINKAT = 263, "unlinkat", Unlink, Some(1), None, Some(2), ALWAYS;
    RENAMEAT = 264, "renameat", Rename, Some(1), Some(3), None, ALWAYS;
    FCHMODAT = 268, "fchmodat", Chmod, Some(1), None, None, ALWAYS;
    RENAMEAT2 = 316, "renameat2", Rename, Some(1), Some(3), Some(4), ALWAYS;
    EXECVEAT = 322, "execveat", Exec, Some(1), None, Some(4), ALWAYS;
    // Refused under --enforce: io_uring operations would bypass the filter.
    IO_URING_SETUP = 425, "io_uring_setup", IoUringSetup, None, None, None, ALWAYS;
    // Flags in a struct in user memory, which classic BPF cannot read.
    OPENAT2 = 437, "openat2", Write, Some(1), None, None, ALWAYS;
    FCHMODAT2 = 452, "fchmodat2", Chmod, Some(1), None, Some(3), ALWAYS;
    // Operations that change state without deleting or writing data:
    // new names, timestamps, extended attributes, inode flags.
    // Only FS_IOC_SETFLAGS and friends (ioctl_cmd::TRACED), filtered by cmd.
    IOCTL = 16, "ioctl", Setflags, Some(0), None, Some(1), Notify::IfIoctl { cmd_arg: 1 };
    LINK = 86, "link", Link, Some(0), Some(1), None, ALWAYS;
    SYMLINK = 88, "symlink", Symlink, Some(0), Some(1), None, ALWAYS;
    UTIME = 132, "utime", Utimes, Some(0), None, None, ALWAYS;
    SETXATTR = 188, "setxattr", Xattr, Some(0), None, Some(4), ALWAYS;
    LSETXATTR = 189, "lsetxattr", Xattr, Some(0), None, Some(4), ALWAYS;
    FSETXATTR = 190, "fsetxattr", Xattr, Some(0), None, Some(4), ALWAYS;
    REMOVEXATTR = 197, "removexattr", Xattr, Some(0), None, None, ALWAYS;
    LREMOVEXATTR = 198, "lremovexattr", Xattr, Some(0), None, None, ALWAYS;
    FREMOVEXATTR = 199, "fremovexattr", Xattr, Some(0), None, None, ALWAYS;
    UTIMES = 235, "utimes", Utimes, Some(0), None, None, ALWAYS;
    FUTIMESAT = 261, "futimesat", Utimes, Some(1), None, None, ALWAYS;
    LINKAT = 265, "linkat", Link, Some(1), Some(3), Some(4), ALWAYS;
    SYMLINKAT = 266, "symlinkat", Symlink, Some(0), Some(2), None, ALWAYS;
    UTIMENSAT = 280, "utimensat", Utimes, Some(1), None, Some(3), ALWAYS;
    OPEN_BY_HANDLE_AT = 304, "open_by_handle_at", Write, None, None, Some(2), Notify::IfWrites { flags_arg: 2 };
}

/// The traced syscall numbered `nr`.
pub fn syscall(nr: u32) -> Option<&'static Syscall> {
    let all: &'static [Syscall] = &SYSCALLS;
    all.iter().find(|s| s.nr == nr)
}

/// ia32 compat syscalls (`int 0x80`, arch/x86/entry/syscalls/syscall_32.tbl)
/// of the destructive kinds: the tracepoints record one flagged
/// [`EventKind::CompatSyscall`] record per call (the numbers are another
/// table's, so they are not decoded like their 64-bit twins), and the
/// seccomp filter refuses every 32-bit syscall under `--enforce`.
/// (number, name, argument register holding a path: 0 = ebx, 1 = ecx, or
/// `NO_PATH`).
pub const COMPAT_SYSCALLS: [(u32, &str, u8); 44] = [
    (5, "open", 0),
    (8, "creat", 0),
    (9, "link", 0),
    (10, "unlink", 0),
    (11, "execve", 0),
    (15, "chmod", 0),
    (16, "lchown", 0),
    (30, "utime", 0),
    (38, "rename", 0),
    (40, "rmdir", 0),
    (54, "ioctl", NO_PATH),
    (83, "symlink", 0),
    (92, "truncate", 0),
    (93, "ftruncate", NO_PATH),
    (94, "fchmod", NO_PATH),
    (95, "fchown", NO_PATH),
    (182, "chown", 0),
    (193, "truncate64", 0),
    (194, "ftruncate64", NO_PATH),
    (198, "lchown32", 0),
    (207, "fchown32", NO_PATH),
    (212, "chown32", 0),
    (226, "setxattr", 0),
    (227, "lsetxattr", 0),
    (228, "fsetxattr", NO_PATH),
    (235, "removexattr", 0),
    (236, "lremovexattr", 0),
    (237, "fremovexattr", NO_PATH),
    (271, "utimes", 0),
    (295, "openat", 1),
    (298, "fchownat", 1),
    (299, "futimesat", 1),
    (301, "unlinkat", 1),
    (302, "renameat", 1),
    (303, "linkat", 1),
    (304, "symlinkat", 0),
    (306, "fchmodat", 1),
    (320, "utimensat", 1),
    (342, "open_by_handle_at", NO_PATH),
    (353, "renameat2", 1),
    (358, "execveat", 1),
    (412, "utimensat_time64", 1),
    (437, "openat2", 1),
    (452, "fchmodat2", 1),
];
/// [`COMPAT_SYSCALLS`]: no path argument.
pub const NO_PATH: u8 = 0xff;

/// The path register of a recorded compat syscall, if it is one (a jump
/// table: runs for every in-scope syscall whose number matches).
#[inline(always)]
pub const fn compat_path_reg(nr: u32) -> Option<u8> {
    Some(match nr {
        5 | 8 | 9 | 10 | 11 | 15 | 16 | 30 | 38 | 40 | 83 | 92 | 182 | 193 | 198 | 212 | 226
        | 227 | 235 | 236 | 271 | 304 => 0,
        295 | 298 | 299 | 301 | 302 | 303 | 306 | 320 | 353 | 358 | 412 | 437 | 452 => 1,
        54 | 93 | 94 | 95 | 194 | 207 | 228 | 237 | 342 => NO_PATH,
        _ => return None,
    })
}

/// The name of compat syscall `nr`, if it is recorded.
pub fn compat_syscall(nr: u32) -> Option<&'static str> {
    COMPAT_SYSCALLS
        .iter()
        .find(|(n, _, _)| *n == nr)
        .map(|(_, name, _)| *name)
}

/// Value of the `INFLIGHT` map: a traced syscall in progress on one thread.
///
/// A user path argument can be unreadable at syscall entry (its page not yet
/// faulted in; tracepoint programs cannot fault). The syscall itself faults
/// it in, so `sys_exit` reads such arguments again and sends them with the
/// result; `retry` says which ones (bit 0: first path, bit 1: second path).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Inflight {
    pub nr: u32,
    pub retry: u32,
    pub path1: u64,
    pub path2: u64,
}
const _: () = assert!(size_of::<Inflight>() == 24);

/// `open` flags (x86_64 values) the kernel filter uses.
pub mod open_flags {
    pub const O_WRONLY: u64 = 0o1;
    pub const O_RDWR: u64 = 0o2;
    pub const O_CREAT: u64 = 0o100;
    pub const O_TRUNC: u64 = 0o1000;
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::EventHeader {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::FieldHeader {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ScopeEntry {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::Inflight {}
}

// ---------------------------------------------------------------------------
// BPF LSM enforcement backend: kernel maps and the denial record.
// Kernel side: `monitor-ebpf/src/probes/lsm.rs`; userspace side:
// `monitor::lsm`; design: docs/lsm.md.

/// Constants of the BPF LSM backend.
pub mod lsm {
    /// File rules the kernel holds: one bit of a u64 each, numbered in
    /// policy precedence order (bit 0 is tried first).
    pub const MAX_FILE_RULES: u32 = 64;
    /// Exec rules the kernel holds.
    pub const MAX_EXEC_RULES: u32 = 16;
    /// Conditions (clauses) of one exec rule; a clause holds alternatives.
    pub const EXEC_CLAUSES: u32 = 4;
    /// Levels walked from a target up to the root when matching protected
    /// directories (mount crossings included).
    pub const MAX_WALK: u32 = 64;
    /// Bytes of a program name or argument hashed for exec rules; longer
    /// strings never match a token.
    pub const MAX_TOKEN: usize = 255;
    /// Entries of the `LSM_PROTECT` map (inodes named by path rules).
    pub const MAX_PROTECT: u32 = 4096;
    /// Entries of the `LSM_EXEC_TOKENS` map (argument tokens).
    pub const MAX_TOKENS: u32 = 256;
    /// One-shot allowances granted at once (`LSM_ALLOW`).
    pub const MAX_ALLOW: u32 = 1024;
    /// How long the thread that used an allowance may pass the later hooks
    /// of the same call.
    pub const ALLOW_GRACE_NS: u64 = 100_000_000;

    /// `treatment` of a kernel rule.
    pub mod treatment {
        pub const ALLOW: u32 = 0;
        pub const DENY: u32 = 1;
        pub const CONFIRM: u32 = 2;
        pub const PRESERVE: u32 = 3;
    }

    /// What the hook did ([`super::LsmDecision::decision`]).
    pub mod decision {
        /// Refused: the rule's treatment is deny.
        pub const DENIED: u32 = 1;
        /// Refused until a human approves (confirm).
        pub const CONFIRM_PENDING: u32 = 2;
        /// Refused until the daemon has kept a copy (preserve).
        pub const PRESERVE_PENDING: u32 = 3;
        /// Let through once by an approval or a finished copy.
        pub const ALLOWED_ONCE: u32 = 4;
    }

    /// The LSM hook that decided ([`super::LsmDecision::hook`]).
    pub mod hook {
        pub const PATH_UNLINK: u32 = 1;
        pub const PATH_RMDIR: u32 = 2;
        pub const PATH_RENAME: u32 = 3;
        pub const PATH_CHMOD: u32 = 4;
        pub const PATH_CHOWN: u32 = 5;
        pub const PATH_TRUNCATE: u32 = 6;
        pub const FILE_TRUNCATE: u32 = 7;
        pub const FILE_OPEN: u32 = 8;
        pub const BPRM_CHECK_SECURITY: u32 = 9;

        pub const fn name(h: u32) -> &'static str {
            match h {
                PATH_UNLINK => "path_unlink",
                PATH_RMDIR => "path_rmdir",
                PATH_RENAME => "path_rename",
                PATH_CHMOD => "path_chmod",
                PATH_CHOWN => "path_chown",
                PATH_TRUNCATE => "path_truncate",
                FILE_TRUNCATE => "file_truncate",
                FILE_OPEN => "file_open",
                BPRM_CHECK_SECURITY => "bprm_check_security",
                _ => "unknown",
            }
        }
    }

    /// Payload field tags of `LSM_EVENTS` records (besides `FD_PATH`, the
    /// target's components, and `ROOT`).
    pub mod field {
        /// One [`super::super::LsmDecision`].
        pub const DECISION: u8 = 32;
        /// Components of the rename destination, leaf first.
        pub const TARGET2: u8 = 33;
    }

    /// FNV-1a, the hash of program names and argument tokens on both sides.
    pub const fn fnv1a(bytes: &[u8]) -> u64 {
        let mut h = FNV_OFFSET;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(FNV_PRIME);
            i += 1;
        }
        h
    }
    pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
}

/// Key of `LSM_PROTECT`: an inode as the kernel names it (`i_sb->s_dev`
/// in the kernel's `MKDEV` encoding, `i_ino`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InodeKey {
    pub ino: u64,
    pub dev: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<InodeKey>() == 16);

/// Value of `LSM_PROTECT`: which file rules an inode satisfies, as the
/// target itself, as its parent directory, or as any ancestor; and which
/// rules it excludes (`not_paths`) the same three ways.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathRuleBits {
    pub self_: u64,
    pub child: u64,
    pub desc: u64,
    pub excl_self: u64,
    pub excl_child: u64,
    pub excl_desc: u64,
}
const _: () = assert!(size_of::<PathRuleBits>() == 48);

/// The single entry of `LSM_CONFIG`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LsmConfig {
    /// Per [`EventKind`] value: the file rules that apply to that operation.
    pub op_rules: [u64; 16],
    /// File rules without a path condition (they match any path).
    pub any_path: u64,
    /// File rules by treatment; a matching rule in none of them allows.
    pub deny: u64,
    pub confirm: u64,
    pub preserve: u64,
    /// Number of exec rules in `LSM_EXEC_RULES` (0: exec matching is off).
    pub exec_rules: u32,
    /// Exec rules without a program condition.
    pub exec_any_program: u32,
    /// Lifetime of a one-shot allowance, in ns.
    pub allow_ttl_ns: u64,
}
const _: () = assert!(size_of::<LsmConfig>() == 176);

/// One entry of `LSM_EXEC_RULES`. Clause `c` of rule `r` is satisfied when
/// an argument's hash maps to bit `r * EXEC_CLAUSES + c` in
/// `LSM_EXEC_TOKENS`, or when all letters of `letters[c]` (non-zero) are set
/// in the short-option clusters of the command line.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecRule {
    /// Letter alternatives, a 128-bit ASCII set per clause.
    pub letters: [[u64; 2]; 4],
    /// Bits of the clauses in use.
    pub used: u32,
    /// Bits of the clauses that must NOT be satisfied (`not_flags`).
    pub negated: u32,
    /// [`lsm::treatment`] value.
    pub treatment: u32,
    /// Index of the rule in the compiled kernel policy (for events).
    pub index: u32,
}
const _: () = assert!(size_of::<ExecRule>() == 64 + 16);

/// Value of `LSM_EXEC_VERDICT` (per thread, written at execve entry):
/// the exec rule that matched the command line.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecVerdict {
    /// Kernel rule index (as in [`LsmDecision::rule`]).
    pub rule: u32,
    pub treatment: u32,
}
const _: () = assert!(size_of::<ExecVerdict>() == 8);

/// Key of `LSM_ALLOW`: a one-shot allowance for one operation on one
/// object under one rule (the executable's inode for exec).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AllowKey {
    pub ino: u64,
    pub dev: u32,
    /// [`EventKind`] value.
    pub op: u16,
    /// Kernel rule index.
    pub rule: u16,
}
const _: () = assert!(size_of::<AllowKey>() == 16);

/// Value of `LSM_ALLOW`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Allowance {
    /// `bpf_ktime_get_ns()` after which the allowance is void.
    pub expires_ns: u64,
    /// 0 while unused. Once used: the thread that used it, which may pass
    /// the other hooks of the same call (an `O_TRUNC` open reaches
    /// `file_open` and then `path_truncate`/`file_truncate`) until
    /// `expires_ns` (now + [`lsm::ALLOW_GRACE_NS`]).
    pub tid: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<Allowance>() == 16);

/// First payload field of an `LSM_EVENTS` record (tag
/// [`lsm::field::DECISION`]). The record's header is an [`EventHeader`]
/// whose `kind` is the operation and whose `result` is what the hook
/// returned (-EPERM, or 0 for an allowance used).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LsmDecision {
    /// Kernel rule index.
    pub rule: u32,
    /// [`lsm::decision`] value.
    pub decision: u32,
    /// [`lsm::hook`] value.
    pub hook: u32,
    pub dev: u32,
    /// The target's inode (the executable for exec; 0 if none).
    pub ino: u64,
}
const _: () = assert!(size_of::<LsmDecision>() == 24);

/// Per-CPU scratch of the exec token hasher.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TokenScratch {
    pub buf: [u8; 512],
    /// Letters of the short-option cluster just hashed (128-bit ASCII set).
    pub letters: [u64; 2],
}
const _: () = assert!(size_of::<TokenScratch>() == 528);

#[cfg(feature = "user")]
mod lsm_pod {
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::InodeKey {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::PathRuleBits {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::LsmConfig {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ExecRule {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ExecVerdict {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::AllowKey {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::Allowance {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::LsmDecision {}
}
