//! Sensitive-data exposure: read-only opens of files whose inode userspace
//! put in [`SENSITIVE_INODES`] (credentials, keys, `.env` files).
//!
//! One program, a BTF tracepoint on `sys_exit` attached only when the set
//! is not empty (no tracefs needed: a classic `syscalls:sys_exit_open*`
//! tracepoint is looked up in tracefs, which a fresh host has not
//! mounted). Every other syscall returns after one plain load of
//! `orig_ax`. It runs after the open succeeded, so the new fd names the
//! file: one fd table read and one hash lookup decide, and an ordinary
//! open of another file sends nothing. Opens that may write are recorded by `sys_enter` as
//! `write`/`truncate` already; this program records only `O_RDONLY` opens.
use core::ffi::c_void;

use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_current_task},
    macros::{btf_tracepoint, map},
    maps::HashMap,
    programs::BtfTracePointContext,
};
use monitor_common::{
    field_tag::{FD_PATH, MNT_NS, ROOT},
    EventKind, InodeKey,
};

use crate::{
    maps::current_scope,
    probes::{compat, mountns, syscalls::nr},
    record::Record,
    shim::*,
};

/// Inodes whose read-only opens are recorded (value unused). Userspace
/// sizes nothing: 4096 files is far more than a home directory's secrets.
#[map]
pub static SENSITIVE_INODES: HashMap<InodeKey, u32> = HashMap::with_max_entries(MAX_SENSITIVE, 0);

pub const MAX_SENSITIVE: u32 = 4096;

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_dentry_inode(d: *const c_void) -> *const c_void;
    fn shim_inode_ino(i: *const c_void) -> u64;
    fn shim_inode_dev(i: *const c_void) -> u32;
    fn shim_file_flags(f: *const c_void) -> u32;
}

/// Offset of `orig_ax` (the syscall number) in x86_64 `struct pt_regs`.
const ORIG_AX: usize = 120;

/// `O_ACCMODE` and `O_PATH` (include/uapi/asm-generic/fcntl.h).
const O_ACCMODE: u32 = 0o3;
const O_PATH: u32 = 0o10000000;

#[btf_tracepoint(function = "sys_exit")]
pub fn sys_exit_open_sensitive(ctx: BtfTracePointContext) -> i32 {
    let regs: *const u8 = ctx.arg(0);
    // SAFETY: `regs` is the tracepoint's BTF-typed `struct pt_regs *`: the
    // verifier checks this load against the type (orig_ax, a scalar).
    let id = unsafe { core::ptr::read(regs.add(ORIG_AX) as *const u64) } as u32;
    if id != nr::OPEN && id != nr::OPENAT && id != nr::OPENAT2 {
        return 0;
    }
    let ret: i64 = ctx.arg(1);
    if ret < 0 {
        return 0;
    }
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if current_scope(tgid).is_none() {
        return 0;
    }
    // An ia32 number is another syscall than its x86_64 twin (5 is open,
    // not fstat); compat opens are recorded by `sys_enter` as compat calls.
    if compat::in_compat() {
        return 0;
    }
    // SAFETY: a BPF helper without memory arguments; the task pointer only goes to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (key, flags) = unsafe {
        let f = shim_task_fd_file(task, ret as i32);
        if f.is_null() {
            return 0;
        }
        let flags = shim_file_flags(f);
        if flags & O_ACCMODE != 0 || flags & O_PATH != 0 {
            return 0;
        }
        let inode = shim_dentry_inode(shim_file_dentry(f));
        if inode.is_null() {
            return 0;
        }
        (
            InodeKey {
                ino: shim_inode_ino(inode),
                dev: shim_inode_dev(inode),
                _pad: 0,
            },
            flags,
        )
    };
    // SAFETY: a map lookup whose value is not used.
    if unsafe { SENSITIVE_INODES.get(key) }.is_none() {
        return 0;
    }
    let mnt_ns = mountns::sync_current();
    let Some(mut rec) = Record::start(EventKind::Read as u32, id) else {
        return 0;
    };
    {
        let h = rec.hdr();
        h.result = ret;
        h.fd = ret as i32;
        h.flags = flags as u64;
    }
    if mnt_ns != 0 {
        rec.u64_field(MNT_NS, mnt_ns, 0);
    }
    rec.walk_fd(FD_PATH, ret as i32);
    rec.walk_root(ROOT);
    rec.send();
    0
}
