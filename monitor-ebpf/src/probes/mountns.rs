//! Mount tables captured at the time of the call.
//!
//! A process in a mount namespace of its own (a container made with
//! `pivot_root`, a bubblewrap sandbox) has paths that only its namespace's
//! mount table can map to the host view. That table must be known when the
//! call happens: a short-lived process (`bwrap ... rm /w/x`) and its
//! namespace are often gone by the time userspace reads the record, so
//! reading /proc then is too late.
//!
//! So before the record of a traced call made in a foreign namespace, the
//! kernel makes sure userspace has that namespace's current table: when the
//! namespace's change counter (`mnt_namespace.event`, bumped by every mount
//! change, fs/namespace.c `touch_mnt_namespace`) differs from the one last
//! captured, every mount of the namespace's tree is sent as one
//! `MountInfo` record (mount point in the namespace, device, directory of
//! the file system that is mounted: the columns of mountinfo that the path
//! mapping needs). The host's table is captured the same way, because the
//! host mount a container's root maps to (an overlay's `merged`
//! directory) can be unmounted before userspace reads /proc. The record of
//! the call then carries the namespace's inode number (`MNT_NS`).
use core::ffi::c_void;

use aya_ebpf::{
    helpers::bpf_get_current_task,
    macros::map,
    maps::{Array, LruHashMap},
};
use monitor_common::{
    field_tag::{MNT_FS_ROOT, MNT_POINT},
    mountns::{CUT, LAST, MAX_MOUNTS},
    EventKind,
};

use crate::{
    record::Record,
    shim::{shim_mnt_mountpoint, shim_mnt_parent, shim_mnt_root, shim_task_pid},
    walk::walk_path,
};

// CO-RE accessors of this family (appended to shim/shim.c).
// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_task_mnt_ns(t: *const c_void) -> *const c_void;
    fn shim_task_parent(t: *const c_void) -> *const c_void;
    fn shim_mnt_ns_inum(ns: *const c_void) -> u32;
    fn shim_mnt_ns_event(ns: *const c_void) -> u64;
    fn shim_mnt_ns_root(ns: *const c_void) -> *const c_void;
    fn shim_mnt_dev(m: *const c_void) -> u32;
    fn shim_mnt_id(m: *const c_void) -> u32;
    fn shim_mnt_first_child(m: *const c_void) -> *const c_void;
    fn shim_mnt_next_sibling(m: *const c_void) -> *const c_void;
}

/// Inode number of the host's mount namespace (that of pid 1), set by the
/// loader; 0 turns captures off.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
pub static HOST_MNT_NS: u32 = 0;

/// Namespace inode -> change counter of its last capture.
#[map]
static MNT_NS_SEEN: LruHashMap<u32, u64> = LruHashMap::with_max_entries(4096, 0);

/// The host's `struct mnt_namespace` once found (a kernel pointer, only
/// ever passed to probe reads).
#[map]
static HOST_NS_PTR: Array<u64> = Array::with_max_entries(1, 0);

/// Mounts stacked under one another walked up when looking for the next
/// mount of the tree.
const MAX_MOUNT_DEPTH: u32 = 64;
/// Ancestors walked from a task to the host's init.
const MAX_ANCESTORS: u32 = 64;
/// A "mount" no dentry is the root of: a walk given it follows `d_parent`
/// to the root of the file system, which is mountinfo's `root` column.
const NO_MOUNT: u64 = 1;

/// For a call by a task outside the host's mount namespace: captures the
/// tables of its namespace and of the host's when they changed since their
/// last capture, and returns the namespace's inode number; 0 for the host's
/// namespace. Call it before the call's record is started (captures use
/// the scratch buffer).
#[inline(always)]
pub fn sync_current() -> u64 {
    mountns_sync()
}

/// A global function: verified once, whatever the number of call sites.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn mountns_sync() -> u64 {
    // SAFETY: a plain read of a global the loader sets before the programs run.
    let host = unsafe { core::ptr::read_volatile(&HOST_MNT_NS) };
    if host == 0 {
        return 0;
    }
    // SAFETY: a BPF helper without memory arguments; the pointer only goes to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let ns = unsafe { shim_task_mnt_ns(task) };
    // SAFETY: as above.
    let inum = unsafe { shim_mnt_ns_inum(ns) };
    if inum == 0 || inum == host {
        return 0;
    }
    // The task's namespace, then the host's; one inlined check, not a
    // function of its own: a frame less under `sys_enter`, whose stack and
    // its callees' the 6.1 verifier bounds at 512 bytes together.
    capture_if_changed(ns as u64);
    let h = host_ns(task, host);
    if h != 0 {
        capture_if_changed(h);
    }
    inum as u64
}

