//! Holding a caller for a `confirm` of a file rule: one decision per
//! logical action. The hook stops the caller (`SIGSTOP`) and returns
//! `-ERESTARTNOINTR`, so the call restarts once userspace has written the
//! process's answer into `LSM_ANSWERS` and continued it; the answer then
//! covers the process's other calls under the same rule (docs/lsm.md,
//! "Holding a caller").

use aya_ebpf::helpers::generated::{bpf_get_current_task_btf, bpf_task_pt_regs};

use super::*;

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_file_rdev(f: *const c_void) -> u32;
    fn shim_task_flags(t: *const c_void) -> u32;
}

/// include/linux/sched.h
const PF_IO_WORKER: u32 = 0x10;
/// arch/x86/entry/syscalls/syscall_64.tbl (the same number for i386).
const IO_URING_ENTER: i64 = 426;
/// `orig_ax` in x86-64's `struct pt_regs` (arch/x86/include/asm/ptrace.h:
/// r15 .. di, then orig_ax; a user-space ABI, the same in every kernel).
const PT_REGS_ORIG_AX: usize = 15 * 8;

/// What [`lsm_confirm_hold`] did.
const HOLD_NONE: u64 = 0;
pub(super) const HOLD_ALLOW: u64 = 1;
pub(super) const HOLD_REFUSE: u64 = 2;
pub(super) const HOLD_STOPPED: u64 = 3;

/// Whether the current caller can be held for a `confirm`: holds are on,
/// it is not an io_uring worker (signals do not stop those, and their
/// requests do not return through a system call), its call is a system
/// call that returns to user space (not `io_uring_enter`, whose inline
/// requests complete into the ring), and its fd 2 is not a terminal
/// (a job-control shell would see the stop and report the job stopped).
#[inline(always)]
fn may_hold() -> bool {
    match LSM_CONFIG.get(0) {
        Some(cfg) if cfg.hold_confirm != 0 => {}
        _ => return false,
    }
    // SAFETY: BPF helper without arguments; the task pointer is only
    // passed to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    if unsafe { shim_task_flags(task) } & PF_IO_WORKER != 0 {
        return false;
    }
    // SAFETY: BPF helpers: the current task (a trusted BTF pointer) and
    // its user-space registers; `orig_ax` is read through
    // bpf_probe_read_kernel, which checks the address.
    let nr = unsafe {
        let regs = bpf_task_pt_regs(bpf_get_current_task_btf()) as *const u8;
        if regs.is_null() {
            return false;
        }
        bpf_probe_read_kernel(regs.add(PT_REGS_ORIG_AX) as *const i64).unwrap_or(-1)
    };
    if nr < 0 || nr == IO_URING_ENTER {
        return false;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_task_fd_file(task, 2) };
    if !f.is_null() {
        // SAFETY: as above, on a non-null file pointer.
        let (mode, rdev) = unsafe { (shim_file_imode(f), shim_file_rdev(f)) };
        // Terminals: tty and ttyS (4), /dev/tty, /dev/console, /dev/ptmx
        // (5), pseudo-terminal slaves (136-143), Documentation/admin-guide/devices.txt.
        let major = rdev >> 20;
        if mode & S_IFMT == S_IFCHR && (major == 4 || major == 5 || (136..=143).contains(&major)) {
            return false;
        }
    }
    true
}

/// A `confirm` of file rule `rule` (`packed` as for [`lsm_emit`], without
/// a decision): one decision per logical action. The process's answer in
/// `LSM_ANSWERS` decides when there is one (allowed: pass, recorded for
/// the first call only; denied: refuse). Without one the caller is held:
/// a `CONFIRM_HELD` record, then `SIGSTOP`, and the hook returns
/// `-ERESTARTNOINTR`, so that the call restarts when userspace continues
/// the caller after writing the answer (a `SIGCONT` from anyone else
/// restarts it into a new hold). Returns a `HOLD_*` value; `HOLD_NONE`:
/// not held (exec rules, callers [`may_hold`] excludes, a lost record),
/// the per-call refusal applies.
///
/// A global function: verified once, with scalar arguments.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_confirm_hold(packed: u64, d1: u64, m1: u64, d2: u64, m2: u64) -> u64 {
    let rule = (packed >> 32) & 0xffff;
    if rule >= MAX_FILE_RULES as u64 {
        return HOLD_NONE;
    }
    let bit = 1u64 << (rule & 63);
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if let Some(a) = LSM_ANSWERS.get_ptr_mut(tgid) {
        // SAFETY: a pointer to the map value, read at once; userspace
        // writes whole values, a torn read at worst records one more call.
        let v = unsafe { *a };
        if v.denied & bit != 0 {
            lsm_emit(
                packed | (decision::REFUSED_BY_ANSWER as u64) << 16,
                d1,
                m1,
                d2,
                m2,
            );
            return HOLD_REFUSE;
        }
        if v.allowed & bit != 0 {
            if v.seen & bit == 0 {
                // SAFETY: as above; only this bit of `seen` is set.
                unsafe { (*a).seen = v.seen | bit };
                lsm_emit(
                    packed | (decision::ALLOWED_BY_ANSWER as u64) << 16,
                    d1,
                    m1,
                    d2,
                    m2,
                );
            }
            return HOLD_ALLOW;
        }
    }
    if !may_hold() {
        return HOLD_NONE;
    }
    let held = packed | (decision::CONFIRM_HELD as u64) << 16;
    if lsm_emit(held, d1, m1, d2, m2) == 0 {
        return HOLD_NONE;
    }
    // SAFETY: a BPF helper with an integer argument.
    if unsafe { bpf_send_signal(SIGSTOP) } != 0 {
        return HOLD_NONE;
    }
    // The answer's refusal tells the caller why: no second stop for it.
    let op = packed & 0xff;
    let _ = LSM_HELD.insert((tgid as u64) << 32 | op << 16 | rule, 1, 0);
    HOLD_STOPPED
}
