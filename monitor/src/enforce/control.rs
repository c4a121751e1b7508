//! The control socket of an enforcing run (its clients are
//! `abm approve|deny|pending`, `crate::cmd::approve`).
//!
//! A unix stream socket (default /run/abm/<run id>.sock, mode 0600 in a
//! 0700 directory). Only root and the user abm runs as may use it
//! (SO_PEERCRED). One JSON request line, one JSON answer line:
//!
//! ```text
//! {"op":"pending"}            -> {"ok":true,"run":"...","pending":[{...}]}
//! {"op":"approve","id":3}     -> {"ok":true} | {"ok":false,"error":"..."}
//! {"op":"deny","id":3}        -> {"ok":true} | {"ok":false,"error":"..."}
//! {"op":"recent","since_ns":T0,"until_ns":T1}
//!                             -> {"ok":true,"run":"...","now_ns":...,"records":[...],"pending":[...]}
//! ```
//!
//! `recent` (for `abm hook`): judged actions whose CLOCK_MONOTONIC entry
//! time is in [T0, T1] (enforce::notify::Recent).
use std::{
    io::{self, BufRead as _, BufReader, Write as _},
    os::{
        fd::AsRawFd,
        unix::{
            fs::{DirBuilderExt as _, PermissionsExt as _},
            net::{UnixListener, UnixStream},
        },
    },
    path::{Path, PathBuf},
    sync::{atomic::Ordering, Arc},
    thread::JoinHandle,
    time::Duration,
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use super::Shared;

pub(crate) struct Server {
    path: PathBuf,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Server {
    pub fn start(path: &Path, shared: Arc<Shared>) -> anyhow::Result<Server> {
        if let Some(dir) = path.parent() {
            if dir == super::default_socket_dir() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                bail!("another abm run is using it");
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("abm-control".into())
            .spawn(move || serve(listener, sh))?;
        Ok(Server {
            path: path.to_path_buf(),
            thread: Some(thread),
            shared,
        })
    }

    pub fn stop(mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.shared.stop.store(true, Ordering::Relaxed);
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Waits up to 100 ms for a non-blocking listener to have a connection,
/// so that its accept loop sees a stop request soon.
pub(crate) fn wait_readable(fd: std::os::fd::RawFd) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, 100) };
}

fn serve(listener: UnixListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                if let Err(e) = handle(s, &shared) {
                    tracing::debug!("control socket: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_readable(listener.as_raw_fd()),
            Err(e) => {
                tracing::warn!("control socket: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// uid of the peer of a unix socket.
fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for getsockopt.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

fn handle(s: UnixStream, shared: &Shared) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(2)))?;
    let uid = peer_uid(&s)?;
    let mut w = s.try_clone()?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if uid != 0 && uid != me {
        let r = json!({ "ok": false, "error": format!("uid {uid} may not control this run (only root and uid {me})") });
        return writeln!(w, "{r}");
    }
    let mut line = String::new();
    BufReader::new(s).take_line(&mut line)?;
    let req: Value = match serde_json::from_str(&line) {
        Ok(v) => v,
        Err(e) => {
            return writeln!(
                w,
                "{}",
                json!({ "ok": false, "error": format!("bad request: {e}") })
            )
        }
    };
    let resp = match req["op"].as_str() {
        Some("pending") => {
            json!({ "ok": true, "run": shared.run_id, "pending": shared.pending_list() })
        }
        Some("recent") => {
            let now = crate::core::monotonic_ns();
            let since = req["since_ns"].as_u64().unwrap_or(0);
            let until = req["until_ns"].as_u64().unwrap_or(now);
            let mut v = shared.recent.window(since, until);
            v["ok"] = json!(true);
            v["run"] = json!(shared.run_id);
            v["now_ns"] = json!(now);
            v["pending"] = json!(shared.pending_list());
            v
        }
        Some(op @ ("approve" | "deny")) => match req["id"].as_u64() {
            None => json!({ "ok": false, "error": "missing request id" }),
            Some(id) => match shared.decide(id, op == "approve", &format!("control:{uid}")) {
                Ok(()) => json!({ "ok": true, "run": shared.run_id, "id": id }),
                Err(e) => json!({ "ok": false, "error": e.to_string() }),
            },
        },
        _ => json!({ "ok": false, "error": "unknown op (pending, approve, deny, recent)" }),
    };
    writeln!(w, "{resp}")
}

trait TakeLine {
    fn take_line(self, out: &mut String) -> io::Result<usize>;
}

impl<R: io::Read> TakeLine for BufReader<R> {
    fn take_line(mut self, out: &mut String) -> io::Result<usize> {
        // At most 64 KiB per request.
        let mut limited = io::Read::take(&mut self, 65536);
        let mut r = BufReader::new(&mut limited);
        r.read_line(out)
    }
}

/// Sends one request and reads the answer.
pub fn request(sock: &Path, req: &Value) -> anyhow::Result<Value> {
    let mut s = UnixStream::connect(sock)
        .with_context(|| format!("cannot connect to {}", sock.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    writeln!(s, "{req}")?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line)?;
    serde_json::from_str(&line)
        .with_context(|| format!("bad answer from {}: {line:?}", sock.display()))
}
