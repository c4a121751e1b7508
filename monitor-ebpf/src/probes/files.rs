//! File-system syscalls: unlink, rmdir, rename, chmod, chown, truncate and
//! opens that truncate or write.
use core::ffi::c_void;

use aya_ebpf::helpers::{bpf_get_current_task, bpf_ktime_get_ns, bpf_probe_read_user};
use monitor_common::{
    call_kind, field_flags,
    field_tag::*,
    header_flags, ioctl_cmd, layout,
    limits::{MAX_NAME, MAX_RAW_PATH},
    lookup::{ABSENT, FOUND, OFF},
    open_flags::{self, WRITE_FLAGS},
    EventKind, Follow, Inflight, Layout,
};

use super::{
    mountns::HOST_MNT_NS,
    syscalls::{nr, Args},
};
use aya_ebpf::{
    helpers::bpf_get_current_pid_tgid, macros::raw_tracepoint, programs::RawTracePointContext,
};

use crate::{
    lookup::{sample, tail, CALIBRATE_TGID, FOLLOW},
    record::Record,
    walk::{TaskFs, AT_FDCWD, BASE1_TAGS, BASE2_TAGS},
};

// SAFETY: the C shim's accessor takes a kernel pointer and reads through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_obj_ctime(d: *const c_void) -> u64;
    fn shim_obj_time_gran(d: *const c_void) -> u32;
    fn shim_task_mm_users(t: *const c_void) -> i32;
}

/// [`Inflight::retry`] bit: `open_how` (address in `path2`) is read again at
/// exit.
pub const RETRY_OPEN_HOW: u32 = 4;

#[inline(always)]
fn writes(flags: u64) -> bool {
    flags & WRITE_FLAGS != 0
}

/// `open_how.flags` and `.mode` of openat2 (include/uapi/linux/openat2.h:
/// the first two u64); `None` when the struct is not readable yet (its page
/// not faulted in: tracepoint programs cannot fault).
#[inline(always)]
fn openat2_how(args: &Args) -> Option<(u64, u64)> {
    read_how(args.get(2))
}

/// Reads `open_how.flags` and `.mode` at `how`.
#[inline(always)]
pub fn read_how(how: u64) -> Option<(u64, u64)> {
    let how = how as *const u64;
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let flags = unsafe { bpf_probe_read_user(how) }.ok()?;
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let mode = unsafe { bpf_probe_read_user(how.add(1)) }.unwrap_or(0);
    Some((flags, mode))
}

/// Whether this call is traced at all: opens only when they may write (an
/// `openat2` whose flags cannot be read yet is traced, and its flags read
/// at exit); ioctls only for the inode-flag requests.
#[inline(always)]
pub fn wants(id: u32, args: &Args) -> bool {
    match id {
        // The opens the table notifies by flags (`Notify::IfWrites`).
        nr::OPEN | nr::OPENAT | nr::OPEN_BY_HANDLE_AT => match layout(id) {
            Some((_, Layout { flags: Some(r), .. })) => writes(args.reg(r)),
            _ => true,
        },
        nr::OPENAT2 => openat2_how(args).is_none_or(|(f, _)| writes(f)),
        nr::IOCTL => ioctl_cmd::is_traced(args.get(1) as u32),
        _ => true,
    }
}

/// What to record for one call: decided by the syscall switch, then carried
/// out by one straight sequence of copies and walks. Keeping a single call
/// site per walk keeps the verifier's work small (each call site of a
/// subprogram is verified separately).
struct Plan {
    kind: EventKind,
    path1: *const u8,
    dirfd1: i32,
    path2: *const u8,
    dirfd2: i32,
    /// fd whose file is the target (fchmod, fchown, ftruncate), or -1.
    target_fd: i32,
    fd: i32,
    flags: u64,
    mode: u32,
    owner_uid: u32,
    owner_gid: u32,
    /// Name of an extended attribute (user memory), or null.
    xattr: *const u8,
    /// [`header_flags`] bits to set.
    hflags: u32,
}

