//! Remote approvals: an HTTP endpoint of an enforcing `abm run` through
//! which a person or a service elsewhere answers `confirm` questions, and
//! `abm pending|approve|deny --remote URL`, its client (docs/agents.md,
//! "Remote approvals").
//!
//! ```text
//! GET  /pending                        -> {"ok":true,"run":"...","pending":[{...}]}
//! POST /answer {"id":3,"answer":"approve"|"deny"}
//!                                      -> {"ok":true,"run":"...","id":3} | {"ok":false,"error":"..."}
//! ```
//!
//! Every request carries `abm-timestamp` (unix seconds), `abm-nonce` and
//! `abm-signature`: hex HMAC-SHA256, keyed with the shared secret, of
//! [`canonical`] (method, path, timestamp, nonce, SHA-256 of the body).
//! A bad or missing signature gets 401 and answers nothing; a timestamp
//! more than [`WINDOW_SECS`] from abm's clock or a nonce already used in
//! that window gets 401 too (replay). Plain HTTP only on a loopback
//! address; anywhere else the endpoint needs a certificate and key and
//! speaks TLS. A question nobody answers is still denied at
//! `--confirm-timeout`.
//!
//! - [`wire`]: HTTP/1.1 requests and answers, one per connection.
//! - [`server`]: the endpoint, a thread next to the control socket's.
//! - [`client`]: the `--remote` side of `abm pending|approve|deny`.
//! - `webhook`: `--approvals-webhook`, each new question POSTed to a
//!   service, signed the same way.
use std::{
    collections::HashMap,
    fs,
    net::SocketAddr,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use hmac::{Hmac, Mac as _};
use rustls::pki_types::{pem::PemObject as _, CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};

pub mod client;
pub(crate) mod server;
mod webhook;
pub mod wire;

/// How far a request's timestamp may be from abm's clock, and how long a
/// nonce is remembered (seconds).
pub const WINDOW_SECS: u64 = 60;

/// Header names of the signature.
pub const H_TIMESTAMP: &str = "abm-timestamp";
pub const H_NONCE: &str = "abm-nonce";
pub const H_SIGNATURE: &str = "abm-signature";

/// Shortest secret accepted (bytes).
const MIN_SECRET: usize = 16;

/// Remote approval options of `abm run --enforce`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ListenArgs {
    /// Serve remote approvals (`GET /pending`, `POST /answer`, signed with
    /// --approvals-secret) on ADDR:PORT. Plain HTTP only on a loopback
    /// address; any other address needs --approvals-cert and
    /// --approvals-key (TLS). Port 0 picks a free port (printed at start).
    #[arg(long, value_name = "ADDR:PORT", requires = "approvals_secret")]
    pub approvals_listen: Option<SocketAddr>,
    /// File holding the shared secret that signs every remote approval
    /// request (at least 16 bytes; must not be readable by group or
    /// others: `chmod 600 FILE`).
    #[arg(long, value_name = "FILE", requires = "approvals_listen")]
    pub approvals_secret: Option<PathBuf>,
    /// PEM certificate chain of the remote approvals endpoint (TLS).
    #[arg(
        long,
        value_name = "PEM",
        requires_all = ["approvals_key", "approvals_listen"]
    )]
    pub approvals_cert: Option<PathBuf>,
    /// PEM private key of --approvals-cert (mode 0600).
    #[arg(long, value_name = "PEM", requires = "approvals_cert")]
    pub approvals_key: Option<PathBuf>,
    /// Also POST each new question, signed with --approvals-secret, to
    /// this URL (`https://`, or `http://` to a loopback address); the
    /// service answers through the endpoint (`POST /answer`).
    #[arg(long, value_name = "URL", requires = "approvals_listen")]
    pub approvals_webhook: Option<String>,
    /// PEM certificate(s) to trust for an `https://` webhook.
    #[arg(long, value_name = "PEM", requires = "approvals_webhook")]
    pub approvals_webhook_cacert: Option<PathBuf>,
}

/// Errors of the remote approval settings, each naming the flag or file
/// and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{flag} {}: cannot read it: {error}", path.display())]
    Read {
        flag: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{flag} {}: mode {mode:04o} lets other users read it; run `chmod 600 {}`", path.display(), path.display())]
    Mode {
        flag: &'static str,
        path: PathBuf,
        mode: u32,
    },
    #[error("{flag} {}: the secret is {len} bytes, at least {MIN_SECRET} are needed (e.g. `head -c 32 /dev/urandom | base64 > FILE`)", path.display())]
    ShortSecret {
        flag: &'static str,
        path: PathBuf,
        len: usize,
    },
    #[error("--approvals-listen {0}: not a loopback address, so approvals would leave the host in clear text; give --approvals-cert and --approvals-key (PEM) to serve them over TLS")]
    NeedsTls(SocketAddr),
    #[error("--approvals-listen needs --enforce (there is nothing to approve without it)")]
    NeedsEnforce,
    #[error("{flag} {}: {what}", path.display())]
    Pem {
        flag: &'static str,
        path: PathBuf,
        what: String,
    },
    #[error("TLS settings: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0:#}")]
    Webhook(anyhow::Error),
    #[error("--approvals-webhook {0}: not a loopback address, so questions would leave the host in clear text; use an https:// URL (and --approvals-webhook-cacert)")]
    WebhookNeedsTls(String),
}