/// The host's namespace: pid 1's (found once from any task by walking up
/// `real_parent`, then remembered).
#[inline(always)]
fn host_ns(task: *const c_void, host: u32) -> u64 {
    if let Some(p) = HOST_NS_PTR.get(0) {
        if *p != 0 {
            return *p;
        }
    }
    let mut t = task;
    let mut i = 0;
    while i < MAX_ANCESTORS {
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let pid = unsafe { shim_task_pid(t) };
        if pid == 1 {
            // SAFETY: as above.
            let ns = unsafe { shim_task_mnt_ns(t) };
            // SAFETY: as above.
            if unsafe { shim_mnt_ns_inum(ns) } != host {
                return 0;
            }
            if let Some(slot) = HOST_NS_PTR.get_ptr_mut(0) {
                // SAFETY: the map's only slot; a racing writer stores the same value.
                unsafe { *slot = ns as u64 };
            }
            return ns as u64;
        }
        if pid == 0 {
            return 0;
        }
        // SAFETY: as above.
        t = unsafe { shim_task_parent(t) };
        i += 1;
    }
    0
}

/// Captures namespace `ns` when its change counter moved since its last
/// capture; 1 when it did.
#[inline(always)]
fn capture_if_changed(ns: u64) -> u64 {
    let ns_p = ns as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (inum, event) = unsafe { (shim_mnt_ns_inum(ns_p), shim_mnt_ns_event(ns_p)) };
    if inum == 0 {
        return 0;
    }
    // SAFETY: a map lookup; the value is read at once, within this program run.
    if let Some(seen) = unsafe { MNT_NS_SEEN.get(inum) } {
        if *seen == event {
            return 0;
        }
    }
    mountns_capture(ns, inum as u64, event);
    // Stored after the capture: a call on another CPU either sees the old
    // counter and captures too, or finds this capture already sent.
    let _ = MNT_NS_SEEN.insert(inum, event, 0);
    1
}

/// Sends every mount of the namespace's tree, in pre-order from its root
/// mount (a mount before the mounts on top of it).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn mountns_capture(ns: u64, inum: u64, event: u64) -> u64 {
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let root = unsafe { shim_mnt_ns_root(ns as *const c_void) } as u64;
    let mut m = root;
    let mut i = 0u32;
    while i < MAX_MOUNTS {
        if m == 0 {
            break;
        }
        let next = mountns_next(m, root);
        let mark = if next == 0 {
            LAST
        } else if i + 1 == MAX_MOUNTS {
            CUT
        } else {
            0
        };
        // The record's paths are walked by a function of its own, not by
        // `mountns_emit`: its frame is small, and the deepest chain under
        // `sys_enter` stays within the 512 bytes the 6.1 verifier allows
        // it and its callees together.
        if mountns_emit(m, inum, event, ((i as u64) << 32) | mark as u64) != 0 {
            mountns_paths(m);
        }
        m = next;
        i += 1;
    }
    0
}

/// The mount after `m` in a pre-order walk of the tree under `root`, or 0.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn mountns_next(m: u64, root: u64) -> u64 {
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let child = unsafe { shim_mnt_first_child(m as *const c_void) } as u64;
    if child != 0 {
        return child;
    }
    let mut cur = m;
    let mut i = 0;
    while i < MAX_MOUNT_DEPTH {
        if cur == root {
            return 0;
        }
        // SAFETY: as above.
        let sib = unsafe { shim_mnt_next_sibling(cur as *const c_void) } as u64;
        if sib != 0 {
            return sib;
        }
        // SAFETY: as above.
        let parent = unsafe { shim_mnt_parent(cur as *const c_void) } as u64;
        if parent == 0 || parent == cur {
            return 0;
        }
        cur = parent;
        i += 1;
    }
    0
}

/// Walks the two paths of the `MountInfo` record [`mountns_emit`] started
/// for mount `m` and sends it.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn mountns_paths(m: u64) -> u64 {
    let mp = m as *const c_void;
    // The dentry it is mounted on, in its parent mount, to the namespace's
    // root (the root mount is its own parent: an empty walk, "/").
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (parent, point) = unsafe { (shim_mnt_parent(mp), shim_mnt_mountpoint(mp)) };
    walk_path(MNT_POINT as u64, point as u64, parent as u64);
    // SAFETY: as above.
    let root = unsafe { shim_mnt_root(mp) };
    walk_path(MNT_FS_ROOT as u64, root as u64, NO_MOUNT);
    if let Some(rec) = Record::resume() {
        rec.send();
    }
    0
}

/// Starts one `MountInfo` record (layout in `monitor_common::mountns`):
/// its header; the caller walks its paths and sends it. 1 when started.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn mountns_emit(m: u64, inum: u64, event: u64, index_mark: u64) -> u64 {
    let mp = m as *const c_void;
    let Some(mut rec) = Record::start(EventKind::MountInfo as u32, 0) else {
        return 0;
    };
    let h = rec.hdr();
    h.result = inum as i64;
    h.flags = event;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    h.mode = unsafe { shim_mnt_id(mp) };
    // SAFETY: as above.
    h.owner_uid = unsafe { shim_mnt_dev(mp) };
    h.fd = (index_mark >> 32) as i32;
    h.owner_gid = index_mark as u32;
    1
}
