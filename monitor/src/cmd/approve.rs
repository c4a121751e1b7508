//! `abm pending`, `abm approve ID`, `abm deny ID`: clients of an enforcing
//! run's control socket, or of its approvals endpoint (`--remote`).

use std::path::PathBuf;

use anyhow::bail;
use serde_json::{json, Value};

use crate::enforce::{control::request, default_socket_dir};

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
    pub remote: crate::enforce::remote::client::ClientArgs,
}

impl Target {
    fn sockets(&self) -> anyhow::Result<Vec<PathBuf>> {
        if let Some(s) = &self.socket {
            return Ok(vec![s.clone()]);
        }
        if let Some(r) = &self.run {
            return Ok(vec![default_socket_dir().join(format!("{r}.sock"))]);
        }
        Ok(crate::enforce::live_sockets())
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
    if let Some(r) = crate::enforce::remote::client::Remote::new(&a.target.remote)? {
        let v = r.call("GET", "/pending", b"")?;
        return print_pending(&remote_pending(&v), a.json, "");
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

/// The requests of a remote endpoint's `/pending` reply, each naming the
/// run it waits in: the reply names it once (a daemon's requests name
/// their target instead).
fn remote_pending(reply: &Value) -> Vec<Value> {
    let mut all = reply["pending"].as_array().cloned().unwrap_or_default();
    for p in &mut all {
        if p.get("run").is_none() && p.is_object() {
            p["run"] = reply["run"].clone();
        }
    }
    all
}

/// Prints the pending requests; `none`: what to add when there are none.
fn print_pending(all: &[Value], json: bool, none: &str) -> anyhow::Result<i32> {
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&json!(all))?)?;
    } else if all.is_empty() {
        crate::outln!("no pending requests{none}")?;
    } else {
        for p in all {
            crate::outln!(
                "{:<4} {}  rule {}: {}  (run {}, waiting {:.0}s, denied in {:.0}s)",
                p["id"],
                p["what"].as_str().unwrap_or(""),
                p["rule"].as_str().unwrap_or(""),
                p["reason"].as_str().unwrap_or(""),
                p["run"].as_str().unwrap_or(""),
                p["waiting_secs"].as_f64().unwrap_or(0.0),
                p["deny_in_secs"].as_f64().unwrap_or(0.0),
            )?;
        }
    }
    Ok(0)
}

/// `abm approve ID` / `abm deny ID`.
pub fn decide(a: DecideArgs, approve: bool) -> anyhow::Result<i32> {
    let op = if approve { "approve" } else { "deny" };
    if let Some(r) = crate::enforce::remote::client::Remote::new(&a.target.remote)? {
        let body = json!({ "id": a.id, "answer": op }).to_string();
        let v = r.call("POST", "/answer", body.as_bytes())?;
        crate::outln!(
            "{} request {} of run {} (via {})",
            if approve { "approved" } else { "denied" },
            a.id,
            v["run"].as_str().unwrap_or("?"),
            r.url()
        )?;
        return Ok(0);
    }
    let socks = a.target.sockets()?;
    if socks.is_empty() {
        bail!(
            "no enforcing run found in {} (use --socket PATH)",
            default_socket_dir().display()
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
        crate::outln!(
            "{} request {} of run {}",
            if approve { "approved" } else { "denied" },
            a.id,
            v["run"].as_str().unwrap_or("?")
        )?;
        Ok(0)
    } else {
        bail!("{}", v["error"].as_str().unwrap_or("refused"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_requests_name_the_run_of_the_reply() {
        let reply = json!({
            "ok": true,
            "run": "daemon",
            "pending": [
                {"id": 6, "rule": "ct.confirm", "target": "c1"},
                {"id": 7, "run": "r-42"},
            ],
        });
        let all = remote_pending(&reply);
        assert_eq!(all[0]["run"], "daemon");
        assert_eq!(all[0]["target"], "c1");
        assert_eq!(all[1]["run"], "r-42");
        assert!(remote_pending(&json!({"ok": true})).is_empty());
    }
}
