//! Remote approvals for the daemon's enforcing targets: the signed HTTP(S)
//! endpoint of `abm run --approvals-listen` ([`crate::enforce::remote`]),
//! configured by the `[approvals]` table, answering the `confirm`
//! requests of the BPF LSM backend as the control socket does
//! (docs/daemon.md#remote-approvals).
use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::enforce::{
    lsm::Approvals,
    notify::Notifier,
    remote::{server::Server, ListenArgs},
    Shared,
};

/// `[approvals]`: the keys of `abm run`'s `--approvals-*` flags.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteApprovals {
    /// `--approvals-listen`: ADDR:PORT (plain HTTP only on loopback).
    pub listen: SocketAddr,
    /// `--approvals-secret`: the shared secret's file (mode 0600).
    pub secret: PathBuf,
    /// `--approvals-cert`, `--approvals-key`: PEM files for TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// `--approvals-webhook`: each new question POSTed there, signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// `--approvals-webhook-cacert`: PEM to trust for an `https://` webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_cacert: Option<PathBuf>,
}

impl RemoteApprovals {
    fn args(&self) -> ListenArgs {
        ListenArgs {
            approvals_listen: Some(self.listen),
            approvals_secret: Some(self.secret.clone()),
            approvals_cert: self.cert.clone(),
            approvals_key: self.key.clone(),
            approvals_webhook: self.webhook.clone(),
            approvals_webhook_cacert: self.webhook_cacert.clone(),
        }
    }

    /// Checks the table as `abm run` checks its flags: the secret (and
    /// the certificate and key) readable and private, TLS off loopback.
    pub fn check(&self) -> anyhow::Result<()> {
        self.args().load(true).map(|_| ())?;
        if self.cert.is_some() != self.key.is_some() {
            anyhow::bail!("[approvals]: give both cert and key (PEM), or neither");
        }
        Ok(())
    }
}

/// The endpoint, serving from the daemon's start; its questions are the
/// BPF LSM backend's once a target enforces.
pub(super) struct Remote {
    shared: Arc<Shared>,
    server: Server,
}

impl Remote {
    pub(super) fn start(cfg: &RemoteApprovals, socket: PathBuf) -> anyhow::Result<Remote> {
        cfg.check()?;
        let listen = cfg
            .args()
            .load(true)?
            .context("[approvals]: listen is missing")?;
        let shared = Arc::new(Shared::new(
            "daemon".into(),
            "daemon".into(),
            socket,
            Arc::new(Notifier::new(false)),
        ));
        let server = Server::start(listen, shared.clone())
            .with_context(|| format!("[approvals] listen {}: cannot listen there", cfg.listen))?;
        tracing::info!(
            "remote approvals at {} (GET /pending, POST /answer, signed)",
            server.url()
        );
        Ok(Remote { shared, server })
    }

    /// The URL clients use (`abm approve --remote URL`).
    pub(super) fn url(&self) -> String {
        self.server.url()
    }

    /// The BPF LSM backend started: its requests are the endpoint's.
    pub(super) fn serve(&self, approvals: Approvals) {
        self.shared.set_requests(crate::enforce::lsm::requests(
            approvals,
            self.shared.clone(),
        ));
    }

    pub(super) fn stop(self) {
        self.server.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::{os::unix::fs::PermissionsExt as _, sync::Mutex};

    use serde_json::{json, Value};

    use super::*;
    use crate::enforce::{remote::client, DecideError, Requests};

    /// One waiting request (id 4) of a backend, and the answers given.
    #[derive(Default)]
    struct OneRequest {
        answers: Mutex<Vec<(u64, bool, String)>>,
    }

    impl Requests for OneRequest {
        fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
            if id != 4 {
                return Err(DecideError::NoRequest {
                    id,
                    run: "daemon".into(),
                });
            }
            self.answers
                .lock()
                .unwrap()
                .push((id, approve, by.to_owned()));
            Ok(())
        }

        fn pending_list(&self) -> Vec<Value> {
            vec![json!({"id": 4, "op": "unlink", "path": "/ws/confirm/x", "rule": "ct.confirm"})]
        }
    }

    #[test]
    fn the_daemon_serves_remote_approvals_of_its_requests() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "0123456789abcdef-daemon\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cfg: RemoteApprovals = toml::from_str(&format!(
            "listen = \"127.0.0.1:0\"\nsecret = {:?}\n",
            secret.display().to_string()
        ))
        .unwrap();
        let remote = Remote::start(&cfg, dir.path().join("daemon.sock")).unwrap();
        let c = client::Remote::to(
            "--remote",
            &remote.url(),
            b"0123456789abcdef-daemon".to_vec(),
            None,
            "--cacert",
        )
        .unwrap();
        // Before a target enforces: nothing waits.
        let v = c.call("GET", "/pending", b"").unwrap();
        assert_eq!(v["pending"], json!([]));
        let req = Arc::new(OneRequest::default());
        remote.shared.set_requests(req.clone());
        let v = c.call("GET", "/pending", b"").unwrap();
        assert_eq!(v["run"], "daemon");
        assert_eq!(v["pending"][0]["id"], 4);
        let v = c
            .call("POST", "/answer", br#"{"id":4,"answer":"deny"}"#)
            .unwrap();
        assert_eq!(v["id"], 4);
        c.call("POST", "/answer", br#"{"id":4,"answer":"approve"}"#)
            .unwrap();
        let e = c
            .call("POST", "/answer", br#"{"id":9,"answer":"approve"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("no pending request 9"), "{e}");
        // Unsigned: refused, answers nothing.
        let wrong = client::Remote::to(
            "--remote",
            &remote.url(),
            b"another secret, 16+ bytes".to_vec(),
            None,
            "--cacert",
        )
        .unwrap();
        assert!(wrong
            .call("POST", "/answer", br#"{"id":4,"answer":"approve"}"#)
            .is_err());
        let got = req.answers.lock().unwrap().clone();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(!got[0].1 && got[1].1);
        assert!(got[0].2.starts_with("remote:127.0.0.1"), "{got:?}");
        remote.stop();
    }

    #[test]
    fn a_secret_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "0123456789abcdef-daemon\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let cfg = RemoteApprovals {
            listen: "127.0.0.1:0".parse().unwrap(),
            secret,
            cert: None,
            key: None,
            webhook: None,
            webhook_cacert: None,
        };
        let e = cfg.check().unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
    }
}
