//! The identity of the object a path argument names, decided at syscall
//! entry: the path is looked up component by component in the kernel's
//! dentry cache, as `d_lookup()` (fs/dcache.c) does, from the directory the
//! path is relative to.
//!
//! A component's dentry is found in `dentry_hashtable` under
//! `full_name_hash(parent dentry, name)` (fs/namei.c), comparing parent,
//! hash, length and name. The loader locates the table at load time
//! (`DCACHE`); without it the lookup says `OFF`. The lookup never guesses:
//! a symlink on the way, a mount point it cannot cross, a component not in
//! the cache, a file system with its own name hashing, or a bound reached
//! ends it with a status ([`monitor_common::lookup`]) and no identity.
//!
//! It is lockless, as the kernel's RCU walk is, but without its sequence
//! checks: a rename racing with the call can make it see the tree just
//! before or just after that rename.
use core::ffi::c_void;

use aya_ebpf::{
    helpers::{bpf_get_current_task, bpf_probe_read_kernel, generated::bpf_probe_read_kernel_str},
    macros::map,
    maps::{Array, HashMap, PerCpuArray},
};
use monitor_common::{
    fold_hash, hash_mix,
    limits::MAX_RAW_PATH,
    lookup::{
        ABSENT, DEPTH, DIR_KNOWN, FOUND, FS_NAMES, LINKS_FOLLOWED, MAX_CHAIN, MAX_STEPS, MOUNT,
        NOT_CACHED, OFF, OTHER, SYMLINK,
    },
    DcacheConfig, DcacheSample,
};

use monitor_common::ReadFailure;

use crate::maps::or_count;
use crate::shim::*;

/// Where the dentry hash table is; filled by the loader.
#[map]
pub static DCACHE: Array<DcacheConfig> = Array::with_max_entries(1, 0);

/// Dentries the loader asked about while locating the table, by fd.
#[map]
pub static DCACHE_SAMPLES: HashMap<u32, DcacheSample> = HashMap::with_max_entries(64, 0);

/// The loader's pid while it locates the table (`dcache_sample`).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
pub static CALIBRATE_TGID: u32 = 0;

const PATH_MASK: usize = MAX_RAW_PATH - 1;
const NAME_MAX: usize = 255;
const NAME_BUF: usize = 256;

/// Bit of `mode`: the call follows a final symlink or mount (chmod,
/// truncate...); without it the call acts on the final name itself
/// (unlink, rename, lchown...).
pub const FOLLOW: u64 = 1;

/// Bit of `mode`: the path starts with a `/proc` link the record's base
/// already resolved. A call that does not follow its final component and
/// is given the link itself acts on the `/proc` entry, not on the object
/// the link names: no identity then.
pub const PROC_LINK: u64 = 2;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;
/// Status while the lookup is still going.
const RUNNING: u64 = 0xff;
/// Symlinks one lookup follows (the kernel allows 40).
const MAX_LINKS: u64 = 8;
/// Mount crossings at one mount point (mounts stacked on it).
const MAX_STACKED: u32 = 4;
/// Child mounts of one mount looked at when crossing.
const MAX_CHILD_MOUNTS: u32 = 32;

/// The lookup's state, per CPU (too large for the stack).
#[repr(C)]
pub struct LookupState {
    path: [u8; MAX_RAW_PATH + 16],
    name: [u8; NAME_BUF + 16],
    /// A followed symlink's target and the rest of the path after it.
    alt: [u8; MAX_RAW_PATH + NAME_BUF + 16],
    /// Symlinks followed.
    links: u64,
    /// Bytes of the path.
    n: u64,
    /// Next byte to look at.
    pos: u64,
    /// The directory the next component is looked up in, and its mount.
    cur: u64,
    mnt: u64,
    root: u64,
    root_mnt: u64,
    mode: u64,
    table: u64,
    shift: u64,
    /// `DCACHE_MOUNTED` on this kernel.
    mounted: u64,
    /// The current component: start, length, hash, and whether it is the
    /// last one (bit 0) and followed by a slash (bit 1).
    cstart: u64,
    clen: u64,
    hash: u64,
    last: u64,
    /// Result: object and directory identities, status.
    pub out: [u64; 5],
    /// The object's dentry (0: none), and the directory dentry and
    /// `hash_len` the final component was looked up with (0: the lookup
    /// did not reach it): what the call's exit checks ([`tail`]).
    obj: u64,
    fdir: u64,
    fhash: u64,
}

