//! `sys_enter` / `sys_exit` raw tracepoints: the dispatch for every traced
//! syscall. Raw tracepoints cost a few ns per syscall (no trace-event
//! marshalling); the switch on the syscall number returns before any map
//! lookup for the syscalls we do not trace.
//!
//! Syscall arguments are read from `struct pt_regs` (x86_64 user ABI: rdi,
//! rsi, rdx, r10, r8, r9), see arch/x86/include/uapi/asm/ptrace.h.
use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_probe_read_kernel},
    macros::{btf_tracepoint, raw_tracepoint},
    programs::{BtfTracePointContext, RawTracePointContext},
};
use monitor_common::{
    compat_native, compat_path_reg, field_flags,
    field_tag::{COMPAT_NR, CONFIRM, MNT_NS, OPEN_HOW, RAW_PATH, RAW_PATH2},
    header_flags, is_traced,
    limits::MAX_RAW_PATH,
    Inflight, LossCause,
};

use monitor_common::ReadFailure;

use crate::maps::or_count;
use crate::{
    maps::{
        count_loss, current_scope, INFLIGHT, INFLIGHT_NEW, SYS_ENTER_TAIL, TAIL_COMPAT, TAIL_EXEC,
    },
    probes::{compat, exec, files, mountns},
    record::Record,
};

/// x86_64 syscall numbers, shared with userspace.
pub use monitor_common::syscall_nr as nr;

/// `struct pt_regs` (x86_64) from `r10` (offset 56) to `rdi` (offset 112):
/// every argument register, read in one probe read (a read costs about the
/// same for 8 bytes as for 64).
const REGS_FROM: usize = 56;
/// Index in that block of each argument register: rdi, rsi, rdx, r10, r8, r9.
const REG_SLOTS: [usize; 6] = [7, 6, 5, 0, 2, 1];
const ORIG_AX: usize = 120;

/// A call's six arguments as the block of `struct pt_regs` that holds them
/// (read once, never copied: the verifier bounds the stack of `sys_enter`
/// and the functions it calls at 512 bytes together on Linux 6.1).
pub struct Args {
    raw: [u64; 8],
}

impl Args {
    #[inline(always)]
    fn read(regs: *const u8) -> Args {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        Args {
            raw: or_count(
                unsafe { bpf_probe_read_kernel(regs.add(REGS_FROM) as *const [u64; 8]) },
                ReadFailure::Kernel,
                [0; 8],
            ),
        }
    }
    /// No arguments yet (all 0): [`Args::set`] fills them in x86_64
    /// order (for an ia32 call, its registers laid out as its twin's).
    #[inline(always)]
    pub fn zero() -> Args {
        Args { raw: [0; 8] }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize, v: u64) {
        self.raw[REG_SLOTS[i]] = v;
    }
    /// Argument `i` (0-5).
    #[inline(always)]
    pub fn get(&self, i: usize) -> u64 {
        self.raw[REG_SLOTS[i]]
    }
    /// Argument register `r` of a table layout ([`monitor_common::Layout`]),
    /// 0 past the sixth. A match of constant indices, not an index computed
    /// at run time: no bounds check for the verifier to reject (a reachable
    /// panic ends the program without an exit instruction).
    #[inline(always)]
    pub fn reg(&self, r: u8) -> u64 {
        match r {
            0 => self.get(0),
            1 => self.get(1),
            2 => self.get(2),
            3 => self.get(3),
            4 => self.get(4),
            5 => self.get(5),
            _ => 0,
        }
    }
    #[inline(always)]
    pub fn ptr(&self, i: usize) -> *const u8 {
        self.get(i) as *const u8
    }
    #[inline(always)]
    pub fn int(&self, i: usize) -> i32 {
        self.get(i) as i32
    }
}

