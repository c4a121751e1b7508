//! The paths of a record: walks of a directory or file up to the root of
//! the mount namespace (`walk_path`), the base directory of a path
//! argument (`Record::walk_arg_base`, with its identity and, where asked,
//! its dentry-cache lookup), the calling task's root and working directory
//! (`TaskFs`). Each walk is a field of the record being assembled in the
//! per-CPU scratch buffer ([`crate::record`]).
use core::ffi::c_void;

use aya_ebpf::helpers::{
    bpf_get_current_task, bpf_probe_read_kernel, generated::bpf_probe_read_kernel_str,
};
use monitor_common::{
    field_flags,
    field_tag::{BASE, BASE2, BASE2_ID, BASE_ID, LINK_REST, LINK_REST2, LOOKUP, LOOKUP2},
    header_flags,
    limits::{MAX_NAME, MAX_PATH_DEPTH, PAYLOAD_CAP},
    ReadFailure,
};

use crate::{
    maps::{or_count, SCRATCH},
    proc_link::{
        proc_link, LINK_CWD, LINK_FD, LINK_FD_SHIFT, LINK_KIND_MASK, LINK_REST_SHIFT, LINK_ROOT,
    },
    record::Record,
    shim::*,
};

pub use monitor_common::at_flags::AT_FDCWD;

/// The calling task's root and working directory (dentry and mount of
/// each), read once per record: `task->fs`, then `root` and `pwd`
/// together (adjacent in `struct fs_struct`), two probe reads instead of
/// eight.
#[derive(Clone, Copy)]
pub struct TaskFs {
    pub root: u64,
    pub root_mnt: u64,
    pub pwd: u64,
    pub pwd_mnt: u64,
}

impl TaskFs {
    #[inline(always)]
    pub fn current() -> TaskFs {
        // SAFETY: a BPF helper without memory arguments; the pointer only goes to probe reads.
        let task = unsafe { bpf_get_current_task() } as *const c_void;
        // SAFETY: returns relocated offsets, reads no memory.
        let lay = unsafe { shim_layout_fs() };
        let (root, pwd, p_mnt, p_dentry) = (
            lay & 0xffff,
            (lay >> 16) & 0xffff,
            (lay >> 32) & 0xffff,
            (lay >> 48) & 0xffff,
        );
        if pwd == root + 16 && p_mnt == 0 && p_dentry == 8 {
            // SAFETY: a CO-RE accessor of the C shim (probe read); a bad pointer yields 0.
            let fs = unsafe { shim_task_fs(task) } as *const u8;
            if fs.is_null() {
                return TaskFs {
                    root: 0,
                    root_mnt: 0,
                    pwd: 0,
                    pwd_mnt: 0,
                };
            }
            // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
            let v = or_count(
                unsafe { bpf_probe_read_kernel(fs.wrapping_add(root as usize) as *const [u64; 4]) },
                ReadFailure::Kernel,
                [0; 4],
            );
            return TaskFs {
                root_mnt: v[0],
                root: v[1],
                pwd_mnt: v[2],
                pwd: v[3],
            };
        }
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        unsafe {
            TaskFs {
                root: shim_task_root_dentry(task) as u64,
                root_mnt: shim_task_root_mnt(task) as u64,
                pwd: shim_task_pwd_dentry(task) as u64,
                pwd_mnt: shim_task_pwd_mnt(task) as u64,
            }
        }
    }
}

/// Offset of `d_parent` in `struct dentry` when `d_parent`, `d_name.hash_len`
/// and `d_name.name` are adjacent (they are on every kernel seen), so a walk
/// reads them in one probe read; `None` otherwise.
#[inline(always)]
pub fn dentry_fused() -> Option<usize> {
    // SAFETY: returns relocated offsets, reads no memory.
    let lay = unsafe { shim_layout_dentry() };
    let (parent, name, qname) = (lay & 0xffff, (lay >> 16) & 0xffff, (lay >> 32) & 0xffff);
    (name == parent + 8 && qname == 8).then_some(parent as usize)
}

