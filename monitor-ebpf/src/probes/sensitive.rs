//! Sensitive-data exposure: read-only opens of files whose inode userspace
//! put in [`SENSITIVE_INODES`] (credentials, keys, `.env` files).
//!
//! One program, attached to the `syscalls:sys_exit_open`, `sys_exit_openat`
//! and `sys_exit_openat2` tracepoints only when the set is not empty. It
//! runs after the open succeeded, so the new fd names the file: one fd
//! table read and one hash lookup decide, and an ordinary open of another
//! file sends nothing. Opens that may write are recorded by `sys_enter` as
//! `write`/`truncate` already; this program records only `O_RDONLY` opens.
use core::ffi::c_void;

use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_current_task},
    macros::{map, tracepoint},
    maps::HashMap,
    programs::TracePointContext,
};
use monitor_common::{
    field_tag::{FD_PATH, MNT_NS, ROOT},
    EventKind, InodeKey,
};

use crate::{maps::current_scope, probes::mountns, record::Record, shim::*};

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

/// Offsets in the `syscalls:sys_exit_*` tracepoint record
/// (kernel/trace/trace_syscalls.c, `struct syscall_trace_exit`): 8 bytes
/// of common fields, `int __syscall_nr`, then `long ret` at 16.
const NR_OFFSET: usize = 8;
const RET_OFFSET: usize = 16;

/// `O_ACCMODE` and `O_PATH` (include/uapi/asm-generic/fcntl.h).
const O_ACCMODE: u32 = 0o3;
const O_PATH: u32 = 0o10000000;

#[tracepoint]
pub fn sys_exit_open_sensitive(ctx: TracePointContext) -> u32 {
    // SAFETY: fixed offsets inside the tracepoint record (see NR_OFFSET).
    let ret: i64 = unsafe { ctx.read_at(RET_OFFSET) }.unwrap_or(-1);
    if ret < 0 {
        return 0;
    }
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if current_scope(tgid).is_none() {
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
        (InodeKey { ino: shim_inode_ino(inode), dev: shim_inode_dev(inode), _pad: 0 }, flags)
    };
    // SAFETY: a map lookup whose value is not used.
    if unsafe { SENSITIVE_INODES.get(&key) }.is_none() {
        return 0;
    }
    // SAFETY: fixed offsets inside the tracepoint record (see NR_OFFSET).
    let nr: i32 = unsafe { ctx.read_at(NR_OFFSET) }.unwrap_or(-1);
    let mnt_ns = mountns::sync_current();
    let Some(mut rec) = Record::start(EventKind::Read as u32, nr as u32) else {
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