#[map]
static LOOKUP: PerCpuArray<LookupState> = PerCpuArray::with_max_entries(1, 0);

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_obj_hash_dentry(node: *const c_void) -> *const c_void;
    fn shim_obj_hash_next(d: *const c_void) -> *const c_void;
    fn shim_obj_hash_pprev(d: *const c_void) -> *const c_void;
    fn shim_obj_hash_len(d: *const c_void) -> u64;
    fn shim_obj_flags(d: *const c_void) -> u32;
    fn shim_obj_imode(d: *const c_void) -> u32;
    fn shim_obj_own_names(d: *const c_void) -> u32;
    fn shim_obj_link(d: *const c_void) -> *const u8;
    fn shim_dentry_inode(d: *const c_void) -> *const c_void;
    fn shim_inode_ino(i: *const c_void) -> u64;
    fn shim_inode_dev(i: *const c_void) -> u32;
    fn shim_mnt_first_child(m: *const c_void) -> *const c_void;
    fn shim_mnt_next_sibling(m: *const c_void) -> *const c_void;
}

#[inline(always)]
fn state() -> Option<&'static mut LookupState> {
    // SAFETY: this CPU's entry of a 1-entry per-CPU array; programs do not
    // nest on one CPU, so nothing else holds a reference to it.
    LOOKUP.get_ptr_mut(0).map(|p| unsafe { &mut *p })
}

#[inline(always)]
fn byte(st: &LookupState, i: u64) -> u8 {
    st.path[i as usize & PATH_MASK]
}

/// Sets the task's root directory and its mount for the next
/// [`lookup_path`] (the caller has read them for its record already).
#[inline(always)]
pub fn set_root(root: u64, root_mnt: u64) {
    if let Some(st) = state() {
        st.root = root;
        st.root_mnt = root_mnt;
    }
}

/// Looks the path at user address `path` (from byte `skip`) up from the
/// directory `dentry` in mount `mnt`, with the root [`set_root`] gave; the result is in the state's `out`
/// for [`crate::walk::put_lookup`]. `mode`: [`FOLLOW`] or 0. A global
/// function, verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lookup_path(path_at: u64, skip: u64, dentry: u64, mnt: u64, mode: u64) -> u64 {
    let Some(st) = state() else { return 0 };
    st.out = [0, 0, 0, 0, OTHER];
    st.obj = 0;
    st.fdir = 0;
    st.fhash = 0;
    let Some(path) = crate::record::payload_addr(path_at) else {
        return 0;
    };
    // SAFETY: a map lookup; the value is read at once.
    let cfg = DCACHE.get(0).copied().unwrap_or_default();
    if cfg.table == 0 {
        st.out[4] = OFF;
        return 0;
    }
    if dentry == 0 || mnt == 0 {
        return 0;
    }
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let len = crate::record::field_len(path_at);
    let size = if len + 1 < MAX_RAW_PATH {
        len + 1
    } else {
        MAX_RAW_PATH
    };
    // The field's bytes and no more (it has no NUL of its own).
    let n = unsafe {
        bpf_probe_read_kernel_str(
            st.path.as_mut_ptr() as *mut c_void,
            size as u32,
            path as *const c_void,
        )
    };
    if n <= 0 || n as usize >= MAX_RAW_PATH {
        return 0;
    }
    st.n = n as u64 - 1;
    st.pos = skip;
    st.cur = dentry;
    st.mnt = mnt;
    st.mode = mode;
    st.links = 0;
    st.table = cfg.table;
    st.shift = cfg.shift;
    st.mounted = cfg.mounted;
    st.out[4] = RUNNING;
    let mut i = 0;
    while i < MAX_STEPS {
        if lookup_step() != 0 {
            break;
        }
        i += 1;
    }
    if let Some(st) = state() {
        if st.out[4] == RUNNING {
            st.out[4] = DEPTH;
        }
    }
    0
}

