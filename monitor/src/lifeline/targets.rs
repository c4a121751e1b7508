//! `abm daemon` fails closed: its enforcing targets do not outlive it.
//!
//! The daemon's BPF LSM programs are attached by links only its own
//! descriptors hold, and its targets (containers, pods, process trees) are
//! not its children: when the daemon is killed (`kill -9`, the OOM killer, a
//! crash), enforcement ends with it and the targets would go on unguarded.
//! A lifeline process ([`TargetLifeline::start`]), forked by the daemon
//! right after its kernel programs load, learns the daemon's *enforcing*
//! targets as they start and end, through a pipe only the daemon writes
//! to. When the daemon dies without a clean stop (the pipe reads
//! end-of-file, or the daemon's pidfd says it exited), the lifeline kills
//! each enforcing target:
//!
//! - a cgroup target (cgroup, container, pod): `1` to its `cgroup.kill`
//!   (cgroup v2, Linux 5.14 and later), which kills every process of the
//!   cgroup and its descendants at once; where the file is missing
//!   (an older kernel) it says so and SIGKILLs the processes listed in
//!   the `cgroup.procs` files of the cgroup and its descendants, until none
//!   is left;
//! - a pid target: every process of the kernel's scope map that belongs
//!   to it (the lifeline holds the tracing programs' descriptors, so the
//!   map keeps following forks while it kills).
//!
//! Targets that are only recorded are never killed. A clean stop
//! ([`TargetLifeline::stop`], on SIGTERM/SIGINT) tells the lifeline to exit
//! without killing anything.
//!
//! The daemon forks the lifeline while it has a single thread (checked),
//! so the lifeline may allocate and use the standard library; it never
//! returns to the daemon's code.
use std::{
    collections::BTreeMap,
    fs::File,
    io::{Read as _, Write as _},
    os::{
        fd::{AsRawFd as _, FromRawFd as _, RawFd},
        unix::ffi::{OsStrExt as _, OsStringExt as _},
    },
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use super::{detach, next_key, scope_target, KILL_ROUNDS};

/// How long the lifeline waits for a killed cgroup to empty.
const EMPTY_WAIT: Duration = Duration::from_secs(5);
/// Cgroups walked below a target's cgroup when listing its processes.
const MAX_CGROUPS: usize = 4096;

/// Why the lifeline could not start.
#[derive(Debug, thiserror::Error)]
pub enum LifelineError {
    #[error(
        "the daemon's lifeline must be forked while the daemon has one thread, and it has {0}: \
         start it before any thread"
    )]
    Threads(usize),
    #[error("starting the daemon's lifeline: {0}")]
    Io(#[from] std::io::Error),
}

/// The daemon's side of the lifeline.
pub struct TargetLifeline {
    pid: libc::pid_t,
    pipe: Option<File>,
}

/// What the lifeline kills for one enforcing target.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Guarded {
    Cgroup(PathBuf),
    Pids,
}

/// One message of the pipe: `c ID NAME PATH`, `p ID NAME`, `r ID` or `s`,
/// each ended by a NUL byte (target names have no spaces; a path has no NUL).
#[derive(Debug, PartialEq, Eq)]
enum Message {
    Guard(u32, String, Guarded),
    Release(u32),
    Stop,
}

impl Message {
    fn encode(&self) -> Vec<u8> {
        let mut out = match self {
            Message::Guard(id, name, Guarded::Cgroup(p)) => {
                let mut v = format!("c {id} {name} ").into_bytes();
                v.extend_from_slice(p.as_os_str().as_bytes());
                v
            }
            Message::Guard(id, name, Guarded::Pids) => format!("p {id} {name}").into_bytes(),
            Message::Release(id) => format!("r {id}").into_bytes(),
            Message::Stop => b"s".to_vec(),
        };
        out.push(0);
        out
    }

    fn decode(rec: &[u8]) -> Option<Message> {
        let mut parts = rec.splitn(4, |b| *b == b' ');
        let kind = parts.next()?;
        if kind == b"s" {
            return Some(Message::Stop);
        }
        let id: u32 = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        if kind == b"r" {
            return Some(Message::Release(id));
        }
        let name = String::from_utf8_lossy(parts.next()?).into_owned();
        match kind {
            b"p" => Some(Message::Guard(id, name, Guarded::Pids)),
            b"c" => {
                let path = PathBuf::from(std::ffi::OsString::from_vec(parts.next()?.to_vec()));
                Some(Message::Guard(id, name, Guarded::Cgroup(path)))
            }
            _ => None,
        }
    }
}

