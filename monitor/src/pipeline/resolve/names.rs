//! Name tables: syscall names, errno names, symbolic flags.
use std::borrow::Cow;

use crate::record::Op;

/// The name of a traced syscall (`monitor_common::SYSCALLS`), or "".
pub fn syscall_name(nr: u32) -> &'static str {
    monitor_common::syscall(nr).map_or("", |s| s.name)
}

pub fn errno_name(err: i64) -> String {
    let e = (-err) as i32;
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EDQUOT => "EDQUOT",
        libc::ENXIO => "ENXIO",
        libc::ECHILD => "ECHILD",
        libc::ENOTTY => "ENOTTY",
        libc::ESPIPE => "ESPIPE",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::EDEADLK => "EDEADLK",
        libc::ENOLCK => "ENOLCK",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ESTALE => "ESTALE",
        libc::ECANCELED => "ECANCELED",
        libc::EOWNERDEAD => "EOWNERDEAD",
        libc::EKEYREJECTED => "EKEYREJECTED",
        // Kernel-internal (include/linux/errno.h): a BPF LSM hold, the
        // call restarted once the caller is continued.
        513 => "ERESTARTNOINTR",
        _ => return format!("E{e}"),
    };
    name.to_owned()
}

/// Symbolic names of the set flags of an operation (shared by every backend).
pub fn flag_names(op: Op, syscall: &str, flags: u64) -> Vec<Cow<'static, str>> {
    let table: &[(u64, &str)] = match op {
        Op::Unlink | Op::Rmdir => &[(0x200, "AT_REMOVEDIR")],
        Op::Rename => &[
            (1, "RENAME_NOREPLACE"),
            (2, "RENAME_EXCHANGE"),
            (4, "RENAME_WHITEOUT"),
        ],
        Op::Truncate | Op::Write | Op::Read if !syscall.contains("truncate") => &[
            (0o1, "O_WRONLY"),
            (0o2, "O_RDWR"),
            (0o100, "O_CREAT"),
            (0o200, "O_EXCL"),
            (0o1000, "O_TRUNC"),
            (0o2000, "O_APPEND"),
            (0o200000, "O_DIRECTORY"),
            (0o400000, "O_NOFOLLOW"),
            (0o2000000, "O_CLOEXEC"),
            (0o20000000, "O_TMPFILE"),
        ],
        Op::Chown | Op::Chmod | Op::Exec | Op::Utimes => {
            &[(0x100, "AT_SYMLINK_NOFOLLOW"), (0x1000, "AT_EMPTY_PATH")]
        }
        Op::Link => &[(0x400, "AT_SYMLINK_FOLLOW"), (0x1000, "AT_EMPTY_PATH")],
        Op::Xattr => &[(1, "XATTR_CREATE"), (2, "XATTR_REPLACE")],
        // FS_IOC_SETFLAGS bits (include/uapi/linux/fs.h); FSSETXATTR's
        // xflags are named by `setflag_names`.
        Op::Setflags => &[
            (0x10, "FS_IMMUTABLE_FL"),
            (0x20, "FS_APPEND_FL"),
            (0x40, "FS_NODUMP_FL"),
            (0x80, "FS_NOATIME_FL"),
            (0x800000, "FS_NOCOW_FL"),
        ],
        _ => &[],
    };
    table
        .iter()
        .filter(|(bit, _)| flags & *bit == *bit && *bit != 0)
        .map(|(_, n)| Cow::Borrowed(*n))
        .collect()
}

/// Inode flag names of an `ioctl` record: `FS_IOC_FSSETXATTR` (request in
/// the header's `mode`) carries `fsx_xflags`, whose bits differ.
pub(super) fn setflag_names(request: u32, flags: u64) -> Vec<Cow<'static, str>> {
    if request == monitor_common::ioctl_cmd::FS_IOC_FSSETXATTR {
        [(0x8u64, "FS_XFLAG_IMMUTABLE"), (0x10, "FS_XFLAG_APPEND")]
            .iter()
            .filter(|(b, _)| flags & b != 0)
            .map(|(_, n)| Cow::Borrowed(*n))
            .collect()
    } else {
        flag_names(Op::Setflags, "ioctl", flags)
    }
}
