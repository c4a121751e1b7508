//! Enforcement (guardrail): `abm run --enforce`.
//!
//! Backends: BPF LSM (monitor/src/enforce/lsm/, where the kernel allows it) and
//! the fallback here, seccomp user notification: a filter installed into
//! the launched command before exec sends every destructive syscall of the
//! tree to a supervisor thread in abm, which judges it with the policy and
//! answers. Treatments: deny (EPERM), confirm (a human answers on the
//! terminal or with `abm approve/deny`), preserve (a recoverable copy in a
//! quarantine directory first; `abm undo` restores it).
//!
//! All trace writes stay in the session loop: the supervisor sends
//! [`Msg`]s over a channel, drained by [`release`] before each batch of
//! released records. See docs/enforcement.md.
//!
//! - [`seccomp`]: the filter, its installation, the notification ioctls.
//! - `target`: reading a stopped caller (memory, /proc) into an `Action`.
//! - `supervisor`: the notification loop and the decisions.
//! - [`control`]: the control socket, `abm approve|deny|pending`.
//! - `prompt`: the terminal prompt.
//! - [`preserve`]: the quarantine and its manifest.
//! - [`undo`]: `abm undo`.
use std::{
    collections::{BTreeMap, HashMap},
    os::fd::{AsRawFd, OwnedFd},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc, Arc, Mutex, OnceLock,
    },
    thread::JoinHandle,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::{
    core::{absolute, monotonic_ns, rfc3339},
    kernel::{Capability, Probes},
    pipeline::Pipeline,
    policy::{Context, Policy},
    record::{Action, Op, ResultNote, Verdict},
    trace::{
        note::{EnforcementSummary, Note},
        TraceWriter,
    },
};

pub mod answers;
pub mod control;
pub mod guard;
pub mod history;
pub mod lsm;
mod manifest;
pub mod notify;
pub mod preserve;
mod prompt;
mod restore;
pub mod seccomp;
mod supervisor;
mod target;
pub mod undo;

pub use supervisor::{RULE_INTEGRITY, RULE_IO_URING};

/// Set to a non-empty value other than `0` to make the seccomp backend
/// report itself unavailable (tests of the no-backend path).
pub const DISABLE_ENV: &str = "ABM_TEST_DISABLE_SECCOMP";

/// Where control sockets live by default.
pub fn default_socket_dir() -> PathBuf {
    PathBuf::from("/run/abm")
}

/// Where quarantines live by default.
pub fn default_quarantine_root() -> PathBuf {
    PathBuf::from("/var/lib/abm/quarantine")
}

/// Enforcement options of `abm run`.
#[derive(Debug, Clone, clap::Args)]
pub struct EnforceArgs {
    /// Block actions the policy denies, ask a human for `confirm`, keep a
    /// copy for `preserve`. Fails before running CMD when no enforcement
    /// backend works here (see `abm doctor`).
    #[arg(long)]
    pub enforce: bool,
    /// Enforcement backend: `auto` (BPF LSM where it can load, else
    /// seccomp), `seccomp` or `lsm`.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, value_name = "BACKEND")]
    pub enforce_backend: BackendChoice,
    /// A `confirm` left unanswered this long is denied.
    #[arg(long, default_value_t = 60.0, value_name = "SECS", value_parser = crate::core::parse_secs)]
    pub confirm_timeout: f64,
    /// Control socket for `abm approve|deny|pending`. Default:
    /// /run/abm/<run id>.sock (the run id is the trace file name without
    /// its extension, followed by `-<abm's pid>` unless it already ends so,
    /// so two runs whose traces share a name do not collide).
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// Quarantine directory for `preserve`. Default:
    /// /var/lib/abm/quarantine/<run id>/.
    #[arg(long, value_name = "DIR")]
    pub quarantine: Option<PathBuf>,
    /// Most file data `preserve` may keep for this run (bytes, or with a
    /// K/M/G/T suffix). A call whose copy would exceed it is refused.
    #[arg(long, default_value = "4G", value_parser = preserve::parse_size, value_name = "SIZE")]
    pub quarantine_limit: u64,
    /// Never prompt on the terminal for `confirm` (only the control socket
    /// answers).
    #[arg(long)]
    pub no_prompt: bool,
    /// Do not write the one-line reason (`abm: denied ...`) to the stderr
    /// of a process whose call was refused (docs/agents.md).
    #[arg(long)]
    pub no_notify: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Auto,
    Seccomp,
    Lsm,
}

