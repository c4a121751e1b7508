//! The remote approvals endpoint: a thread that accepts connections (TLS
//! when configured), checks each request's signature, and answers
//! `GET /pending` and `POST /answer` through the run's [`Shared`] state,
//! the way the control socket does.
use std::{
    io::{self, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    os::fd::AsRawFd as _,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::Duration,
};

use serde_json::{json, Value};

use super::{now_secs, wire, Listen, Rejected, Verifier};
use crate::enforce::control::wait_readable;
use crate::enforce::Shared;

/// Connections served at once; more wait in the kernel's backlog.
const MAX_INFLIGHT: usize = 16;
/// How long one connection may take to send its request.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) struct Server {
    /// The address bound (the port chosen when 0 was asked).
    pub addr: SocketAddr,
    pub tls: bool,
    /// Requests refused for a bad signature, a stale timestamp or a
    /// replayed nonce.
    pub rejected: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    webhook: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

struct Conn {
    shared: Arc<Shared>,
    verifier: Arc<Verifier>,
    rejected: Arc<AtomicU64>,
    peer: SocketAddr,
}

impl Server {
    /// Binds and starts serving.
    pub fn start(cfg: Listen, shared: Arc<Shared>) -> io::Result<Server> {
        let listener = TcpListener::bind(cfg.addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let rejected = Arc::new(AtomicU64::new(0));
        let tls = cfg.tls.is_some();
        let url = url(tls, addr);
        let webhook = match cfg.webhook {
            Some(hook) => {
                let (sh, u) = (shared.clone(), url.clone());
                Some(
                    std::thread::Builder::new()
                        .name("abm-webhook".into())
                        .spawn(move || super::webhook::run(hook, u, sh))?,
                )
            }
            None => None,
        };
        let verifier = Arc::new(Verifier::new(cfg.secret));
        let (sh, rej) = (shared.clone(), rejected.clone());
        let thread = std::thread::Builder::new()
            .name("abm-approvals".into())
            .spawn(move || serve(listener, cfg.tls, sh, verifier, rej))?;
        Ok(Server {
            addr,
            tls,
            rejected,
            thread: Some(thread),
            webhook,
            shared,
        })
    }

    /// The URL clients use.
    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    /// Stops accepting (the shared stop flag) and waits for the thread.
    pub fn stop(mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in [self.thread.take(), self.webhook.take()]
            .into_iter()
            .flatten()
        {
            let _ = t.join();
        }
    }
}

fn url(tls: bool, addr: SocketAddr) -> String {
    format!("{}://{addr}", if tls { "https" } else { "http" })
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shared: Arc<Shared>,
    verifier: Arc<Verifier>,
    rejected: Arc<AtomicU64>,
) {
    let inflight = Arc::new(AtomicUsize::new(0));
    while !shared.stop.load(Ordering::Relaxed) {
        if inflight.load(Ordering::Relaxed) >= MAX_INFLIGHT {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match listener.accept() {
            Ok((s, peer)) => {
                let conn = Conn {
                    shared: shared.clone(),
                    verifier: verifier.clone(),
                    rejected: rejected.clone(),
                    peer,
                };
                let (tls, n) = (tls.clone(), inflight.clone());
                n.fetch_add(1, Ordering::Relaxed);
                let spawned = std::thread::Builder::new()
                    .name("abm-approval".into())
                    .spawn(move || {
                        if let Err(e) = conn.serve(s, tls) {
                            tracing::debug!("remote approvals: {peer}: {e}");
                        }
                        n.fetch_sub(1, Ordering::Relaxed);
                    });
                if let Err(e) = spawned {
                    inflight.fetch_sub(1, Ordering::Relaxed);
                    tracing::warn!("remote approvals: cannot start a thread: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_readable(listener.as_raw_fd()),
            Err(e) => {
                tracing::warn!("remote approvals: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

impl Conn {
    fn serve(&self, s: TcpStream, tls: Option<Arc<rustls::ServerConfig>>) -> io::Result<()> {
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        match tls {
            None => self.exchange(s),
            Some(cfg) => {
                let conn = rustls::ServerConnection::new(cfg).map_err(io::Error::other)?;
                let mut st = rustls::StreamOwned::new(conn, s);
                self.exchange(&mut st)?;
                st.conn.send_close_notify();
                st.flush()
            }
        }
    }

    fn exchange<S: Read + Write>(&self, mut s: S) -> io::Result<()> {
        let (code, body) = match wire::read_request(&mut s) {
            Ok(req) => self.respond(&req),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => (
                400,
                json!({ "ok": false, "error": format!("bad request: {e}") }),
            ),
            Err(e) => return Err(e),
        };
        wire::write_response(&mut s, code, body.to_string().as_bytes())
    }

    fn respond(&self, req: &wire::Request) -> (u16, Value) {
        if let Err(why) = self.verifier.check(req, now_secs()) {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "remote approvals: refused {} {} from {}: {}",
                req.method,
                req.path,
                self.peer,
                why.message()
            );
            let kind = match why {
                Rejected::BadSignature => "bad_signature",
                Rejected::Stale => "stale",
                Rejected::Replayed => "replayed",
            };
            return (
                401,
                json!({ "ok": false, "error": why.message(), "rejected": kind }),
            );
        }
        let sh = &self.shared;
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/pending") => (
                200,
                json!({ "ok": true, "run": sh.run_id, "pending": sh.pending_list() }),
            ),
            ("POST", "/answer") => {
                let v: Value = match serde_json::from_slice(&req.body) {
                    Ok(v) => v,
                    Err(e) => {
                        return (
                            400,
                            json!({ "ok": false, "error": format!("bad JSON: {e}") }),
                        )
                    }
                };
                let approve = match v["answer"].as_str() {
                    Some("approve") => true,
                    Some("deny") => false,
                    _ => {
                        return (
                            400,
                            json!({ "ok": false, "error": "answer must be \"approve\" or \"deny\"" }),
                        )
                    }
                };
                let Some(id) = v["id"].as_u64() else {
                    return (400, json!({ "ok": false, "error": "missing request id" }));
                };
                match sh.decide(id, approve, &format!("remote:{}", self.peer.ip())) {
                    Ok(()) => (200, json!({ "ok": true, "run": sh.run_id, "id": id })),
                    Err(e) => (409, json!({ "ok": false, "error": e.to_string() })),
                }
            }
            (_, "/pending" | "/answer") => (
                405,
                json!({ "ok": false, "error": "GET /pending, POST /answer" }),
            ),
            _ => (
                404,
                json!({ "ok": false, "error": "GET /pending, POST /answer" }),
            ),
        }
    }
}