/// `d_parent` and `d_name.name` of dentry `d`: one probe read with a fused
/// layout ([`dentry_fused`]), else two.
#[inline(always)]
fn dentry_up(d: *const c_void, fused: Option<usize>) -> (*const c_void, *const u8) {
    match fused {
        Some(off) => {
            // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
            let v = or_count(
                unsafe {
                    bpf_probe_read_kernel((d as *const u8).wrapping_add(off) as *const [u64; 3])
                },
                ReadFailure::Kernel,
                [0; 3],
            );
            (v[0] as *const c_void, v[2] as *const u8)
        }
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        None => unsafe { (shim_dentry_parent(d), shim_dentry_name(d)) },
    }
}

/// The field tags of one path argument's base directory.
#[derive(Clone, Copy)]
pub struct BaseTags {
    /// The walk of the directory (or `/proc` link object).
    pub base: u8,
    /// Its identity.
    pub id: u8,
    /// Where the rest starts, after a `/proc` link.
    pub rest: u8,
    /// The dentry-cache lookup of the path.
    pub lookup: u8,
}

pub const BASE1_TAGS: BaseTags = BaseTags {
    base: BASE,
    id: BASE_ID,
    rest: LINK_REST,
    lookup: LOOKUP,
};
pub const BASE2_TAGS: BaseTags = BaseTags {
    base: BASE2,
    id: BASE2_ID,
    rest: LINK_REST2,
    lookup: LOOKUP2,
};

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_dentry_inode(d: *const c_void) -> *const c_void;
    fn shim_inode_ino(i: *const c_void) -> u64;
    fn shim_inode_dev(i: *const c_void) -> u32;
}

/// Appends the identity of `dentry`'s inode as field `tag` (16 bytes: the
/// inode number, then the device in the kernel's `MKDEV` encoding, both
/// u64): what `stat` reports as `st_ino` and `st_dev`. `READ_FAILED` and
/// empty for a negative dentry. `tag` 0: nothing. A global function,
/// verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn put_id(tag: u64, dentry: u64) -> u64 {
    if tag == 0 {
        return 0;
    }
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    let mut rec = Record { buf };
    let Some(at) = rec.begin() else { return 0 };
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let inode = unsafe { shim_dentry_inode(dentry as *const c_void) };
    if inode.is_null() {
        rec.end(at, tag as u8, field_flags::READ_FAILED);
        return 0;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (ino, dev) = unsafe { (shim_inode_ino(inode), shim_inode_dev(inode) as u64) };
    let off = rec.off();
    // SAFETY: in-bounds writes into this CPU's scratch entry (offset masked, slack after the payload).
    unsafe {
        core::ptr::write_unaligned(rec.ptr(off) as *mut u64, ino);
        core::ptr::write_unaligned(rec.ptr(off + 8) as *mut u64, dev);
    }
    rec.set_off(off + 16);
    rec.end(at, tag as u8, 0);
    0
}

/// Appends the outcome of the last dentry-cache lookup
/// ([`crate::lookup::lookup_path`]) as field `tag`: 40 bytes, see
/// `field_tag::LOOKUP`. A global function, verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn put_lookup(tag: u64) -> u64 {
    let out = crate::lookup::result();
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    let mut rec = Record { buf };
    let Some(at) = rec.begin() else { return 0 };
    let off = rec.off();
    let mut i = 0;
    while i < 5 {
        // SAFETY: in-bounds writes into this CPU's scratch entry (offset masked, slack after the payload).
        unsafe { core::ptr::write_unaligned(rec.ptr(off + 8 * i) as *mut u64, out[i]) };
        i += 1;
    }
    rec.set_off(off + 40);
    rec.end(at, tag as u8, 0);
    0
}

/// Walks the file behind the calling task's `fd` as field `tag`, and
/// records its identity as `id_tag` (0: none); returns the file's `f_mode`.
/// A global function, verified once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn walk_fd_id(tag: u64, id_tag: u64, fd: u64) -> u64 {
    // SAFETY: a BPF helper without memory arguments.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_task_fd_file(task, fd as u32 as i32) };
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (d, m) = unsafe { (shim_file_dentry(f), shim_file_mnt(f)) };
    walk_path(tag, d as u64, m as u64);
    put_id(id_tag, d as u64);
    // SAFETY: as above.
    unsafe { shim_file_fmode(f) as u64 }
}

