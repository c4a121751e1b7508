//! Assembling one record in the per-CPU scratch buffer and sending it.
//!
//! Every write goes to `payload[off & MASK]` with a constant maximum size, and
//! the buffer has `PAYLOAD_SLACK` bytes after `PAYLOAD_CAP`: this is what
//! lets the verifier prove all writes in bounds. A field is only started while
//! `off < PAYLOAD_CAP`; when the payload is full, the header says so
//! (`PAYLOAD_TRUNCATED`) instead of cutting silently.
//!
//! The fields that walk paths are in [`crate::walk`], the exec's
//! environment in [`crate::env`].
use core::ffi::c_void;

use aya_ebpf::helpers::{
    bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid,
    bpf_get_current_task, bpf_get_current_uid_gid, bpf_ktime_get_ns, bpf_probe_read_kernel,
    generated::{bpf_probe_read_kernel_str, bpf_probe_read_user_str},
};
use monitor_common::{
    field_flags, header_flags, limits::PAYLOAD_CAP, syscall_nr, EventHeader, EventKind,
    FieldHeader, LossCause,
};

use monitor_common::ReadFailure;

use crate::maps::or_count;
use crate::{
    maps::{count_loss, RecordBuf, EVENTS, SCRATCH},
    shim::*,
};

const MASK: usize = PAYLOAD_CAP - 1;
const HDR: usize = core::mem::size_of::<EventHeader>();
const FIELD_HDR: usize = core::mem::size_of::<FieldHeader>();

pub struct Record {
    pub(crate) buf: *mut RecordBuf,
}

/// The address of byte `at` of this CPU's record payload (what
/// [`Record::user_str_at`] returned), for reading a field's bytes again
/// inside a global function; `None` for `u64::MAX` (no copy).
#[inline(always)]
pub fn payload_addr(at: u64) -> Option<*const u8> {
    if at == u64::MAX || (at as usize) < FIELD_HDR {
        return None;
    }
    let buf = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: a pointer into this CPU's entry of a per-CPU array; only
    // ever read through probe reads.
    Some(unsafe { (*buf).payload.as_ptr().add(at as usize & MASK) })
}

/// The length of the field whose bytes start at `at` (its header is just
/// before): a string field holds no NUL, and the next field's header
/// follows it at once, so readers copy exactly this many bytes.
#[inline(always)]
pub fn field_len(at: u64) -> usize {
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: a pointer into this CPU's entry of a per-CPU array; read
    // through a probe read.
    let hdr = unsafe {
        (*buf)
            .payload
            .as_ptr()
            .add((at as usize).wrapping_sub(FIELD_HDR) & MASK)
    };
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let fh: FieldHeader = or_count(
        unsafe { bpf_probe_read_kernel(hdr as *const FieldHeader) },
        ReadFailure::Kernel,
        FieldHeader {
            tag: 0,
            flags: 0,
            len: 0,
        },
    );
    fh.len as usize
}

/// Fills a record header for the current task: the one place every program
/// (tracepoints and LSM hooks) does it. `DETAILS`: time, parent, ids and
/// comm too; a syscall-result record carries only what pairing and
/// attribution need (thread, process, cgroup, result).
#[inline(always)]
pub fn fill_header<const DETAILS: bool>(
    hdr: &mut EventHeader,
    kind: u32,
    syscall: u32,
    result: i64,
) {
    let pid_tgid = bpf_get_current_pid_tgid();
    hdr.kind = kind;
    hdr.syscall = syscall;
    hdr.tid = pid_tgid as u32;
    hdr.pid = (pid_tgid >> 32) as u32;
    if DETAILS {
        let uid_gid = bpf_get_current_uid_gid();
        // SAFETY: BPF helpers without memory arguments; the task pointer is
        // only passed to CO-RE reads (bpf_probe_read_kernel underneath).
        let task = unsafe { bpf_get_current_task() } as *const c_void;
        // SAFETY: a BPF helper without arguments.
        hdr.ktime_ns = unsafe { bpf_ktime_get_ns() };
        // SAFETY: a CO-RE accessor of the C shim: it reads through
        // bpf_probe_read_kernel, a bad task pointer yields 0.
        hdr.ppid = unsafe { shim_task_ppid(task) };
        hdr.uid = uid_gid as u32;
        hdr.gid = (uid_gid >> 32) as u32;
        hdr.comm = or_count(bpf_get_current_comm(), ReadFailure::Helper, [0; 16]);
    } else {
        hdr.ktime_ns = 0;
        hdr.ppid = 0;
        hdr.uid = 0;
        hdr.gid = 0;
        hdr.comm = [0; 16];
    }
    hdr.payload_len = 0;
    // SAFETY: BPF helper without arguments.
    hdr.cgroup_id = unsafe { bpf_get_current_cgroup_id() };
    hdr.result = result;
    hdr.flags = 0;
    hdr.mode = u32::MAX;
    hdr.owner_uid = u32::MAX;
    hdr.owner_gid = u32::MAX;
    hdr.fd = 0;
    hdr.hflags = 0;
    hdr._pad = 0;
}

