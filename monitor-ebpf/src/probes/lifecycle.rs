//! Process lifecycle: keeps the `SCOPE` table equal to the watched process
//! trees. A child inherits its parent's scope at fork, so double-forked
//! daemons stay in scope; threads share their process's entry (keyed by tgid).
use core::ffi::c_void;

use aya_ebpf::{
    helpers::{bpf_get_current_pid_tgid, bpf_get_current_task},
    macros::raw_tracepoint,
    programs::RawTracePointContext,
};
use monitor_common::{EventKind, LossCause};

use crate::{
    maps::{count_loss, current_scope, INFLIGHT, SCOPE},
    record::Record,
    shim::{shim_task_exit_code, shim_task_group_live, shim_task_pid, shim_task_tgid},
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
    let Some(entry) = current_scope(parent_tgid) else {
        return 0;
    };
    if SCOPE.insert(tgid, entry, 0).is_err() {
        count_loss(LossCause::ScopeFull);
    }
    if let Some(mut rec) = Record::start(EventKind::Fork as u32, 0) {
        rec.hdr().result = tgid as i64;
        rec.send();
    }
    0
}

/// include/trace/events/sched.h: TP_PROTO(struct task_struct *p, ...), runs
/// in the context of the exiting task, for every thread.
///
/// A thread that dies inside a traced syscall (killed, or another thread
/// called `exit_group`) never reaches `sys_exit`: its `INFLIGHT` entry is
/// removed here. The process leaves scope when its last thread exits, not
/// when the leader does: a leader that calls `pthread_exit` early leaves
/// threads that still act. do_exit() decrements `signal->live` before this
/// tracepoint fires (kernel/exit.c), so 0 means the group is gone.
#[raw_tracepoint(tracepoint = "sched_process_exit")]
pub fn sched_process_exit(_ctx: RawTracePointContext) -> i32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tid, tgid) = (pid_tgid as u32, (pid_tgid >> 32) as u32);
    let _ = INFLIGHT.remove(tid);
    if current_scope(tgid).is_none() {
        return 0;
    }
    // SAFETY: a BPF helper without memory arguments; the task pointer only
    // goes to CO-RE reads (bpf_probe_read_kernel underneath).
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    if unsafe { shim_task_group_live(task) } > 0 {
        return 0; // other threads of the process still run
    }
    if let Some(mut rec) = Record::start(EventKind::Exit as u32, 0) {
        // The wait status (exit code << 8 | killing signal).
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        rec.hdr().result = i64::from(unsafe { shim_task_exit_code(task) });
        rec.send();
    }
    let _ = SCOPE.remove(tgid);
    // Its answers to held `confirm` actions (BPF LSM) die with it: a later
    // process with the same pid is asked again.
    let _ = crate::probes::lsm::LSM_ANSWERS.remove(tgid);
    0
}
