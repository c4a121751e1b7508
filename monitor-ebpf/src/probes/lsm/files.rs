//! File hooks: `path_unlink`, `path_rmdir`, `path_rename`, `path_chmod`,
//! `path_chown`, `path_truncate`, `file_truncate`, `file_open`, `path_link`,
//! `path_symlink`, `inode_setattr` (timestamps), `inode_setxattr`,
//! `inode_removexattr`, `file_ioctl` and `file_ioctl_compat` (inode
//! flags). Each finds the target's dentry and mount and asks
//! [`super::check_file`].

use super::*;

// Each hook is written out (no shared closures): an outlined closure would
// receive the operation as a runtime value and be verified once per call
// path, which on 6.1 costs seconds per program under emulation.

/// LSM_HOOK(int, 0, path_unlink, const struct path *dir, struct dentry *dentry)
#[lsm(hook = "path_unlink")]
pub fn lsm_path_unlink(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 2) {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m = unsafe { shim_path_mnt(arg(&ctx, 0) as *const c_void) } as u64;
    check_file(EventKind::Unlink, hook::PATH_UNLINK, arg(&ctx, 1), m, 0, 0)
}

/// LSM_HOOK(int, 0, path_rmdir, const struct path *dir, struct dentry *dentry)
#[lsm(hook = "path_rmdir")]
pub fn lsm_path_rmdir(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 2) {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m = unsafe { shim_path_mnt(arg(&ctx, 0) as *const c_void) } as u64;
    check_file(EventKind::Rmdir, hook::PATH_RMDIR, arg(&ctx, 1), m, 0, 0)
}

/// LSM_HOOK(int, 0, path_rename, const struct path *old_dir, struct dentry
/// *old_dentry, const struct path *new_dir, struct dentry *new_dentry,
/// unsigned int flags). The destination may be a negative dentry.
#[lsm(hook = "path_rename")]
pub fn lsm_path_rename(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 5) {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m1 = unsafe { shim_path_mnt(arg(&ctx, 0) as *const c_void) } as u64;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m2 = unsafe { shim_path_mnt(arg(&ctx, 2) as *const c_void) } as u64;
    check_file(
        EventKind::Rename,
        hook::PATH_RENAME,
        arg(&ctx, 1),
        m1,
        arg(&ctx, 3),
        m2,
    )
}

/// LSM_HOOK(int, 0, path_chmod, const struct path *path, umode_t mode)
#[lsm(hook = "path_chmod")]
pub fn lsm_path_chmod(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 2) {
        return -EPERM;
    }
    let (d, m) = path_of(arg(&ctx, 0));
    check_file(EventKind::Chmod, hook::PATH_CHMOD, d, m, 0, 0)
}

/// LSM_HOOK(int, 0, path_chown, const struct path *path, kuid_t uid, kgid_t gid)
#[lsm(hook = "path_chown")]
pub fn lsm_path_chown(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    let (d, m) = path_of(arg(&ctx, 0));
    check_file(EventKind::Chown, hook::PATH_CHOWN, d, m, 0, 0)
}

/// LSM_HOOK(int, 0, path_truncate, const struct path *path): truncate(2);
/// on 6.1 also ftruncate(2) and open(O_TRUNC).
#[lsm(hook = "path_truncate")]
pub fn lsm_path_truncate(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 1) {
        return -EPERM;
    }
    let (d, m) = path_of(arg(&ctx, 0));
    check_file(EventKind::Truncate, hook::PATH_TRUNCATE, d, m, 0, 0)
}

/// LSM_HOOK(int, 0, file_truncate, struct file *file): ftruncate(2) and
/// open(O_TRUNC) since 6.2 (optional: absent from older kernels).
#[lsm(hook = "file_truncate")]
pub fn lsm_file_truncate(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 1) {
        return -EPERM;
    }
    let (d, m) = file_path(arg(&ctx, 0));
    check_file(EventKind::Truncate, hook::FILE_TRUNCATE, d, m, 0, 0)
}

/// LSM_HOOK(int, 0, file_open, struct file *file): opens that truncate or
/// write, decided before the open returns a descriptor.
#[lsm(hook = "file_open")]
pub fn lsm_file_open(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 1) {
        return -EPERM;
    }
    let f = arg(&ctx, 0);
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let flags = unsafe { shim_file_flags(f as *const c_void) };
    let (d, m) = file_path(f);
    if flags as u64 & O_TRUNC != 0 {
        check_file(EventKind::Truncate, hook::FILE_OPEN, d, m, 0, 0)
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    } else if unsafe { shim_file_fmode(f as *const c_void) } & FMODE_WRITE != 0 {
        check_file(EventKind::Write, hook::FILE_OPEN, d, m, 0, 0)
    } else {
        0
    }
}

/// LSM_HOOK(int, 0, path_link, struct dentry *old_dentry, const struct
/// path *new_dir, struct dentry *new_dentry): a new name for an existing
/// object (link, linkat, io_uring `LINKAT`). Both the object and the new
/// name's place are checked; both are on `new_dir`'s mount (fs/namei.c:
/// do_linkat refuses links across mounts).
#[lsm(hook = "path_link")]
pub fn lsm_path_link(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m = unsafe { shim_path_mnt(arg(&ctx, 1) as *const c_void) } as u64;
    check_file(
        EventKind::Link,
        hook::PATH_LINK,
        arg(&ctx, 0),
        m,
        arg(&ctx, 2),
        m,
    )
}