/// A tail call that fell through (an empty slot: a broken load) is counted
/// as a loss and, being rare, logged: the line reaches `tracing` through
/// aya-log in userspace.
#[inline(always)]
fn tail_call_failed(ctx: &RawTracePointContext, id: u32) {
    count_loss(LossCause::TailCallFailed);
    aya_log_ebpf::warn!(
        ctx,
        "syscall {}: the tail call to its recording program failed",
        id
    );
}

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn sys_enter(ctx: RawTracePointContext) -> i32 {
    let id: u64 = ctx.arg(1);
    let id = id as u32;
    let compat_reg = compat_path_reg(id);
    if !is_traced(id) && compat_reg.is_none() {
        return 0;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    if current_scope((pid_tgid >> 32) as u32).is_none() {
        return 0;
    }
    let regs: *const u8 = ctx.arg(0);
    // A compat (ia32) number means another syscall than its x86_64 twin:
    // recorded as that twin.
    if compat::in_compat() {
        if compat_native(id).is_some() {
            // Recorded as its x86_64 twin by sys_enter_compat, a program of
            // its own (its stack is not this one's).
            // SAFETY: `ctx` is this program's own context, passed on unchanged.
            unsafe { SYS_ENTER_TAIL.tail_call(&ctx, TAIL_COMPAT) };
            tail_call_failed(&ctx, id);
        } else {
            compat::record_other(id, regs);
        }
        return 0;
    }
    if !is_traced(id) {
        return 0;
    }
    if id == nr::EXECVE || id == nr::EXECVEAT {
        // Recorded by sys_enter_exec, reached only from here (a program of
        // its own keeps each under the verifier's complexity limit). A tail
        // call does not return; if the slot is empty it falls through.
        // SAFETY: `ctx` is this program's own context, passed on unchanged.
        unsafe { SYS_ENTER_TAIL.tail_call(&ctx, TAIL_EXEC) };
        tail_call_failed(&ctx, id);
        return 0;
    }
    file_call(id, &Args::read(regs), pid_tgid, 0);
    0
}

/// An ia32 call in scope, recorded as its x86_64 twin. Not attached:
/// `sys_enter` tail-calls it (slot [`TAIL_COMPAT`]).
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn sys_enter_compat(ctx: RawTracePointContext) -> i32 {
    let id: u64 = ctx.arg(1);
    let id = id as u32;
    let pid_tgid = bpf_get_current_pid_tgid();
    if current_scope((pid_tgid >> 32) as u32).is_none() || !compat::in_compat() {
        return 0;
    }
    let Some((native, how)) = compat_native(id) else {
        return 0;
    };
    let regs: *const u8 = ctx.arg(0);
    file_call(native, &compat::args(how, regs), pid_tgid, id);
    0
}

/// Records file-system call `id` (x86_64 number; for an ia32 call, its
/// twin's, with `compat` its own number) and registers it for its result.
#[inline(always)]
fn file_call(id: u32, args: &Args, pid_tgid: u64, compat: u32) {
    // Opens are filtered by flags before anything else: most opens read.
    if !files::wants(id, args) {
        return;
    }
    let tid = pid_tgid as u32;
    let mnt_ns = mountns::sync_current();
    let Some(inflight) = INFLIGHT_NEW.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: this CPU's entry of a per-CPU array; programs do not nest on one CPU.
    let inflight = unsafe { &mut *inflight };
    if let Some(mut rec) = files::enter(id, args, inflight) {
        if mnt_ns != 0 {
            rec.u64_field(MNT_NS, mnt_ns, 0);
        }
        if compat != 0 {
            rec.hdr().hflags |= header_flags::COMPAT;
            rec.u64_field(COMPAT_NR, compat as u64, 0);
            inflight.retry |= files::RETRY_COMPAT;
        }
        // Register before sending: the result can only come after this.
        if id != nr::IO_URING_SETUP {
            if INFLIGHT.insert(tid, inflight, 0).is_err() {
                count_loss(LossCause::InflightFull);
            } else if compat != 0 && !compat::seen() {
                compat::mark_seen();
            }
        }
        rec.send();
    }
}

/// execve/execveat, in a program of its own so each program stays well under
/// the verifier's complexity limit. Not attached: `sys_enter` tail-calls it
/// (slot [`TAIL_EXEC`] of [`SYS_ENTER_TAIL`]) for these two syscalls of a
/// process in scope, so other syscalls do not run it.
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn sys_enter_exec(ctx: RawTracePointContext) -> i32 {
    let id: u64 = ctx.arg(1);
    let id = id as u32;
    if id != nr::EXECVE && id != nr::EXECVEAT {
        return 0;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    if current_scope((pid_tgid >> 32) as u32).is_none() {
        return 0;
    }
    if compat::in_compat() {
        return 0; // an ia32 number: recorded by sys_enter as a compat call
    }
    let regs: *const u8 = ctx.arg(0);
    let args = Args::read(regs);
    let tid = pid_tgid as u32;
    let inflight = Inflight::new(id, 0, 0);
    if INFLIGHT.insert(tid, inflight, 0).is_err() {
        count_loss(LossCause::InflightFull);
    }
    let mnt_ns = mountns::sync_current();
    if let Some(mut rec) = exec::enter(id, &args) {
        if mnt_ns != 0 {
            rec.u64_field(MNT_NS, mnt_ns, 0);
        }
        rec.send();
    }
    0
}

/// A BTF tracepoint, unlike `sys_enter`: the raw tracepoint does not pass
/// the syscall number at exit, and a BTF-typed `regs` lets every syscall of
/// the host that abm does not trace return after one plain load of
/// `orig_ax` instead of a `bpf_probe_read_kernel` call.
#[btf_tracepoint(function = "sys_exit")]
pub fn sys_exit(ctx: BtfTracePointContext) -> i32 {
    let regs: *const u8 = ctx.arg(0);
    // SAFETY: `regs` is the tracepoint's BTF-typed `struct pt_regs *`: the
    // verifier checks this load against the type (orig_ax, a scalar) and
    // guards it like a probe read.
    let id = unsafe { core::ptr::read(regs.add(ORIG_AX) as *const u64) };
    let traced = is_traced(id as u32);
    // An ia32 number the x86_64 table does not trace may still end a
    // compat call registered under its twin's number.
    if !traced && !compat::seen() {
        return 0;
    }
    let tid = bpf_get_current_pid_tgid() as u32;
    // SAFETY: a map lookup; the value is read at once, within this program run.
    let Some(inflight) = (unsafe { INFLIGHT.get(tid) }).copied() else {
        return 0;
    };
    let compat = inflight.retry & files::RETRY_COMPAT != 0;
    if !traced && !compat {
        return 0;
    }
    let _ = INFLIGHT.remove(tid);
    // The call's own (x86_64) number: an ia32 call's twin.
    let id = inflight.nr as u64;
    let ret: i64 = ctx.arg(1);
    if let Some(mut rec) = Record::start_result(id as u32, ret) {
        // Arguments unreadable at entry: the syscall has faulted them in.
        if inflight.retry & 1 != 0 {
            rec.user_str::<MAX_RAW_PATH>(RAW_PATH, inflight.path1 as *const u8);
        }
        if inflight.retry & 2 != 0 {
            rec.user_str::<MAX_RAW_PATH>(RAW_PATH2, inflight.path2 as *const u8);
        }
        // A new fd: name the file really opened.
        if ret >= 0 && files::is_open(id as u32) {
            files::opened(&mut rec, ret as i32);
        }
        // A name removed or moved: was it the object the record names?
        if ret == 0 && inflight.retry & files::RETRY_CHECK != 0 {
            rec.u64_field(CONFIRM, files::confirm(&inflight), 0);
        }
        // openat2 flags unreadable at entry: the kernel has copied them now.
        if inflight.retry & files::RETRY_OPEN_HOW != 0 {
            match files::read_how(inflight.path2) {
                Some((flags, _)) => rec.u64_field(OPEN_HOW, flags, 0),
                None => rec.u64_field(OPEN_HOW, 0, field_flags::READ_FAILED),
            }
        }
        rec.send();
    }
    0
}