/// Walks from `dentry` in mount `mnt` up to the root of the mount namespace,
/// crossing mount points, and appends the component names (leaf first, each
/// followed by a NUL) as one field of the record in the scratch buffer. This
/// mirrors `prepend_path()` in fs/d_path.c without the task-root stop, so it
/// yields the host view of the path.
///
/// A global function: the verifier checks it once, with scalar arguments,
/// instead of once per call site. Kernel pointers travel as u64 and are only
/// ever dereferenced through probe reads.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn walk_path(tag: u64, dentry: u64, mnt: u64) -> u64 {
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    let mut rec = Record { buf };
    let Some(at) = rec.begin() else { return 0 };
    let tag = tag as u8;
    let mut flags = 0u8;
    if dentry == 0 || mnt == 0 {
        rec.end(at, tag, field_flags::READ_FAILED);
        return 0;
    }
    let mut d = dentry as *const c_void;
    let mut m = mnt as *const c_void;
    let mut done = false;
    let mut off = rec.off();
    let fused = dentry_fused();
    // The root of the current mount: read again only when the walk
    // crosses to the parent mount.
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let mut root = unsafe { shim_mnt_root(m) };
    for _ in 0..MAX_PATH_DEPTH {
        if d == root {
            // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
            let parent = unsafe { shim_mnt_parent(m) };
            if parent.is_null() || parent == m {
                done = true;
                break;
            }
            // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
            d = unsafe { shim_mnt_mountpoint(m) };
            m = parent;
            // SAFETY: as above.
            root = unsafe { shim_mnt_root(m) };
            continue;
        }
        let (p, name) = dentry_up(d, fused);
        if p.is_null() || p == d {
            // Top of a tree that is not a mount root: the dentry is
            // disconnected (e.g. from a lazily unmounted file system).
            flags |= field_flags::DISCONNECTED;
            done = true;
            break;
        }
        if off >= PAYLOAD_CAP {
            flags |= field_flags::TRUNCATED;
            done = true;
            break;
        }
        let dst = rec.ptr(off);
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let n = unsafe {
            bpf_probe_read_kernel_str(dst as *mut c_void, MAX_NAME as u32, name as *const c_void)
        };
        if n <= 0 {
            flags |= field_flags::READ_FAILED;
        } else {
            // Keep the NUL as the component separator.
            off += (n as usize) & (2 * MAX_NAME - 1);
        }
        d = p;
    }
    if !done {
        flags |= field_flags::DEPTH_LIMIT;
    }
    if off >= PAYLOAD_CAP {
        rec.hdr().hflags |= header_flags::PAYLOAD_TRUNCATED;
    }
    rec.set_off(off);
    rec.end(at, tag, flags);
    0
}

impl Record {
    /// Stores the path of `dentry` in mount `mnt` as one field (see
    /// [`walk_path`]).
    #[inline(always)]
    pub fn walk(&mut self, tag: u8, dentry: *const c_void, mnt: *const c_void) {
        walk_path(tag as u64, dentry as u64, mnt as u64);
    }

    /// Walks the directory a `*at()` path is relative to: the task root for an
    /// absolute path, else `dirfd` (or the cwd for `AT_FDCWD`).
    #[inline(always)]
    pub fn walk_base(&mut self, tag: u8, first_byte: u8, dirfd: i32) {
        let (d, m) = if first_byte == b'/' || dirfd == AT_FDCWD {
            let fs = TaskFs::current();
            if first_byte == b'/' {
                (fs.root as *const c_void, fs.root_mnt as *const c_void)
            } else {
                (fs.pwd as *const c_void, fs.pwd_mnt as *const c_void)
            }
        } else {
            // SAFETY: a BPF helper without memory arguments.
            let task = unsafe { bpf_get_current_task() } as *const c_void;
            // SAFETY: CO-RE accessors of the C shim: they read through
            // bpf_probe_read_kernel, a bad pointer yields 0, never a fault.
            unsafe {
                let f = shim_task_fd_file(task, dirfd);
                (shim_file_dentry(f), shim_file_mnt(f))
            }
        };
        self.walk(tag, d, m);
    }