/// LSM_HOOK(int, 0, path_symlink, const struct path *dir, struct dentry
/// *dentry, const char *old_name): a new symbolic link (symlink,
/// symlinkat, io_uring `SYMLINKAT`), checked at the new name's place; the
/// target string changes nothing.
#[lsm(hook = "path_symlink")]
pub fn lsm_path_symlink(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let m = unsafe { shim_path_mnt(arg(&ctx, 0) as *const c_void) } as u64;
    check_file(
        EventKind::Symlink,
        hook::PATH_SYMLINK,
        arg(&ctx, 1),
        m,
        0,
        0,
    )
}

/// include/linux/fs.h `ATTR_*` bits of `iattr.ia_valid`.
const ATTR_MODE: u32 = 1 << 0;
const ATTR_UID: u32 = 1 << 1;
const ATTR_GID: u32 = 1 << 2;
const ATTR_SIZE: u32 = 1 << 3;
const ATTR_ATIME: u32 = 1 << 4;
const ATTR_MTIME: u32 = 1 << 5;

/// LSM_HOOK(int, 0, inode_setattr, struct mnt_idmap *idmap, struct dentry
/// *dentry, struct iattr *attr) on 6.12; `(struct dentry *dentry, struct
/// iattr *attr)` on 6.1 (`LsmConfig::setattr_idmap` says which). Decides
/// only timestamp changes (utimensat, utimes, futimesat, utime,
/// futimens): notify_change() also carries chmod, chown and truncate,
/// which `path_chmod`, `path_chown` and the truncate hooks decide, so a
/// change of mode, owner or size is left alone here.
#[lsm(hook = "inode_setattr")]
pub fn lsm_inode_setattr(ctx: LsmContext) -> i32 {
    let shift = match LSM_CONFIG.get(0) {
        Some(c) if c.setattr_idmap != 0 => 1,
        _ => 0,
    };
    if arg(&ctx, 2 + shift) as i32 != 0 {
        return -EPERM;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let valid = unsafe { shim_iattr_valid(arg(&ctx, 1 + shift) as *const c_void) };
    if valid & (ATTR_ATIME | ATTR_MTIME) == 0
        || valid & (ATTR_MODE | ATTR_UID | ATTR_GID | ATTR_SIZE) != 0
    {
        return 0;
    }
    let d = arg(&ctx, shift);
    check_file(
        EventKind::Utimes,
        hook::INODE_SETATTR,
        d,
        dentry_mnt(d),
        0,
        0,
    )
}

/// LSM_HOOK(int, 0, inode_setxattr, struct mnt_idmap *idmap (6.1: struct
/// user_namespace *mnt_userns), struct dentry *dentry, const char *name,
/// const void *value, size_t size, int flags): the setxattr family
/// (file capabilities, ACLs, user attributes).
#[lsm(hook = "inode_setxattr")]
pub fn lsm_inode_setxattr(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 6) {
        return -EPERM;
    }
    let d = arg(&ctx, 1);
    check_file(
        EventKind::Xattr,
        hook::INODE_SETXATTR,
        d,
        dentry_mnt(d),
        0,
        0,
    )
}

/// LSM_HOOK(int, 0, inode_removexattr, struct mnt_idmap *idmap (6.1:
/// struct user_namespace *mnt_userns), struct dentry *dentry, const char
/// *name): the removexattr family.
#[lsm(hook = "inode_removexattr")]
pub fn lsm_inode_removexattr(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    let d = arg(&ctx, 1);
    check_file(
        EventKind::Xattr,
        hook::INODE_REMOVEXATTR,
        d,
        dentry_mnt(d),
        0,
        0,
    )
}

/// include/uapi/linux/fs.h: `FS_IOC_SETFLAGS` (`_IOW('f', 2, long)`), its
/// 32-bit form `FS_IOC32_SETFLAGS` (`_IOW('f', 2, int)`) and
/// `FS_IOC_FSSETXATTR` (`_IOW('X', 32, struct fsxattr)`).
const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
const FS_IOC32_SETFLAGS: u32 = 0x4004_6602;
const FS_IOC_FSSETXATTR: u32 = 0x401c_5820;

/// Whether ioctl `cmd` sets inode flags (`chattr`: immutable, append-only).
#[inline(always)]
fn sets_flags(cmd: u32) -> bool {
    cmd == FS_IOC_SETFLAGS || cmd == FS_IOC32_SETFLAGS || cmd == FS_IOC_FSSETXATTR
}

/// LSM_HOOK(int, 0, file_ioctl, struct file *file, unsigned int cmd,
/// unsigned long arg): inode flag changes (`setflags`); every other ioctl
/// returns at once. On 6.1 also the 32-bit compat ioctl.
#[lsm(hook = "file_ioctl")]
pub fn lsm_file_ioctl(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    if !sets_flags(arg(&ctx, 1) as u32) {
        return 0;
    }
    let (d, m) = file_path(arg(&ctx, 0));
    check_file(EventKind::Setflags, hook::FILE_IOCTL, d, m, 0, 0)
}

/// LSM_HOOK(int, 0, file_ioctl_compat, struct file *file, unsigned int
/// cmd, unsigned long arg): the 32-bit compat ioctl since 6.8 (optional:
/// absent from older kernels, where `file_ioctl` sees it).
#[lsm(hook = "file_ioctl_compat")]
pub fn lsm_file_ioctl_compat(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 3) {
        return -EPERM;
    }
    if !sets_flags(arg(&ctx, 1) as u32) {
        return 0;
    }
    let (d, m) = file_path(arg(&ctx, 0));
    check_file(EventKind::Setflags, hook::FILE_IOCTL_COMPAT, d, m, 0, 0)
}
