//! The seccomp user-notification guard: a filter installed into the
//! launched command before exec sends every destructive syscall of the
//! tree to a supervisor thread in abm, which judges it with the policy and
//! answers (docs/enforcement.md).
//!
//! - [`filter`]: the classic-BPF filters and their assembler.
//! - [`notif`]: installing the filter in the child, passing the listener
//!   fd, the notification ioctls, the availability probe.
//! - `target`: reading a stopped caller (memory, /proc) into an `Action`.
//! - `view`: judging a caller in another mount namespace or root from
//!   inside its view.
//! - `identity`: the objects strict rules name, by (device, inode), so a
//!   hard link, a moved ancestor or a bind mount reaches them too.
//! - `supervisor`: the notification loop and the decisions.
//! - `state`: the requests waiting for a human, shared by the supervisor,
//!   the control socket and the prompt.
//! - `prompt`: the terminal prompt.
//!
//! All trace writes stay in the session loop: the supervisor sends
//! [`Msg`]s over a channel, drained by [`SeccompGuard`]'s
//! [`Guard::absorb`] before each batch of released records.
use std::{
    collections::{BTreeMap, HashMap},
    os::fd::{AsRawFd, OwnedFd},
    sync::{atomic::AtomicU64, mpsc, Arc, Mutex, OnceLock},
    thread::JoinHandle,
    time::Duration,
};

use anyhow::Context as _;

use super::{default_socket_dir, trace_guard::TraceGuard, Backend, Guard, Start};
use crate::{
    core::monotonic_ns,
    pipeline::{Pipeline, Recorder},
    record::{
        enforcement::{DecisionKind, DecisionNote, Enforcement},
        Action, Op, Treatment, Verdict,
    },
    trace::note::Note,
};

pub mod filter;
mod identity;
pub mod notif;
mod prompt;
mod state;
mod supervisor;
mod target;
mod verdicts;
mod view;

pub use filter::{nr, O_CREAT, O_RDWR, O_TRUNC, O_WRONLY, WRITE_FLAGS};
pub use notif::{probe, ChildSetup, Listener};
pub(crate) use state::{Pending, State};
pub use supervisor::{RULE_INTEGRITY, RULE_IO_URING};

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
        enforcement: Box<Enforcement>,
        /// The note's pid and body.
        note: Box<(u32, DecisionNote)>,
    },
    /// Any other note.
    Note(Note),
}

/// How long after a confirm/preserve answer the tracepoint record of the
/// same call may start.
const ANNOTATION_WINDOW_NS: u64 = 1_000_000_000;

struct Annotation {
    syscall: String,
    ktime_ns: u64,
    enforcement: Enforcement,
}

/// A record of a call that ran although its verdict blocks it (deny,
/// confirm, preserve) and no decision of the supervisor is attached: under
/// `--enforce` that is never left unsaid. Its `enforcement` says
/// `unenforced`, with why it can happen. Calls that failed did nothing.
fn unenforced(a: &Action) -> Option<Enforcement> {
    if a.enforcement.is_some()
        || a.result_note == Some(crate::record::ResultNote::DeniedBySeccomp)
        || !a.op.is_some_and(Op::is_action)
        || a.result.is_some_and(|r| r < 0)
    {
        return None;
    }
    let v = a.verdict.as_ref()?;
    if !matches!(
        v.treatment,
        Treatment::Deny | Treatment::Confirm | Treatment::Preserve
    ) {
        return None;
    }
    Some(Enforcement {
        rule: Some(v.rule.clone()),
        treatment: Some(Some(v.treatment)),
        reason: Some(UNENFORCED_REASON.to_owned()),
        ..Enforcement::new(Backend::Seccomp, DecisionKind::Unenforced)
    })
}

/// `reason` of an `unenforced` decision.
const UNENFORCED_REASON: &str = "the call ran: the supervisor judged it before it ran and let it through (its verdict then differed: the result and what the call left were not known yet), or it never reached the supervisor (a process outside the command's seccomp filter, such as a container the runtime started)";

/// The seccomp guard of one enforcing `abm run`: owns the supervisor
/// thread, the prompt and the channel of records.
pub struct SeccompGuard {
    rx: mpsc::Receiver<Msg>,
    supervisor: Option<JoinHandle<()>>,
    /// The command's end of the socketpair the listener fd comes back over.
    child_sock: Option<OwnedFd>,
    prompt: Option<JoinHandle<()>>,
    denied_verdicts: HashMap<(u32, u64), Verdict>,
    annotations: HashMap<u32, Vec<Annotation>>,
    counts: BTreeMap<DecisionKind, u64>,
    preserved_entries: u64,
}

