//! `/proc` and `/dev/fd` links in a path argument: the kernel follows them
//! for the caller, so they are recognised from the record's copy of the
//! argument, at the call.
use core::ffi::c_void;

use aya_ebpf::helpers::{
    bpf_get_current_pid_tgid, bpf_probe_read_kernel, generated::bpf_probe_read_kernel_str,
};

use monitor_common::ReadFailure;

use crate::maps::or_count;
use crate::record::{field_len, payload_addr};

/// [`proc_link`] result: the link names the task's working directory,
/// its root, or one of its fds (number at [`LINK_FD_SHIFT`]); the rest of
/// the path starts at byte [`LINK_REST_SHIFT`].
pub const LINK_CWD: u64 = 1;
pub const LINK_ROOT: u64 = 2;
pub const LINK_FD: u64 = 3;
pub const LINK_KIND_MASK: u64 = 3;
pub const LINK_FD_SHIFT: u64 = 8;
pub const LINK_REST_SHIFT: u64 = 40;

/// Bytes of a path argument [`proc_link`] looks at: the longest prefix it
/// recognises, `/proc/thread-self/fd/2147483647`, is 31.
const LINK_SCAN: usize = 64;

#[inline(always)]
fn byte_at(b: &[u8; LINK_SCAN], i: usize) -> u8 {
    b[i & (LINK_SCAN - 1)]
}

#[inline(always)]
fn has_at(b: &[u8; LINK_SCAN], i: usize, lit: &[u8]) -> bool {
    let mut k = 0;
    while k < lit.len() {
        if byte_at(b, i + k) != lit[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// The end of a path component: the string's end or a slash.
#[inline(always)]
fn ends(c: u8) -> bool {
    c == 0 || c == b'/'
}

/// A decimal number of at most 10 digits at `i`: (value, index after it),
/// or `None` when there is no digit.
#[inline(always)]
fn number_at(b: &[u8; LINK_SCAN], i: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut k = 0usize;
    while k < 10 {
        let c = byte_at(b, i + k);
        if !c.is_ascii_digit() {
            break;
        }
        v = v * 10 + (c - b'0') as u64;
        k += 1;
    }
    (k > 0).then_some((v, i + k))
}

/// Whether the user path at `path` starts with a link into the calling
/// task's own `/proc` entry that names its working directory, its root or
/// one of its fds: `/proc/self/`, `/proc/thread-self/` or `/proc/<N>/`
/// where N is the caller's pid or tid (as the host's `/proc` numbers it),
/// followed by `cwd`, `root` or `fd/N`; or `/dev/fd/N`, `/dev/stdin`,
/// `/dev/stdout`, `/dev/stderr` (links to `/proc/self/fd/N`). Returns 0
/// when not, else the `LINK_*` encoding. The kernel follows these links for
/// the caller (fs/proc/base.c: `proc_cwd_link`, `proc_root_link`,
/// `proc_fd_link`), so resolving them later, in another process, would
/// name something else.
///
/// A global function, verified once, with its small bounded loops.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn proc_link(path_at: u64) -> u64 {
    let Some(path) = payload_addr(path_at) else {
        return 0;
    };
    // Cheap test first: one 8-byte read.
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let head: [u8; 8] = or_count(
        unsafe { bpf_probe_read_kernel(path as *const [u8; 8]) },
        ReadFailure::Kernel,
        [0; 8],
    );
    if &head[..6] != b"/proc/" && &head != b"/dev/fd/" && &head != b"/dev/std" {
        return 0;
    }
    let mut b = [0u8; LINK_SCAN];
    // The field's bytes and no more: a NUL ends the copy there.
    let len = field_len(path_at);
    let size = if len + 1 < LINK_SCAN {
        len + 1
    } else {
        LINK_SCAN
    };
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let n = unsafe {
        bpf_probe_read_kernel_str(
            b.as_mut_ptr() as *mut c_void,
            size as u32,
            path as *const c_void,
        )
    };
    if n <= 0 {
        return 0;
    }
    let (kind, fd, rest) = if has_at(&b, 0, b"/dev/fd/") {
        let Some((fd, e)) = number_at(&b, 8) else {
            return 0;
        };
        (LINK_FD, fd, e)
    } else if has_at(&b, 0, b"/dev/stdin") {
        (LINK_FD, 0, 10)
    } else if has_at(&b, 0, b"/dev/stdout") {
        (LINK_FD, 1, 11)
    } else if has_at(&b, 0, b"/dev/stderr") {
        (LINK_FD, 2, 11)
    } else {
        // /proc/...
        let i = if has_at(&b, 6, b"self/") {
            11
        } else if has_at(&b, 6, b"thread-self/") {
            18
        } else {
            let Some((n, e)) = number_at(&b, 6) else {
                return 0;
            };
            if byte_at(&b, e) != b'/' {
                return 0;
            }
            let pid_tgid = bpf_get_current_pid_tgid();
            if n != pid_tgid >> 32 && n != pid_tgid & 0xffff_ffff {
                return 0;
            }
            e + 1
        };
        if has_at(&b, i, b"cwd") {
            (LINK_CWD, 0, i + 3)
        } else if has_at(&b, i, b"root") {
            (LINK_ROOT, 0, i + 4)
        } else if has_at(&b, i, b"fd/") {
            let Some((fd, e)) = number_at(&b, i + 3) else {
                return 0;
            };
            (LINK_FD, fd, e)
        } else {
            return 0;
        }
    };
    if !ends(byte_at(&b, rest)) || fd > i32::MAX as u64 {
        return 0;
    }
    kind | (fd << LINK_FD_SHIFT) | ((rest as u64) << LINK_REST_SHIFT)
}