impl TargetLifeline {
    /// Forks the lifeline; `scope_fd` is the kernel's scope map (pid ->
    /// target). The daemon must have one thread.
    pub fn start(scope_fd: RawFd) -> Result<TargetLifeline, LifelineError> {
        let threads = std::fs::read_dir("/proc/self/task")?.count();
        if threads != 1 {
            return Err(LifelineError::Threads(threads));
        }
        // SAFETY: getpid has no preconditions.
        let daemon = unsafe { libc::getpid() };
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: the process has one thread (checked above), so the child
        // is a complete copy and may use the standard library; it never
        // returns from `serve`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        if pid == 0 {
            // SAFETY: the lifeline keeps only the read end, which it owns.
            let pipe = unsafe {
                libc::close(fds[1]);
                File::from_raw_fd(fds[0])
            };
            detach();
            serve(pipe, scope_fd, daemon);
        }
        // SAFETY: the daemon keeps only the write end, which it owns.
        let pipe = unsafe {
            libc::close(fds[0]);
            File::from_raw_fd(fds[1])
        };
        Ok(TargetLifeline {
            pid,
            pipe: Some(pipe),
        })
    }

    /// The lifeline's pid.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    fn send(&mut self, m: &Message) -> std::io::Result<()> {
        match self.pipe.as_mut() {
            Some(p) => p.write_all(&m.encode()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Target `id` enforces in `cgroup`: killed there if the daemon dies.
    pub fn guard_cgroup(&mut self, id: u32, name: &str, cgroup: &Path) -> std::io::Result<()> {
        self.send(&Message::Guard(
            id,
            name.to_owned(),
            Guarded::Cgroup(cgroup.to_owned()),
        ))
    }

    /// Target `id` enforces on a process tree (the scope map's entries of
    /// `id`): killed if the daemon dies.
    pub fn guard_pids(&mut self, id: u32, name: &str) -> std::io::Result<()> {
        self.send(&Message::Guard(id, name.to_owned(), Guarded::Pids))
    }

    /// Target `id` no longer enforces (it ended).
    pub fn release(&mut self, id: u32) -> std::io::Result<()> {
        self.send(&Message::Release(id))
    }

    /// A clean stop: the lifeline exits without killing anything.
    pub fn stop(mut self) -> std::io::Result<()> {
        let sent = self.send(&Message::Stop);
        self.pipe = None;
        self.reap();
        sent
    }

    fn reap(&mut self) {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
    }
}

impl Drop for TargetLifeline {
    /// The daemon gives up (an error): its pipe end closes, and the
    /// lifeline kills the enforcing targets as if the daemon had died.
    fn drop(&mut self) {
        if self.pipe.take().is_some() {
            self.reap();
        }
    }
}

/// The lifeline process: follows the daemon's messages until the daemon
/// stops cleanly or dies. Never returns.
fn serve(mut pipe: File, scope_fd: RawFd, daemon: libc::pid_t) -> ! {
    // SAFETY: pidfd_open with a pid and no flags; -1 where unsupported
    // (before Linux 5.3), then only the pipe tells.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, daemon, 0) } as RawFd;
    let mut guarded: BTreeMap<u32, (String, Guarded)> = BTreeMap::new();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfd entries (a negative fd is ignored).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue;
        }
        let daemon_gone = fds[1].revents != 0;
        if daemon_gone {
            // Whatever the daemon wrote before it exited is still read: a
            // copy of the write end elsewhere must not hold the lifeline.
            // SAFETY: fcntl on our own fd.
            unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        }
        let eof = loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if !daemon_gone {
                        break false;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break daemon_gone,
            }
        };
        while let Some(end) = buf.iter().position(|b| *b == 0) {
            let rec: Vec<u8> = buf.drain(..=end).collect();
            match Message::decode(&rec[..end]) {
                Some(Message::Stop) => {
                    // SAFETY: exiting the lifeline.
                    unsafe { libc::_exit(0) }
                }
                Some(Message::Guard(id, name, g)) => {
                    guarded.insert(id, (name, g));
                }
                Some(Message::Release(id)) => {
                    guarded.remove(&id);
                }
                None => {}
            }
        }
        if eof || daemon_gone {
            break;
        }
    }
    kill_targets(&guarded, scope_fd, daemon);
    // SAFETY: exiting the lifeline.
    unsafe { libc::_exit(0) }
}