impl Guard for SeccompGuard {
    /// Starts the supervisor (waiting for the listener fd the command's
    /// child sends) and, on a terminal, the prompt.
    fn start(s: Start<'_>) -> anyhow::Result<SeccompGuard> {
        let Start {
            args,
            info,
            quarantine,
            shared: core,
            ..
        } = s;
        let (tx, rx) = mpsc::channel();
        let interactive = !args.no_prompt && prompt::usable();
        let (prompt_tx, prompt_rx) = if interactive {
            let (t, r) = mpsc::channel();
            (Some(Mutex::new(t)), Some(r))
        } else {
            (None, None)
        };
        // Paths the watched tree may not touch: the quarantine and the
        // control socket (and the default socket directory).
        let socket_path = core.socket_path.clone();
        let mut guarded = vec![
            format!("{}/", quarantine.dir().display()),
            socket_path.to_string_lossy().into_owned(),
        ];
        if socket_path.parent() == Some(default_socket_dir().as_path()) {
            guarded.push(format!("{}/", default_socket_dir().display()));
        }
        let state = Arc::new(State {
            core: core.clone(),
            listener: OnceLock::new(),
            pending: Mutex::new(BTreeMap::new()),
            tx,
            prompt_tx,
            next_request: AtomicU64::new(1),
            timeout: Duration::from_secs_f64(args.confirm_timeout),
            quiet: info.quiet,
        });
        core.set_requests(state.clone());
        let (parent, child) = notif::socketpair().context("--enforce: socketpair")?;
        let mut judge = crate::action::Judge::live(info.ctx);
        // The databases the run starts with, as the trace's judge has them.
        judge.measurer.remember_databases(&info.ctx.workspace);
        let sup = supervisor::Supervisor {
            shared: state.clone(),
            policy: info.policy.clone(),
            ctx: info.ctx.clone(),
            quarantine,
            guarded,
            trace_guard: TraceGuard::new(info.trace),
            reader: target::Reader::new(),
            stats: Default::default(),
            judge,
            sensitive: info.sensitive.clone(),
            protected: Default::default(),
        };
        let supervisor = std::thread::Builder::new()
            .name("abm-seccomp".into())
            .spawn(move || sup.run(parent))
            .context("--enforce: starting the supervisor thread")?;
        let prompt = prompt_rx
            .map(|r| prompt::spawn(state.clone(), r))
            .transpose()
            .context("--enforce: starting the prompt thread")?;
        Ok(SeccompGuard {
            rx,
            supervisor: Some(supervisor),
            child_sock: Some(child),
            prompt,
            denied_verdicts: HashMap::new(),
            annotations: HashMap::new(),
            counts: BTreeMap::new(),
            preserved_entries: 0,
        })
    }

    fn backend(&self) -> Backend {
        Backend::Seccomp
    }

    /// The notification filter, sending its listener over the socketpair.
    fn child_setup(&self) -> Option<ChildSetup> {
        Some(ChildSetup::new(
            self.child_sock.as_ref().map_or(-1, |s| s.as_raw_fd()),
        ))
    }

    /// Closes the parent's copy of the child's socket end, so a failed
    /// spawn ends the supervisor's wait for the listener.
    fn spawned(&mut self) {
        self.child_sock = None;
    }

    /// Moves the supervisor's records into the pipeline (denials, ordered
    /// with the tracepoint records) and the trace (notes).
    fn absorb(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Msg::Denied(a) => {
                    let decision = a
                        .enforcement
                        .as_ref()
                        .map_or(DecisionKind::Denied, |e| e.decision);
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
                    let decision = enforcement.decision;
                    if decision == DecisionKind::Preserved {
                        self.preserved_entries +=
                            enforcement.entries.as_ref().map_or(0, |e| e.len() as u64);
                    }
                    *self.counts.entry(decision).or_default() += 1;
                    let (pid, body) = *note;
                    trace.note(&Note::decision(Some(pid), body))?;
                    self.annotations.entry(tid).or_default().push(Annotation {
                        syscall,
                        ktime_ns,
                        enforcement: *enforcement,
                    });
                }
                Msg::Note(note) => {
                    if let Note::Enforcement(d) = &note {
                        if d.decision() == DecisionKind::Abandoned {
                            *self.counts.entry(DecisionKind::Abandoned).or_default() += 1;
                        }
                    }
                    trace.note(&note)?;
                }
            }
        }
        Ok(())
    }

    /// Puts back the deciding verdict on denial records (the pipeline
    /// re-judges every released action, and a refused call's result could
    /// change the match), and attaches confirm/preserve outcomes to the
    /// tracepoint records of the calls they let through.
    fn annotate(&mut self, acts: &mut Vec<Action>, _force: bool) {
        for a in acts.iter_mut() {
            if a.result_note == Some(crate::record::ResultNote::DeniedBySeccomp) {
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
                    a.enforcement = Some(Box::new(list.remove(i).enforcement));
                }
                if list.is_empty() {
                    self.annotations.remove(&a.tid);
                }
            }
        }
        for a in acts.iter_mut() {
            if let Some(e) = unenforced(a) {
                *self.counts.entry(DecisionKind::Unenforced).or_default() += 1;
                a.enforcement = Some(Box::new(e));
            }
        }
        // Forget outcomes whose record never came (the call was not traced).
        let horizon = monotonic_ns().saturating_sub(30_000_000_000);
        self.annotations.retain(|_, l| {
            l.retain(|n| n.ktime_ns >= horizon);
            !l.is_empty()
        });
    }

    /// Waits for the supervisor, which refuses what still waits.
    fn halt(&mut self) {
        self.child_sock = None;
        if let Some(t) = self.supervisor.take() {
            let _ = t.join();
        }
    }

    fn stop(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        if let Some(p) = self.prompt.take() {
            let _ = p.join();
        }
        self.absorb(pipeline, trace)
    }

    fn counts(&self) -> &BTreeMap<DecisionKind, u64> {
        &self.counts
    }

    fn preserved_entries(&self) -> u64 {
        self.preserved_entries
    }
}
