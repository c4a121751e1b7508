//! Enforcement (guardrail): `abm run --enforce`.
//!
//! Each backend is a [`Guard`]; the run loop holds an [`Enforcer`], the
//! part every backend shares (the control socket, the reason lines, the
//! summary), with one guard in it, and never knows which one it has.
//! Treatments: deny (EPERM), confirm (a human answers on the terminal or
//! with `abm approve/deny`), preserve (a recoverable copy in a quarantine
//! directory first; `abm undo` restores it). See docs/enforcement.md.
//!
//! - [`seccomp`]: seccomp user notification: a filter in the launched
//!   command sends destructive syscalls to a supervisor thread in abm,
//!   which judges and answers. Everywhere seccomp has `user_notif`.
//! - [`lsm`]: BPF LSM: the policy compiled into kernel maps, decided by LSM
//!   programs in the kernel. No seccomp notification filter and no
//!   supervisor thread run with it; the one seccomp filter every `abm run`
//!   installs, with or without `--enforce`, is `crate::self_guard::SelfGuard`
//!   (plain `SECCOMP_RET_ERRNO`, no thread), because the LSM programs have
//!   no hooks for what it refuses (signals, ptrace and process memory
//!   access aimed at abm).
//! - `enforcer`: the [`Enforcer`] and the [`Shared`] state its threads use.
//! - [`control`]: the control socket, `abm approve|deny|pending`.
//! - [`remote`]: remote approvals, a signed HTTP(S) endpoint and its
//!   client (`--approvals-listen`, `abm approve --remote`).
//! - [`trace_guard`]: abm protecting its trace (abm protecting its
//!   process, in every run, is `crate::self_guard`).
//! - [`preserve`], [`undo`]: the quarantine and `abm undo`; [`rootview`]:
//!   the host's path to an object a caller with its own root named.
//! - [`answers`], [`notify`]: one question per action; reason lines.
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
};

use anyhow::bail;
use serde_json::Value;

use crate::{
    kernel::Capability,
    pipeline::{Pipeline, Recorder},
    policy::{Context, Policy},
    record::{enforcement::DecisionKind, Action, Op},
};

pub mod answers;
pub mod control;
mod enforcer;
pub mod history;
pub mod lsm;
mod manifest;
pub mod notify;
pub mod preserve;
pub mod remote;
mod restore;
pub mod rootview;
pub mod seccomp;
pub mod trace_guard;
pub mod undo;

pub use enforcer::Enforcer;
pub(crate) use enforcer::Shared;
pub use seccomp::{RULE_INTEGRITY, RULE_IO_URING};

/// Set to a non-empty value other than `0` to make the seccomp backend
/// report itself unavailable (tests of the no-backend path).
pub const DISABLE_ENV: &str = "ABM_TEST_DISABLE_SECCOMP";

/// Where control sockets live by default.
pub fn default_socket_dir() -> PathBuf {
    PathBuf::from("/run/abm")
}

/// The control sockets of the runs alive now (`*.sock` in
/// [`default_socket_dir`] that accept a connection), sorted. A run killed
/// with SIGKILL leaves its socket file behind; connecting to it is
/// refused, and it is left out rather than taken for a run.
pub fn live_sockets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(default_socket_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                .filter(|p| std::os::unix::net::UnixStream::connect(p).is_ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
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
    #[command(flatten)]
    pub remote: remote::ListenArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Auto,
    Seccomp,
    Lsm,
}

/// The backend `--enforce` runs with (also the `backend` of its decisions).
pub use crate::record::enforcement::Backend;

/// Whether BPF LSM enforcement programs can load and attach here, with
/// the reason.
pub fn bpf_lsm_available() -> Result<String, lsm::Unavailable> {
    lsm::available().map(|()| lsm::capability().detail)
}

/// Whether seccomp user notification works here (a child installs the
/// real filter), with the reason.
pub fn seccomp_available() -> Result<String, seccomp::notif::Unavailable> {
    seccomp::probe()
}

/// `abm doctor` lines of the enforcement backends (the line of the filter
/// every run installs, `self_guard`, is `crate::self_guard::check`).
pub fn capabilities() -> Vec<Capability> {
    let cap = Capability::from_result;
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
        cap("bpf_lsm", lsm.map_err(|e| e.to_string())),
        cap("seccomp_user_notif", sec.map_err(|e| e.to_string())),
        cap("enforce", chosen),
    ]
}

/// Picks the backend for `--enforce`, or says why none works. Called
/// before anything is started.
pub fn preflight(args: &EnforceArgs) -> anyhow::Result<Option<Backend>> {
    // The remote approval settings are read and checked here too, so a
    // bad one stops the run before anything starts.
    args.remote.load(args.enforce)?;
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
                let l = bpf_lsm_available()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                bail!(
                    "--enforce: no enforcement backend works here, refusing to run unenforced: bpf_lsm: {l}; seccomp: {s} (see `abm doctor`)"
                )
            }
        },
    }
}

