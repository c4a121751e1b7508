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
    /// Only when the open flags (the [`Layout::flags`] argument) may write
    /// ([`open_flags::WRITE_FLAGS`]); read-only opens never leave the kernel.
    IfWrites,
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

/// Which argument register (0-5) of a traced syscall holds what: read by
/// the kernel programs (`monitor-ebpf/src/probes/files.rs`) and the seccomp
/// backend (`monitor/src/enforce/seccomp/target.rs`) alike, so a call is
/// described the same way by both. `None`: the call has no such argument
/// (a missing dirfd means `AT_FDCWD`).
///
/// What no register says is written once per backend, next to its reader,
/// and named in the table's comments: the flags `openat2` and `ioctl`
/// keep in user memory (at the address in argument 2), the fixed flags of
/// `creat` ([`open_flags::CREAT`]), and `futimesat`/`utimensat` with a
/// null path acting on their dirfd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The directory fd the first path is relative to.
    pub dirfd1: Option<u8>,
    /// The first path (the object acted on; a symlink's target string).
    pub path1: Option<u8>,
    /// The directory fd the second path is relative to.
    pub dirfd2: Option<u8>,
    /// The second path (a rename's or link's new name).
    pub path2: Option<u8>,
    /// The fd whose file is acted on (fchmod, fchown, ftruncate, ...).
    pub fd: Option<u8>,
    /// The flags (`O_*` for opens, `AT_*` for `*at` calls, `XATTR_*`,
    /// `RENAME_*`), or the new length of truncate and ftruncate.
    pub flags: Option<u8>,
    /// The new mode (chmod, and opens that create).
    pub mode: Option<u8>,
    /// The new owner: uid in this register, gid in the next.
    pub owner: Option<u8>,
    /// The name of an extended attribute.
    pub xattr: Option<u8>,
    /// An exec's `argv`.
    pub argv: Option<u8>,
    /// Whether the first path's final symlink is followed.
    pub follow: Follow,
}

/// How a call treats a symlink in the final component of its first path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Acts on the final name itself (unlink, rename, lchown, lsetxattr).
    Never,
    /// Follows it (chmod, truncate, chown, setxattr, ...).
    Always,
    /// Follows it unless the flags hold `AT_SYMLINK_NOFOLLOW` (fchownat,
    /// fchmodat2, utimensat).
    UnlessNoFollow,
    /// Follows it only when the flags hold `AT_SYMLINK_FOLLOW` (linkat).
    IfFollow,
    /// The path is not looked up at entry: an open (its result names the
    /// file opened) or a symlink's target (a string, not a path).
    NotLookedUp,
}

impl Follow {
    /// Whether a call with these flags follows a final symlink.
    #[inline(always)]
    pub const fn follows(self, flags: u64) -> bool {
        match self {
            Follow::Always => true,
            Follow::UnlessNoFollow => flags & at_flags::AT_SYMLINK_NOFOLLOW == 0,
            Follow::IfFollow => flags & at_flags::AT_SYMLINK_FOLLOW != 0,
            Follow::Never | Follow::NotLookedUp => false,
        }
    }
}

impl Layout {
    /// No arguments read (`io_uring_setup`).
    pub const NONE: Layout = Layout {
        dirfd1: None,
        path1: None,
        dirfd2: None,
        path2: None,
        fd: None,
        flags: None,
        mode: None,
        owner: None,
        xattr: None,
        argv: None,
        follow: Follow::Never,
    };
    /// A path relative to the working directory in register `path`.
    pub const fn path(path: u8) -> Layout {
        Layout {
            path1: Some(path),
            ..Layout::NONE
        }
    }
    /// A path in register `path` relative to the dirfd in `dirfd`.
    pub const fn at(dirfd: u8, path: u8) -> Layout {
        Layout {
            dirfd1: Some(dirfd),
            path1: Some(path),
            ..Layout::NONE
        }
    }
    /// The file an fd names.
    pub const fn fd(fd: u8) -> Layout {
        Layout {
            fd: Some(fd),
            ..Layout::NONE
        }
    }
    /// Only a directory fd, no path (`open_by_handle_at`'s mount fd).
    pub const fn dirfd(dirfd: u8) -> Layout {
        Layout {
            dirfd1: Some(dirfd),
            ..Layout::NONE
        }
    }
    /// A second path, relative to the working directory.
    pub const fn path2(self, path: u8) -> Layout {
        Layout {
            path2: Some(path),
            ..self
        }
    }
    /// A second path relative to the dirfd in `dirfd`.
    pub const fn at2(self, dirfd: u8, path: u8) -> Layout {
        Layout {
            dirfd2: Some(dirfd),
            path2: Some(path),
            ..self
        }
    }
    pub const fn flags(self, flags: u8) -> Layout {
        Layout {
            flags: Some(flags),
            ..self
        }
    }
    pub const fn mode(self, mode: u8) -> Layout {
        Layout {
            mode: Some(mode),
            ..self
        }
    }
    /// uid in register `uid`, gid in the next one.
    pub const fn owner(self, uid: u8) -> Layout {
        Layout {
            owner: Some(uid),
            ..self
        }
    }
    pub const fn xattr(self, name: u8) -> Layout {
        Layout {
            xattr: Some(name),
            ..self
        }
    }
    pub const fn argv(self, argv: u8) -> Layout {
        Layout {
            argv: Some(argv),
            ..self
        }
    }
    pub const fn follow(self, follow: Follow) -> Layout {
        Layout { follow, ..self }
    }
}

