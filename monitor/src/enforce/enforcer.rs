//! The part of enforcement every backend shares: the control socket, the
//! reason lines, the recent actions for `abm hook`, the trace header and
//! the summary, around one [`Guard`].
use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, OnceLock,
    },
};

use anyhow::Context as _;
use serde_json::{json, Value};

use super::{
    answers, control, default_quarantine_root, default_socket_dir, lsm::LsmGuard, notify, preserve,
    remote, run_id, seccomp, Backend, DecideError, EnforceArgs, Guard, Requests, RunInfo, Start,
};
use crate::{
    core::absolute,
    kernel::Probes,
    pipeline::{Pipeline, Recorder, Stage},
    record::{enforcement::DecisionKind, Action},
    trace::note::{EnforcementSummary, Note},
};

/// State shared by the run loop, the control socket's thread and the
/// backend's threads.
pub(crate) struct Shared {
    pub run_id: String,
    /// The command the run watches.
    pub target: String,
    pub socket_path: PathBuf,
    /// Set when the run ends: every thread of enforcement returns.
    pub stop: AtomicBool,
    /// The reason line on a refused caller's stderr.
    pub notify: Arc<notify::Notifier>,
    /// Recent judged actions, for `abm hook` (control op `recent`).
    pub recent: notify::Recent,
    /// The run's answers, one per logical action, whichever backend asks.
    pub answers: Arc<answers::Answers>,
    /// The started backend's requests waiting for a human.
    requests: OnceLock<Arc<dyn Requests>>,
}

impl Shared {
    /// The state of a run's enforcement before its backend starts; its
    /// requests are installed later ([`Shared::set_requests`]).
    pub fn new(
        run_id: String,
        target: String,
        socket_path: PathBuf,
        notify: Arc<notify::Notifier>,
    ) -> Shared {
        Shared {
            run_id,
            target,
            socket_path,
            stop: AtomicBool::new(false),
            notify,
            recent: notify::Recent::default(),
            answers: Arc::default(),
            requests: OnceLock::new(),
        }
    }

    /// Installs the backend's requests (once, when the guard starts).
    pub fn set_requests(&self, r: Arc<dyn Requests>) {
        let _ = self.requests.set(r);
    }

    /// Answers a waiting request (control socket, `abm approve|deny`).
    pub fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        match self.requests.get() {
            Some(r) => r.decide(id, approve, by),
            None => Err(self.no_request(id)),
        }
    }

    /// The waiting requests, for `abm pending`.
    pub fn pending_list(&self) -> Vec<Value> {
        let mut list = self
            .requests
            .get()
            .map(|r| r.pending_list())
            .unwrap_or_default();
        for p in &mut list {
            p["target"] = json!(self.target);
        }
        list
    }

    /// The answer to a request id nobody waits on.
    pub fn no_request(&self, id: u64) -> DecideError {
        DecideError::NoRequest {
            id,
            run: self.run_id.clone(),
        }
    }
}

/// The run loop's side of enforcement: one [`Guard`] and the control
/// socket. `abm run` drives it without knowing the backend.
pub struct Enforcer {
    guard: Box<dyn Guard>,
    shared: Arc<Shared>,
    control: Option<control::Server>,
    approvals: Option<remote::server::Server>,
    run_id: String,
    socket_path: PathBuf,
    quarantine_dir: PathBuf,
    confirm_timeout_secs: f64,
    /// Remote approval requests refused (bad signature, stale, replayed).
    rejected_remote: Arc<std::sync::atomic::AtomicU64>,
}

impl Enforcer {
    /// Opens the control socket and starts the backend's guard. Call
    /// before spawning CMD.
    ///
    /// The seccomp guard starts its supervisor thread (waiting for the
    /// listener fd) and, on a terminal, the prompt. The BPF LSM guard
    /// loads its programs into the tracepoint object (`probes`): the
    /// policy is compiled into their maps and they attach.
    pub fn start(
        args: &EnforceArgs,
        backend: Backend,
        info: RunInfo<'_>,
        probes: &mut Probes,
    ) -> anyhow::Result<Enforcer> {
        let run_id = run_id(info.trace);
        let quarantine_dir = absolute(
            &args
                .quarantine
                .clone()
                .unwrap_or_else(|| default_quarantine_root().join(&run_id)),
        );
        let socket_path = absolute(
            &args
                .control_socket
                .clone()
                .unwrap_or_else(|| default_socket_dir().join(format!("{run_id}.sock"))),
        );
        let shared = Arc::new(Shared::new(
            run_id.clone(),
            info.target.clone(),
            socket_path.clone(),
            Arc::new(notify::Notifier::new(!args.no_notify)),
        ));
        let control = control::Server::start(&socket_path, shared.clone()).with_context(|| {
            format!(
                "--enforce: cannot open the control socket {}",
                socket_path.display()
            )
        })?;
        let approvals = match args.remote.load(true)? {
            Some(cfg) => {
                let addr = cfg.addr;
                Some(
                    remote::server::Server::start(cfg, shared.clone()).with_context(|| {
                        format!("--approvals-listen {addr}: cannot listen there")
                    })?,
                )
            }
            None => None,
        };
        let quarantine = preserve::Quarantine::new(
            quarantine_dir.clone(),
            run_id.clone(),
            info.trace.to_path_buf(),
            info.ctx.workspace.clone(),
        )
        .with_limit(args.quarantine_limit);
        if !info.quiet {
            eprintln!(
                "abm: enforcing with {} (control socket {})",
                backend.name(),
                socket_path.display()
            );
            if let Some(a) = &approvals {
                eprintln!(
                    "abm: remote approvals at {} (GET /pending, POST /answer, signed)",
                    a.url()
                );
            }
        }
        let start = Start {
            args,
            info: &info,
            probes,
            quarantine,
            shared: &shared,
        };
        let guard: Box<dyn Guard> = match backend {
            Backend::Seccomp => Box::new(seccomp::SeccompGuard::start(start)?),
            Backend::Lsm => Box::new(LsmGuard::start(start)?),
        };
        Ok(Enforcer {
            guard,
            shared,
            control: Some(control),
            rejected_remote: approvals
                .as_ref()
                .map(|a| a.rejected.clone())
                .unwrap_or_default(),
            approvals,
            run_id,
            socket_path,
            quarantine_dir,
            // As the supervisor keeps it (nanoseconds).
            confirm_timeout_secs: std::time::Duration::from_secs_f64(args.confirm_timeout)
                .as_secs_f64(),
        })
    }

