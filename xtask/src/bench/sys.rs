//! The few system interfaces the bench needs beyond `std`: ptrace (to read
//! the monitor's own peak RSS and CPU at the instant it exits), wait4/waitid,
//! signals, and /proc readers. Declared here directly against glibc (x86_64
//! Linux) so xtask keeps its two dependencies.
use std::{
    io,
    os::raw::{c_int, c_long, c_void},
    os::unix::process::CommandExt as _,
    process::Command,
    ptr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Timeval {
    sec: i64,
    usec: i64,
}

/// `struct rusage` (x86_64).
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    maxrss: i64,
    rest: [i64; 13],
}

extern "C" {
    fn ptrace(request: c_int, ...) -> c_long;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn wait4(pid: c_int, status: *mut c_int, options: c_int, ru: *mut Rusage) -> c_int;
    fn waitid(idtype: c_int, id: u32, info: *mut c_void, options: c_int) -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn geteuid() -> u32;
    fn sysconf(name: c_int) -> c_long;
    fn signal(sig: c_int, handler: usize) -> usize;
}

const PTRACE_TRACEME: c_int = 0;
const PTRACE_CONT: c_int = 7;
const PTRACE_SETOPTIONS: c_int = 0x4200;
const PTRACE_O_TRACEEXIT: usize = 0x40;
const PTRACE_O_EXITKILL: usize = 0x10_0000;
const PTRACE_EVENT_EXIT: c_int = 6;
const WNOHANG: c_int = 1;
const WEXITED: c_int = 4;
const WNOWAIT: c_int = 0x0100_0000;
const WALL: c_int = 0x4000_0000;
const P_PID: c_int = 1;
const SC_CLK_TCK: c_int = 2;
const EINTR: i32 = 4;
pub const SIGINT: c_int = 2;
pub const SIGKILL: c_int = 9;
pub const SIGTERM: c_int = 15;
const SIGTRAP: c_int = 5;

pub fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { geteuid() == 0 }
}

pub fn send_signal(pid: i32, sig: i32) {
    // SAFETY: plain syscall; a stale pid only yields ESRCH.
    unsafe { kill(pid, sig) };
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Ctrl-C stops the bench between two measurements (the children, in the
/// same process group, get the signal too), so that cleanup still runs.
pub fn catch_sigint() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe { signal(SIGINT, on_sigint as extern "C" fn(c_int) as usize) };
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn clock_ticks() -> f64 {
    // SAFETY: plain libc query.
    let t = unsafe { sysconf(SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU and memory of one process, from /proc.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcStats {
    /// utime + stime of the process itself (all its threads), seconds.
    pub cpu_s: f64,
    /// Peak resident set size (VmHWM), KiB; `None` once the memory is gone.
    pub hwm_kib: Option<u64>,
}

/// Reads /proc/PID/stat (utime, stime) and /proc/PID/status (VmHWM).
pub fn proc_stats(pid: i32) -> Option<ProcStats> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    let hwm_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        });
    Some(ProcStats {
        cpu_s: (utime + stime) / clock_ticks(),
        hwm_kib,
    })
}

/// Sum of `Rss:` over the mappings of `anon_inode:bpf-map` in /proc/PID/smaps:
/// abm's ring buffer (the kernel maps its data pages twice, so a 4 MiB ring
/// shows as 8 MiB of RSS).
pub fn bpf_map_rss(pid: i32) -> Option<u64> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let mut in_map = false;
    let mut total = 0;
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            in_map = line.ends_with("anon_inode:bpf-map");
        } else if in_map && first == "Rss:" {
            total += words
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Some(total)
}

/// Pids and command names of the processes whose parent is `ppid`.
pub fn children_of(ppid: i32) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let parent = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok());
        if parent == Some(ppid) {
            out.push((pid, comm.to_owned()));
        }
    }
    out
}

/// The pid of the first process whose comm is exactly `name`.
pub fn pid_by_comm(name: &str) -> Option<i32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name) {
            return Some(pid);
        }
    }
    None
}

/// Processes other than `except` holding BPF program fds: (pid, comm, count).
pub fn bpf_program_holders(except: &[i32]) -> Vec<(i32, String, usize)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if except.contains(&pid) {
            continue;
        }
        let n = fd_kinds(pid, "anon_inode:bpf-prog");
        if n > 0 {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_owned(), n));
        }
    }
    out
}

/// How many of the process's fds link to `target` (e.g. `anon_inode:bpf-prog`).
pub fn fd_kinds(pid: i32, target: &str) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    dir.flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().as_ref() == target)
        })
        .count()
}

/// How a measured process ended.
#[derive(Clone, Copy, Debug)]
pub struct Ended {
    /// Exit code, or 128 + signal.
    pub code: i32,
    /// From spawn to reaping.
    pub elapsed: Duration,
    /// The process's own CPU and peak RSS, read at its exit (None if that
    /// could not be read).
    pub own: Option<ProcStats>,
}