/// One traced syscall: the single table the kernel programs, the seccomp
/// filter, the decoder and the docs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    /// x86_64 number (arch/x86/entry/syscalls/syscall_64.tbl).
    pub nr: u32,
    pub name: &'static str,
    /// The operation before flags are looked at ([`call_kind`]): an open
    /// with `O_TRUNC` is `truncate`, `unlinkat` with `AT_REMOVEDIR` is
    /// `rmdir`, `creat` always truncates.
    pub kind: EventKind,
    /// Which argument holds what.
    pub layout: Layout,
    pub notify: Notify,
}

macro_rules! syscalls {
    ($($konst:ident = $nr:literal, $name:literal, $kind:ident, $layout:expr, $notify:expr;)*) => {
        /// x86_64 syscall numbers of the traced syscalls ([`SYSCALLS`]).
        pub mod syscall_nr {
            $(pub const $konst: u32 = $nr;)*
        }

        /// Every traced syscall.
        pub const SYSCALLS: [Syscall; [$($nr),*].len()] = [$(Syscall {
            nr: $nr,
            name: $name,
            kind: EventKind::$kind,
            layout: $layout,
            notify: $notify,
        }),*];

        /// Whether the kernel programs trace syscall `nr` (a jump table, not
        /// a loop: this runs on every syscall of the machine).
        #[inline(always)]
        pub const fn is_traced(nr: u32) -> bool {
            matches!(nr, $($nr)|*)
        }

        /// The kind (before flags, see [`call_kind`]) and argument layout
        /// of traced syscall `nr`: the [`SYSCALLS`] row as a jump table of
        /// constants, which the kernel programs can use (no loop, no
        /// string).
        #[inline(always)]
        pub const fn layout(nr: u32) -> Option<(EventKind, Layout)> {
            match nr {
                $($nr => Some((EventKind::$kind, $layout)),)*
                _ => None,
            }
        }
    };
}

const ALWAYS: Notify = Notify::Always;
const IF_WRITES: Notify = Notify::IfWrites;
type L = Layout;
const FOLLOW: Follow = Follow::Always;
const UNLESS_NOFOLLOW: Follow = Follow::UnlessNoFollow;
const IF_FOLLOW: Follow = Follow::IfFollow;
const NO_LOOKUP: Follow = Follow::NotLookedUp;