/// Ends the lookup with `status`; the object is `obj` (0: none) and the
/// directory `dir` (0: unknown). Returns 1 (done).
#[inline(always)]
fn finish(st: &mut LookupState, status: u64, obj: u64, dir: u64) -> u64 {
    let mut status = status;
    if st.links != 0 {
        status |= LINKS_FOLLOWED;
    }
    st.obj = obj;
    if obj != 0 {
        let (ino, dev) = identity(obj);
        st.out[0] = ino;
        st.out[1] = dev;
    }
    if dir != 0 {
        let (ino, dev) = identity(dir);
        if ino != 0 {
            st.out[2] = ino;
            st.out[3] = dev;
            status |= DIR_KNOWN;
        }
    }
    st.out[4] = status;
    1
}

#[inline(always)]
fn identity(d: u64) -> (u64, u64) {
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe {
        let i = shim_dentry_inode(d as *const c_void);
        if i.is_null() {
            return (0, 0);
        }
        (shim_inode_ino(i), shim_inode_dev(i) as u64)
    }
}

/// One component of the lookup. Returns 1 when the lookup is over.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lookup_step() -> u64 {
    if scan_component() != 0 {
        let Some(st) = state() else { return 1 };
        return finish(st, OTHER, 0, 0);
    }
    let Some(st) = state() else { return 1 };
    let cur = st.cur;
    let last = st.last & 1 != 0;
    let slash = st.last & 2 != 0;
    let len = st.clen;
    if len == 0 {
        if st.mode & (PROC_LINK | FOLLOW) == PROC_LINK {
            return finish(st, OTHER, 0, 0);
        }
        // No component at all (an empty path, `/`): the base itself.
        return finish(st, FOUND, cur, 0);
    }
    let c0 = byte(st, st.cstart);
    let c1 = byte(st, st.cstart + 1);
    if c0 == b'.' && (len == 1 || (len == 2 && c1 == b'.')) {
        if len == 2 {
            let up = dotdot(cur, st.mnt, st.root, st.root_mnt);
            if up.0 == 0 {
                return finish(st, OTHER, 0, 0);
            }
            (st.cur, st.mnt) = up;
        }
        if last {
            return finish(st, FOUND, st.cur, 0);
        }
        return 0;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    if unsafe { shim_obj_imode(cur as *const c_void) } & S_IFMT != S_IFDIR {
        return finish(st, OTHER, 0, 0);
    }
    let dir = if last { cur } else { 0 };
    if last {
        st.fdir = cur;
        st.fhash = (len << 32) | (st.hash & 0xffff_ffff);
    }
    // SAFETY: as above.
    if unsafe { shim_obj_own_names(cur as *const c_void) } != 0 {
        return finish(st, FS_NAMES, 0, dir);
    }
    let d = chain_find();
    let Some(st) = state() else { return 1 };
    if d == 0 {
        return finish(st, NOT_CACHED, 0, dir);
    }
    // SAFETY: as above.
    let imode = unsafe { shim_obj_imode(d as *const c_void) } & S_IFMT;
    if imode == 0 {
        // A negative dentry: the name does not exist.
        return finish(st, if last { ABSENT } else { OTHER }, 0, dir);
    }
    let follow = !last || slash || st.mode & FOLLOW != 0;
    if imode == S_IFLNK {
        if !follow {
            return finish(st, FOUND, d, dir);
        }
        if follow_link(d) != 0 {
            let Some(st) = state() else { return 1 };
            return finish(st, SYMLINK, 0, dir);
        }
        return 0;
    }
    let mut d = d;
    // SAFETY: as above.
    if follow && unsafe { shim_obj_flags(d as *const c_void) } as u64 & st.mounted != 0 {
        let root = cross_mount(d, st.mnt);
        let Some(st) = state() else { return 1 };
        if root == 0 {
            return finish(st, MOUNT, 0, dir);
        }
        d = root;
    }
    let Some(st) = state() else { return 1 };
    if last {
        return finish(st, FOUND, d, dir);
    }
    st.cur = d;
    0
}

