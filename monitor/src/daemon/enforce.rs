//! Enforcement in the daemon: targets watched with `enforce` are guarded by
//! the BPF LSM backend ([`crate::enforce::lsm`]), which decides in the
//! kernel, so it needs nothing from the target's processes (they are not
//! the daemon's children, which is what the seccomp backend would need).
//!
//! One backend serves every enforcing target: the daemon's policy compiled
//! once into the kernel tables, with the `${workspace}` and `${home}` of
//! the first enforcing target; a later enforcing target with other roots
//! is refused (the tables hold one compiled policy). The kernel applies the
//! rules only to processes of targets listed in `LSM_TARGETS`, so the
//! daemon's other targets are only recorded. Decision records are sorted
//! to the target of their process and attached to its syscall records, as
//! in `abm run`; `confirm` requests are answered through the control
//! socket (`abm approve|deny ID --socket ...`), `preserve` copies go to the
//! daemon's quarantine. Reference: docs/daemon.md#enforcement.
use std::path::PathBuf;

use anyhow::bail;
use serde_json::{json, Value};

use super::{attribute::Attribution, config::TargetSpec, Daemon};
use crate::{
    core::monotonic_ns,
    enforce::lsm::{self, LsmBackend},
    pipeline::{Pipeline, Recorder, Stage},
    policy::Context,
    record::Action,
    trace::{note::Note, Cause, Header, Loss},
};

/// The BPF LSM backend of the daemon.
pub(super) struct Enforcing {
    pub(super) backend: LsmBackend,
    /// The roots the policy is compiled with, and the target that set them.
    ctx: Context,
    by: String,
    quarantine: PathBuf,
    /// Whether new container cgroups (pending) are enforced.
    pub(super) pending: bool,
    /// Start of the window of the next `lsm_decode_error` loss.
    losses_ns: u64,
}

/// The decisions of one enforcing target's processes, attached to its
/// released records. The daemon absorbs the decisions of every target at
/// once ([`Daemon::absorb_decisions`]), before the release.
pub(super) struct TargetDecisions<'a> {
    pub(super) lsm: &'a mut Enforcing,
    pub(super) attr: &'a Attribution,
    pub(super) id: u32,
}

impl Stage for TargetDecisions<'_> {
    fn absorb(&mut self, _: &mut Pipeline, _: &mut Recorder) -> anyhow::Result<()> {
        Ok(())
    }

    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool) {
        let (attr, id) = (self.attr, self.id);
        self.lsm
            .backend
            .fixup_for(acts, force, |a| attr.owner(a.pid, a.cgroup_id) == Some(id));
    }
}

/// The roots a target's policy is judged with (as [`super::target::Target`]).
fn context_of(spec: &TargetSpec) -> Context {
    Context {
        workspace: spec.workspace.clone().unwrap_or_default(),
        home: spec.home.clone().unwrap_or_else(|| PathBuf::from("/root")),
        trace_path: None,
    }
}

fn show(p: &std::path::Path) -> String {
    if p.as_os_str().is_empty() {
        "none".into()
    } else {
        p.display().to_string()
    }
}

