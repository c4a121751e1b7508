//! The watched tree does not outlive abm.
//!
//! `abm run` can die without cleaning up (`kill -9`, the OOM killer, a
//! crash). Two mechanisms keep the watched tree from running on
//! unmonitored then:
//!
//! - The first child gets `PR_SET_PDEATHSIG(SIGKILL)` ([`child_setup`]):
//!   the kernel kills it the moment abm's main thread exits.
//! - A lifeline process ([`Lifeline::start`]), forked from abm before the
//!   command starts, in its own session (terminal signals do not reach
//!   it), holds the read end of a pipe whose write end only abm holds. When
//!   abm exits without disarming it, the pipe reads end-of-file and the
//!   lifeline kills every process of the run's scope map with SIGKILL
//!   (the BPF programs stay attached as long as the lifeline holds their
//!   fds, so the map keeps following forks, double-forked daemons
//!   included) and the run's cgroup (`cgroup.kill`) with `--cgroup`,
//!   until none is left, then clears the trace's append-only flag. The
//!   trace stays unsealed, which `abm verify` reports.
//!
//! The lifeline runs between `fork` and its own exit without `exec`: it
//! only makes raw system calls on buffers prepared before the fork, as a
//! child of a multi-threaded process must.
//!
//! [`targets`]: the same guarantee for `abm daemon`, whose enforcing
//! targets are not its children: their cgroups are killed when the daemon
//! dies without a clean stop.
pub mod targets;

use std::{
    ffi::CString,
    os::{fd::RawFd, unix::ffi::OsStrExt as _},
    path::Path,
};

use crate::core::sys::{bpf_map_elem, MapElem};

/// How long the lifeline keeps killing newly forked processes.
const KILL_ROUNDS: u32 = 100;

/// abm's side of the lifeline.
pub struct Lifeline {
    pid: libc::pid_t,
    write_fd: RawFd,
}

/// Set in the first child between fork and exec.
pub fn child_setup() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments (async-signal-safe).
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl Lifeline {
    /// Forks the lifeline. `scope_fd`: the scope map (pid -> entry);
    /// `cgroup`: the run's cgroup directory; `trace`: the trace file.
    pub fn start(
        scope_fd: RawFd,
        cgroup: Option<&Path>,
        trace: &Path,
    ) -> std::io::Result<Lifeline> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let cg_kill =
            cgroup.and_then(|c| CString::new(c.join("cgroup.kill").as_os_str().as_bytes()).ok());
        let trace_c = CString::new(trace.as_os_str().as_bytes()).ok();
        // SAFETY: the child only runs `watch`, which makes raw syscalls on
        // memory prepared before the fork and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: the lifeline keeps only the read end: the pipe reads
            // end-of-file when abm's write end closes.
            unsafe { libc::close(fds[1]) };
            watch(fds[0], scope_fd, cg_kill.as_deref(), trace_c.as_deref());
        }
        // SAFETY: closing our copy of the read end.
        unsafe { libc::close(fds[0]) };
        Ok(Lifeline {
            pid,
            write_fd: fds[1],
        })
    }

    /// The trace file is created (and protected): the lifeline may clear
    /// its append-only flag when abm dies. Before this it never touches
    /// the path (it could be another run's trace).
    pub fn trace_created(&self) {
        // SAFETY: writing one byte to our pipe end.
        unsafe { libc::write(self.write_fd, b"t".as_ptr().cast(), 1) };
    }

    /// The run ended cleanly: the lifeline exits without killing anything
    /// (processes left on purpose with --keep-orphans stay).
    pub fn disarm(self) {
        // SAFETY: writing one byte to our pipe end, closing it, reaping
        // the lifeline.
        unsafe {
            libc::write(self.write_fd, b"d".as_ptr().cast(), 1);
            libc::close(self.write_fd);
            let mut st = 0;
            libc::waitpid(self.pid, &mut st, 0);
        }
        std::mem::forget(self);
    }
}