/// The plan of call `id`: the argument registers come from the one table
/// of traced syscalls ([`monitor_common::layout`], a jump table of
/// constants); only what no register says is decided here (flags in user
/// memory, `creat`'s fixed flags, a null `utimensat` path).
#[inline(always)]
fn plan(id: u32, a: &Args) -> Option<Plan> {
    let (kind, l) = layout(id)?;
    if kind == EventKind::Exec {
        // Recorded by `sys_enter_exec` (probes/exec.rs).
        return None;
    }
    let null = core::ptr::null();
    let ptr = |r: Option<u8>| r.map_or(null, |r| a.reg(r) as *const u8);
    let mut p = Plan {
        kind,
        path1: ptr(l.path1),
        dirfd1: l.dirfd1.map_or(AT_FDCWD, |r| a.reg(r) as i32),
        path2: ptr(l.path2),
        dirfd2: l.dirfd2.map_or(AT_FDCWD, |r| a.reg(r) as i32),
        target_fd: l.fd.map_or(-1, |r| a.reg(r) as i32),
        fd: AT_FDCWD,
        flags: l.flags.map_or(0, |r| a.reg(r)),
        mode: l.mode.map_or(u32::MAX, |r| a.reg(r) as u32),
        owner_uid: l.owner.map_or(u32::MAX, |r| a.reg(r) as u32),
        owner_gid: l.owner.map_or(u32::MAX, |r| a.reg(r + 1) as u32),
        xattr: ptr(l.xattr),
        hflags: 0,
    };
    match id {
        nr::CREAT => p.flags = open_flags::CREAT,
        nr::OPENAT2 => match openat2_how(a) {
            Some((flags, mode)) => {
                p.flags = flags;
                p.mode = mode as u32;
            }
            // Read again at exit (`OPEN_HOW`), after the kernel copied it.
            None => p.hflags |= header_flags::FLAGS_UNREAD,
        },
        nr::FUTIMESAT | nr::UTIMENSAT if p.path1.is_null() => {
            // futimens(fd): the dirfd is the target.
            p.target_fd = p.dirfd1;
        }
        nr::IOCTL => {
            // The request.
            p.mode = a.get(1) as u32;
            // The new flags: an int (SETFLAGS) or `fsx_xflags`, the first
            // u32 of struct fsxattr (FSSETXATTR).
            // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
            match unsafe { bpf_probe_read_user(a.ptr(2) as *const u32) } {
                Ok(v) => p.flags = v as u64,
                Err(_) => p.hflags |= header_flags::FLAGS_UNREAD,
            }
        }
        _ => {}
    }
    if p.hflags & header_flags::FLAGS_UNREAD == 0 {
        p.kind = call_kind(id, kind, p.flags);
    }
    // The fd the record names: the target's, else the first path's
    // directory (open_by_handle_at: its mount fd).
    p.fd = if p.target_fd >= 0 {
        p.target_fd
    } else {
        p.dirfd1
    };
    Some(p)
}