/// Follows the symlink `d` met in the current directory: the rest of the
/// path becomes its target followed by what came after the link, looked up
/// from the current directory (or the task's root for an absolute
/// target). Non-zero when it cannot: its target is not in memory, longer
/// than a name, or too many links were followed (`MAX_LINKS`).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn follow_link(d: u64) -> u64 {
    let Some(st) = state() else { return 1 };
    st.links += 1;
    if st.links > MAX_LINKS {
        return 1;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let link = unsafe { shim_obj_link(d as *const c_void) };
    if link.is_null() {
        return 1;
    }
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let tl = unsafe {
        bpf_probe_read_kernel_str(
            st.alt.as_mut_ptr() as *mut c_void,
            NAME_BUF as u32,
            link as *const c_void,
        )
    };
    if tl <= 1 || tl as usize >= NAME_BUF {
        return 1;
    }
    let tl = (tl as usize - 1) & (NAME_BUF - 1);
    let pos = st.pos as usize & PATH_MASK;
    let rest = (st.n as usize).saturating_sub(pos) & PATH_MASK;
    let mut n = tl;
    if rest > 0 {
        st.alt[tl] = b'/';
        n = tl + 1 + rest;
        if n >= MAX_RAW_PATH {
            return 1;
        }
        // SAFETY: offsets within the arrays (masked: at most 256 and 4095).
        let (dst, src) = unsafe {
            (
                st.alt.as_mut_ptr().add((tl + 1) & (NAME_BUF - 1)),
                st.path.as_ptr().add(pos),
            )
        };
        // SAFETY: a bounded copy between two parts of this CPU's state entry.
        if unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_kernel(
                dst as *mut c_void,
                rest as u32,
                src as *const c_void,
            )
        } != 0
        {
            return 1;
        }
    }
    st.alt[n & PATH_MASK] = 0;
    // SAFETY: as above; a whole buffer, constant size.
    if unsafe {
        aya_ebpf::helpers::generated::bpf_probe_read_kernel(
            st.path.as_mut_ptr() as *mut c_void,
            MAX_RAW_PATH as u32,
            st.alt.as_ptr() as *const c_void,
        )
    } != 0
    {
        return 1;
    }
    st.n = n as u64;
    st.pos = 0;
    if st.path[0] == b'/' {
        st.cur = st.root;
        st.mnt = st.root_mnt;
    }
    0
}

/// `..` from `cur` in `mnt`: stays at the task's root, crosses up out of a
/// mount. (0, 0) when it cannot be followed.
#[inline(always)]
fn dotdot(cur: u64, mnt: u64, root: u64, root_mnt: u64) -> (u64, u64) {
    if cur == root && mnt == root_mnt {
        return (cur, mnt);
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe {
        let mut c = cur as *const c_void;
        let mut m = mnt as *const c_void;
        if c == shim_mnt_root(m) {
            let p = shim_mnt_parent(m);
            if p.is_null() || p == m {
                return (cur, mnt);
            }
            c = shim_mnt_mountpoint(m);
            m = p;
            if c == shim_mnt_root(m) {
                // Stacked mounts: not followed.
                return (0, 0);
            }
        }
        let p = shim_dentry_parent(c);
        if p.is_null() {
            return (0, 0);
        }
        (p as u64, m as u64)
    }
}

/// The root of the mount on top of the mount point `d` in `mnt` (that
/// mount becomes the state's); 0 when not found within the bounds.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn cross_mount(d: u64, mnt: u64) -> u64 {
    let Some(st) = state() else { return 0 };
    let mounted = st.mounted;
    let mut d = d as *const c_void;
    let mut m = mnt as *const c_void;
    let mut crossed = 0u32;
    while crossed < MAX_STACKED {
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let mut child = unsafe { shim_mnt_first_child(m) };
        let mut found = core::ptr::null();
        let mut k = 0;
        while k < MAX_CHILD_MOUNTS && !child.is_null() {
            // SAFETY: as above.
            if unsafe { shim_mnt_mountpoint(child) } == d {
                found = child;
                break;
            }
            // SAFETY: as above.
            child = unsafe { shim_mnt_next_sibling(child) };
            k += 1;
        }
        if found.is_null() {
            return 0;
        }
        m = found;
        // SAFETY: as above.
        d = unsafe { shim_mnt_root(m) };
        // SAFETY: as above.
        if unsafe { shim_obj_flags(d) } as u64 & mounted == 0 {
            let Some(st) = state() else { return 0 };
            st.mnt = m as u64;
            return d as u64;
        }
        crossed += 1;
    }
    0
}