impl Record {
    /// Starts a record for the current task. `None` only if the scratch map
    /// lookup fails, which cannot happen for a 1-entry per-CPU array.
    #[inline(always)]
    pub fn start(kind: u32, syscall: u32) -> Option<Record> {
        let buf = SCRATCH.get_ptr_mut(0)?;
        // SAFETY: `buf` points at this CPU's entry of the 1-entry per-CPU
        // scratch array (non-null from the lookup); programs do not nest on
        // one CPU, so nothing else holds a reference to it.
        fill_header::<true>(unsafe { &mut (*buf).hdr }, kind, syscall, 0);
        Some(Record { buf })
    }

    #[inline(always)]
    pub fn hdr(&mut self) -> &mut EventHeader {
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { &mut (*self.buf).hdr }
    }

    #[inline(always)]
    pub(crate) fn off(&self) -> usize {
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { (*self.buf).hdr.payload_len as usize }
    }

    #[inline(always)]
    pub(crate) fn set_off(&mut self, off: usize) {
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { (*self.buf).hdr.payload_len = off as u32 };
    }

    #[inline(always)]
    pub(crate) fn ptr(&self, off: usize) -> *mut u8 {
        // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
        unsafe { (*self.buf).payload.as_mut_ptr().add(off & MASK) }
    }

    /// Reserves a field header; returns its offset, or `None` when full.
    #[inline(always)]
    pub(crate) fn begin(&mut self) -> Option<usize> {
        let at = self.off();
        if at >= PAYLOAD_CAP - FIELD_HDR {
            self.hdr().hflags |= header_flags::PAYLOAD_TRUNCATED;
            return None;
        }
        self.set_off(at + FIELD_HDR);
        Some(at)
    }

    #[inline(always)]
    pub(crate) fn end(&mut self, at: usize, tag: u8, flags: u8) {
        let len = self.off().saturating_sub(at + FIELD_HDR);
        let fh = FieldHeader {
            tag,
            flags,
            len: len as u16,
        };
        // SAFETY: an in-bounds write into this CPU's scratch entry (offset masked, slack after the payload).
        unsafe { core::ptr::write_unaligned(self.ptr(at) as *mut FieldHeader, fh) };
    }

    /// Copies a NUL-terminated user string (at most `MAX` bytes with the NUL)
    /// as one field; returns the first byte copied (0 if empty or failed)
    /// and whether the read succeeded.
    #[inline(always)]
    pub fn user_str<const MAX: usize>(&mut self, tag: u8, src: *const u8) -> (u8, bool) {
        let (first, ok, _) = self.user_str_at::<MAX>(tag, src);
        (first, ok)
    }

    /// [`Record::user_str`], also returning where in the payload the copy
    /// starts: later readers of the argument ([`proc_link`](crate::proc_link::proc_link), the dentry
    /// lookup) read this copy, never the caller's memory again, so that a
    /// record's path, its `/proc` link and its identity all come from the
    /// same bytes.
    #[inline(always)]
    pub fn user_str_at<const MAX: usize>(&mut self, tag: u8, src: *const u8) -> (u8, bool, u64) {
        let Some(at) = self.begin() else {
            return (0, true, u64::MAX);
        };
        let start = self.off();
        let dst = self.ptr(start);
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let n = unsafe {
            bpf_probe_read_user_str(dst as *mut c_void, MAX as u32, src as *const c_void)
        };
        let mut flags = 0;
        let mut first = 0;
        if n <= 0 {
            flags |= field_flags::READ_FAILED;
        } else {
            let n = n as usize;
            if n >= MAX {
                flags |= field_flags::TRUNCATED;
            }
            // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
            first = unsafe { *dst };
            // Drop the NUL from the field.
            let off = self.off() + ((n - 1) & (2 * MAX - 1));
            self.set_off(off);
        }
        self.end(at, tag, flags);
        (first, n > 0, if n > 0 { start as u64 } else { u64::MAX })
    }