/// Builds the record of a file-system call and the in-flight entry that
/// pairs its result (with the arguments to read again at exit if they could
/// not be read now).
#[inline(always)]
pub fn enter(id: u32, a: &Args, inflight: &mut Inflight) -> Option<Record> {
    let p = plan(id, a)?;
    *inflight = Inflight::new(id, p.path1 as u64, p.path2 as u64);
    let mut rec = Record::start(p.kind as u32, id)?;
    {
        let h = rec.hdr();
        h.fd = p.fd;
        h.flags = p.flags;
        h.mode = p.mode;
        h.owner_uid = p.owner_uid;
        h.owner_gid = p.owner_gid;
        h.hflags |= p.hflags;
    }
    if id == nr::OPENAT2 && p.hflags & header_flags::FLAGS_UNREAD != 0 {
        rec.u64_field(OPEN_HOW, 0, field_flags::READ_FAILED);
        inflight.retry |= RETRY_OPEN_HOW;
        inflight.path2 = a.get(2);
    }
    if !p.xattr.is_null() {
        rec.user_str::<MAX_NAME>(XATTR_NAME, p.xattr);
    }
    if p.target_fd >= 0 {
        rec.walk_fd_with_id(FD_PATH, FD_ID, p.target_fd);
    }
    let fs = TaskFs::current();
    let removes = removes_name(id);
    if !p.path1.is_null() {
        let (first, ok, at) = rec.user_str_at::<MAX_RAW_PATH>(RAW_PATH, p.path1);
        if !ok {
            inflight.retry |= 1;
        }
        rec.walk_arg_base(
            BASE1_TAGS,
            first,
            p.dirfd1,
            at,
            lookup_mode(id, p.flags),
            &fs,
        );
        if ok && first != 0 && sets_attr(id) {
            // An attribute change by name: its exit checks that the change
            // time of the object found now moved. Unchecked only when the
            // lookup is off.
            let (obj, _, _, status) = tail();
            if status & 0xff != OFF {
                if status & 0xff == FOUND {
                    inflight.obj = obj;
                    // SAFETY: CO-RE accessors of the C shim and a helper without memory arguments.
                    let (ctime, gran, now) = unsafe {
                        (
                            shim_obj_ctime(obj as *const c_void),
                            shim_obj_time_gran(obj as *const c_void) as u64,
                            bpf_ktime_get_ns(),
                        )
                    };
                    inflight.ctime = ctime;
                    // The wall clock now. The kernel stamps inode times
                    // with its coarse form, up to one tick (10 ms at
                    // HZ=100) behind.
                    let offset = crate::lookup::DCACHE.get(0).map_or(0, |c| c.real_offset);
                    let now = now.wrapping_add(offset);
                    // Changed within a tick (and the file system's time
                    // granularity) of the call's start: the call may set
                    // the same change time again.
                    if ctime.wrapping_add(gran).wrapping_add(TICK_NS) > now {
                        inflight.retry |= RETRY_RECENT;
                    }
                }
                inflight.retry |= RETRY_CHECK | RETRY_ATTR;
            }
        }
        if removes && ok {
            let (obj, dir, hash, status) = tail();
            inflight.obj = if status & 0xff == FOUND { obj } else { 0 };
            // A name that was negative at entry cannot be removed by a call
            // that succeeds: nothing to look for at exit.
            if status & 0xff == ABSENT {
                inflight.retry |= RETRY_ABSENT;
            } else {
                inflight.dir1 = dir;
                inflight.hash1 = hash;
            }
            inflight.retry |= RETRY_CHECK;
        }
    }
    if !p.path2.is_null() {
        let (first, ok, at) = rec.user_str_at::<MAX_RAW_PATH>(RAW_PATH2, p.path2);
        if !ok {
            inflight.retry |= 2;
        }
        // The second path is a new name: acted on itself, never followed.
        rec.walk_arg_base(BASE2_TAGS, first, p.dirfd2, at, Some(0), &fs);
        if removes && ok {
            let (_, dir, hash, _) = tail();
            inflight.dir2 = dir;
            inflight.hash2 = hash;
        }
    }
    rec.walk_root_of(ROOT, &fs);
    Some(rec)
}

/// [`Inflight::retry`] bit: the call removes or moves its first path's
/// name; its exit checks that the object named is the one acted on
/// ([`confirm`]).
pub const RETRY_CHECK: u32 = 8;
/// [`Inflight::retry`] bit: the first path's name was a negative dentry
/// at entry.
pub const RETRY_ABSENT: u32 = 16;
/// [`Inflight::retry`] bit: an ia32 call recorded as its x86_64 twin
/// (`nr`); its exit comes with the ia32 number.
pub const RETRY_COMPAT: u32 = 32;

