//! The one table of traced syscalls (number, name, kind, argument
//! registers, when seccomp notifies) that the kernel programs, the seccomp
//! filter, the decoder and the docs use, and the ia32 compat calls of the
//! same kinds.

use crate::EventKind;

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

/// How an ia32 call's arguments become its x86_64 twin's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompatArgs {
    /// The same arguments in the same order (ebx, ecx, edx, esi, edi, ebp
    /// are arguments 0-5).
    Same,
    /// A 64-bit length split over arguments 1 (low) and 2 (high):
    /// `truncate64`, `ftruncate64`.
    Len64,
    /// 16-bit owner ids in arguments 1 and 2 (`chown`, `lchown`, `fchown`
    /// of the old ABI): 0xffff is -1.
    Uid16,
}

/// The x86_64 twin of ia32 call `nr` (arch/x86/entry/syscalls/
/// syscall_32.tbl), and how its arguments map: the kernel programs record
/// the call as its twin (with `header_flags::COMPAT` and the ia32 number
/// in `field_tag::COMPAT_NR`), so it is decoded, resolved and judged the
/// same way. `None` for calls recorded as [`EventKind::CompatSyscall`]
/// (32-bit execs) and everything else.
#[inline(always)]
pub const fn compat_native(nr: u32) -> Option<(u32, CompatArgs)> {
    use syscall_nr as n;
    use CompatArgs::*;
    Some(match nr {
        5 => (n::OPEN, Same),
        8 => (n::CREAT, Same),
        9 => (n::LINK, Same),
        10 => (n::UNLINK, Same),
        15 => (n::CHMOD, Same),
        16 => (n::LCHOWN, Uid16),
        30 => (n::UTIME, Same),
        38 => (n::RENAME, Same),
        40 => (n::RMDIR, Same),
        54 => (n::IOCTL, Same),
        83 => (n::SYMLINK, Same),
        92 => (n::TRUNCATE, Same),
        93 => (n::FTRUNCATE, Same),
        94 => (n::FCHMOD, Same),
        95 => (n::FCHOWN, Uid16),
        182 => (n::CHOWN, Uid16),
        193 => (n::TRUNCATE, Len64),
        194 => (n::FTRUNCATE, Len64),
        198 => (n::LCHOWN, Same),
        207 => (n::FCHOWN, Same),
        212 => (n::CHOWN, Same),
        226 => (n::SETXATTR, Same),
        227 => (n::LSETXATTR, Same),
        228 => (n::FSETXATTR, Same),
        235 => (n::REMOVEXATTR, Same),
        236 => (n::LREMOVEXATTR, Same),
        237 => (n::FREMOVEXATTR, Same),
        271 => (n::UTIMES, Same),
        295 => (n::OPENAT, Same),
        298 => (n::FCHOWNAT, Same),
        299 => (n::FUTIMESAT, Same),
        301 => (n::UNLINKAT, Same),
        302 => (n::RENAMEAT, Same),
        303 => (n::LINKAT, Same),
        304 => (n::SYMLINKAT, Same),
        306 => (n::FCHMODAT, Same),
        320 => (n::UTIMENSAT, Same),
        342 => (n::OPEN_BY_HANDLE_AT, Same),
        353 => (n::RENAMEAT2, Same),
        412 => (n::UTIMENSAT, Same),
        437 => (n::OPENAT2, Same),
        452 => (n::FCHMODAT2, Same),
        _ => return None,
    })
}

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
