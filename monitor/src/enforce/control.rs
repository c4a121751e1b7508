//! The control socket of an enforcing run, and `abm approve|deny|pending`.
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

fn serve(listener: UnixListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                if let Err(e) = handle(s, &shared) {
                    tracing::debug!("control socket: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut pfd = libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 100) };
            }
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
                Err(e) => json!({ "ok": false, "error": e }),
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

/// Which run's socket a command talks to.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// Control socket of the run (printed when the run starts and recorded
    /// in its trace header).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Run id: the socket is /run/abm/<RUN>.sock.
    #[arg(long, value_name = "RUN", conflicts_with = "socket")]
    pub run: Option<String>,
    #[command(flatten)]
    pub remote: super::remote::client::ClientArgs,
}

impl Target {
    fn sockets(&self) -> anyhow::Result<Vec<PathBuf>> {
        if let Some(s) = &self.socket {
            return Ok(vec![s.clone()]);
        }
        if let Some(r) = &self.run {
            return Ok(vec![super::default_socket_dir().join(format!("{r}.sock"))]);
        }
        let dir = super::default_socket_dir();
        let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        Ok(out)
    }
}

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// Request id, as shown by `abm pending` and when the request was made.
    #[arg(value_name = "ID")]
    pub id: u64,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, clap::Args)]
pub struct PendingArgs {
    #[command(flatten)]
    pub target: Target,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `abm pending`.
pub fn pending(a: PendingArgs) -> anyhow::Result<i32> {
    if let Some(r) = super::remote::client::Remote::new(&a.target.remote)? {
        let v = r.call("GET", "/pending", b"")?;
        let all = v["pending"].as_array().cloned().unwrap_or_default();
        return print_pending(&all, a.json, "");
    }
    let socks = a.target.sockets()?;
    let mut all = Vec::new();
    let mut errors = Vec::new();
    for s in &socks {
        match request(s, &json!({ "op": "pending" })) {
            Ok(v) if v["ok"] == true => {
                all.extend(v["pending"].as_array().cloned().unwrap_or_default())
            }
            Ok(v) => errors.push(format!(
                "{}: {}",
                s.display(),
                v["error"].as_str().unwrap_or("error")
            )),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if a.target.socket.is_some() || a.target.run.is_some() {
        if let Some(e) = errors.first() {
            bail!("{e}");
        }
    }
    let none = if socks.is_empty() {
        " (no enforcing run found)"
    } else {
        ""
    };
    print_pending(&all, a.json, none)
}

/// Prints the pending requests; `none`: what to add when there are none.
fn print_pending(all: &[Value], json: bool, none: &str) -> anyhow::Result<i32> {
    if json {
        println!("{}", serde_json::to_string_pretty(&json!(all))?);
    } else if all.is_empty() {
        println!("no pending requests{none}");
    } else {
        for p in all {
            println!(
                "{:<4} {}  rule {}: {}  (run {}, waiting {:.0}s, denied in {:.0}s)",
                p["id"],
                p["what"].as_str().unwrap_or(""),
                p["rule"].as_str().unwrap_or(""),
                p["reason"].as_str().unwrap_or(""),
                p["run"].as_str().unwrap_or(""),
                p["waiting_secs"].as_f64().unwrap_or(0.0),
                p["deny_in_secs"].as_f64().unwrap_or(0.0),
            );
        }
    }
    Ok(0)
}

/// `abm approve ID` / `abm deny ID`.
pub fn decide(a: DecideArgs, approve: bool) -> anyhow::Result<i32> {
    let op = if approve { "approve" } else { "deny" };
    if let Some(r) = super::remote::client::Remote::new(&a.target.remote)? {
        let body = json!({ "id": a.id, "answer": op }).to_string();
        let v = r.call("POST", "/answer", body.as_bytes())?;
        println!(
            "{} request {} of run {} (via {})",
            if approve { "approved" } else { "denied" },
            a.id,
            v["run"].as_str().unwrap_or("?"),
            r.url()
        );
        return Ok(0);
    }
    let socks = a.target.sockets()?;
    if socks.is_empty() {
        bail!(
            "no enforcing run found in {} (use --socket PATH)",
            super::default_socket_dir().display()
        );
    }
    // Find the run that has this request; refuse to guess between runs.
    let sock = if socks.len() == 1 {
        socks[0].clone()
    } else {
        let holders: Vec<&PathBuf> = socks
            .iter()
            .filter(|s| {
                request(s, &json!({ "op": "pending" }))
                    .ok()
                    .and_then(|v| v["pending"].as_array().cloned())
                    .is_some_and(|l| l.iter().any(|p| p["id"].as_u64() == Some(a.id)))
            })
            .collect();
        match holders.len() {
            0 => bail!("no run has a pending request {}", a.id),
            1 => holders[0].clone(),
            _ => bail!(
                "several runs have a pending request {}: choose one with --run or --socket",
                a.id
            ),
        }
    };
    let v = request(&sock, &json!({ "op": op, "id": a.id }))?;
    if v["ok"] == true {
        println!(
            "{} request {} of run {}",
            if approve { "approved" } else { "denied" },
            a.id,
            v["run"].as_str().unwrap_or("?")
        );
        Ok(0)
    } else {
        bail!("{}", v["error"].as_str().unwrap_or("refused"))
    }
}