/// [`Inflight::retry`] bit: the call changes the attributes of the file
/// its first path names; its exit checks the object's change time
/// ([`confirm`]).
pub const RETRY_ATTR: u32 = 64;
/// [`Inflight::retry`] bit: the object of an attribute change had changed
/// within the clock tick the call started in.
pub const RETRY_RECENT: u32 = 128;

/// The longest clock tick (HZ=100) and a millisecond: how far behind the
/// wall clock the coarse one inode times are taken from can be.
const TICK_NS: u64 = 11_000_000;

/// Calls that change the attributes of the file a path names (through
/// `notify_change`, which sets the inode's change time).
#[inline(always)]
fn sets_attr(id: u32) -> bool {
    matches!(
        id,
        nr::TRUNCATE
            | nr::CHMOD
            | nr::FCHMODAT
            | nr::FCHMODAT2
            | nr::CHOWN
            | nr::LCHOWN
            | nr::FCHOWNAT
            | nr::UTIME
            | nr::UTIMES
            | nr::FUTIMESAT
            | nr::UTIMENSAT
    )
}

/// Calls that remove or move a name: their exit can check, from the
/// dentries the entry lookup found, that the named object is the one the
/// kernel acted on.
#[inline(always)]
fn removes_name(id: u32) -> bool {
    matches!(
        id,
        nr::UNLINK | nr::UNLINKAT | nr::RMDIR | nr::RENAME | nr::RENAMEAT | nr::RENAMEAT2
    )
}

/// The [`field_tag::CONFIRM`] value of a successful call that removes or
/// moves a name (see [`monitor_common::confirm`]): for the first path,
/// the dentry the entry lookup found must have lost its inode or left the
/// hash (unlink, rmdir), or moved (rename); a name that was not in the
/// cache at entry must now be a negative dentry (unlink, rmdir) or gone
/// (rename). For a rename's second path, the moved dentry must now have
/// that name.
#[inline(always)]
pub fn confirm(f: &Inflight) -> u64 {
    use monitor_common::confirm::{CONFIRMED, CONTRADICTED, SHIFT, UNCHECKED, UNKNOWN};
    if f.retry & RETRY_ATTR != 0 {
        // The change time of the object found at entry moved: the call
        // changed it. It stays put when the call acted on another file, or
        // when the object's previous change fell in the clock tick the
        // call started in (the call set the same time again). Only a
        // caller that shares its memory with another task can have had
        // its argument rewritten under it.
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let (moved, shared) = unsafe {
            (
                f.obj != 0 && shim_obj_ctime(f.obj as *const c_void) != f.ctime,
                shim_task_mm_users(bpf_get_current_task() as *const c_void) > 1,
            )
        };
        let same_tick = f.obj != 0 && f.retry & RETRY_RECENT != 0;
        return if moved || same_tick || !shared {
            CONFIRMED
        } else {
            UNKNOWN
        };
    }
    let rename = matches!(f.nr, nr::RENAME | nr::RENAMEAT | nr::RENAMEAT2);
    let mut first = UNCHECKED;
    let mut second = UNCHECKED;
    if f.obj != 0 {
        let (now, parent, hash) = crate::lookup::dentry_now(f.obj);
        let moved = parent != f.dir1 || hash != f.hash1;
        first = if rename {
            if moved {
                CONFIRMED
            } else {
                CONTRADICTED
            }
        } else if now & 1 == 0 || now & 2 == 0 {
            CONFIRMED
        } else {
            CONTRADICTED
        };
        if rename && f.dir2 != 0 {
            second = if parent == f.dir2 && hash == f.hash2 {
                CONFIRMED
            } else {
                CONTRADICTED
            };
        }
    } else if f.dir1 != 0 {
        // Not in the cache at entry: the call's own lookup made the
        // dentry, which an unlink leaves negative. A rename moves it away
        // and leaves nothing at the old name, as a rename of a name that
        // never existed would: no conclusion.
        first = match crate::lookup::name_state(f.dir1, f.hash1) {
            1 if !rename => CONFIRMED,
            2 => CONTRADICTED,
            _ => UNKNOWN,
        };
    } else if f.retry & RETRY_ABSENT != 0 {
        // Nothing had that name when the call started, yet it succeeded.
        first = CONTRADICTED;
    }
    first | (second << SHIFT)
}