    /// What the child runs between fork and exec (after joining the scope).
    pub fn child_setup(&self) -> Option<seccomp::ChildSetup> {
        self.guard.child_setup()
    }

    /// After `spawn`, whether it worked or not.
    pub fn spawned(&mut self) {
        self.guard.spawned();
    }

    /// The backend this run enforces with.
    pub fn backend(&self) -> Backend {
        self.guard.backend()
    }

    /// `backends` of the trace header.
    pub fn backend_name(&self) -> &'static str {
        self.backend().name()
    }

    /// Fields for the trace header's `extra`.
    pub fn header_extra(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert(
            "enforcement".into(),
            json!({
                "backend": self.backend_name(),
                "run_id": self.run_id,
                "control_socket": self.socket_path.to_string_lossy(),
                "quarantine": self.quarantine_dir.to_string_lossy(),
                "confirm_timeout_secs": self.confirm_timeout_secs,
            }),
        );
        if let Some(a) = &self.approvals {
            m["enforcement"]["approvals_url"] = json!(a.url());
        }
        self.guard.header_extra(&mut m);
        m
    }

    /// At the end of the run, before the final drain: stops the guard
    /// (refusing what still waits) and the control socket; records what is
    /// left and a summary note.
    pub fn stop(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.guard.halt();
        if let Some(c) = self.control.take() {
            c.stop();
        }
        if let Some(a) = self.approvals.take() {
            a.stop();
        }
        self.guard.stop(pipeline, trace)?;
        let preserved_entries = self.guard.preserved_entries();
        trace.note(&Note::EnforcementSummary(EnforcementSummary {
            backend: self.backend(),
            decisions: self.guard.counts().clone(),
            preserved_entries,
            quarantine: (preserved_entries > 0)
                .then(|| self.quarantine_dir.to_string_lossy().into_owned()),
            notified: self.shared.notify.counts(),
        }))?;
        Ok(())
    }

    /// Lines for the end-of-run summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let counts = self.guard.counts();
        let counts = if counts.is_empty() {
            "nothing blocked, confirmed or preserved".to_owned()
        } else {
            counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "abm: enforcement ({}): {counts}\n",
            self.backend_name()
        ));
        let rejected = self.rejected_remote.load(Ordering::Relaxed);
        if rejected > 0 {
            s.push_str(&format!(
                "abm: remote approvals: {rejected} request(s) refused (bad signature, stale timestamp or replayed nonce)\n"
            ));
        }
        let preserved_entries = self.guard.preserved_entries();
        if preserved_entries > 0 {
            s.push_str(&format!(
                "abm: quarantine {} ({} entries; list them with `abm undo {}`)\n",
                self.quarantine_dir.display(),
                preserved_entries,
                self.quarantine_dir.display()
            ));
        }
        s
    }

    /// Denials recorded so far.
    pub fn denials(&self) -> u64 {
        let counts = self.guard.counts();
        [DecisionKind::Denied, DecisionKind::Timeout]
            .iter()
            .map(|k| counts.get(k).copied().unwrap_or(0))
            .sum()
    }
}

/// The guard's records merged into the pipeline's release, its decisions
/// attached to the released records.
impl Stage for Enforcer {
    fn absorb(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        self.guard.absorb(pipeline, trace)
    }

    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool) {
        self.guard.annotate(acts, force);
        self.shared.recent.record(acts);
    }
}

impl Drop for Enforcer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.control.take() {
            c.stop();
        }
        if let Some(a) = self.approvals.take() {
            a.stop();
        }
    }
}