    /// Stores one u64 as an 8-byte field; with `READ_FAILED` the field is
    /// empty and says so.
    #[inline(always)]
    pub fn u64_field(&mut self, tag: u8, v: u64, flags: u8) {
        let Some(at) = self.begin() else { return };
        if flags & field_flags::READ_FAILED == 0 {
            let off = self.off();
            // SAFETY: an in-bounds write into this CPU's scratch entry (offset masked, slack after the payload).
            unsafe { core::ptr::write_unaligned(self.ptr(off) as *mut u64, v) };
            self.set_off(off + 8);
        }
        self.end(at, tag, flags);
    }

    /// Copies a NUL-terminated kernel string (at most `MAX` bytes with the
    /// NUL) as one field.
    #[inline(always)]
    pub fn kernel_str<const MAX: usize>(&mut self, tag: u8, src: *const u8) {
        let Some(at) = self.begin() else { return };
        let dst = self.ptr(self.off());
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let n = unsafe {
            bpf_probe_read_kernel_str(dst as *mut c_void, MAX as u32, src as *const c_void)
        };
        let mut flags = 0;
        if n <= 0 {
            flags |= field_flags::READ_FAILED;
        } else {
            if n as usize >= MAX {
                flags |= field_flags::TRUNCATED;
            }
            let off = self.off() + ((n as usize - 1) & (2 * MAX - 1));
            self.set_off(off);
        }
        self.end(at, tag, flags);
    }

    /// Copies the record to the ring buffer; a full ring buffer is counted.
    #[inline(always)]
    pub fn send(mut self) {
        let mut len = self.off();
        if len > PAYLOAD_CAP + 4096 {
            len = PAYLOAD_CAP + 4096;
        }
        self.hdr().payload_len = len as u32;
        let total = HDR + len;
        // SAFETY: `total` bytes from the start of this CPU's scratch entry, bounded by its size.
        let data = unsafe { core::slice::from_raw_parts(self.buf as *const u8, total) };
        if EVENTS
            .output::<[u8]>(data, wakeup_flags(self.hdr().syscall))
            .is_err()
        {
            count_loss(LossCause::RingbufFull);
        }
    }

    /// The record a global function started in this program run (this
    /// CPU's scratch entry as it was left), to add fields or send it.
    #[inline(always)]
    pub fn resume() -> Option<Record> {
        Some(Record {
            buf: SCRATCH.get_ptr_mut(0)?,
        })
    }

    /// Starts a syscall-result record: only what pairing and attribution
    /// need (thread, process, cgroup, result), none of the other helpers
    /// `start` calls for process details the entry record already carries.
    #[inline(always)]
    pub fn start_result(syscall: u32, result: i64) -> Option<Record> {
        let buf = SCRATCH.get_ptr_mut(0)?;
        // SAFETY: as in `start`: this CPU's scratch entry, not aliased.
        let hdr = unsafe { &mut (*buf).hdr };
        fill_header::<false>(hdr, EventKind::SyscallExit as u32, syscall, result);
        Some(Record { buf })
    }
}

/// `bpf_ringbuf_output` flags (include/uapi/linux/bpf.h).
const BPF_RB_NO_WAKEUP: u64 = 1;
const BPF_RB_FORCE_WAKEUP: u64 = 2;
const BPF_RB_AVAIL_DATA: u64 = 0;
const BPF_RB_RING_SIZE: u64 = 1;

/// Waking the consumer for every record costs a context switch per event
/// under bursts: records are sent without a wakeup while less than 1/8 of
/// the ring is filled (userspace also drains on a short timer). An exec
/// wakes it at once, so that what the command names is previewed early.
#[inline(always)]
fn wakeup_flags(syscall: u32) -> u64 {
    if syscall == syscall_nr::EXECVE || syscall == syscall_nr::EXECVEAT {
        return BPF_RB_FORCE_WAKEUP;
    }
    let avail = EVENTS.query(BPF_RB_AVAIL_DATA);
    let size = EVENTS.query(BPF_RB_RING_SIZE);
    if avail.saturating_mul(8) >= size {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    }
}
