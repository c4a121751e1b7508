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
//! `monitor::kernel::events`.
//!
//! The table of traced syscalls is in `syscalls`, the BPF LSM backend's
//! maps and decision record in `lsm_maps`; both are re-exported here.
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
    /// exec: the environment had more entries than the kernel program
    /// looks at ([`limits::MAX_ENV_SCAN`](crate::limits::MAX_ENV_SCAN)):
    /// the `ENV` fields may be incomplete.
    pub const ENV_PARTIAL: u32 = 1 << 5;
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
    /// exec: one `NAME=VALUE` entry of the new program's environment whose
    /// name starts like one of [`target_env::PREFIXES`]; userspace keeps
    /// the exact names of [`target_env::NAMES`].
    pub const ENV: u8 = 11;
    /// The first path starts with a link into the caller's own `/proc`
    /// entry (`/proc/self/`, `/proc/thread-self/`, `/proc/<its pid or
    /// tid>/`, `/dev/fd/N`, `/dev/stdin`...) naming `cwd`, `root` or
    /// `fd/N`: `BASE` is then the walk of the object that link names for
    /// the calling task at syscall entry (its working directory, its root,
    /// the file of its fd N), and this field (u64, native endian) the byte
    /// offset in `RAW_PATH` where the rest, relative to that object,
    /// starts.
    pub const LINK_REST: u8 = 12;
    /// The same for the second path (`BASE2`, `RAW_PATH2`).
    pub const LINK_REST2: u8 = 13;
    /// Identity of the object `BASE` walked (the directory the first path
    /// is resolved from, or the object a `/proc` link named): 16 bytes,
    /// the inode number (u64) then the device (u64, the kernel's `MKDEV`
    /// encoding: major << 20 | minor), native endian. `READ_FAILED` and
    /// empty when there is no inode.
    pub const BASE_ID: u8 = 14;
    /// The same for `BASE2`.
    pub const BASE2_ID: u8 = 15;
    /// Identity (as [`BASE_ID`]) of the file behind the fd of an fd-based
    /// call (`FD_PATH`).
    pub const FD_ID: u8 = 16;
    /// Result record of a successful open (`open`, `openat`, `openat2`,
    /// `creat`, `open_by_handle_at`): the new fd's file, walked at syscall
    /// exit, leaf first (the file really opened: final symlinks and
    /// `/proc/self/fd/N` reopens followed).
    pub const OPENED_PATH: u8 = 17;
    /// Result record of a successful open: identity (as [`BASE_ID`]) of
    /// the new fd's file.
    pub const OPENED_ID: u8 = 18;
    /// Result record of a successful open that created the file it opened
    /// (the kernel's `FMODE_CREATED` in the new file's `f_mode`): nothing
    /// was at that name before the call. A u64 field holding the `f_mode`.
    pub const OPENED_CREATED: u8 = 21;
    /// Result record of a successful call that removes or moves a name
    /// (`unlink`, `unlinkat`, `rmdir`, `rename*`) or changes the
    /// attributes of the file a path names (`truncate`, the `chmod`,
    /// `chown` and `utimes` families): whether the object the entry
    /// record's paths named is the one the kernel acted on, checked at exit
    /// against the dentries the entry lookup found (see [`confirm`]). A u64
    /// field: the first path's code in bits 0-3, the second path's in bits
    /// 4-7.
    pub const CONFIRM: u8 = 22;
    /// An ia32 call recorded as its x86_64 twin (`header_flags::COMPAT`):
    /// its own number in the ia32 table, a u64.
    pub const COMPAT_NR: u8 = 23;
    /// The object the first path names and the directory that holds its
    /// final component, looked up by the kernel in the dentry cache at
    /// syscall entry, before the call acts (see [`lookup`]): 40 bytes, five
    /// u64 in native order: object inode, object device, directory inode,
    /// directory device (devices in the kernel's `MKDEV` encoding, as
    /// [`BASE_ID`]), then the [`lookup`] status.
    pub const LOOKUP: u8 = 19;
    /// The same for the second path (a rename's target, a link's new name).
    pub const LOOKUP2: u8 = 20;
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

