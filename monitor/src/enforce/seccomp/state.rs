//! The seccomp guard's calls waiting for a human, shared by the
//! supervisor, the control socket and the prompt. Whoever removes a
//! request from `pending` answers it, so a request is answered once.
use std::{
    collections::BTreeMap,
    sync::{atomic::AtomicU64, mpsc, Arc, Mutex, MutexGuard, OnceLock},
    time::{Duration, Instant, SystemTime},
};

use serde_json::{json, Value};

use super::{notif::Listener, supervisor, Msg};
use crate::{
    core::{monotonic_ns, rfc3339},
    enforce::{answers, describe, lock, notify, DecideError, Requests, Shared},
    record::{
        enforcement::{Backend, CallDecision, DecisionKind, DecisionNote, Enforcement, WENT_AWAY},
        Action, Verdict,
    },
    trace::note::Note,
};

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
pub(crate) struct State {
    /// What every backend shares: the run id, the stop flag, the notifier.
    pub core: Arc<Shared>,
    pub listener: OnceLock<Listener>,
    pub pending: Mutex<BTreeMap<u64, Pending>>,
    pub tx: mpsc::Sender<Msg>,
    pub prompt_tx: Option<Mutex<mpsc::Sender<u64>>>,
    pub next_request: AtomicU64,
    pub timeout: Duration,
    pub quiet: bool,
}

impl Requests for State {
    fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        self.decide_as(id, approve, by, DecisionKind::Denied)
    }

    fn pending_list(&self) -> Vec<Value> {
        let now = Instant::now();
        self.pending()
            .iter()
            .filter(|(_, p)| p.follows.is_none())
            .map(|(id, p)| {
                json!({
                    "id": id,
                    "run": self.core.run_id,
                    "what": describe(&p.action),
                    "would": p.would,
                    "op": p.action.op,
                    "path": p.action.path,
                    "path2": p.action.path2,
                    // The caller waits in the kernel: its command line and
                    // directory stay put while the question is open.
                    "argv": p.action.argv.clone().or_else(|| proc_argv(p.action.pid)),
                    "cwd": p.action.cwd.clone().or_else(|| proc_cwd(p.action.pid)),
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

/// The command line of a live process.
fn proc_argv(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let v: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!v.is_empty()).then_some(v)
}

/// The working directory of a live process.
fn proc_cwd(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

impl State {
    /// The calls waiting for a human.
    pub fn pending(&self) -> MutexGuard<'_, BTreeMap<u64, Pending>> {
        lock(&self.pending)
    }

    /// Sends a request id to the prompt thread, when there is one.
    pub fn prompt(&self, id: u64) {
        if let Some(tx) = &self.prompt_tx {
            let _ = lock(tx).send(id);
        }
    }

    /// Answers a waiting request. `decision`: of a refusal, `denied` or
    /// `timeout`; `by`: `tty`, `control:<uid>`, `timeout`, `shutdown`.
    pub fn decide_as(
        &self,
        id: u64,
        approve: bool,
        by: &str,
        decision: DecisionKind,
    ) -> Result<(), DecideError> {
        let Some(p) = self.pending().remove(&id) else {
            return self.reconsider(id, approve, by);
        };
        self.core.answers.record(&p.action, approve, id);
        let waited_ms = p.requested.elapsed().as_millis() as u64;
        let name = if approve {
            DecisionKind::Approved
        } else {
            decision
        };
        let mut enf = super::verdicts::decided(name, &p.verdict, by);
        enf.requested_at = Some(p.requested_at.clone());
        enf.request = Some(id);
        enf.waited_ms = Some(waited_ms);
        // The answer is for the action: identical calls waiting on this
        // one get it too, even when this caller went away meanwhile.
        let followers =
            self.core
                .answers
                .answered(id, approve, answers::decision_name(decision.name()));
        for f in followers {
            let _ = self.decide_as(f, approve, &format!("request:{id}"), decision);
        }
        if !self.listener.get().is_some_and(|l| l.id_valid(p.notif_id)) {
            enf.decision = DecisionKind::Abandoned;
            enf.reason = Some(WENT_AWAY.to_owned());
            let note = CallDecision {
                path: Some(p.action.path.clone()),
                ..CallDecision::of(enf)
            };
            let _ = self.tx.send(Msg::Note(Note::decision(
                Some(p.action.pid),
                DecisionNote::Call(note),
            )));
            return Err(DecideError::NoLongerWaiting(id));
        }
        self.answer(p, id, approve, decision, enf)
    }

    /// `abm approve|deny ID` of a request already answered: the answer
    /// for the next identical call (enforce::answers).
    fn reconsider(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        match self.core.answers.reconsider(id, approve) {
            Some(_) => {
                let decision = if approve {
                    DecisionKind::ApprovedForRetry
                } else {
                    DecisionKind::DeniedForRetry
                };
                let enf = Enforcement {
                    request: Some(id),
                    decided_by: Some(by.to_owned()),
                    decided_at: Some(rfc3339(SystemTime::now())),
                    ..Enforcement::new(Backend::Seccomp, decision)
                };
                let _ = self
                    .tx
                    .send(Msg::Note(Note::decision(None, DecisionNote::Flat(enf))));
                Ok(())
            }
            None => Err(self.core.no_request(id)),
        }
    }

    fn answer(
        &self,
        p: Pending,
        id: u64,
        approve: bool,
        decision: DecisionKind,
        enf: Enforcement,
    ) -> Result<(), DecideError> {
        let l = self
            .listener
            .get()
            .ok_or(DecideError::SupervisorNotRunning)?;
        if approve {
            let note = super::verdicts::let_through(&p.action, p.ktime_ns, enf.clone());
            let note = (p.action.pid, DecisionNote::Call(note));
            let _ = self.tx.send(Msg::Decision {
                tid: p.action.tid,
                syscall: p.action.syscall.to_string(),
                ktime_ns: monotonic_ns(),
                enforcement: Box::new(enf),
                note: Box::new(note),
            });
            l.allow(p.notif_id)
                .map_err(|source| DecideError::Answering { id, source })
        } else {
            let mut a = p.action;
            let outcome = if decision == DecisionKind::Timeout {
                notify::Outcome::TimedOut
            } else {
                notify::Outcome::Refused
            };
            self.core
                .notify
                .tell(outcome, &a, &p.verdict.rule, &p.verdict.reason, Some(id));
            supervisor::denied_record(&mut a, p.verdict, p.ktime_ns, enf);
            let _ = self.tx.send(Msg::Denied(Box::new(a)));
            l.refuse(p.notif_id, libc::EPERM)
                .map_err(|source| DecideError::Answering { id, source })
        }
    }
}
