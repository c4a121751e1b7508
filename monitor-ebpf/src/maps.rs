//! Maps shared with userspace. Names are part of the loader's contract
//! (`monitor::probes`).
use aya_ebpf::{
    macros::map,
    maps::{HashMap, PerCpuArray, RingBuf},
};
use monitor_common::{limits::PAYLOAD_CAP, limits::PAYLOAD_SLACK, EventHeader, LossCause, ScopeEntry};

/// All events, in reservation order. Userspace sizes it at load time
/// (`EbpfLoader::set_max_entries`).
#[map]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(8 * 1024 * 1024, 0);

/// Processes (by tgid) whose actions are traced.
#[map]
pub static SCOPE: HashMap<u32, ScopeEntry> = HashMap::with_max_entries(65536, 0);

/// cgroup v2 ids whose processes are traced, whatever their ancestry.
#[map]
pub static SCOPE_CGROUPS: HashMap<u64, ScopeEntry> = HashMap::with_max_entries(1024, 0);

/// Threads inside a traced syscall: tid -> syscall number. Pairs sys_exit
/// with its sys_enter so only traced calls emit a result.
#[map]
pub static INFLIGHT: HashMap<u32, u32> = HashMap::with_max_entries(65536, 0);

/// Events that could not be delivered, per CPU, indexed by [`LossCause`].
#[map]
pub static LOSSES: PerCpuArray<u64> = PerCpuArray::with_max_entries(LossCause::COUNT, 0);

/// Scratch space where a record is assembled before it is copied to
/// [`EVENTS`] (a record is larger than the 512-byte BPF stack).
#[map]
pub static SCRATCH: PerCpuArray<RecordBuf> = PerCpuArray::with_max_entries(1, 0);

#[repr(C)]
pub struct RecordBuf {
    pub hdr: EventHeader,
    pub payload: [u8; PAYLOAD_CAP + PAYLOAD_SLACK],
}

/// Non-zero when userspace watches cgroups; saves the cgroup lookup otherwise.
#[unsafe(no_mangle)]
pub static WATCH_CGROUPS: u32 = 0;

#[inline(always)]
pub fn count_loss(cause: LossCause) {
    if let Some(p) = LOSSES.get_ptr_mut(cause as u32) {
        // Per-CPU slot: no other writer while this program runs.
        unsafe { *p += 1 };
    }
}

/// The scope entry of the current process, if it is watched.
#[inline(always)]
pub fn current_scope(tgid: u32) -> Option<ScopeEntry> {
    if let Some(e) = unsafe { SCOPE.get(&tgid) } {
        return Some(*e);
    }
    if unsafe { core::ptr::read_volatile(&WATCH_CGROUPS) } != 0 {
        let cg = unsafe { aya_ebpf::helpers::bpf_get_current_cgroup_id() };
        if let Some(e) = unsafe { SCOPE_CGROUPS.get(&cg) } {
            return Some(*e);
        }
    }
    None
}