fn decode(status: c_int) -> i32 {
    if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        128 + (status & 0x7f)
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A child started under ptrace with `PTRACE_O_TRACEEXIT` only: it runs
/// untouched (no syscall stops, its own children are not traced) and stops
/// once, when it exits, while its memory still exists. At that stop its
/// VmHWM and utime/stime are exactly the monitor's own: the workload it
/// launched has its own rusage, which the kernel keeps apart (cutime).
pub struct Traced {
    pub pid: i32,
    started: Instant,
    options_set: bool,
    own: Option<ProcStats>,
    ended: Option<Ended>,
}

impl Traced {
    pub fn spawn(cmd: &mut Command) -> Result<Traced> {
        // SAFETY: the closure makes one async-signal-safe syscall.
        unsafe {
            cmd.pre_exec(|| {
                if ptrace(
                    PTRACE_TRACEME,
                    0 as c_int,
                    ptr::null_mut::<c_void>(),
                    ptr::null_mut::<c_void>(),
                ) == -1
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {cmd:?}"))?;
        Ok(Traced {
            pid: child.id() as i32,
            started,
            options_set: false,
            own: None,
            ended: None,
        })
    }

    /// Handles pending stops; returns the end once the process is reaped.
    /// With `block`, waits for that.
    pub fn poll(&mut self, block: bool) -> Result<Option<Ended>> {
        if let Some(e) = self.ended {
            return Ok(Some(e));
        }
        loop {
            let mut status: c_int = 0;
            let flags = WALL | if block { 0 } else { WNOHANG };
            // SAFETY: valid out pointer.
            let r = unsafe { waitpid(self.pid, &mut status, flags) };
            if r == 0 {
                return Ok(None);
            }
            if r < 0 {
                if last_errno() == EINTR {
                    continue;
                }
                bail!("waitpid({}): {}", self.pid, io::Error::last_os_error());
            }
            if status & 0xff == 0x7f {
                // Stopped.
                let sig = (status >> 8) & 0xff;
                let event = status >> 16;
                let mut inject: usize = 0;
                if !self.options_set && sig == SIGTRAP {
                    // The SIGTRAP of the first exec under PTRACE_TRACEME.
                    // SAFETY: pid is our stopped tracee.
                    unsafe {
                        ptrace(
                            PTRACE_SETOPTIONS,
                            self.pid,
                            ptr::null_mut::<c_void>(),
                            PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL,
                        )
                    };
                    self.options_set = true;
                } else if event == PTRACE_EVENT_EXIT {
                    self.own = proc_stats(self.pid);
                } else if event == 0 {
                    inject = sig as usize;
                }
                // SAFETY: pid is our stopped tracee.
                unsafe { ptrace(PTRACE_CONT, self.pid, ptr::null_mut::<c_void>(), inject) };
                continue;
            }
            let e = Ended {
                code: decode(status),
                elapsed: self.started.elapsed(),
                own: self.own,
            };
            self.ended = Some(e);
            return Ok(Some(e));
        }
    }

    pub fn wait(&mut self) -> Result<Ended> {
        Ok(self.poll(true)?.expect("blocking poll returns the end"))
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if self.ended.is_none() {
            send_signal(self.pid, SIGKILL);
            let _ = self.poll(true);
        }
    }
}

/// Waits for `pid` to exit, reads its own CPU from /proc while it is a
/// zombie (utime/stime stay; only the memory is gone), then reaps it.
/// Returns (exit code, own CPU seconds).
pub fn wait_zombie(pid: i32) -> Result<(i32, Option<f64>)> {
    let mut info = [0u64; 16]; // siginfo_t, 128 bytes
    loop {
        // SAFETY: valid out buffer of siginfo_t size.
        let r = unsafe {
            waitid(
                P_PID,
                pid as u32,
                info.as_mut_ptr().cast(),
                WEXITED | WNOWAIT,
            )
        };
        if r == 0 {
            break;
        }
        if last_errno() != EINTR {
            bail!("waitid({pid}): {}", io::Error::last_os_error());
        }
    }
    let cpu = proc_stats(pid).map(|s| s.cpu_s);
    let mut status: c_int = 0;
    let mut ru = Rusage::default();
    loop {
        // SAFETY: valid out pointers.
        let r = unsafe { wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        if r < 0 && last_errno() != EINTR {
            bail!("wait4({pid}): {}", io::Error::last_os_error());
        }
    }
    Ok((decode(status), cpu))
}

/// Samples a value of a process from another thread and keeps the
/// largest: strace's VmHWM (strace cannot be stopped at exit, see
/// [`wait_zombie`]), and abm's ring-buffer mapping (unmapped before abm
/// exits, so it cannot be read at the exit stop).
pub struct MaxSampler {
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<Option<u64>>,
}

impl MaxSampler {
    /// Reads `read(pid)` every `period`; with `first_only`, stops after the
    /// first non-zero value (for values that do not change).
    pub fn start(
        pid: i32,
        period: Duration,
        first_only: bool,
        read: fn(i32) -> Option<u64>,
    ) -> MaxSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut best: Option<u64> = None;
            while !flag.load(Ordering::SeqCst) {
                if let Some(v) = read(pid) {
                    best = Some(best.map_or(v, |b| b.max(v)));
                    if first_only && v > 0 {
                        break;
                    }
                }
                thread::sleep(period);
            }
            best
        });
        MaxSampler { stop, handle }
    }

    pub fn stop(self) -> Option<u64> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().ok().flatten()
    }
}

/// VmHWM of a live process, KiB.
pub fn hwm_kib(pid: i32) -> Option<u64> {
    proc_stats(pid).and_then(|s| s.hwm_kib)
}
