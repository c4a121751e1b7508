//! The daemon's control socket.
//!
//! Same framing and permission rule as the control socket of enforcing runs
//! (`enforce::control`): a unix stream socket, mode 0600 in a 0700
//! directory (default /run/abm/daemon.sock); only root and the daemon's
//! own uid may talk to it (SO_PEERCRED); one JSON request line with an
//! `op`, one JSON answer line with `ok`. `tail` then streams JSON lines
//! until the client hangs up. Because the answer to `pending` has the same
//! shape, `abm pending` lists the daemon alongside enforcing runs.
//!
//! ```text
//! {"op":"status"}                               -> {"ok":true,"daemon":{..},"targets":[..]}
//! {"op":"watch_add","target":{"name":"a","cgroup":"agents/a"}}
//!                                               -> {"ok":true,"target":{..}}
//! {"op":"watch_remove","name":"a"}              -> {"ok":true,"target":{..}}
//! {"op":"reload"}                               -> {"ok":true,"policy_digest":".."} | {"ok":false,"error":"file:line:col: .."}
//! {"op":"tail","targets":["a"]}                 -> {"ok":true} then one line per event/loss/target change
//! {"op":"pending"}                              -> {"ok":true,"run":"daemon","pending":[..]}
//! {"op":"approve","id":3} / {"op":"deny",..}    -> {"ok":true,"run":"daemon","id":3} (enforcing targets' requests)
//! ```
use std::{
    io,
    os::unix::fs::{DirBuilderExt as _, PermissionsExt as _},
    path::Path,
    sync::Arc,
    time::Duration,
};

use serde_json::{json, Value};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    net::{UnixListener, UnixStream},
    sync::{broadcast, mpsc, oneshot},
};

/// Largest request line accepted.
const MAX_REQUEST: u64 = 64 * 1024;

/// A request for the daemon's main loop, with the channel for its answer.
pub struct Call {
    pub req: Value,
    /// The client's uid (SO_PEERCRED), for `decided_by` of answers.
    pub uid: u32,
    pub reply: oneshot::Sender<Value>,
}

/// One line of the live stream: the target it is about (for filters) and
/// the JSON text.
#[derive(Debug)]
pub struct TailLine {
    pub target: Option<String>,
    pub line: String,
}

/// Binds the socket: creates its directory (0700) if needed, refuses to
/// replace the socket of a running daemon, removes a stale one, and makes
/// the socket 0600.
pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    use anyhow::Context as _;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        if dir == Path::new("/run/abm") {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            anyhow::bail!(
                "control socket {} is in use: another abm daemon is running",
                path.display()
            );
        }
        std::fs::remove_file(path)
            .with_context(|| format!("cannot remove stale socket {}", path.display()))?;
    }
    // Bind with a umask that leaves the socket to its owner from the start.
    // SAFETY: umask(2) cannot fail.
    let old = unsafe { libc::umask(0o177) };
    let l = UnixListener::bind(path);
    // SAFETY: umask(2) cannot fail; this puts back the mask read above.
    unsafe { libc::umask(old) };
    let l = l.with_context(|| format!("cannot bind control socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

/// Serves one connection.
pub async fn serve(
    stream: UnixStream,
    calls: mpsc::Sender<Call>,
    tail: broadcast::Sender<Arc<TailLine>>,
) -> io::Result<()> {
    let uid = stream.peer_cred()?.uid();
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let (r, mut w) = stream.into_split();
    if uid != 0 && uid != me {
        let r = json!({ "ok": false, "error": format!("uid {uid} may not use the abm daemon's control socket (only root and uid {me})") });
        return w.write_all(format!("{r}\n").as_bytes()).await;
    }
    let mut line = String::new();
    let mut reader = BufReader::new(r.take(MAX_REQUEST));
    match tokio::time::timeout(Duration::from_secs(5), reader.read_line(&mut line)).await {
        Ok(r) => {
            r?;
        }
        Err(_) => return Ok(()),
    }
    let req: Value = match serde_json::from_str(&line) {
        Ok(v) => v,
        Err(e) => {
            let r = json!({ "ok": false, "error": format!("bad request: {e}") });
            return w.write_all(format!("{r}\n").as_bytes()).await;
        }
    };
    if req["op"] == "tail" {
        let filter: Option<Vec<String>> = req["targets"].as_array().map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
        let mut rx = tail.subscribe();
        w.write_all(b"{\"ok\":true}\n").await?;
        // Notice a client that hangs up even when nothing is streamed.
        let mut probe = [0u8; 1];
        let mut rest = reader.into_inner();
        loop {
            tokio::select! {
                m = rx.recv() => match m {
                    Ok(l) => {
                        let wanted = match (&filter, &l.target) {
                            (Some(f), Some(t)) => f.iter().any(|x| x == t),
                            (Some(_), None) => true,
                            (None, _) => true,
                        };
                        if wanted {
                            w.write_all(l.line.as_bytes()).await?;
                            w.write_all(b"\n").await?;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        w.write_all(format!("{}\n", json!({ "type": "lagged", "missed": n })).as_bytes()).await?;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
                n = rest.read(&mut probe) => {
                    if n.unwrap_or(0) == 0 {
                        return Ok(());
                    }
                }
            }
        }
    }
    let (tx, rx) = oneshot::channel();
    if calls
        .send(Call {
            req,
            uid,
            reply: tx,
        })
        .await
        .is_err()
    {
        let r = json!({ "ok": false, "error": "the daemon is shutting down" });
        return w.write_all(format!("{r}\n").as_bytes()).await;
    }
    let resp = rx
        .await
        .unwrap_or_else(|_| json!({ "ok": false, "error": "the daemon is shutting down" }));
    w.write_all(format!("{resp}\n").as_bytes()).await
}