/// The backend `--enforce` runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Seccomp,
    /// BPF LSM (enforce::lsm).
    Lsm,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Seccomp => "seccomp",
            Backend::Lsm => "lsm",
        }
    }
}

/// Whether BPF LSM enforcement programs can load and attach here.
///
/// Hook for the BPF LSM backend (monitor/src/enforce/lsm/): replace the body
/// with its availability check (`lsm::available()`), and handle
/// the LSM case in [`preflight`] once `abm run` can start that backend.
pub fn bpf_lsm_available() -> Result<String, String> {
    lsm::available().map(|()| lsm::capability().detail)
}

/// Whether seccomp user notification works here (a child installs the
/// real filter), with the reason.
pub fn seccomp_available() -> Result<String, String> {
    seccomp::probe()
}

/// `abm doctor` lines of the enforcement backends.
pub fn capabilities() -> Vec<Capability> {
    let cap = |name, r: Result<String, String>| match r {
        Ok(detail) => Capability {
            name,
            available: true,
            detail,
        },
        Err(detail) => Capability {
            name,
            available: false,
            detail,
        },
    };
    let lsm = bpf_lsm_available();
    let sec = seccomp_available();
    let chosen = match (&lsm, &sec) {
        (Ok(_), _) => Ok("--enforce uses bpf_lsm".to_owned()),
        (Err(_), Ok(_)) => {
            Ok("--enforce uses seccomp user notification (BPF LSM unavailable)".to_owned())
        }
        (Err(l), Err(s)) => Err(format!("--enforce cannot run: bpf_lsm: {l}; seccomp: {s}")),
    };
    vec![
        cap("bpf_lsm", lsm),
        cap("seccomp_user_notif", sec),
        cap("enforce", chosen),
    ]
}

/// Picks the backend for `--enforce`, or says why none works. Called
/// before anything is started.
pub fn preflight(args: &EnforceArgs) -> anyhow::Result<Option<Backend>> {
    if !args.enforce {
        return Ok(None);
    }
    if !(args.confirm_timeout.is_finite() && args.confirm_timeout >= 0.0) {
        bail!(
            "--confirm-timeout {}: must be a number of seconds >= 0",
            args.confirm_timeout
        );
    }
    let seccomp = || {
        seccomp_available().map(|_| Backend::Seccomp).map_err(|e| {
            anyhow::anyhow!(
                "--enforce: the seccomp backend does not work here: {e} (see `abm doctor`)"
            )
        })
    };
    match args.enforce_backend {
        BackendChoice::Seccomp => seccomp().map(Some),
        BackendChoice::Lsm => match bpf_lsm_available() {
            Ok(_) => Ok(Some(Backend::Lsm)),
            Err(e) => {
                bail!("--enforce-backend lsm: BPF LSM is not available: {e} (see `abm doctor`)")
            }
        },
        // BPF LSM first: synchronous in-kernel decisions, no TOCTOU.
        BackendChoice::Auto if bpf_lsm_available().is_ok() => Ok(Some(Backend::Lsm)),
        BackendChoice::Auto => match seccomp_available() {
            Ok(_) => Ok(Some(Backend::Seccomp)),
            Err(s) => {
                let l = bpf_lsm_available().err().unwrap_or_default();
                bail!(
                    "--enforce: no enforcement backend works here, refusing to run unenforced: bpf_lsm: {l}; seccomp: {s} (see `abm doctor`)"
                )
            }
        },
    }
}

/// What the supervisor sends to the session loop.
pub(crate) enum Msg {
    /// A refused call: an event record (the tracepoints never see it).
    Denied(Box<Action>),
    /// A call let through after a confirm or preserve: a note now, and the
    /// `enforcement` object for the tracepoint record of the same call.
    Decision {
        tid: u32,
        syscall: String,
        /// CLOCK_MONOTONIC when the answer was sent.
        ktime_ns: u64,
        enforcement: Value,
        note: Value,
    },
    /// Any other note.
    Note(Note),
}

