//! Process lifecycle: keeps the `SCOPE` table equal to the watched process
//! trees. A child inherits its parent's scope at fork, so double-forked
//! daemons stay in scope; threads share their process's entry (keyed by tgid).
use core::ffi::c_void;

use aya_ebpf::{helpers::{bpf_get_current_pid_tgid, bpf_get_current_task}, macros::raw_tracepoint, programs::RawTracePointContext};
use monitor_common::{EventKind, LossCause};

use crate::{
    maps::{count_loss, current_scope, SCOPE},
    record::Record,
    shim::{shim_task_exit_code, shim_task_pid, shim_task_tgid},
};

/// include/trace/events/sched.h: TP_PROTO(struct task_struct *parent,
/// struct task_struct *child).
#[raw_tracepoint(tracepoint = "sched_process_fork")]
pub fn sched_process_fork(ctx: RawTracePointContext) -> i32 {
    let child: *const c_void = ctx.arg(1);
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (pid, tgid) = unsafe { (shim_task_pid(child), shim_task_tgid(child)) };
    if pid != tgid {
        return 0; // a new thread: covered by its process's entry
    }
    let parent_tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    let Some(entry) = current_scope(parent_tgid) else { return 0 };
    if SCOPE.insert(&tgid, &entry, 0).is_err() {
        count_loss(LossCause::ScopeFull);
    }
    if let Some(mut rec) = Record::start(EventKind::Fork as u32, 0) {
        rec.hdr().result = tgid as i64;
        rec.send();
    }
    0
}

/// include/trace/events/sched.h: TP_PROTO(struct task_struct *p, ...), runs
/// in the context of the exiting task.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn sched_process_exit(_ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tid, tgid) = (pid_tgid as u32, (pid_tgid >> 32) as u32);
    if tid != tgid {
        return 0;
    }
    if current_scope(tgid).is_none() {
        return 0;
    }
    if let Some(mut rec) = Record::start(EventKind::Exit as u32, 0) {
        // The wait status (exit code << 8 | killing signal).
        let task = unsafe { bpf_get_current_task() } as *const c_void;
        rec.hdr().result = i64::from(unsafe { shim_task_exit_code(task) });
        rec.send();
    }
    let _ = SCOPE.remove(&tgid);
    0
}
