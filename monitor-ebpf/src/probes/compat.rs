//! 32-bit compat syscalls (`int 0x80` from an x86_64 process, or a 32-bit
//! program). Their numbers come from the ia32 table
//! (arch/x86/entry/syscalls/syscall_32.tbl) and their arguments from other
//! registers (ebx, ecx, edx, esi, edi, ebp). Each destructive one is
//! recorded as its x86_64 twin ([`monitor_common::compat_native`]): the
//! same entry record, lookup, in-flight entry and result record, with
//! `COMPAT` set and the ia32 number in a field, so that it is resolved,
//! measured and judged as the 64-bit call. Under `--enforce` the seccomp
//! filter refuses every 32-bit syscall.
use core::ffi::c_void;

use aya_ebpf::helpers::{bpf_get_current_task, bpf_probe_read_kernel};
use monitor_common::{
    field_tag::{RAW_PATH, ROOT},
    header_flags,
    limits::MAX_RAW_PATH,
    CompatArgs, EventKind,
};

use monitor_common::ReadFailure;

use super::syscalls::Args;
use crate::maps::count_failure;
use crate::{
    record::Record,
    shim::shim_task_in_compat,
    walk::{TaskFs, AT_FDCWD, BASE1_TAGS},
};

/// Offsets in `struct pt_regs` (x86_64 layout, arch/x86/include/asm/
/// ptrace.h) of the ia32 argument registers: ebx, ecx, edx, esi, edi, ebp.
const IA32_ARGS: [usize; 6] = [40, 88, 96, 104, 112, 32];

/// `execve`/`execveat` of the ia32 table: recorded as
/// [`EventKind::CompatSyscall`] (the exec tracepoints see the program).
const IA32_EXECVE: u32 = 11;
const IA32_EXECVEAT: u32 = 358;

/// Set (never cleared) once an ia32 call in scope was registered for its
/// result: until then `sys_exit` returns at once for the numbers the
/// x86_64 table does not trace, without a map lookup. After it, their
/// exits look for an in-flight ia32 call (a cost only runs that make 32-bit
/// calls pay). A flag, not a count: it needs no atomic operation.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
pub static mut COMPAT_SEEN: u64 = 0;

/// Whether an ia32 call was ever registered ([`COMPAT_SEEN`]).
#[inline(always)]
pub fn seen() -> bool {
    // SAFETY: a plain read of a global; a stale 0 only delays the slow path.
    unsafe { core::ptr::read_volatile(&raw const COMPAT_SEEN) != 0 }
}

/// Marks [`COMPAT_SEEN`].
#[inline(always)]
pub fn mark_seen() {
    // SAFETY: a plain write of a global; every writer writes 1.
    unsafe { core::ptr::write_volatile(&raw mut COMPAT_SEEN, 1) };
}

/// Whether the current task is in a compat syscall.
#[inline(always)]
pub fn in_compat() -> bool {
    // SAFETY: a BPF helper without memory arguments; the task pointer only
    // goes to a CO-RE read (bpf_probe_read_kernel underneath).
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe { shim_task_in_compat(task) != 0 }
}

/// The ia32 call's arguments laid out as its x86_64 twin's.
#[inline(always)]
pub fn args(how: CompatArgs, regs: *const u8) -> Args {
    // One read per register: a block read would cost `sys_enter` stack
    // that the verifier's 512-byte bound across calls does not leave.
    let mut a = Args::zero();
    let mut i = 0;
    // Counted once after the loop: a map lookup inside it multiplies the
    // states the verifier explores past the 1M-instruction limit on 6.1.
    let mut failed = false;
    while i < 6 {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let v = match unsafe { bpf_probe_read_kernel(regs.add(IA32_ARGS[i]) as *const u64) } {
            Ok(v) => v,
            Err(_) => {
                failed = true;
                0
            }
        };
        a.set(i, v & 0xffff_ffff);
        i += 1;
    }
    if failed {
        count_failure(ReadFailure::Kernel);
    }
    // File descriptors and dirfds are ints: sign-extend what `Args::int`
    // reads as i32 already; lengths and ids need their own care.
    match how {
        CompatArgs::Same => {}
        CompatArgs::Len64 => {
            a.set(1, a.get(1) | a.get(2) << 32);
            a.set(2, 0);
        }
        CompatArgs::Uid16 => {
            let id16 = |v: u64| {
                if v & 0xffff == 0xffff {
                    u32::MAX as u64
                } else {
                    v & 0xffff
                }
            };
            a.set(1, id16(a.get(1)));
            a.set(2, id16(a.get(2)));
        }
    }
    a
}

/// Records an ia32 call that has no x86_64 twin to be recorded as (a
/// 32-bit exec) as one flagged [`EventKind::CompatSyscall`] record with
/// its raw path.
#[inline(always)]
pub fn record_other(id: u32, regs: *const u8) {
    if id != IA32_EXECVE && id != IA32_EXECVEAT {
        return;
    }
    let Some(mut rec) = Record::start(EventKind::CompatSyscall as u32, id) else {
        return;
    };
    rec.hdr().hflags |= header_flags::COMPAT;
    let a = args(CompatArgs::Same, regs);
    let (path, dirfd) = if id == IA32_EXECVE {
        (a.get(0), AT_FDCWD)
    } else {
        (a.get(1), a.int(0))
    };
    rec.hdr().fd = dirfd;
    if path != 0 {
        let (first, _, at) = rec.user_str_at::<MAX_RAW_PATH>(RAW_PATH, path as *const u8);
        rec.walk_arg_base(BASE1_TAGS, first, dirfd, at, None, &TaskFs::current());
    }
    rec.walk_root(ROOT);
    rec.send();
}
