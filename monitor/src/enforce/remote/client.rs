//! The client side of remote approvals: `abm pending|approve|deny
//! --remote URL --secret FILE [--cacert PEM]`.
use std::{
    io,
    net::{TcpStream, ToSocketAddrs as _},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use anyhow::{bail, Context as _};
use rustls::pki_types::{pem::PemObject as _, CertificateDer, ServerName};
use serde_json::Value;

use super::{now_secs, provider, read_secret, sign, wire, H_NONCE, H_SIGNATURE, H_TIMESTAMP};

/// Which remote endpoint a command talks to.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClientArgs {
    /// Remote approvals endpoint of a run (`http://127.0.0.1:PORT` or
    /// `https://HOST:PORT`, as `abm run --approvals-listen` printed it),
    /// instead of the control socket.
    #[arg(long, value_name = "URL", conflicts_with_all = ["socket", "run"], requires = "secret")]
    pub remote: Option<String>,
    /// The shared secret file of the endpoint (mode 0600).
    #[arg(long, value_name = "FILE", requires = "remote")]
    pub secret: Option<PathBuf>,
    /// PEM certificate(s) to trust for an `https://` endpoint (its own
    /// certificate or the CA that signed it).
    #[arg(long, value_name = "PEM", requires = "remote")]
    pub cacert: Option<PathBuf>,
}

/// A remote endpoint, ready to send signed requests.
pub struct Remote {
    host: String,
    port: u16,
    path: String,
    url: String,
    secret: Vec<u8>,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// Limit of the connection and of each read and write.
    timeout: Duration,
}

impl Remote {
    /// From `--remote`, `--secret` and `--cacert`.
    pub fn new(a: &ClientArgs) -> anyhow::Result<Option<Remote>> {
        let Some(url) = &a.remote else {
            return Ok(None);
        };
        let Some(secret) = &a.secret else {
            bail!("--remote needs --secret FILE (the endpoint's shared secret)");
        };
        let secret = read_secret("--secret", secret)?;
        Remote::to("--remote", url, secret, a.cacert.as_deref(), "--cacert").map(Some)
    }

    /// The endpoint at `url` (named `flag` in errors), signing with
    /// `secret`, trusting the certificates in `cacert` (named `ca_flag`)
    /// for `https://`.
    pub fn to(
        flag: &str,
        url: &str,
        secret: Vec<u8>,
        cacert: Option<&Path>,
        ca_flag: &str,
    ) -> anyhow::Result<Remote> {
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            bail!("{flag} {url}: the URL must start with http:// or https://");
        };
        let (hostport, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse()
                    .with_context(|| format!("{flag} {url}: bad port {p:?}"))?,
            ),
            _ => bail!("{flag} {url}: give the port, as in http://127.0.0.1:8470"),
        };
        let tls = match (https, cacert) {
            (false, _) => None,
            (true, None) => {
                bail!("{flag} {url}: https needs {ca_flag} PEM (the endpoint's certificate or its CA)")
            }
            (true, Some(ca)) => {
                let mut roots = rustls::RootCertStore::empty();
                let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(ca)
                    .and_then(|i| i.collect())
                    .map_err(|e| anyhow::anyhow!("{ca_flag} {}: {e}", ca.display()))?;
                if certs.is_empty() {
                    bail!("{ca_flag} {}: no CERTIFICATE block in it", ca.display());
                }
                for c in certs {
                    roots
                        .add(c)
                        .with_context(|| format!("{ca_flag} {}", ca.display()))?;
                }
                let cfg = rustls::ClientConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Some(Arc::new(cfg))
            }
        };
        Ok(Remote {
            host,
            port,
            path: path.to_owned(),
            url: url.to_owned(),
            secret,
            tls,
            timeout: Duration::from_secs(10),
        })
    }

    /// The same endpoint with another limit for the connection and each
    /// read and write.
    pub fn with_timeout(mut self, t: Duration) -> Remote {
        self.timeout = t;
        self
    }

    /// Whether the endpoint is reached over TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether the host is a loopback address (or `localhost`).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// The path of the URL (`/` when it has none).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The URL, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A request signed now with a fresh nonce.
    pub fn signed(&self, method: &str, path: &str, body: &[u8]) -> anyhow::Result<wire::Request> {
        let ts = now_secs();
        let mut n = [0u8; 16];
        fill_random(&mut n)?;
        let nonce = hex::encode(n);
        let sig = sign(&self.secret, method, path, ts, &nonce, body);
        Ok(wire::Request {
            method: method.into(),
            path: path.into(),
            headers: vec![
                (H_TIMESTAMP.into(), ts.to_string()),
                (H_NONCE.into(), nonce),
                (H_SIGNATURE.into(), sig),
            ],
            body: body.to_vec(),
        })
    }

    /// Sends a request as it is (signed or not); the status and the JSON
    /// answer.
    pub fn send(&self, req: &wire::Request) -> anyhow::Result<(u16, Value)> {
        let ctx = || format!("remote approvals {}", self.url);
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(ctx)?
            .next()
            .with_context(|| format!("{}: no address", ctx()))?;
        let s = TcpStream::connect_timeout(&addr, self.timeout).with_context(ctx)?;
        s.set_read_timeout(Some(self.timeout))?;
        s.set_write_timeout(Some(self.timeout))?;
        let host = format!("{}:{}", self.host, self.port);
        let (code, body) = match &self.tls {
            None => exchange(s, req, &host),
            Some(cfg) => {
                let name = ServerName::try_from(self.host.clone())
                    .with_context(|| format!("{}: bad host name", ctx()))?;
                let conn = rustls::ClientConnection::new(cfg.clone(), name).with_context(ctx)?;
                exchange(rustls::StreamOwned::new(conn, s), req, &host)
            }
        }
        .with_context(ctx)?;
        let v = serde_json::from_slice(&body).with_context(|| {
            format!(
                "{}: answer {code} is not JSON: {:?}",
                ctx(),
                String::from_utf8_lossy(&body)
            )
        })?;
        Ok((code, v))
    }

    /// Signs and sends; an error unless the endpoint said ok.
    pub fn call(&self, method: &str, path: &str, body: &[u8]) -> anyhow::Result<Value> {
        let (code, v) = self.send(&self.signed(method, path, body)?)?;
        if v["ok"] != true {
            bail!(
                "{} answered {code}: {}",
                self.url,
                v["error"].as_str().unwrap_or("refused")
            );
        }
        Ok(v)
    }
}

fn exchange<S: io::Read + io::Write>(
    mut s: S,
    req: &wire::Request,
    host: &str,
) -> io::Result<(u16, Vec<u8>)> {
    wire::write_request(&mut s, req, host)?;
    s.flush()?;
    wire::read_response(&mut s)
}

/// Random bytes from the TLS provider's generator (the kernel's).
fn fill_random(buf: &mut [u8]) -> anyhow::Result<()> {
    provider()
        .secure_random
        .fill(buf)
        .map_err(|_| anyhow::anyhow!("no random numbers for a nonce"))
}