/// A call waiting for a human.
pub(crate) struct Pending {
    pub notif_id: u64,
    pub action: Action,
    pub verdict: Verdict,
    pub ktime_ns: u64,
    pub requested_at: String,
    pub requested: Instant,
    pub deadline: Instant,
    /// What the action would destroy, when known (enforce::answers::preview).
    pub would: Option<String>,
    /// An identical call that waits for this request's answer.
    pub follows: Option<u64>,
}

/// State shared by the supervisor, the control socket and the prompt.
pub(crate) struct Shared {
    pub listener: OnceLock<seccomp::Listener>,
    pub pending: Mutex<BTreeMap<u64, Pending>>,
    pub tx: mpsc::Sender<Msg>,
    pub prompt_tx: Option<Mutex<mpsc::Sender<u64>>>,
    pub next_request: AtomicU64,
    pub stop: AtomicBool,
    pub timeout: Duration,
    pub quiet: bool,
    pub run_id: String,
    pub socket_path: PathBuf,
    /// BPF LSM backend (enforce::lsm): its requests, when it runs.
    pub lsm: OnceLock<lsm::Approvals>,
    /// Answers per logical action (crate::action): one question each.
    pub decisions: crate::action::SharedDecisions,
    /// The reason line on a refused caller's stderr.
    pub notify: Arc<notify::Notifier>,
    /// One question per action.
    pub answers: answers::Answers,
    /// Recent judged actions, for `abm hook` (control op `recent`).
    pub recent: notify::Recent,
}

/// Locks a mutex; a thread that panicked while holding it left the data
/// as it was, which stays usable (the lock is not a reason to stop
/// enforcing).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// The calls waiting for a human.
    pub fn pending(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Pending>> {
        lock(&self.pending)
    }

    /// Answers a waiting request. Whoever removes it from `pending` answers
    /// it, so a request is answered once. `decision`: `approved`, `denied`
    /// or `timeout`; `by`: `tty`, `control:<uid>`, `timeout`, `shutdown`.
    pub fn decide(&self, id: u64, approve: bool, by: &str, decision: &str) -> Result<(), String> {
        // BPF LSM backend (enforce::lsm): its requests are answered there.
        if let Some(l) = self.lsm.get().filter(|l| l.owns(id)) {
            return l.decide(id, approve, by);
        }
        let Some(p) = self.pending().remove(&id) else {
            return self.reconsider(id, approve, by);
        };
        lock(&self.decisions).record(&p.action, approve, id);
        let now = SystemTime::now();
        let waited_ms = p.requested.elapsed().as_millis() as u64;
        let mut enf = json!({
            "backend": "seccomp",
            "decision": if approve { "approved" } else { decision },
            "rule": p.verdict.rule,
            "treatment": p.verdict.treatment,
            "decided_by": by,
            "decided_at": rfc3339(now),
            "requested_at": p.requested_at,
            "request": id,
            "waited_ms": waited_ms,
        });
        // The answer is for the action: identical calls waiting on this
        // one get it too, even when this caller went away meanwhile.
        let followers = self
            .answers
            .answered(id, approve, answers::decision_name(decision));
        for f in followers {
            let _ = self.decide(f, approve, &format!("request:{id}"), decision);
        }
        if !self.listener.get().is_some_and(|l| l.id_valid(p.notif_id)) {
            enf["decision"] = json!("abandoned");
            enf["reason"] =
                json!("the waiting call went away (the process exited or was interrupted)");
            let _ = self.tx.send(Msg::Note(Note::Enforcement(
                json!({ "enforcement": enf, "path": p.action.path, "pid": p.action.pid }),
            )));
            return Err(format!(
                "request {id} is no longer waiting: the process exited or was interrupted"
            ));
        }
        self.answer(p, id, approve, decision, enf)
    }

    /// `abm approve|deny ID` of a request already answered: the answer
    /// for the next identical call (enforce::answers).
    fn reconsider(&self, id: u64, approve: bool, by: &str) -> Result<(), String> {
        match self.answers.reconsider(id, approve) {
            Some(_) => {
                let _ = self.tx.send(Msg::Note(Note::Enforcement(
                    json!({ "backend": "seccomp", "decision": if approve { "approved_for_retry" } else { "denied_for_retry" },
                            "request": id, "decided_by": by, "decided_at": rfc3339(SystemTime::now()) }),
                )));
                Ok(())
            }
            None => Err(format!("no pending request {id} in run {}", self.run_id)),
        }
    }

    fn answer(
        &self,
        p: Pending,
        id: u64,
        approve: bool,
        decision: &str,
        enf: Value,
    ) -> Result<(), String> {
        let l = self.listener.get().ok_or("the supervisor is not running")?;
        if approve {
            let note = json!({
                "enforcement": enf,
                "op": p.action.op, "syscall": p.action.syscall, "path": p.action.path, "path2": p.action.path2,
                "pid": p.action.pid, "tid": p.action.tid, "comm": p.action.comm, "ktime_ns": p.ktime_ns,
            });
            let _ = self.tx.send(Msg::Decision {
                tid: p.action.tid,
                syscall: p.action.syscall.clone(),
                ktime_ns: monotonic_ns(),
                enforcement: enf,
                note,
            });
            l.allow(p.notif_id)
                .map_err(|e| format!("answering request {id}: {e}"))
        } else {
            let mut a = p.action;
            let outcome = if decision == "timeout" {
                notify::Outcome::TimedOut
            } else {
                notify::Outcome::Refused
            };
            self.notify
                .tell(outcome, &a, &p.verdict.rule, &p.verdict.reason, Some(id));
            supervisor::denied_record(&mut a, p.verdict, p.ktime_ns, enf);
            let _ = self.tx.send(Msg::Denied(Box::new(a)));
            l.refuse(p.notif_id, libc::EPERM)
                .map_err(|e| format!("answering request {id}: {e}"))
        }
    }

    /// The waiting requests, for `abm pending`.
    pub fn pending_list(&self) -> Vec<Value> {
        // BPF LSM backend (enforce::lsm): its requests first.
        let lsm = self.lsm.get().map(|l| l.pending_list()).unwrap_or_default();
        lsm.into_iter().chain(self.pending_list_seccomp()).collect()
    }

    fn pending_list_seccomp(&self) -> Vec<Value> {
        let now = Instant::now();
        self.pending()
            .iter()
            .filter(|(_, p)| p.follows.is_none())
            .map(|(id, p)| {
                json!({
                    "id": id,
                    "run": self.run_id,
                    "what": describe(&p.action),
                    "would": p.would,
                    "op": p.action.op,
                    "path": p.action.path,
                    "path2": p.action.path2,
                    "argv": p.action.argv,
                    "pid": p.action.pid,
                    "comm": p.action.comm,
                    "rule": p.verdict.rule,
                    "reason": p.verdict.reason,
                    "requested_at": p.requested_at,
                    "waiting_secs": now.saturating_duration_since(p.requested).as_secs_f64(),
                    "deny_in_secs": p.deadline.saturating_duration_since(now).as_secs_f64(),
                })
            })
            .collect()
    }
}