/// `FMODE_CREATED` of `struct file`'s `f_mode` (include/linux/fs.h): set
/// by the open that created the file. The same bit from Linux 4.19
/// (0x100000) through the 6.x series (`1 << 20`).
pub const FMODE_CREATED: u32 = 1 << 20;

/// Outcome of the kernel's dentry-cache lookup of a path argument
/// ([`field_tag::LOOKUP`]): the low byte is one of the statuses below;
/// [`lookup::DIR_KNOWN`] says the directory identity is valid.
pub mod lookup {
    /// The object was found: both identities are valid.
    pub const FOUND: u64 = 0;
    /// The final component names nothing (a negative dentry): the object
    /// does not exist (a rename's absent target, a call that fails).
    pub const ABSENT: u64 = 1;
    /// A symbolic link on the way (or a final one the call follows).
    pub const SYMLINK: u64 = 2;
    /// A mount point the lookup could not cross.
    pub const MOUNT: u64 = 3;
    /// A component is not in the dentry cache.
    pub const NOT_CACHED: u64 = 4;
    /// A directory of a file system with its own name hashing or
    /// comparison (case-insensitive, ...).
    pub const FS_NAMES: u64 = 5;
    /// More components (or `..` steps) than the lookup follows.
    pub const DEPTH: u64 = 6;
    /// The lookup is off: the dentry hash table was not located at load.
    pub const OFF: u64 = 7;
    /// Anything else: an unreadable path, a component that is not a
    /// directory, a name too long, `..` out of a mount.
    pub const OTHER: u64 = 8;
    /// Bit: the directory identity is valid.
    pub const DIR_KNOWN: u64 = 1 << 8;
    /// Bit: the lookup followed at least one symbolic link on the way (its
    /// result can be found or absent all the same): the path as written is
    /// then not the object's canonical path.
    pub const LINKS_FOLLOWED: u64 = 1 << 9;
    /// Components (and mount crossings) one lookup follows at most.
    pub const MAX_STEPS: u32 = 48;
    /// Entries of one hash chain looked at at most.
    pub const MAX_CHAIN: u32 = 16;
}

/// Codes of [`field_tag::CONFIRM`], per path argument.
pub mod confirm {
    /// Not checked (the entry lookup found no identity to check against).
    pub const UNCHECKED: u64 = 0;
    /// The named object is the one acted on: the dentry the entry lookup
    /// found for it is gone from its name (unlink, rmdir) or moved to the
    /// second path's name (rename), or, for a name the entry lookup did
    /// not find in the cache, the name is now a negative dentry; for an
    /// attribute change, the change time of the inode the entry lookup
    /// found moved during the call.
    pub const CONFIRMED: u64 = 1;
    /// The named object was not acted on: it is still there, under the
    /// same name, after a call that succeeded (or it did not exist when
    /// the call started). The path argument changed between the record's
    /// copy and the kernel's.
    pub const CONTRADICTED: u64 = 2;
    /// Checked without a conclusion (the name is not in the cache at
    /// exit; for an attribute change, the object was not in the cache at
    /// entry, or its change time did not move: another object's may have).
    pub const UNKNOWN: u64 = 3;
    /// Bits per path in the field.
    pub const SHIFT: u32 = 4;
}

/// Value of the `DCACHE` map: where the dentry hash table is
/// (`dentry_hashtable`, `d_hash_shift` of fs/dcache.c), found by the
/// loader at load time; `table` 0 turns the lookup off.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DcacheConfig {
    pub table: u64,
    pub shift: u64,
    /// The `d_flags` bit of a mount point (`DCACHE_MOUNTED`: 0x10000 on
    /// 6.1 and 6.12, renumbered since), as found on `/proc`'s.
    pub mounted: u64,
    /// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC`, in ns (two's complement),
    /// when the table was located: the monotonic clock plus this is the
    /// wall clock the kernel stamps inode times with, so an attribute
    /// change can tell whether the call would move an object's change time
    /// (see [`confirm`]).
    pub real_offset: u64,
}
const _: () = assert!(size_of::<DcacheConfig>() == 32);

