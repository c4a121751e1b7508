//! Maps shared with userspace. Names are part of the loader's contract
//! (`monitor::probes`).
use aya_ebpf::{
    macros::map,
    maps::{HashMap, PerCpuArray, ProgramArray, RingBuf},
};
use monitor_common::{
    limits::PAYLOAD_CAP, limits::PAYLOAD_SLACK, EventHeader, Inflight, LossCause, ReadFailure,
    ScopeEntry,
};

/// All events, in reservation order. Userspace sizes it at load time
/// (`EbpfLoader::set_max_entries`).
#[map]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(8 * 1024 * 1024, 0);

/// Programs `sys_enter` tail-calls, by index: only the syscalls they record
/// reach them, so every other syscall runs one program at entry, not one
/// per hook family. Userspace fills it before attaching `sys_enter`.
#[map]
pub static SYS_ENTER_TAIL: ProgramArray = ProgramArray::with_max_entries(2, 0);

/// Index of `sys_enter_exec` (execve, execveat) in [`SYS_ENTER_TAIL`].
pub const TAIL_EXEC: u32 = 0;

/// Index of `sys_enter_compat` (ia32 calls recorded as their x86_64 twins).
pub const TAIL_COMPAT: u32 = 1;

/// Processes (by tgid) whose actions are traced.
#[map]
pub static SCOPE: HashMap<u32, ScopeEntry> = HashMap::with_max_entries(65536, 0);

/// cgroup v2 ids whose processes are traced, whatever their ancestry.
#[map]
pub static SCOPE_CGROUPS: HashMap<u64, ScopeEntry> = HashMap::with_max_entries(1024, 0);

/// Threads inside a traced syscall: tid -> syscall number. Pairs sys_exit
/// with its sys_enter so only traced calls emit a result.
#[map]
pub static INFLIGHT: HashMap<u32, Inflight> = HashMap::with_max_entries(65536, 0);

/// The in-flight entry a call's entry builds, per CPU: off the stack, which
/// the verifier bounds at 512 bytes across the calls of one program.
#[map]
pub static INFLIGHT_NEW: PerCpuArray<Inflight> = PerCpuArray::with_max_entries(1, 0);

/// Events that could not be delivered, per CPU, indexed by [`LossCause`].
#[map]
pub static LOSSES: PerCpuArray<u64> = PerCpuArray::with_max_entries(LossCause::COUNT, 0);

/// Reads and helpers that failed where a program carried on with 0, per
/// CPU, indexed by [`ReadFailure`]. Userspace reports increases as losses.
#[map]
pub static ERRORS: PerCpuArray<u64> = PerCpuArray::with_max_entries(ReadFailure::COUNT, 0);

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
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
pub static WATCH_CGROUPS: u32 = 0;

#[inline(always)]
pub fn count_loss(cause: LossCause) {
    if let Some(p) = LOSSES.get_ptr_mut(cause as u32) {
        // Per-CPU slot: no other writer while this program runs.
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { *p += 1 };
    }
}

// Not inlined: one subprogram instead of a map lookup and its null check
// at every read, which multiplied the states the verifier explores (on
// 6.1, sys_enter_compat went past the 1M-instruction limit).
#[inline(never)]
pub fn count_failure(kind: ReadFailure) {
    if let Some(p) = ERRORS.get_ptr_mut(kind as u32) {
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { *p += 1 };
    }
}

/// The value of a read or helper call, or `default` with the failure
/// counted in [`ERRORS`]: the entry points' way of never turning an error
/// into a silent zero.
#[inline(always)]
pub fn or_count<T, E>(r: Result<T, E>, kind: ReadFailure, default: T) -> T {
    match r {
        Ok(v) => v,
        Err(_) => {
            count_failure(kind);
            default
        }
    }
}

/// Key of [`SCOPE_CGROUPS`] (no cgroup has id 0) whose `target` is a bit
/// mask of the hierarchy levels at which watched cgroups sit (bit n: level
/// n, the root being level 0). Userspace keeps it; absent or 0 means only
/// exact matches are tried.
pub const CGROUP_LEVELS_KEY: u64 = 0;

/// Deepest cgroup level looked at for ancestor matches.
const MAX_CGROUP_LEVEL: u32 = 31;

/// The scope entry of the current process, if it is watched: by pid, else
/// by its cgroup, else by the nearest watched ancestor of its cgroup (so
/// sub-cgroups a container creates stay in scope).
#[inline(always)]
pub fn current_scope(tgid: u32) -> Option<ScopeEntry> {
    // SAFETY: a map lookup; the value is read at once, within this program run.
    if let Some(e) = unsafe { SCOPE.get(tgid) } {
        return Some(*e);
    }
    // SAFETY: a plain read of a global the loader sets before the programs run.
    if unsafe { core::ptr::read_volatile(&WATCH_CGROUPS) } != 0 {
        // SAFETY: a BPF helper without memory arguments.
        let cg = unsafe { aya_ebpf::helpers::bpf_get_current_cgroup_id() };
        // SAFETY: a map lookup; the value is read at once, within this program run.
        if let Some(e) = unsafe { SCOPE_CGROUPS.get(cg) } {
            return Some(*e);
        }
        // SAFETY: a map lookup; the value is read at once, within this program run.
        if let Some(levels) = unsafe { SCOPE_CGROUPS.get(CGROUP_LEVELS_KEY) } {
            let found = scope_ancestor(levels.target as u64);
            if found != 0 {
                return Some(ScopeEntry {
                    target: (found - 1) as u32,
                    _pad: 0,
                });
            }
        }
    }
    None
}

/// Target id + 1 of the deepest watched ancestor of the current cgroup at
/// one of the levels in `mask`, or 0. A global function: verified once, and
/// its loop has a constant bound.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn scope_ancestor(mask: u64) -> u64 {
    let mut level = MAX_CGROUP_LEVEL as i32;
    while level >= 0 {
        if mask & (1u64 << level) != 0 {
            // 0 when the current cgroup is shallower than `level`.
            // SAFETY: a BPF helper without memory arguments.
            let id =
                unsafe { aya_ebpf::helpers::generated::bpf_get_current_ancestor_cgroup_id(level) };
            if id != 0 {
                // SAFETY: a map lookup; the value is read at once, within this program run.
                if let Some(e) = unsafe { SCOPE_CGROUPS.get(id) } {
                    return e.target as u64 + 1;
                }
            }
        }
        level -= 1;
    }
    0
}