/// The endpoint's settings, read and checked before the command starts.
pub(crate) struct Listen {
    pub addr: SocketAddr,
    pub secret: Vec<u8>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub webhook: Option<client::Remote>,
}

impl ListenArgs {
    /// Reads the secret (and the certificate and key) and checks the
    /// rules; `None` when no endpoint was asked for.
    pub(crate) fn load(&self, enforce: bool) -> Result<Option<Listen>, SetupError> {
        let Some(addr) = self.approvals_listen else {
            return Ok(None);
        };
        if !enforce {
            return Err(SetupError::NeedsEnforce);
        }
        let secret = match &self.approvals_secret {
            Some(p) => read_secret("--approvals-secret", p)?,
            None => unreachable!("clap: --approvals-listen requires --approvals-secret"),
        };
        let tls = match (&self.approvals_cert, &self.approvals_key) {
            (Some(c), Some(k)) => Some(server_tls(c, k)?),
            _ if addr.ip().is_loopback() => None,
            _ => return Err(SetupError::NeedsTls(addr)),
        };
        let webhook = match &self.approvals_webhook {
            Some(url) => {
                let hook = client::Remote::to(
                    "--approvals-webhook",
                    url,
                    secret.clone(),
                    self.approvals_webhook_cacert.as_deref(),
                    "--approvals-webhook-cacert",
                )
                .map_err(SetupError::Webhook)?
                // The run's end waits for a delivery under way.
                .with_timeout(std::time::Duration::from_secs(3));
                if !hook.is_tls() && !hook.is_loopback() {
                    return Err(SetupError::WebhookNeedsTls(url.clone()));
                }
                Some(hook)
            }
            None => None,
        };
        Ok(Some(Listen {
            addr,
            secret,
            tls,
            webhook,
        }))
    }
}

/// Refuses a file group or others may read or write.
fn check_private(flag: &'static str, path: &Path) -> Result<(), SetupError> {
    let m = fs::metadata(path).map_err(|error| SetupError::Read {
        flag,
        path: path.to_path_buf(),
        error,
    })?;
    let mode = m.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SetupError::Mode {
            flag,
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Reads a shared secret file (surrounding whitespace is not part of it).
pub fn read_secret(flag: &'static str, path: &Path) -> Result<Vec<u8>, SetupError> {
    check_private(flag, path)?;
    let raw = fs::read(path).map_err(|error| SetupError::Read {
        flag,
        path: path.to_path_buf(),
        error,
    })?;
    let s = raw.trim_ascii().to_vec();
    if s.len() < MIN_SECRET {
        return Err(SetupError::ShortSecret {
            flag,
            path: path.to_path_buf(),
            len: s.len(),
        });
    }
    Ok(s)
}

#[expect(
    deprecated,
    reason = "the ring provider has no post-quantum key exchange (aws-lc-rs has, but needs cmake and a long C build); classical ECDHE is what the endpoint offers"
)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_tls(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, SetupError> {
    let pem = |flag, path: &Path, what: String| SetupError::Pem {
        flag,
        path: path.to_path_buf(),
        what,
    };
    check_private("--approvals-key", key)?;
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            pem(
                "--approvals-cert",
                cert,
                format!("not a PEM certificate chain: {e}"),
            )
        })?;
    if certs.is_empty() {
        return Err(pem(
            "--approvals-cert",
            cert,
            "no CERTIFICATE block in it".into(),
        ));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        pem(
            "--approvals-key",
            key,
            format!("not a PEM private key: {e}"),
        )
    })?;
    let cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)?;
    Ok(Arc::new(cfg))
}

/// What a request's signature covers.
pub fn canonical(method: &str, path: &str, ts: u64, nonce: &str, body: &[u8]) -> String {
    format!(
        "abm-approvals-v1\n{method}\n{path}\n{ts}\n{nonce}\n{}",
        hex::encode(Sha256::digest(body))
    )
}

fn mac(secret: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as hmac::Mac>::new_from_slice(secret).expect("HMAC takes keys of any length")
}

/// The hex signature of a request.
pub fn sign(secret: &[u8], method: &str, path: &str, ts: u64, nonce: &str, body: &[u8]) -> String {
    let mut m = mac(secret);
    m.update(canonical(method, path, ts, nonce, body).as_bytes());
    hex::encode(m.finalize().into_bytes())
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// No signature headers, or a signature that does not match.
    BadSignature,
    /// A timestamp outside the window.
    Stale,
    /// A nonce already used.
    Replayed,
}

impl Rejected {
    pub fn message(self) -> &'static str {
        match self {
            Rejected::BadSignature => "bad or missing signature",
            Rejected::Stale => "timestamp outside the 60 s window (check the clocks)",
            Rejected::Replayed => "nonce already used (replayed request)",
        }
    }
}