/// Value of the `DCACHE_SAMPLES` map: one dentry the loader created, as
/// the kernel sees it, to locate the hash table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DcacheSample {
    pub dentry: u64,
    pub parent: u64,
    /// `d_name.hash_len`: the name's length << 32 | its hash.
    pub hash_len: u64,
    /// `d_hash.pprev`: for the first dentry of a chain, the bucket.
    pub pprev: u64,
    /// `d_flags` of the dentry.
    pub flags: u64,
    /// `d_flags` of the dentry the file's mount is mounted on (0 for the
    /// root of a namespace): the loader checks the mount-point bit on it.
    pub mountpoint_flags: u64,
}
const _: () = assert!(size_of::<DcacheSample>() == 48);

/// The kernel's name hash for a dentry `name` under the parent dentry at
/// address `salt` (fs/namei.c `full_name_hash`, 64-bit with
/// `CONFIG_DCACHE_WORD_ACCESS`, little endian): whole 8-byte words are
/// mixed, a final partial word is xored in, then folded.
pub fn full_name_hash(salt: u64, name: &[u8]) -> u32 {
    let (mut x, mut y) = (0u64, salt);
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        let mut a = 0u64;
        for (i, b) in c.iter().enumerate() {
            a |= (*b as u64) << (8 * i);
        }
        (x, y) = hash_mix(x, y, a);
    }
    let mut a = 0u64;
    for (i, b) in chunks.remainder().iter().enumerate() {
        a |= (*b as u64) << (8 * i);
    }
    x ^= a;
    fold_hash(x, y)
}

/// `HASH_MIX` of fs/namei.c (64-bit).
#[inline(always)]
pub fn hash_mix(mut x: u64, mut y: u64, a: u64) -> (u64, u64) {
    x ^= a;
    y ^= x;
    x = x.rotate_left(12);
    x = x.wrapping_add(y);
    y = y.rotate_left(45);
    y = y.wrapping_mul(9);
    (x, y)
}

/// `fold_hash` of fs/namei.c (64-bit).
#[inline(always)]
pub fn fold_hash(x: u64, y: u64) -> u32 {
    const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
    let y = (y ^ x.wrapping_mul(GOLDEN_RATIO_64)).wrapping_mul(GOLDEN_RATIO_64);
    (y >> 32) as u32
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

/// The environment variables that decide which object a command acts on
/// (the cluster of `kubectl`, the profile of `aws`, the workspace of
/// `terraform`...). The exec program copies the entries whose first eight
/// bytes are one of [`PREFIXES`](target_env::PREFIXES); userspace keeps the
/// exact [`NAMES`](target_env::NAMES).
pub mod target_env {
    pub const NAMES: &[&str] = &[
        "KUBECONFIG",
        "KUBE_CONTEXT",
        "AWS_PROFILE",
        "TF_WORKSPACE",
        "CLOUDSDK_CORE_PROJECT",
        "DOCKER_CONTEXT",
        "DOCKER_HOST",
    ];
    const fn prefix(name: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let mut i = 0;
        while i < 8 {
            b[i] = name[i];
            i += 1;
        }
        u64::from_le_bytes(b)
    }
    /// First eight bytes of each of [`NAMES`], little-endian (every name
    /// is longer than eight bytes).
    pub const PREFIXES: [u64; 7] = [
        prefix(b"KUBECONF"),
        prefix(b"KUBE_CON"),
        prefix(b"AWS_PROF"),
        prefix(b"TF_WORKS"),
        prefix(b"CLOUDSDK"),
        prefix(b"DOCKER_C"),
        prefix(b"DOCKER_H"),
    ];
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
    /// exec: environment entries looked at.
    pub const MAX_ENV_SCAN: u32 = 128;
    /// Bytes of one kept environment entry.
    pub const MAX_ENV_LEN: usize = 256;
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
    /// `sys_enter` could not tail-call the exec program: an execve or
    /// execveat of a process in scope was not recorded.
    TailCallFailed = 4,
}

impl LossCause {
    pub const COUNT: u32 = 5;
    pub const ALL: [LossCause; 5] = [
        Self::RingbufFull,
        Self::InflightFull,
        Self::ScopeFull,
        Self::LsmRingbufFull,
        Self::TailCallFailed,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            Self::RingbufFull => "ringbuf_full",
            Self::InflightFull => "inflight_full",
            Self::ScopeFull => "scope_full",
            Self::LsmRingbufFull => "lsm_ringbuf_full",
            Self::TailCallFailed => "tail_call_failed",
        }
    }

    /// What one unit of this cause's count is.
    pub const fn unit(self) -> &'static str {
        match self {
            Self::RingbufFull => "ring record (a syscall is an entry and a result record)",
            Self::InflightFull => "syscall whose result cannot be paired",
            Self::ScopeFull => "process that could not be put in scope",
            Self::LsmRingbufFull => "LSM decision record",
            Self::TailCallFailed => "exec call not recorded",
        }
    }
}