/// One human line for an action awaiting a decision.
pub fn describe(a: &Action) -> String {
    let op = a.op.map(Op::name).unwrap_or("?");
    let what = match a.op {
        Some(Op::Exec) => a.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default(),
        Some(Op::Rename) => format!(
            "{} -> {}",
            a.path.as_deref().unwrap_or("?"),
            a.path2.as_deref().unwrap_or("?")
        ),
        _ => a.path.clone().unwrap_or_default(),
    };
    format!("{op} {what} by {}[{}]", a.comm, a.pid)
}

/// What `abm run` needs to start enforcement.
pub struct RunInfo<'a> {
    pub trace: &'a Path,
    pub policy: &'a Policy,
    pub ctx: &'a Context,
    pub quiet: bool,
}

/// How long after a confirm/preserve answer the tracepoint record of the
/// same call may start.
const ANNOTATION_WINDOW_NS: u64 = 1_000_000_000;

struct Annotation {
    syscall: String,
    ktime_ns: u64,
    enforcement: Value,
}

/// The session's side of enforcement: owns the supervisor thread, the
/// control socket and the channel of records.
pub struct Enforcer {
    backend: Backend,
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Msg>,
    supervisor: Option<JoinHandle<()>>,
    child_sock: Option<OwnedFd>,
    control: Option<control::Server>,
    prompt: Option<JoinHandle<()>>,
    pub run_id: String,
    pub socket_path: PathBuf,
    pub quarantine_dir: PathBuf,
    pub quarantine_limit: u64,
    denied_verdicts: HashMap<(u32, u64), Verdict>,
    annotations: HashMap<u32, Vec<Annotation>>,
    counts: BTreeMap<String, u64>,
    preserved_entries: u64,
    /// BPF LSM backend (enforce::lsm), set by `lsm::attach`.
    lsm: Option<lsm::LsmBackend>,
    /// Start of the window of the next `lsm_decode_error` loss record.
    lsm_losses_ns: u64,
}