impl Daemon {
    /// Checks that `spec` can be enforced here; the first enforcing target
    /// loads and attaches the LSM programs with the policy compiled for
    /// its roots.
    pub(super) fn prepare_enforcement(&mut self, spec: &TargetSpec) -> anyhow::Result<()> {
        if !spec.enforce {
            return Ok(());
        }
        let ctx = context_of(spec);
        if let Some(e) = &self.lsm {
            if e.ctx.workspace != ctx.workspace || e.ctx.home != ctx.home {
                bail!(
                    "target {:?}: enforcement is compiled into the kernel for workspace {} and home {} (target {:?}); \
                     the daemon holds one enforcing policy: give this target the same workspace and home, \
                     or watch it without --enforce",
                    spec.name,
                    show(&e.ctx.workspace),
                    show(&e.ctx.home),
                    e.by
                );
            }
            return Ok(());
        }
        if let Err(why) = lsm::available() {
            bail!(
                "target {:?}: --enforce needs the BPF LSM backend, which does not work on this host: {why}. \
                 The daemon enforces only with BPF LSM (its targets' processes are not its children, \
                 so seccomp cannot guard them); watch the target without --enforce to record it, \
                 or run the daemon on a kernel with BPF LSM (see `abm doctor`, docs/lsm.md)",
                spec.name
            );
        }
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        let qdir = crate::enforce::default_quarantine_root()
            .join(format!("daemon-{stamp}-{}", std::process::id()));
        let quarantine = crate::enforce::preserve::Quarantine::new(
            qdir.clone(),
            format!("daemon-{}", std::process::id()),
            self.cfg.trace_dir.clone(),
            ctx.workspace.clone(),
        );
        let mut backend =
            LsmBackend::start_for(&mut self.probes, &self.policy, &ctx, quarantine, true, &[])
                .map_err(|e| {
                    anyhow::anyhow!("target {:?}: --enforce (BPF LSM backend): {e}", spec.name)
                })?;
        // The reason line on a refused caller's stderr (enforce::notify), as
        // in `abm run`: the kernel stops the caller until it is written.
        backend.set_notify(std::sync::Arc::new(crate::enforce::notify::Notifier::new(
            true,
        )));
        // Remote approvals answer this backend's requests.
        if let Some(r) = &self.remote {
            r.serve(backend.approvals());
        }
        lsm::hold_refused(&mut self.probes).map_err(|e| {
            anyhow::anyhow!("target {:?}: --enforce (BPF LSM backend): {e}", spec.name)
        })?;
        let blocking = backend
            .report()
            .iter()
            .filter(|r| r.index.is_some() && lsm::blocks(r.treatment))
            .count();
        tracing::info!(
            "BPF LSM enforcement ready: hooks {}, {blocking} blocking rules in the kernel, workspace {}, quarantine {}",
            backend.attached.join(", "),
            show(&ctx.workspace),
            qdir.display()
        );
        self.lsm = Some(Enforcing {
            backend,
            ctx,
            by: spec.name.clone(),
            quarantine: qdir,
            pending: false,
            losses_ns: monotonic_ns(),
        });
        Ok(())
    }

    /// An enforcing target is live: the lifeline kills its cgroup (or its
    /// process tree) if the daemon dies without a clean stop.
    pub(super) fn guard(&mut self, id: u32) {
        let (Some(t), Some(l)) = (self.targets.get(&id), self.lifeline.as_mut()) else {
            return;
        };
        if !t.spec.enforce {
            return;
        }
        let sent = match &t.cgroup {
            Some((path, _)) => l.guard_cgroup(id, t.name(), path),
            None => l.guard_pids(id, t.name()),
        };
        match sent {
            Ok(()) => tracing::info!(
                "target {}: enforcing; killed by the lifeline (pid {}) if the daemon dies without a clean stop",
                t.name(),
                l.pid()
            ),
            Err(e) => tracing::error!(
                "target {}: the lifeline is gone ({e}): if the daemon dies, this enforcing target is not killed",
                t.name()
            ),
        }
    }

    /// A target ends: the lifeline forgets it.
    pub(super) fn unguard(&mut self, id: u32) {
        let enforcing = self.targets.get(&id).is_some_and(|t| t.spec.enforce);
        if let (true, Some(l)) = (enforcing, self.lifeline.as_mut()) {
            if let Err(e) = l.release(id) {
                tracing::error!("target {id}: the lifeline is gone: {e}");
            }
        }
    }

    /// Makes the kernel apply the rules to target `id` (`on`), or stop.
    pub(super) fn set_enforced(&mut self, id: u32, on: bool) -> anyhow::Result<()> {
        if self.lsm.is_none() {
            return Ok(());
        }
        lsm::set_target(&mut self.probes, id, on)?;
        Ok(())
    }

    /// The header of an enforcing target's trace: `lsm` among the backends
    /// and, in `extra`, `enforcement` and the compile report under `lsm`.
    pub(super) fn enforcement_header(&self, spec: &TargetSpec, h: &mut Header) {
        let Some(e) = self.lsm.as_ref().filter(|_| spec.enforce) else {
            return;
        };
        h.backends.push("lsm".into());
        h.extra.insert(
            "enforcement".into(),
            json!({
                "backend": "lsm",
                "run_id": "daemon",
                "control_socket": self.cfg.socket.to_string_lossy(),
                "quarantine": e.quarantine.to_string_lossy(),
            }),
        );
        if let (Some(r), Some(v)) = (&self.remote, h.extra.get_mut("enforcement")) {
            v["approvals_url"] = json!(r.url());
        }
        h.extra.insert("lsm".into(), e.backend.header_extra());
    }

