//! File hooks: `path_unlink`, `path_rmdir`, `path_rename`, `path_chmod`,
//! `path_chown`, `path_truncate`, `file_truncate`, `file_open`. Each finds
//! the target's dentry and mount and asks [`super::check_file`].

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