impl Enforcer {
    /// Starts the supervisor (waiting for the listener fd), the control
    /// socket and, on a terminal, the prompt. Call before spawning CMD.
    ///
    /// With the BPF LSM backend its programs load into the tracepoint object
    /// (`probes`): the policy is compiled into their maps and they attach.
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
        let (tx, rx) = mpsc::channel();
        let interactive = !args.no_prompt && prompt::usable();
        let (prompt_tx, prompt_rx) = if interactive {
            let (t, r) = mpsc::channel();
            (Some(Mutex::new(t)), Some(r))
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            listener: OnceLock::new(),
            pending: Mutex::new(BTreeMap::new()),
            tx,
            prompt_tx,
            next_request: AtomicU64::new(1),
            stop: AtomicBool::new(false),
            timeout: Duration::from_secs_f64(args.confirm_timeout),
            quiet: info.quiet,
            run_id: run_id.clone(),
            socket_path: socket_path.clone(),
            lsm: OnceLock::new(),
            decisions: Default::default(),
            notify: Arc::new(notify::Notifier::new(!args.no_notify)),
            answers: answers::Answers::default(),
            recent: notify::Recent::default(),
        });
        let control = control::Server::start(&socket_path, shared.clone()).with_context(|| {
            format!(
                "--enforce: cannot open the control socket {}",
                socket_path.display()
            )
        })?;
        let (parent, child) = seccomp::socketpair().context("--enforce: socketpair")?;
        let mut guarded = vec![
            format!("{}/", quarantine_dir.display()),
            socket_path.to_string_lossy().into_owned(),
        ];
        if socket_path.parent() == Some(default_socket_dir().as_path()) {
            guarded.push(format!("{}/", default_socket_dir().display()));
        }
        let quarantine = preserve::Quarantine::new(
            quarantine_dir.clone(),
            run_id.clone(),
            info.trace.to_path_buf(),
            info.ctx.workspace.clone(),
        )
        .with_limit(args.quarantine_limit);
        let sup = supervisor::Supervisor {
            shared: shared.clone(),
            policy: info.policy.clone(),
            ctx: info.ctx.clone(),
            quarantine,
            guarded,
            trace_guard: guard::TraceGuard::new(info.trace),
            reader: target::Reader::new(),
            stats: Default::default(),
            judge: crate::action::Judge::live(info.ctx),
        };
        let supervisor = std::thread::Builder::new()
            .name("abm-seccomp".into())
            .spawn(move || sup.run(parent))
            .context("--enforce: starting the supervisor thread")?;
        let prompt = prompt_rx.map(|r| prompt::spawn(shared.clone(), r));
        if !info.quiet {
            eprintln!(
                "abm: enforcing with {} (control socket {})",
                backend.name(),
                socket_path.display()
            );
        }
        let mut enforcer = Enforcer {
            backend,
            shared,
            rx,
            supervisor: Some(supervisor),
            child_sock: Some(child),
            control: Some(control),
            prompt,
            run_id,
            socket_path,
            quarantine_dir,
            quarantine_limit: args.quarantine_limit,
            denied_verdicts: HashMap::new(),
            annotations: HashMap::new(),
            counts: BTreeMap::new(),
            preserved_entries: 0,
            lsm: None,
            lsm_losses_ns: crate::core::monotonic_ns(),
        };
        lsm::attach(&mut enforcer, probes, info.policy, info.ctx, info.quiet)?;
        Ok(enforcer)
    }

    /// What the child runs between fork and exec (after joining the scope):
    /// the seccomp backend's filter; nothing for the BPF LSM backend.
    pub fn child_setup(&self) -> Option<seccomp::ChildSetup> {
        (self.backend == Backend::Seccomp).then(|| {
            seccomp::ChildSetup::new(self.child_sock.as_ref().map_or(-1, |s| s.as_raw_fd()))
        })
    }

    /// `backends` of the trace header.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Fields for the trace header's `extra`.
    pub fn header_extra(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert(
            "enforcement".into(),
            json!({
                "backend": self.backend.name(),
                "run_id": self.run_id,
                "control_socket": self.socket_path.to_string_lossy(),
                "quarantine": self.quarantine_dir.to_string_lossy(),
                "confirm_timeout_secs": self.shared.timeout.as_secs_f64(),
            }),
        );
        if let Some(l) = &self.lsm {
            m.insert("lsm".into(), l.header_extra());
        }
        m
    }

    /// The backend this run enforces with.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The run's reason-line notifier (enforce::notify), for the BPF LSM backend.
    pub(crate) fn notifier(&self) -> Arc<notify::Notifier> {
        self.shared.notify.clone()
    }

    /// BPF LSM backend (enforce::lsm): installs the started backend.
    pub(crate) fn set_lsm(&mut self, b: lsm::LsmBackend) {
        let _ = self.shared.lsm.set(b.approvals());
        self.lsm = Some(b);
    }

    /// Moves the supervisor's records into the pipeline (denials, ordered
    /// with the tracepoint records) and the trace (notes).
    fn absorb(&mut self, pipeline: &mut Pipeline, writer: &mut TraceWriter) -> anyhow::Result<()> {
        // BPF LSM backend (enforce::lsm): its decision records and answers.
        if let Some(l) = self.lsm.as_mut() {
            for note in l.absorb() {
                note.append_to(writer)?;
            }
            let undecodable = l.take_undecodable();
            if undecodable > 0 {
                let now = crate::core::monotonic_ns();
                writer.append_loss(&crate::trace::Loss {
                    cause: "lsm_decode_error".into(),
                    count: undecodable,
                    cpu: None,
                    window_start_ns: self.lsm_losses_ns,
                    window_end_ns: now,
                })?;
                self.lsm_losses_ns = now;
            }
            self.counts = l.counts();
        }
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Msg::Denied(a) => {
                    let decision = a
                        .enforcement
                        .as_ref()
                        .and_then(|e| e["decision"].as_str())
                        .unwrap_or("denied")
                        .to_owned();
                    *self.counts.entry(decision).or_default() += 1;
                    if let Some(v) = &a.verdict {
                        self.denied_verdicts.insert((a.tid, a.ktime_ns), v.clone());
                    }
                    pipeline.orderer.ready(*a);
                }
                Msg::Decision {
                    tid,
                    syscall,
                    ktime_ns,
                    enforcement,
                    note,
                } => {
                    let decision = enforcement["decision"].as_str().unwrap_or("?").to_owned();
                    if decision == "preserved" {
                        self.preserved_entries += enforcement["entries"]
                            .as_array()
                            .map_or(0, |e| e.len() as u64);
                    }
                    *self.counts.entry(decision).or_default() += 1;
                    Note::Enforcement(note).append_to(writer)?;
                    self.annotations.entry(tid).or_default().push(Annotation {
                        syscall,
                        ktime_ns,
                        enforcement,
                    });
                }
                Msg::Note(note) => {
                    if let Note::Enforcement(body) = &note {
                        if body["decision"] == "abandoned"
                            || body["enforcement"]["decision"] == "abandoned"
                        {
                            *self.counts.entry("abandoned".into()).or_default() += 1;
                        }
                    }
                    note.append_to(writer)?;
                }
            }
        }
        Ok(())
    }

    /// Puts back the deciding verdict on denial records (the pipeline
    /// re-judges every released action, and a refused call's result could
    /// change the match), and attaches confirm/preserve outcomes to the
    /// tracepoint records of the calls they let through.
    fn fixup(&mut self, acts: &mut [Action]) {
        for a in acts.iter_mut() {
            if a.result_note == Some(ResultNote::DeniedBySeccomp) {
                if let Some(v) = self.denied_verdicts.remove(&(a.tid, a.ktime_ns)) {
                    a.verdict = Some(v);
                }
                continue;
            }
            if a.enforcement.is_some() || !a.op.is_some_and(Op::is_action) {
                continue;
            }
            if let Some(list) = self.annotations.get_mut(&a.tid) {
                // The call enters the tracepoint right after the answer.
                let close = |n: &Annotation| {
                    n.ktime_ns <= a.ktime_ns && a.ktime_ns - n.ktime_ns < ANNOTATION_WINDOW_NS
                };
                if let Some(i) = list.iter().position(|n| n.syscall == a.syscall && close(n)) {
                    a.enforcement = Some(list.remove(i).enforcement);
                }
                if list.is_empty() {
                    self.annotations.remove(&a.tid);
                }
            }
        }
        // Forget outcomes whose record never came (the call was not traced).
        let horizon = monotonic_ns().saturating_sub(30_000_000_000);
        self.annotations.retain(|_, l| {
            l.retain(|n| n.ktime_ns >= horizon);
            !l.is_empty()
        });
    }

    /// Stops the supervisor (refusing what still waits), the control socket
    /// and the prompt; records what is left and a summary note.
    fn stop(&mut self, pipeline: &mut Pipeline, writer: &mut TraceWriter) -> anyhow::Result<()> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.child_sock = None;
        if let Some(t) = self.supervisor.take() {
            let _ = t.join();
        }
        if let Some(c) = self.control.take() {
            c.stop();
        }
        if let Some(p) = self.prompt.take() {
            let _ = p.join();
        }
        self.absorb(pipeline, writer)?;
        if let Some(l) = self.lsm.as_mut() {
            Note::LsmSummary(l.stop()).append_to(writer)?;
        }
        Note::EnforcementSummary(EnforcementSummary {
            backend: self.backend.name().to_owned(),
            decisions: self.counts.clone(),
            preserved_entries: self.preserved_entries,
            quarantine: (self.preserved_entries > 0)
                .then(|| self.quarantine_dir.to_string_lossy().into_owned()),
            notified: self.shared.notify.counts(),
        })
        .append_to(writer)?;
        Ok(())
    }

    /// Lines for the end-of-run summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let counts = if self.counts.is_empty() {
            "nothing blocked, confirmed or preserved".to_owned()
        } else {
            self.counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "abm: enforcement ({}): {counts}\n",
            self.backend.name()
        ));
        if self.preserved_entries > 0 {
            s.push_str(&format!(
                "abm: quarantine {} ({} entries; list them with `abm undo {}`)\n",
                self.quarantine_dir.display(),
                self.preserved_entries,
                self.quarantine_dir.display()
            ));
        }
        s
    }

    /// Denials recorded so far.
    pub fn denials(&self) -> u64 {
        ["denied", "timeout"]
            .iter()
            .map(|k| self.counts.get(*k).copied().unwrap_or(0))
            .sum()
    }
}