/// Kernel-side reads and helpers that failed where the program carries on
/// with a zero or an empty value (an argv or environment list cut short, a
/// register or dentry field taken as 0); index into the per-CPU `ERRORS`
/// array. A failed read of a path argument is not counted here: its field
/// says so itself (`READ_FAILED`, a record's `path_issues`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFailure {
    /// `bpf_probe_read_user` of memory a syscall argument points to (an
    /// argv or envp slot, an environment entry's first bytes).
    User = 0,
    /// `bpf_probe_read_kernel` (syscall registers, the task's `fs`, dentry
    /// and dentry-cache fields, a field of the record being built).
    Kernel = 1,
    /// Another helper that returned an error (`bpf_get_current_comm`).
    Helper = 2,
}

impl ReadFailure {
    pub const COUNT: u32 = 3;
    pub const ALL: [ReadFailure; 3] = [Self::User, Self::Kernel, Self::Helper];
    /// The loss cause under which the trace records this failure's count.
    pub const fn name(self) -> &'static str {
        match self {
            Self::User => "user_read_failed",
            Self::Kernel => "kernel_read_failed",
            Self::Helper => "helper_failed",
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

mod syscalls;
pub use syscalls::*;

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
    /// The dentry the entry lookup found for the first path (0: none),
    /// checked at exit ([`field_tag::CONFIRM`]).
    pub obj: u64,
    /// The directory dentry and `d_name.hash_len` the first path's final
    /// component was looked up with (0: the lookup did not get there).
    pub dir1: u64,
    pub hash1: u64,
    /// The same for the second path.
    pub dir2: u64,
    pub hash2: u64,
    /// For a call that changes the first path's attributes by name
    /// ([`Inflight::retry`] has the attribute bit): the change time (ns)
    /// of the object the entry lookup found, as it was before the call.
    pub ctime: u64,
}
const _: () = assert!(size_of::<Inflight>() == 72);

impl Inflight {
    /// An entry for call `nr` with nothing to check at exit.
    pub const fn new(nr: u32, path1: u64, path2: u64) -> Inflight {
        Inflight {
            nr,
            retry: 0,
            path1,
            path2,
            obj: 0,
            dir1: 0,
            hash1: 0,
            dir2: 0,
            hash2: 0,
            ctime: 0,
        }
    }
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
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::DcacheConfig {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::DcacheSample {}
}

mod lsm_maps;
pub use lsm_maps::*;