/// What a guard starts with.
pub(crate) struct Start<'a> {
    pub args: &'a EnforceArgs,
    pub info: &'a RunInfo<'a>,
    /// The loaded tracepoint object (the BPF LSM programs load into it).
    pub probes: &'a mut crate::kernel::Probes,
    pub quarantine: preserve::Quarantine,
    /// Where the guard installs its [`Requests`] for the control socket.
    pub shared: &'a std::sync::Arc<Shared>,
}

/// One enforcement backend of an enforcing `abm run`, driven by the
/// [`Enforcer`] in the run loop's order: [`Guard::start`] before the
/// command, [`Guard::child_setup`] between fork and exec,
/// [`Guard::spawned`], then per batch [`Guard::absorb`] before the
/// pipeline releases records and [`Guard::annotate`] after, and at the end
/// [`Guard::halt`], [`Guard::stop`].
pub(crate) trait Guard: Send {
    /// Starts the backend: ready to decide before the command's first
    /// call, answering `abm approve|deny|pending` through `shared`.
    fn start(s: Start<'_>) -> anyhow::Result<Self>
    where
        Self: Sized;

    /// The backend, for the trace header and the summary.
    fn backend(&self) -> Backend;

    /// What the command's child runs between fork and exec, after joining
    /// the scope.
    fn child_setup(&self) -> Option<seccomp::ChildSetup> {
        None
    }

    /// After the spawn, whether it worked or not.
    fn spawned(&mut self) {}

    /// Backend fields of the trace header's `extra`.
    fn header_extra(&self, _extra: &mut serde_json::Map<String, Value>) {}

    /// Takes in the decisions made since the last call: refused calls
    /// become records in the pipeline (ordered with the tracepoint
    /// records), the rest notes in the trace.
    fn absorb(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()>;

    /// Attaches the decisions to the released records of the calls they
    /// concern. `force`: the run is over, nothing more will come.
    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool);

    /// Stops deciding (the shared stop flag is set already): waits for the
    /// threads that answer calls. The control socket still runs.
    fn halt(&mut self) {}

    /// After the control socket stopped: the last decisions and the
    /// backend's closing notes.
    fn stop(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()>;

    /// Decisions so far, by decision name.
    fn counts(&self) -> &BTreeMap<DecisionKind, u64>;

    /// Entries kept in the quarantine, for the summary.
    fn preserved_entries(&self) -> u64 {
        0
    }
}

/// Why a request could not be answered (`abm approve|deny`, the approvals
/// endpoint): the text the client gets.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("no pending request {id} in run {run}")]
    NoRequest { id: u64, run: String },
    #[error("request {0} is no longer waiting: the process exited or was interrupted")]
    NoLongerWaiting(u64),
    #[error("the supervisor is not running")]
    SupervisorNotRunning,
    #[error("answering request {id}: {source}")]
    Answering { id: u64, source: std::io::Error },
    #[error("no pending BPF LSM request {0}")]
    NoLsmRequest(u64),
    #[error("request {0} has no answer to change")]
    NoAnswerToChange(u64),
    #[error("LSM_ALLOW: no kernel map")]
    NoAllowMap,
    #[error("LSM_ALLOW: {0}")]
    Allow(#[from] aya::maps::MapError),
}

/// A backend's requests waiting for a human, for the control socket's
/// thread (`abm approve|deny|pending`).
pub(crate) trait Requests: Send + Sync {
    /// Answers request `id`; `by`: `tty` or `control:<uid>`.
    fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError>;
    /// The waiting requests, for `abm pending`.
    fn pending_list(&self) -> Vec<Value>;
}

/// Locks a mutex, also after another holder panicked. The state behind
/// these locks is tables of requests, answers and counts: a panic while
/// holding one leaves at worst one entry half made (an id taken but not
/// listed, a count not raised), never a table that cannot be read. The
/// rest of the run keeps answering calls with it: refusing to go on would
/// leave every waiting call of the watched tree stuck, and a poisoned lock
/// is not a reason to stop enforcing.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One human line for an action awaiting a decision.
pub fn describe(a: &Action) -> String {
    let op = a.op.map(Op::name).unwrap_or("?");
    format!("{op} {} by {}[{}]", a.object_text(), a.comm, a.pid)
}

/// What `abm run` needs to start enforcement.
pub struct RunInfo<'a> {
    pub trace: &'a Path,
    pub policy: &'a Policy,
    pub ctx: &'a Context,
    pub quiet: bool,
    /// The command the run watches, for the questions it asks.
    pub target: String,
    /// The run's sensitive set, for the views (mount namespaces, roots)
    /// the tree enters.
    pub sensitive: Option<crate::kernel::sensitive::Views>,
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