impl Drop for Enforcer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.control.take() {
            c.stop();
        }
    }
}

/// After `spawn`, whether it worked or not: closes the parent's copy of the
/// child's socket end (so a failed spawn ends the supervisor's wait).
pub fn after_spawn(enf: &mut Option<Enforcer>) {
    if let Some(e) = enf {
        e.child_sock = None;
    }
}

/// [`Pipeline::release`] with enforcement records merged in.
pub fn release(
    enf: &mut Option<Enforcer>,
    pipeline: &mut Pipeline,
    writer: &mut TraceWriter,
    force: bool,
) -> anyhow::Result<Vec<Action>> {
    if let Some(e) = enf.as_mut() {
        e.absorb(pipeline, writer)?;
    }
    let mut acts = pipeline.release(force);
    if let Some(e) = enf.as_mut() {
        e.fixup(&mut acts);
        if let Some(l) = e.lsm.as_mut() {
            l.fixup(&mut acts, force);
        }
        e.shared.recent.record(&acts);
    }
    Ok(acts)
}

/// At the end of the run, before the final drain.
pub fn finish(
    enf: &mut Option<Enforcer>,
    pipeline: &mut Pipeline,
    writer: &mut TraceWriter,
) -> anyhow::Result<()> {
    if let Some(e) = enf.as_mut() {
        e.stop(pipeline, writer)?;
    }
    Ok(())
}

/// The run id: the trace's file stem, made unique among live runs by
/// abm's pid (the default trace name already ends with it).
pub fn run_id(trace: &Path) -> String {
    let pid = std::process::id();
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    if stem.ends_with(&format!("-{pid}")) {
        stem
    } else {
        format!("{stem}-{pid}")
    }
}