/// What the exit of the call checks of the last [`lookup_path`]: the
/// object's dentry (0: not found), the directory dentry and `hash_len` of
/// the final component (0: not reached), and the status.
#[inline(always)]
pub fn tail() -> (u64, u64, u64, u64) {
    state()
        .map(|s| (s.obj, s.fdir, s.fhash, s.out[4]))
        .unwrap_or((0, 0, 0, OTHER))
}

/// The dentry named `hash_len` under directory dentry `dir` in the hash
/// table now: 0 none, 1 a negative dentry, 2 a positive one. Names are
/// matched by parent and `hash_len` only (the name itself is not at hand
/// at exit). A global function, verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn name_state(dir: u64, hash_len: u64) -> u64 {
    // SAFETY: a map lookup; the value is read at once.
    let cfg = DCACHE.get(0).copied().unwrap_or_default();
    if cfg.table == 0 || dir == 0 {
        return 0;
    }
    let bucket = cfg.table + (((hash_len as u32 as u64) >> (cfg.shift & 31)) << 3);
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let first = or_count(
        unsafe { bpf_probe_read_kernel(bucket as *const u64) },
        ReadFailure::Kernel,
        0,
    );
    let mut node = (first & !1) as *const c_void;
    let mut k = 0;
    while k < MAX_CHAIN && !node.is_null() {
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let (d, next) = unsafe {
            let d = shim_obj_hash_dentry(node);
            (d, shim_obj_hash_next(d))
        };
        // SAFETY: as above.
        let (parent, hl) = unsafe { (shim_dentry_parent(d) as u64, shim_obj_hash_len(d)) };
        if parent == dir && hl == hash_len {
            // SAFETY: as above.
            return if unsafe { shim_dentry_inode(d) }.is_null() {
                1
            } else {
                2
            };
        }
        node = next;
        k += 1;
    }
    0
}

/// Where dentry `d` is now: whether it still has an inode and is hashed
/// (bit 0 and 1 of the first value), its parent and its `hash_len`.
#[inline(always)]
pub fn dentry_now(d: u64) -> (u64, u64, u64) {
    let d = d as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe {
        let positive = !shim_dentry_inode(d).is_null() as u64;
        let hashed = (!shim_obj_hash_pprev(d).is_null() as u64) << 1;
        (
            positive | hashed,
            shim_dentry_parent(d) as u64,
            shim_obj_hash_len(d),
        )
    }
}

/// The outcome of the last [`lookup_path`]: object inode and device,
/// directory inode and device, status.
#[inline(always)]
pub fn result() -> [u64; 5] {
    state().map(|s| s.out).unwrap_or([0, 0, 0, 0, OTHER])
}

/// Finds the next component from `pos`: its start, length and hash (salted
/// with the current directory's address, as the kernel's), whether it is
/// the last and followed by a slash. Returns non-zero when the path cannot
/// be parsed within the bounds (a name longer than `NAME_MAX`).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn scan_component() -> u64 {
    let Some(st) = state() else { return 1 };
    let mut i = st.pos;
    let mut k = 0;
    while k < 16 && byte(st, i) == b'/' {
        i += 1;
        k += 1;
    }
    if byte(st, i) == b'/' {
        return 1;
    }
    let start = i;
    let (mut x, mut y, mut a) = (0u64, st.cur, 0u64);
    let mut len = 0u64;
    while len <= NAME_MAX as u64 {
        let c = byte(st, start + len);
        if c == 0 || c == b'/' {
            break;
        }
        a |= (c as u64) << (8 * (len & 7));
        if len & 7 == 7 {
            (x, y) = hash_mix(x, y, a);
            a = 0;
        }
        len += 1;
    }
    if len > NAME_MAX as u64 {
        return 1;
    }
    let mut j = start + len;
    let mut slash = 0;
    let mut k = 0;
    while k < 16 && byte(st, j) == b'/' {
        j += 1;
        slash = 2;
        k += 1;
    }
    let last = if byte(st, j) == 0 || j >= st.n { 1 } else { 0 };
    if last == 0 && byte(st, j) == b'/' {
        return 1;
    }
    st.cstart = start;
    st.clen = len;
    st.hash = fold_hash(x ^ a, y) as u64;
    st.last = last | slash;
    st.pos = j;
    0
}