impl Drop for Lifeline {
    /// abm gives up on the run (an error): the lifeline stops the tree.
    fn drop(&mut self) {
        // SAFETY: closing our end makes the lifeline act; then reap it.
        unsafe {
            libc::close(self.write_fd);
            let mut st = 0;
            libc::waitpid(self.pid, &mut st, 0);
        }
    }
}

/// The lifeline process. Never returns.
fn watch(
    read_fd: RawFd,
    scope_fd: RawFd,
    cg_kill: Option<&std::ffi::CStr>,
    trace: Option<&std::ffi::CStr>,
) -> ! {
    // SAFETY: raw syscalls only (async-signal-safe), on stack buffers and
    // on memory allocated before the fork.
    unsafe {
        detach();
        // Every inherited fd stays open: the lifeline is forked after the
        // probes are loaded and before anything else (trace, control
        // socket, seccomp listener) exists, and holding the BPF program
        // fds keeps the scope map following forks after abm is gone.
        // 't': the trace exists and is this run's (its append-only flag
        // may be cleared); 'd': disarmed; end-of-file: abm is gone.
        let mut own_trace = false;
        let mut b = [0u8; 1];
        loop {
            let n = libc::read(read_fd, b.as_mut_ptr().cast(), 1);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n == 1 && b[0] == b't' {
                own_trace = true;
                continue;
            }
            if n == 1 && b[0] == b'd' {
                libc::_exit(0);
            }
            break;
        }
        // abm is gone: stop the tree.
        let me = libc::getpid() as u32;
        for _ in 0..KILL_ROUNDS {
            let mut killed = 0;
            if let Some(p) = cg_kill {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"1".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
            let mut key: u32 = 0;
            let mut next: u32 = 0;
            let mut first = true;
            while next_key(scope_fd, if first { None } else { Some(&key) }, &mut next) {
                first = false;
                key = next;
                if next > 1 && next != me && libc::kill(next as i32, libc::SIGKILL) == 0 {
                    killed += 1;
                }
            }
            if killed == 0 {
                break;
            }
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
        if let Some(t) = trace.filter(|_| own_trace) {
            let fd = libc::open(t.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                let mut flags: libc::c_long = 0;
                if libc::ioctl(fd, 0x8008_6601u64 as _, &mut flags) == 0 {
                    flags &= !0x20;
                    libc::ioctl(fd, 0x4008_6602u64 as _, &flags);
                }
                libc::close(fd);
            }
        }
        libc::_exit(0)
    }
}

/// A new session, deaf to the signals a terminal or a service manager's
/// stop sends: the lifeline outlives whoever it watches.
fn detach() {
    // SAFETY: setsid and signal with constant arguments (async-signal-safe).
    unsafe {
        libc::setsid();
        for s in [
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(s, libc::SIG_IGN);
        }
    }
}

/// BPF_MAP_GET_NEXT_KEY on a map with u32 keys.
fn next_key(map_fd: RawFd, key: Option<&u32>, next: &mut u32) -> bool {
    let key = key.map_or(0, |k| k as *const u32 as u64);
    // SAFETY: `key` is 0 or a live u32, `next` a live, writable u32: the
    // map's key size.
    unsafe { bpf_map_elem(MapElem::NextKey, map_fd, key, next as *mut u32 as u64) }.is_ok()
}

/// BPF_MAP_LOOKUP_ELEM of `key` in the scope map (u32 pid -> 8-byte
/// entry whose first u32 is the target id): the target, if the key is there.
fn scope_target(map_fd: RawFd, key: u32) -> Option<u32> {
    const _: () = assert!(std::mem::size_of::<monitor_common::ScopeEntry>() == 8);
    let mut value = [0u32; 2];
    // SAFETY: `key` is a live u32 and `value` a live, writable 8-byte
    // buffer: the scope map's key and value (`ScopeEntry`) sizes.
    let found = unsafe {
        bpf_map_elem(
            MapElem::Lookup,
            map_fd,
            &key as *const u32 as u64,
            value.as_mut_ptr() as u64,
        )
    };
    found.is_ok().then_some(value[0])
}
