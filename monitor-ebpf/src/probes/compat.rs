//! 32-bit compat syscalls (`int 0x80` from an x86_64 process, or a 32-bit
//! program). Their numbers come from the ia32 table
//! (arch/x86/entry/syscalls/syscall_32.tbl) and their arguments from other
//! registers (ebx, ecx, edx, esi, edi, ebp), so they are not decoded like
//! their 64-bit twins: each destructive one becomes one flagged
//! `CompatSyscall` record with its raw path, where it has one. Under
//! `--enforce` the seccomp filter refuses every 32-bit syscall.
use core::ffi::c_void;

use aya_ebpf::helpers::{bpf_get_current_task, bpf_probe_read_kernel};
use monitor_common::{
    field_tag::{RAW_PATH, ROOT},
    header_flags, ioctl_cmd,
    limits::MAX_RAW_PATH,
    open_flags::{O_RDWR, O_TRUNC, O_WRONLY},
    EventKind, NO_PATH,
};

use crate::{
    record::{Record, TaskFs, AT_FDCWD, BASE1_TAGS},
    shim::shim_task_in_compat,
};

/// Offsets in `struct pt_regs` of ebx, ecx, edx (x86_64 layout,
/// arch/x86/include/asm/ptrace.h).
const REG_BX: usize = 40;
const REG_CX: usize = 88;
const REG_DX: usize = 96;

/// ia32 numbers whose flags decide whether they are recorded.
const IA32_OPEN: u32 = 5;
const IA32_OPENAT: u32 = 295;
const IA32_IOCTL: u32 = 54;

/// Whether the current task is in a compat syscall.
#[inline(always)]
pub fn in_compat() -> bool {
    // SAFETY: a BPF helper without memory arguments; the task pointer only
    // goes to a CO-RE read (bpf_probe_read_kernel underneath).
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe { shim_task_in_compat(task) != 0 }
}

#[inline(always)]
fn reg(regs: *const u8, off: usize) -> u64 {
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    unsafe { bpf_probe_read_kernel(regs.add(off) as *const u64) }.unwrap_or(0) & 0xffff_ffff
}

/// Records compat syscall `id` (path in register `path_reg`: 0 = ebx,
/// 1 = ecx, `NO_PATH`).
#[inline(always)]
pub fn record(id: u32, path_reg: u8, regs: *const u8) {
    let writes = |f: u64| f & (O_WRONLY | O_RDWR | O_TRUNC) != 0;
    match id {
        IA32_OPEN if !writes(reg(regs, REG_CX)) => return,
        IA32_OPENAT if !writes(reg(regs, REG_DX)) => return,
        IA32_IOCTL if !ioctl_cmd::is_traced(reg(regs, REG_CX) as u32) => return,
        _ => {}
    }
    let Some(mut rec) = Record::start(EventKind::CompatSyscall as u32, id) else { return };
    rec.hdr().hflags |= header_flags::COMPAT;
    let (path, dirfd) = match path_reg {
        0 => (reg(regs, REG_BX), AT_FDCWD),
        1 => (reg(regs, REG_CX), reg(regs, REG_BX) as i32),
        _ => (0, AT_FDCWD),
    };
    rec.hdr().fd = dirfd;
    if path_reg != NO_PATH && path != 0 {
        let (first, _) = rec.user_str::<MAX_RAW_PATH>(RAW_PATH, path as *const u8);
        rec.walk_arg_base(BASE1_TAGS, first, dirfd, path as *const u8, None, &TaskFs::current());
    }
    rec.walk_root(ROOT);
    rec.send();
}