    /// Reads the kernel's decision records and the answers given since the
    /// last call: notes go to the trace of their process's target (every
    /// enforcing target when it is not known), undecodable records are
    /// written as `lsm_decode_error` losses to every enforcing target.
    pub(super) fn absorb_decisions(&mut self) -> anyhow::Result<()> {
        let Some(e) = self.lsm.as_mut() else {
            return Ok(());
        };
        let notes = e.backend.absorb();
        let undecodable = e.backend.take_undecodable();
        let window = (e.losses_ns, monotonic_ns());
        if undecodable > 0 {
            e.losses_ns = window.1;
        }
        let enforcing: Vec<u32> = self
            .targets
            .iter()
            .filter(|(_, t)| t.is_live() && t.spec.enforce)
            .map(|(id, _)| *id)
            .collect();
        for note in notes {
            let pid = match &note {
                Note::Enforcement(d) => d.pid,
                _ => None,
            };
            let owner = pid.and_then(|p| self.attr.owner(p, 0));
            let to: Vec<u32> = match owner {
                Some(id) if enforcing.contains(&id) => vec![id],
                _ => enforcing.clone(),
            };
            for id in to {
                if let Some(t) = self.targets.get_mut(&id) {
                    t.note(&note)?;
                }
            }
        }
        if undecodable > 0 {
            let loss = Loss::new(Cause::LsmDecodeError, undecodable, None, window);
            for id in &enforcing {
                if let Some(t) = self.targets.get_mut(id) {
                    t.append_loss(&loss)?;
                }
            }
        }
        // Decisions of processes no live target owns any more (the target
        // ended meanwhile) would wait forever.
        let attr = &self.attr;
        let live = |id: u32| self.targets.get(&id).is_some_and(|t| t.is_live());
        let stale = |a: &Action| {
            monotonic_ns().saturating_sub(a.ktime_ns) > 30_000_000_000
                && !attr.owner(a.pid, a.cgroup_id).is_some_and(live)
        };
        if let Some(e) = self.lsm.as_mut() {
            let n = e.backend.drop_held(stale);
            if n > 0 {
                tracing::warn!("{n} BPF LSM decision(s) of processes of no live target dropped");
            }
        }
        Ok(())
    }

    /// `pending`: the enforcing targets' requests waiting for an answer.
    pub(super) fn pending_requests(&self) -> Vec<Value> {
        let Some(e) = &self.lsm else {
            return Vec::new();
        };
        let mut list = e.backend.approvals().pending_list();
        for p in &mut list {
            p["run"] = json!("daemon");
            let pid = p["pid"].as_u64().unwrap_or(0) as u32;
            if let Some(t) = self.attr.owner(pid, 0).and_then(|id| self.targets.get(&id)) {
                p["target"] = json!(t.name());
            }
        }
        list
    }

    /// `approve` / `deny` of request `id`, by the client with uid `uid`.
    pub(super) fn answer(&mut self, req: &Value, uid: u32) -> Value {
        let approve = req["op"] == "approve";
        let Some(id) = req["id"].as_u64() else {
            return json!({ "ok": false, "error": "missing request id" });
        };
        let Some(e) = &self.lsm else {
            return json!({ "ok": false, "error": format!("no pending request {id}: no target of this daemon enforces (watch one with --enforce)") });
        };
        let approvals = e.backend.approvals();
        if !approvals.owns(id) {
            return json!({ "ok": false, "error": format!("no pending request {id} (see `abm pending --socket {}`)", self.cfg.socket.display()) });
        }
        match approvals.decide(id, approve, &format!("control:{uid}")) {
            Ok(()) => json!({ "ok": true, "run": "daemon", "id": id }),
            Err(err) => json!({ "ok": false, "error": err.to_string() }),
        }
    }

    /// A reloaded policy for the kernel tables: compiled first, so that a
    /// policy the kernel cannot hold is refused before anything changes.
    pub(super) fn check_enforceable(&self, policy: &crate::policy::Policy) -> anyhow::Result<()> {
        if let Some(e) = &self.lsm {
            lsm::compile(policy, &e.ctx).map_err(|err| {
                anyhow::anyhow!("the policy cannot be enforced by the BPF LSM backend: {err}")
            })?;
        }
        Ok(())
    }

    /// Puts the daemon's (new) policy into the kernel tables, after the
    /// decisions made under the old tables are absorbed.
    pub(super) fn recompile_enforcement(&mut self) {
        if self.lsm.is_none() {
            return;
        }
        if let Err(err) = self.absorb_decisions() {
            tracing::error!("BPF LSM decisions: {err:#}");
        }
        let Some(e) = self.lsm.as_mut() else { return };
        let ctx = e.ctx.clone();
        if let Err(err) = e.backend.recompile(&mut self.probes, &self.policy, &ctx) {
            tracing::error!(
                "BPF LSM enforcement keeps the previous kernel tables: the reloaded policy does not compile: {err}"
            );
        }
    }
}