    /// [`Record::walk_base`] for a path argument of a file operation; and
    /// records its identity (`id_tag`). A path that starts with a link
    /// into the caller's own `/proc` entry ([`proc_link`](crate::proc_link::proc_link)) is resolved for
    /// the calling task now: the walk is of the object the link names, and
    /// `rest_tag` says where the rest of the path starts.
    #[inline(always)]
    ///
    /// With `lookup` (`Some(mode)`, see [`crate::lookup::FOLLOW`]) the path is
    /// also looked up in the dentry cache from that base, and the object's
    /// and its directory's identities recorded (`tags.lookup`).
    pub fn walk_arg_base(
        &mut self,
        tags: BaseTags,
        first_byte: u8,
        dirfd: i32,
        path_at: u64,
        lookup: Option<u64>,
        fs: &TaskFs,
    ) {
        let link = if first_byte == b'/' {
            proc_link(path_at)
        } else {
            0
        };
        let kind = link & LINK_KIND_MASK;
        let (d, m) = if kind == LINK_CWD || (kind == 0 && first_byte != b'/' && dirfd == AT_FDCWD) {
            (fs.pwd as *const c_void, fs.pwd_mnt as *const c_void)
        } else if kind == LINK_ROOT || (kind == 0 && first_byte == b'/') {
            (fs.root as *const c_void, fs.root_mnt as *const c_void)
        } else {
            // SAFETY: a BPF helper without memory arguments.
            let task = unsafe { bpf_get_current_task() } as *const c_void;
            let fd = if kind == LINK_FD {
                (link >> LINK_FD_SHIFT) as u32 as i32
            } else {
                dirfd
            };
            // SAFETY: CO-RE accessors of the C shim: they read through
            // bpf_probe_read_kernel, a bad pointer yields 0, never a fault.
            unsafe {
                let f = shim_task_fd_file(task, fd);
                (shim_file_dentry(f), shim_file_mnt(f))
            }
        };
        self.walk(tags.base, d, m);
        put_id(tags.id as u64, d as u64);
        if kind != 0 {
            self.u64_field(tags.rest, (link >> LINK_REST_SHIFT) & 0xffff, 0);
        }
        if let Some(mode) = lookup {
            let (skip, mode) = if kind != 0 {
                (
                    (link >> LINK_REST_SHIFT) & 0xffff,
                    mode | crate::lookup::PROC_LINK,
                )
            } else {
                (0, mode)
            };
            crate::lookup::set_root(fs.root, fs.root_mnt);
            crate::lookup::lookup_path(path_at, skip, d as u64, m as u64, mode);
            put_lookup(tags.lookup as u64);
        }
    }

    /// Walks the file behind `fd`.
    #[inline(always)]
    pub fn walk_fd(&mut self, tag: u8, fd: i32) {
        walk_fd_id(tag as u64, 0, fd as u64);
    }

    /// Walks the file behind `fd` and records its identity (`id_tag`);
    /// returns its `f_mode` (`FMODE_CREATED`: the open made the file).
    #[inline(always)]
    pub fn walk_fd_with_id(&mut self, tag: u8, id_tag: u8, fd: i32) -> u32 {
        walk_fd_id(tag as u64, id_tag as u64, fd as u64) as u32
    }

    /// Walks the task's root directory (empty for the host root).
    #[inline(always)]
    pub fn walk_root(&mut self, tag: u8) {
        self.walk_root_of(tag, &TaskFs::current());
    }

    /// [`Record::walk_root`] with the task's root already read.
    #[inline(always)]
    pub fn walk_root_of(&mut self, tag: u8, fs: &TaskFs) {
        self.walk(tag, fs.root as *const c_void, fs.root_mnt as *const c_void);
    }

    /// Walks the task's working directory.
    #[inline(always)]
    pub fn walk_cwd(&mut self, tag: u8) {
        let fs = TaskFs::current();
        self.walk(tag, fs.pwd as *const c_void, fs.pwd_mnt as *const c_void);
    }
}