// To trace one more syscall, add its row here (number, name, kind, layout,
// when seccomp notifies); see docs/architecture.md.
syscalls! {
    OPEN = 2, "open", Write, L::path(0).flags(1).mode(2).follow(NO_LOOKUP), IF_WRITES;
    EXECVE = 59, "execve", Exec, L::path(0).argv(1), ALWAYS;
    // flags: the new length.
    TRUNCATE = 76, "truncate", Truncate, L::path(0).flags(1).follow(FOLLOW), ALWAYS;
    FTRUNCATE = 77, "ftruncate", Truncate, L::fd(0).flags(1), ALWAYS;
    RENAME = 82, "rename", Rename, L::path(0).path2(1), ALWAYS;
    RMDIR = 84, "rmdir", Rmdir, L::path(0), ALWAYS;
    // Flags always open_flags::CREAT.
    CREAT = 85, "creat", Truncate, L::path(0).mode(1).follow(NO_LOOKUP), ALWAYS;
    UNLINK = 87, "unlink", Unlink, L::path(0), ALWAYS;
    CHMOD = 90, "chmod", Chmod, L::path(0).mode(1).follow(FOLLOW), ALWAYS;
    FCHMOD = 91, "fchmod", Chmod, L::fd(0).mode(1), ALWAYS;
    CHOWN = 92, "chown", Chown, L::path(0).owner(1).follow(FOLLOW), ALWAYS;
    FCHOWN = 93, "fchown", Chown, L::fd(0).owner(1), ALWAYS;
    LCHOWN = 94, "lchown", Chown, L::path(0).owner(1), ALWAYS;
    OPENAT = 257, "openat", Write, L::at(0, 1).flags(2).mode(3).follow(NO_LOOKUP), IF_WRITES;
    FCHOWNAT = 260, "fchownat", Chown, L::at(0, 1).owner(2).flags(4).follow(UNLESS_NOFOLLOW), ALWAYS;
    UNLINKAT = 263, "unlinkat", Unlink, L::at(0, 1).flags(2), ALWAYS;
    RENAMEAT = 264, "renameat", Rename, L::at(0, 1).at2(2, 3), ALWAYS;
    FCHMODAT = 268, "fchmodat", Chmod, L::at(0, 1).mode(2).follow(FOLLOW), ALWAYS;
    RENAMEAT2 = 316, "renameat2", Rename, L::at(0, 1).at2(2, 3).flags(4), ALWAYS;
    EXECVEAT = 322, "execveat", Exec, L::at(0, 1).argv(2).flags(4), ALWAYS;
    // Refused under --enforce: io_uring operations would bypass the filter.
    IO_URING_SETUP = 425, "io_uring_setup", IoUringSetup, L::NONE, ALWAYS;
    // Flags and mode in `struct open_how` (address in argument 2), which
    // classic BPF cannot read.
    OPENAT2 = 437, "openat2", Write, L::at(0, 1).follow(NO_LOOKUP), ALWAYS;
    FCHMODAT2 = 452, "fchmodat2", Chmod, L::at(0, 1).mode(2).flags(3).follow(UNLESS_NOFOLLOW), ALWAYS;
    // Operations that change state without deleting or writing data:
    // new names, timestamps, extended attributes, inode flags.
    // Only FS_IOC_SETFLAGS and friends (ioctl_cmd::TRACED), filtered by cmd;
    // the new flags are in user memory (address in argument 2).
    IOCTL = 16, "ioctl", Setflags, L::fd(0), Notify::IfIoctl { cmd_arg: 1 };
    LINK = 86, "link", Link, L::path(0).path2(1), ALWAYS;
    // The first path is the target string, the second the new name.
    SYMLINK = 88, "symlink", Symlink, L::path(0).path2(1).follow(NO_LOOKUP), ALWAYS;
    UTIME = 132, "utime", Utimes, L::path(0).follow(FOLLOW), ALWAYS;
    SETXATTR = 188, "setxattr", Xattr, L::path(0).xattr(1).flags(4).follow(FOLLOW), ALWAYS;
    LSETXATTR = 189, "lsetxattr", Xattr, L::path(0).xattr(1).flags(4), ALWAYS;
    FSETXATTR = 190, "fsetxattr", Xattr, L::fd(0).xattr(1).flags(4), ALWAYS;
    REMOVEXATTR = 197, "removexattr", Xattr, L::path(0).xattr(1).follow(FOLLOW), ALWAYS;
    LREMOVEXATTR = 198, "lremovexattr", Xattr, L::path(0).xattr(1), ALWAYS;
    FREMOVEXATTR = 199, "fremovexattr", Xattr, L::fd(0).xattr(1), ALWAYS;
    UTIMES = 235, "utimes", Utimes, L::path(0).follow(FOLLOW), ALWAYS;
    // A null path: the dirfd is the file (futimens).
    FUTIMESAT = 261, "futimesat", Utimes, L::at(0, 1).follow(FOLLOW), ALWAYS;
    LINKAT = 265, "linkat", Link, L::at(0, 1).at2(2, 3).flags(4).follow(IF_FOLLOW), ALWAYS;
    SYMLINKAT = 266, "symlinkat", Symlink, L::path(0).at2(1, 2).follow(NO_LOOKUP), ALWAYS;
    UTIMENSAT = 280, "utimensat", Utimes, L::at(0, 1).flags(3).follow(UNLESS_NOFOLLOW), ALWAYS;
    // Named by a handle, not a path: only the mount fd is known.
    OPEN_BY_HANDLE_AT = 304, "open_by_handle_at", Write, L::dirfd(0).flags(2).follow(NO_LOOKUP), IF_WRITES;
}

/// The kind of one call of traced syscall `nr` (table kind `kind`) with
/// these flags: an open (kind `Write`) with `O_TRUNC` truncates, `unlinkat`
/// with `AT_REMOVEDIR` removes a directory.
#[inline(always)]
pub const fn call_kind(nr: u32, kind: EventKind, flags: u64) -> EventKind {
    match kind {
        EventKind::Write if flags & open_flags::O_TRUNC != 0 => EventKind::Truncate,
        EventKind::Unlink if nr == syscall_nr::UNLINKAT && flags & at_flags::AT_REMOVEDIR != 0 => {
            EventKind::Rmdir
        }
        k => k,
    }
}

