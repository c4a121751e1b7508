//! Requests to the daemon: control socket calls (`abm status`, `abm watch`,
//! `abm tail`, `reload`) and policy reloads (SIGHUP).
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::{
    config::TargetSpec,
    short,
    target::{State, Target},
    Daemon,
};
use crate::{core::rfc3339, kernel::Ring, pipeline::load_policy, trace::note::Note};

impl Daemon {
    /// SIGHUP: loads the policy files again; all targets switch at once, or
    /// none does.
    pub(super) fn reload(&mut self) -> Value {
        match load_policy(&self.cfg.policy).and_then(|p| self.check_enforceable(&p).map(|()| p)) {
            Ok(p) => {
                let digest = p.digest();
                self.reload_error = None;
                self.next_policy = Some((p, Instant::now()));
                if let Some(m) = &self.metrics {
                    m.reloaded(true, &digest);
                }
                json!({ "ok": true, "policy_digest": digest })
            }
            Err(e) => {
                let msg = format!("{e:#}");
                tracing::error!(
                    "policy reload failed, keeping policy {}: {msg}",
                    short(&self.policy.digest())
                );
                self.reload_error = Some(msg.clone());
                if let Some(m) = &self.metrics {
                    m.reloaded(false, &self.policy.digest());
                }
                json!({ "ok": false, "error": msg, "policy_digest": self.policy.digest() })
            }
        }
    }

    /// Puts a reloaded policy in force for every target at once, after the
    /// ordering window has released what was done before the reload.
    pub(super) fn switch_policy(&mut self) {
        let window = Duration::from_nanos(crate::pipeline::order::REORDER_WINDOW_NS)
            + Duration::from_millis(10);
        let due = matches!(&self.next_policy, Some((_, at)) if at.elapsed() >= window);
        let Some((p, _)) = self.next_policy.take_if(|_| due) else {
            return;
        };
        let digest = p.digest();
        let changed = digest != self.policy.digest();
        self.policy = p;
        self.policy_loaded = rfc3339(SystemTime::now());
        self.recompile_enforcement();
        for t in self.targets.values_mut() {
            t.pipeline.policy = self.policy.clone();
            if t.is_live() {
                let note = Note::PolicyReloaded {
                    policy_digest: digest.clone(),
                    changed,
                };
                if let Err(e) = t.note(&note) {
                    tracing::error!("target {}: {e:#}", t.name());
                }
            }
        }
        tracing::info!(
            "policy reloaded: {}{}",
            short(&digest),
            if changed { "" } else { " (unchanged)" }
        );
    }

    /// A control socket request.
    pub(super) fn call(&mut self, req: &Value, uid: u32, ring: &mut Ring) -> Value {
        match req["op"].as_str().unwrap_or("") {
            "status" => self.status(),
            "reload" => self.reload(),
            "watch_add" => {
                let spec: TargetSpec = match serde_json::from_value(req["target"].clone()) {
                    Ok(s) => s,
                    Err(e) => return json!({ "ok": false, "error": format!("bad target: {e}") }),
                };
                if spec.pod_uid.is_some() {
                    return json!({ "ok": false, "error": "pod targets come from the Kubernetes pod list" });
                }
                match self.add_target(spec) {
                    Ok(id) => json!({ "ok": true, "target": self.targets[&id].status() }),
                    Err(e) => json!({ "ok": false, "error": format!("{e:#}") }),
                }
            }
            "watch_remove" => {
                let name = req["name"].as_str().unwrap_or("");
                let Some(id) = self.id_of(name) else {
                    return json!({ "ok": false, "error": format!("no watched target named {name:?}") });
                };
                match self.end_target(id, State::Removed, Note::TargetRemoved, &mut Some(ring)) {
                    Ok(()) => {
                        self.prune();
                        json!({ "ok": true, "target": self.targets[&id].status() })
                    }
                    Err(e) => json!({ "ok": false, "error": format!("{e:#}") }),
                }
            }
            "pending" => {
                json!({ "ok": true, "run": "daemon", "pending": self.pending_requests() })
            }
            "approve" | "deny" => self.answer(req, uid),
            op => {
                json!({ "ok": false, "error": format!("unknown op {op:?} (status, watch_add, watch_remove, reload, tail, pending)") })
            }
        }
    }

    pub(super) fn status(&self) -> Value {
        let uptime = self.started.elapsed().as_secs_f64();
        json!({
            "ok": true,
            "daemon": {
                "pid": std::process::id(),
                "version": env!("CARGO_PKG_VERSION"),
                "started": self.started_wall,
                "uptime_secs": (uptime * 10.0).round() / 10.0,
                "config": self.config_path,
                "socket": self.cfg.socket,
                "trace_dir": self.cfg.trace_dir,
                "backends": if self.lsm.is_some() { json!(["tracepoint", "lsm"]) } else { json!(["tracepoint"]) },
                "ringbuf_kib": self.cfg.ringbuf_kib,
                "cgroup_root": self.hier.as_ref().map(|h| h.mount.clone()),
                "stdout": self.stdout,
                "policy": {
                    "digest": self.policy.digest(),
                    "files": self.cfg.policy,
                    "loaded": self.policy_loaded,
                    "last_reload_error": self.reload_error,
                },
                "losses": self.losses.total,
                "unattributed": self.attr.unattributed,
                "decode_errors": self.intake.decode_errors,
                "subscribers": self.tail.receiver_count(),
                "kubernetes": self.cfg.kubernetes.as_ref().map(|k| json!({
                    "pod_selector": k.pod_selector,
                    "pods_file": k.pods_file,
                })),
            },
            "targets": self.targets.values().map(Target::status).collect::<Vec<_>>(),
        })
    }
}