/// The hashed dentry of the current component under the current directory,
/// or 0: the chain of its hash bucket, as `__d_lookup()`.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn chain_find() -> u64 {
    let Some(st) = state() else { return 0 };
    let bucket = st.table + (((st.hash as u32 as u64) >> (st.shift & 31)) << 3);
    let hash_len = (st.clen << 32) | (st.hash & 0xffff_ffff);
    let parent = st.cur;
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let first = or_count(
        unsafe { bpf_probe_read_kernel(bucket as *const u64) },
        ReadFailure::Kernel,
        0,
    );
    // The low bit of a bucket head is its lock.
    let mut node = (first & !1) as *const c_void;
    // `d_hash` (next, pprev), `d_parent` and `d_name` (hash_len, name) are
    // adjacent in `struct dentry`: one probe read per chain entry.
    // SAFETY: returns relocated offsets, reads no memory.
    let lay = unsafe { shim_layout_dentry() };
    let (o_parent, o_name, o_qname, o_hash) = (
        lay & 0xffff,
        (lay >> 16) & 0xffff,
        (lay >> 32) & 0xffff,
        lay >> 48,
    );
    let fused = o_parent == o_hash + 16 && o_name == o_parent + 8 && o_qname == 8;
    let mut k = 0;
    while k < MAX_CHAIN && !node.is_null() {
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let d = unsafe { shim_obj_hash_dentry(node) };
        let (next, d_parent, d_hash_len, d_name) = if fused {
            // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
            let v = or_count(
                unsafe { bpf_probe_read_kernel(node as *const [u64; 5]) },
                ReadFailure::Kernel,
                [0; 5],
            );
            (v[0] as *const c_void, v[2], v[3], v[4])
        } else {
            // SAFETY: as above.
            unsafe {
                (
                    shim_obj_hash_next(d),
                    shim_dentry_parent(d) as u64,
                    shim_obj_hash_len(d),
                    shim_dentry_name(d) as u64,
                )
            }
        };
        if d_hash_len == hash_len && d_parent == parent && name_eq(d_name) != 0 {
            return d as u64;
        }
        node = next;
        k += 1;
    }
    0
}

/// Whether the name at kernel address `name` (a dentry's `d_name.name`) is
/// the current component.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn name_eq(name: u64) -> u64 {
    let Some(st) = state() else { return 0 };
    let name = name as *const c_void;
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let n = unsafe {
        bpf_probe_read_kernel_str(st.name.as_mut_ptr() as *mut c_void, NAME_BUF as u32, name)
    };
    if n <= 0 || n as u64 != st.clen + 1 {
        return 0;
    }
    let mut i = 0u64;
    while i < st.clen && i < NAME_MAX as u64 {
        if st.name[i as usize & (NAME_BUF - 1)] != byte(st, st.cstart + i) {
            return 0;
        }
        i += 1;
    }
    1
}

/// Locating the table: for the loader's own `fstatfs(fd)` calls, the
/// dentry of `fd`'s file as the kernel has it (`DCACHE_SAMPLES`).
#[inline(always)]
pub fn sample(fd: i32) {
    // SAFETY: a BPF helper without memory arguments.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let s = unsafe {
        let f = shim_task_fd_file(task, fd);
        let d = shim_file_dentry(f);
        let m = shim_file_mnt(f);
        let p = shim_mnt_parent(m);
        let mountpoint_flags = if p.is_null() || p == m {
            0
        } else {
            shim_obj_flags(shim_mnt_mountpoint(m)) as u64
        };
        DcacheSample {
            dentry: d as u64,
            parent: shim_dentry_parent(d) as u64,
            hash_len: shim_obj_hash_len(d),
            pprev: shim_obj_hash_pprev(d) as u64,
            flags: shim_obj_flags(d) as u64,
            mountpoint_flags,
        }
    };
    let _ = DCACHE_SAMPLES.insert(fd as u32, s, 0);
}