/// `open` flags (x86_64 values): the one copy the kernel programs, the
/// seccomp filter and the decoder use.
pub mod open_flags {
    pub const O_WRONLY: u64 = 0o1;
    pub const O_RDWR: u64 = 0o2;
    pub const O_CREAT: u64 = 0o100;
    pub const O_EXCL: u64 = 0o200;
    pub const O_TRUNC: u64 = 0o1000;
    /// Open flags that make an open destructive enough to judge.
    pub const WRITE_FLAGS: u64 = O_WRONLY | O_RDWR | O_TRUNC;
    /// The flags of every `creat(2)`.
    pub const CREAT: u64 = O_CREAT | O_WRONLY | O_TRUNC;
}

/// `*at` flags and the special dirfd (include/uapi/linux/fcntl.h).
pub mod at_flags {
    pub const AT_FDCWD: i32 = -100;
    pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
    pub const AT_REMOVEDIR: u64 = 0x200;
    pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
    pub const AT_EMPTY_PATH: u64 = 0x1000;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The jump table the kernel programs and seccomp read is the table.
    #[test]
    fn layout_is_the_table_row() {
        for s in SYSCALLS {
            assert_eq!(layout(s.nr), Some((s.kind, s.layout)), "{}", s.name);
            assert!(is_traced(s.nr), "{}", s.name);
            assert_eq!(syscall(s.nr), Some(&s));
        }
        assert_eq!(layout(0), None);
        assert!(!is_traced(0));
    }

    /// Every register named is an argument register and holds one thing.
    #[test]
    fn layouts_name_distinct_argument_registers() {
        for s in SYSCALLS {
            let l = s.layout;
            let mut regs: [Option<u8>; 11] = [
                l.dirfd1,
                l.path1,
                l.dirfd2,
                l.path2,
                l.fd,
                l.flags,
                l.mode,
                l.owner,
                l.owner.map(|r| r + 1),
                l.xattr,
                l.argv,
            ];
            if let Notify::IfIoctl { cmd_arg } = s.notify {
                regs[10] = regs[10].or(Some(cmd_arg));
            }
            let used: [u8; 11] = regs.map(|r| r.unwrap_or(0xff));
            for (i, a) in used.iter().enumerate() {
                if *a == 0xff {
                    continue;
                }
                assert!(*a < 6, "{}: register {a}", s.name);
                assert!(
                    !used[i + 1..].contains(a),
                    "{}: register {a} holds two things",
                    s.name
                );
            }
            // A dirfd goes with a path (open_by_handle_at: its mount fd).
            assert!(l.dirfd2.is_none() || l.path2.is_some(), "{}", s.name);
            assert!(
                l.path1.is_some() || l.fd.is_some() || l.dirfd1.is_some() || l == Layout::NONE,
                "{}: acts on nothing",
                s.name
            );
            if s.notify == Notify::IfWrites {
                assert!(
                    l.flags.is_some(),
                    "{}: notify by flags without flags",
                    s.name
                );
            }
        }
    }

    #[test]
    fn follow_reads_the_flags() {
        use at_flags::{AT_SYMLINK_FOLLOW, AT_SYMLINK_NOFOLLOW};
        use syscall_nr as n;
        let f = |nr: u32, flags: u64| layout(nr).unwrap().1.follow.follows(flags);
        assert!(f(n::CHMOD, 0) && f(n::SETXATTR, 0) && f(n::TRUNCATE, 0));
        assert!(!f(n::LCHOWN, 0) && !f(n::LSETXATTR, 0) && !f(n::UNLINK, 0));
        assert!(f(n::UTIMENSAT, 0) && !f(n::UTIMENSAT, AT_SYMLINK_NOFOLLOW));
        assert!(!f(n::LINKAT, 0) && f(n::LINKAT, AT_SYMLINK_FOLLOW));
        assert!(!f(n::OPENAT, 0) && !f(n::SYMLINK, 0));
        assert_eq!(layout(n::OPENAT).unwrap().1.follow, Follow::NotLookedUp);
    }

    #[test]
    fn call_kind_reads_the_flags() {
        use syscall_nr as n;
        let k = |nr: u32, flags: u64| call_kind(nr, layout(nr).unwrap().0, flags);
        assert_eq!(k(n::OPENAT, open_flags::O_WRONLY), EventKind::Write);
        assert_eq!(k(n::OPENAT, open_flags::O_TRUNC), EventKind::Truncate);
        assert_eq!(k(n::CREAT, open_flags::CREAT), EventKind::Truncate);
        assert_eq!(k(n::UNLINKAT, 0), EventKind::Unlink);
        assert_eq!(k(n::UNLINKAT, at_flags::AT_REMOVEDIR), EventKind::Rmdir);
        // Only unlinkat's flags mean AT_REMOVEDIR.
        assert_eq!(k(n::FCHOWNAT, at_flags::AT_REMOVEDIR), EventKind::Chown);
        assert_eq!(k(n::RENAMEAT2, open_flags::O_TRUNC), EventKind::Rename);
    }
}