/// The daemon is gone without a clean stop: every enforcing target dies.
fn kill_targets(guarded: &BTreeMap<u32, (String, Guarded)>, scope_fd: RawFd, daemon: i32) {
    if guarded.is_empty() {
        tracing::warn!(
            "abm daemon (pid {daemon}) ended without a clean stop; no target was enforcing, so none is killed"
        );
        return;
    }
    tracing::error!(
        "abm daemon (pid {daemon}) ended without a clean stop: killing its {} enforcing target(s), which would otherwise run unenforced (fail closed)",
        guarded.len()
    );
    for (id, (name, g)) in guarded {
        match g {
            Guarded::Cgroup(dir) => kill_cgroup(name, dir),
            Guarded::Pids => {
                let n = kill_scope(scope_fd, *id);
                tracing::error!("target {name}: {n} process(es) killed (its process tree)");
            }
        }
    }
}

/// Kills every process of `dir` and its descendant cgroups.
fn kill_cgroup(name: &str, dir: &Path) {
    if !dir.is_dir() {
        tracing::warn!("target {name}: cgroup {} is already removed", dir.display());
        return;
    }
    let before = procs_recursive(dir).len();
    let kill = dir.join("cgroup.kill");
    let how = match std::fs::OpenOptions::new()
        .write(true)
        .open(&kill)
        .and_then(|mut f| f.write_all(b"1"))
    {
        Ok(()) => "cgroup.kill".to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(
                "target {name}: {} is missing (cgroup.kill needs Linux 5.14): killing the processes of cgroup.procs one by one instead",
                kill.display()
            );
            "SIGKILL of cgroup.procs".to_owned()
        }
        Err(e) => {
            tracing::warn!(
                "target {name}: writing {}: {e}: killing the processes of cgroup.procs one by one instead",
                kill.display()
            );
            "SIGKILL of cgroup.procs".to_owned()
        }
    };
    // After cgroup.kill this only waits for the cgroup to empty; without it
    // it kills what cgroup.procs lists, round after round (a fork between
    // the listing and the kill shows up in the next round).
    let me = std::process::id();
    let start = Instant::now();
    let mut rounds = 0;
    loop {
        let left: Vec<u32> = procs_recursive(dir)
            .into_iter()
            .filter(|p| *p != me)
            .collect();
        if left.is_empty() {
            break;
        }
        if rounds >= KILL_ROUNDS && start.elapsed() >= EMPTY_WAIT {
            tracing::error!(
                "target {name}: {} process(es) still in cgroup {} after {:?}",
                left.len(),
                dir.display(),
                start.elapsed()
            );
            return;
        }
        for p in left {
            // SAFETY: kill with a pid and a signal number.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::error!(
        "target {name}: cgroup {} killed with {how} ({before} process(es))",
        dir.display()
    );
}

/// SIGKILLs the processes of target `id` in the scope map until none is
/// left; how many were killed.
fn kill_scope(scope_fd: RawFd, id: u32) -> u32 {
    let me = std::process::id();
    let mut total = 0;
    for _ in 0..KILL_ROUNDS {
        let mut killed = 0;
        let mut key = 0u32;
        let mut next = 0u32;
        let mut first = true;
        while next_key(scope_fd, (!first).then_some(&key), &mut next) {
            first = false;
            key = next;
            if next > 1 && next != me && scope_target(scope_fd, next) == Some(id) {
                // SAFETY: kill with a pid and a signal number.
                if unsafe { libc::kill(next as i32, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
        }
        if killed == 0 {
            break;
        }
        total += killed;
        std::thread::sleep(Duration::from_millis(20));
    }
    total
}

/// The pids listed in `cgroup.procs` of `dir` and of the cgroups below it.
fn procs_recursive(dir: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    let mut queue = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = queue.pop() {
        if let Ok(s) = std::fs::read_to_string(d.join("cgroup.procs")) {
            out.extend(s.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) && seen < MAX_CGROUPS {
                seen += 1;
                queue.push(e.path());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        for m in [
            Message::Guard(
                3,
                "agents/a-1".into(),
                Guarded::Cgroup("/sys/fs/cgroup/a b/c".into()),
            ),
            Message::Guard(7, "tree".into(), Guarded::Pids),
            Message::Release(3),
            Message::Stop,
        ] {
            let e = m.encode();
            assert_eq!(e.last(), Some(&0));
            assert_eq!(Message::decode(&e[..e.len() - 1]), Some(m));
        }
        assert_eq!(Message::decode(b"x 1"), None);
        assert_eq!(Message::decode(b"r nope"), None);
    }

    #[test]
    fn procs_of_a_missing_cgroup_are_none() {
        assert!(procs_recursive(Path::new("/nonexistent/cgroup")).is_empty());
    }
}
