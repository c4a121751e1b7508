//! Following containers from their cgroup's creation.
//!
//! A container's processes are children of the runtime (containerd-shim,
//! conmon), not of the client that asked for them, so the process tree of
//! `abm run -- docker run ...` never reaches them. Their cgroup does: the
//! runtime creates it (`docker-<id>.scope`, `docker/<id>`,
//! `libpod-<id>.scope`, ...) before the container's first process joins
//! it. While userspace has armed following, every new cgroup of the v2
//! hierarchy whose name ends in a 64-hex container id is put in the scope
//! at once (so the container's first syscall is traced) and reported as a
//! `CgroupMkdir` record; userspace then keeps it or takes it out.
use core::ffi::c_void;

use aya_ebpf::{
    helpers::generated::bpf_probe_read_kernel_str,
    macros::{map, raw_tracepoint},
    maps::{Array, PerCpuArray},
    programs::RawTracePointContext,
};
use monitor_common::{
    cgroup_follow::ADDED, field_tag::CGROUP_PATH, EventKind, LossCause, ScopeEntry,
};

use crate::{
    maps::{count_loss, CGROUP_LEVELS_KEY, SCOPE_CGROUPS},
    record::Record,
};

// CO-RE accessors of this family (appended to shim/shim.c).
// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_cgroup_id(c: *const c_void) -> u64;
    fn shim_cgroup_level(c: *const c_void) -> i32;
    fn shim_cgroup_hierarchy(c: *const c_void) -> i32;
}

/// `[0]`: non-zero when armed; `[1]`: the target id new container cgroups
/// are put in scope with. Written by userspace (`kernel::cgroup`).
#[map]
pub static FOLLOW: Array<u32> = Array::with_max_entries(2, 0);

const PATH_MAX: usize = 256;
const ID_LEN: usize = 64;

#[map]
static CGROUP_PATH_BUF: PerCpuArray<[u8; PATH_MAX]> = PerCpuArray::with_max_entries(1, 0);

/// include/trace/events/cgroup.h: TP_PROTO(struct cgroup *cgrp, const char
/// *path), called by cgroup_mkdir() in the creating task's context.
#[raw_tracepoint(tracepoint = "cgroup_mkdir")]
pub fn cgroup_mkdir(ctx: RawTracePointContext) -> i32 {
    match FOLLOW.get(0) {
        Some(a) if *a != 0 => {}
        _ => return 0,
    }
    let target = FOLLOW.get(1).copied().unwrap_or(0);
    let cgrp: u64 = ctx.arg(0);
    let path: u64 = ctx.arg(1);
    cgroup_follow(cgrp, path, target as u64);
    0
}

#[inline(always)]
fn is_hex(c: u8) -> bool {
    c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
}

/// Whether the cgroup path ends in a container id: `<sep><64 hex>` with an
/// optional `.scope`, `<sep>` being `/` or `-`.
#[inline(always)]
fn names_container(buf: &[u8; PATH_MAX], len: usize) -> bool {
    let mut end = len;
    if end >= 6
        && buf[(end - 6) & (PATH_MAX - 1)] == b'.'
        && buf[(end - 5) & (PATH_MAX - 1)] == b's'
    {
        end -= 6;
    }
    if !(ID_LEN + 1..=PATH_MAX).contains(&end) {
        return false;
    }
    let start = end - ID_LEN;
    let mut i = 0;
    while i < ID_LEN {
        if !is_hex(buf[(start + i) & (PATH_MAX - 1)]) {
            return false;
        }
        i += 1;
    }
    let sep = buf[(start - 1) & (PATH_MAX - 1)];
    sep == b'/' || sep == b'-'
}

/// A global function: verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn cgroup_follow(cgrp: u64, path: u64, target: u64) -> u64 {
    let c = cgrp as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    if unsafe { shim_cgroup_hierarchy(c) } != 0 {
        return 0; // a cgroup v1 hierarchy
    }
    let Some(buf) = CGROUP_PATH_BUF.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: bpf_probe_read_* checks the address itself; the destination is this CPU's buffer.
    let n = unsafe {
        bpf_probe_read_kernel_str(buf as *mut c_void, PATH_MAX as u32, path as *const c_void)
    };
    if n <= 1 {
        return 0;
    }
    // SAFETY: this CPU's entry of a per-CPU array; programs do not nest on one CPU.
    if !names_container(unsafe { &*buf }, (n - 1) as usize) {
        return 0;
    }
    // SAFETY: CO-RE accessors of the C shim, as above.
    let (id, level) = unsafe { (shim_cgroup_id(c), shim_cgroup_level(c)) };
    let mut mode = 0;
    if id != 0 && (0..32).contains(&level) {
        let entry = ScopeEntry {
            target: target as u32,
            _pad: 0,
        };
        if SCOPE_CGROUPS.insert(id, entry, 0).is_ok() {
            mode = ADDED;
            // Sub-cgroups the container makes are matched through their
            // ancestor at this level.
            // SAFETY: a map lookup; the value is read at once, within this program run.
            let mask = unsafe { SCOPE_CGROUPS.get(CGROUP_LEVELS_KEY) }.map_or(0, |e| e.target);
            let levels = ScopeEntry {
                target: mask | (1u32 << level),
                _pad: 0,
            };
            let _ = SCOPE_CGROUPS.insert(CGROUP_LEVELS_KEY, levels, 0);
        } else {
            count_loss(LossCause::ScopeFull);
        }
    }
    if let Some(mut rec) = Record::start(EventKind::CgroupMkdir as u32, 0) {
        let h = rec.hdr();
        h.result = id as i64;
        h.flags = level as u64;
        h.mode = mode;
        rec.kernel_str::<PATH_MAX>(CGROUP_PATH, path as *const u8);
        rec.send();
    }
    0
}
