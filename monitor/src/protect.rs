//! Keeping the trace out of reach of the watched tree.
//!
//! While a run is live the trace file carries the append-only inode flag
//! (`chattr +a`, FS_APPEND_FL): the kernel then refuses unlink, rename,
//! truncate and non-append writes by anyone, the watched tree included,
//! with EPERM — on every backend, even where BPF LSM is unavailable. Only
//! a process with CAP_LINUX_IMMUTABLE can clear the flag; the policy marks
//! the trace `protected` so any attempt is recorded and, with `--enforce`,
//! denied. The flag is cleared after the seal so users can manage their
//! files normally.
use std::{fs::File, io, os::fd::AsRawFd, path::Path};

const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
const FS_APPEND_FL: libc::c_long = 0x20;

fn set_append(path: &Path, on: bool) -> io::Result<()> {
    let f = File::open(path)?;
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one c_int into `flags`, which lives for the call.
    if unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let new = if on {
        flags | FS_APPEND_FL
    } else {
        flags & !FS_APPEND_FL
    };
    // SAFETY: FS_IOC_SETFLAGS reads one c_int from `new`, which lives for the call.
    if new != flags && unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_SETFLAGS, &new) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the trace append-only for the duration of the run.
pub fn protect_trace(path: &Path) -> io::Result<()> {
    set_append(path, true)
}

/// Clears the append-only flag after the trace is sealed.
pub fn release_trace(path: &Path) {
    if let Err(e) = set_append(path, false) {
        tracing::debug!("clearing append-only flag on {}: {e}", path.display());
    }
}

/// Whether the file currently has the append-only flag.
pub fn is_append_only(path: &Path) -> bool {
    let Ok(f) = File::open(path) else {
        return false;
    };
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one c_int into `flags`, which lives for the call.
    let ok = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETFLAGS, &mut flags) } >= 0;
    ok && flags & FS_APPEND_FL != 0
}