/// How the first path of call `id` is looked up in the dentry cache
/// ([`crate::lookup`]), from the table's [`Follow`] and the call's flags
/// (looked up again rather than kept in [`Plan`]: `sys_enter`'s stack is
/// the deepest):
/// `None` for opens (the result record names the file opened) and a
/// symlink's target (a string, not a path looked up now); [`FOLLOW`] for
/// calls that follow a final symlink (chmod, truncate, utimensat without
/// `AT_SYMLINK_NOFOLLOW`, ...); 0 for calls that act on the final name
/// itself (unlink, rename, link, lchown, lsetxattr).
#[inline(always)]
fn lookup_mode(id: u32, flags: u64) -> Option<u64> {
    match layout(id) {
        Some((_, l)) if l.follow == Follow::NotLookedUp => None,
        Some((_, l)) if l.follow.follows(flags) => Some(FOLLOW),
        _ => Some(0),
    }
}

/// Locating the dentry hash table at load time: the loader's own
/// `fstatfs(fd)` calls, seen only while it attaches this program
/// (`monitor::kernel::dcache`).
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn dcache_sample(ctx: RawTracePointContext) -> i32 {
    const FSTATFS: u64 = 138;
    let id: u64 = ctx.arg(1);
    // SAFETY: a plain read of a global the loader sets before the programs run.
    let tgid = unsafe { core::ptr::read_volatile(&CALIBRATE_TGID) };
    if id != FSTATFS || tgid == 0 || (bpf_get_current_pid_tgid() >> 32) as u32 != tgid {
        return 0;
    }
    let regs: *const u8 = ctx.arg(0);
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let fd = unsafe { aya_ebpf::helpers::bpf_probe_read_kernel(regs.add(112) as *const u64) }
        .unwrap_or(u64::MAX);
    sample(fd as i32);
    0
}

/// Whether `id` opens a file and returns its fd: its result record names
/// the file really opened ([`opened`]).
#[inline(always)]
pub fn is_open(id: u32) -> bool {
    matches!(
        id,
        nr::OPEN | nr::OPENAT | nr::OPENAT2 | nr::CREAT | nr::OPEN_BY_HANDLE_AT
    )
}

/// Adds to the result record of a successful open the new fd's file: its
/// path as the kernel opened it (a final symlink, a `/proc/self/fd/N`
/// reopen, a handle followed), its identity, and `OPENED_CREATED` when the
/// open created the file.
///
/// The walk is in the caller's mount namespace: for a caller outside the
/// host's, the record says which (`MNT_NS`, without the table capture the
/// entry record already triggered).
#[inline(always)]
pub fn opened(rec: &mut Record, fd: i32) {
    let fmode = rec.walk_fd_with_id(OPENED_PATH, OPENED_ID, fd);
    if fmode & monitor_common::FMODE_CREATED != 0 {
        rec.u64_field(OPENED_CREATED, fmode as u64, 0);
    }
    // SAFETY: a plain read of a global the loader sets before the programs run.
    let host = unsafe { core::ptr::read_volatile(&HOST_MNT_NS) };
    if host != 0 {
        // SAFETY: a BPF helper without memory arguments; the pointer only goes to CO-RE reads.
        let task = unsafe { bpf_get_current_task() } as *const c_void;
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let inum = unsafe { shim_mnt_ns_inum(shim_task_mnt_ns(task)) };
        if inum != 0 && inum != host {
            rec.u64_field(MNT_NS, inum as u64, 0);
        }
    }
}

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_task_mnt_ns(t: *const c_void) -> *const c_void;
    fn shim_mnt_ns_inum(ns: *const c_void) -> u32;
}