/// Checks signatures and remembers the nonces of the window.
pub(crate) struct Verifier {
    secret: Vec<u8>,
    seen: Mutex<HashMap<String, u64>>,
}

impl Verifier {
    pub fn new(secret: Vec<u8>) -> Verifier {
        Verifier {
            secret,
            seen: Mutex::default(),
        }
    }

    /// Lets a request in or says why not. The nonce is spent only by a
    /// request whose signature holds.
    pub fn check(&self, req: &wire::Request, now: u64) -> Result<(), Rejected> {
        let h = |n| req.header(n).ok_or(Rejected::BadSignature);
        let ts: u64 = h(H_TIMESTAMP)?
            .parse()
            .map_err(|_| Rejected::BadSignature)?;
        let nonce = h(H_NONCE)?;
        let sig = hex::decode(h(H_SIGNATURE)?).map_err(|_| Rejected::BadSignature)?;
        if nonce.is_empty() || nonce.len() > 128 {
            return Err(Rejected::BadSignature);
        }
        let mut m = mac(&self.secret);
        m.update(canonical(&req.method, &req.path, ts, nonce, &req.body).as_bytes());
        m.verify_slice(&sig).map_err(|_| Rejected::BadSignature)?;
        if ts.abs_diff(now) > WINDOW_SECS {
            return Err(Rejected::Stale);
        }
        let mut seen = crate::enforce::lock(&self.seen);
        seen.retain(|_, t| t.abs_diff(now) <= WINDOW_SECS);
        if seen.insert(nonce.to_owned(), ts).is_some() {
            return Err(Rejected::Replayed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(secret: &[u8], ts: u64, nonce: &str, body: &[u8]) -> wire::Request {
        let sig = sign(secret, "POST", "/answer", ts, nonce, body);
        wire::Request {
            method: "POST".into(),
            path: "/answer".into(),
            headers: vec![
                (H_TIMESTAMP.into(), ts.to_string()),
                (H_NONCE.into(), nonce.into()),
                (H_SIGNATURE.into(), sig),
            ],
            body: body.to_vec(),
        }
    }

    #[test]
    fn signatures_windows_and_nonces() {
        let key = b"0123456789abcdef0123".to_vec();
        let v = Verifier::new(key.clone());
        let body = br#"{"id":1,"answer":"approve"}"#;
        let r = signed(&key, 1000, "n1", body);
        assert_eq!(v.check(&r, 1000), Ok(()));
        assert_eq!(v.check(&r, 1001), Err(Rejected::Replayed));
        let mut tampered = signed(&key, 1000, "n2", body);
        tampered.body = br#"{"id":2,"answer":"approve"}"#.to_vec();
        assert_eq!(v.check(&tampered, 1000), Err(Rejected::BadSignature));
        // A rejected signature does not spend the nonce.
        assert_eq!(v.check(&signed(&key, 1000, "n2", body), 1000), Ok(()));
        assert_eq!(
            v.check(&signed(b"another secret..", 1000, "n3", body), 1000),
            Err(Rejected::BadSignature)
        );
        assert_eq!(
            v.check(&signed(&key, 1000, "n4", body), 1000 + WINDOW_SECS + 1),
            Err(Rejected::Stale)
        );
        let mut bare = signed(&key, 1000, "n5", body);
        bare.headers.clear();
        assert_eq!(v.check(&bare, 1000), Err(Rejected::BadSignature));
    }

    #[test]
    fn secrets_must_be_private_and_long_enough() {
        let d = std::env::temp_dir().join(format!("abm-remote-secret-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let p = d.join("s");
        fs::write(&p, "0123456789abcdef0123\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_secret("--secret", &p).unwrap_err().to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_secret("--secret", &p).unwrap(),
            b"0123456789abcdef0123"
        );
        fs::write(&p, "short").unwrap();
        let e = read_secret("--secret", &p).unwrap_err().to_string();
        assert!(e.contains("5 bytes"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn clear_text_only_on_loopback() {
        let d = std::env::temp_dir().join(format!("abm-remote-tls-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let p = d.join("s");
        fs::write(&p, "0123456789abcdef0123").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        let args = |addr: &str| ListenArgs {
            approvals_listen: Some(addr.parse().unwrap()),
            approvals_secret: Some(p.clone()),
            ..Default::default()
        };
        assert!(args("127.0.0.1:0")
            .load(true)
            .unwrap()
            .unwrap()
            .tls
            .is_none());
        let e = args("10.1.2.3:8443").load(true).err().unwrap().to_string();
        assert!(e.contains("--approvals-cert"), "{e}");
        let e = args("127.0.0.1:0").load(false).err().unwrap().to_string();
        assert!(e.contains("needs --enforce"), "{e}");
        let hook = |url: &str| ListenArgs {
            approvals_webhook: Some(url.into()),
            ..args("127.0.0.1:0")
        };
        assert!(hook("http://127.0.0.1:9/q").load(true).is_ok());
        let e = hook("http://192.0.2.7:80/q")
            .load(true)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("use an https:// URL"), "{e}");
        let e = hook("https://192.0.2.7:443/q")
            .load(true)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--approvals-webhook-cacert"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }
}
