//! Requests waiting for `abm approve|deny`, the answers they got (in the
//! run's one answer store, [`crate::enforce::answers`]), the per-process
//! answers of held callers and the one-shot allowances the kernel
//! consumes.
//!
//! A `confirm` of a file rule holds its caller in the kernel (stopped, the
//! call restarted once continued; `holds`): the answer is written for the
//! process and rule into `LSM_ANSWERS`, so it covers the action's other
//! calls (the unlinks of an `rm -rf`). Exec rules, io_uring requests and
//! callers on a terminal are refused per call instead: the kernel refuses
//! before anyone is asked. What userspace adds is one question per logical
//! action and answers that stick: the refusals of the same action (a PATH
//! search's other entries, an identical retry) while the question waits
//! join it; after a "no" the same action is refused with that answer and
//! no new question; after a "yes" a refused identical retry gets a new
//! one-shot allowance (the kernel keys allowances by object, so a second
//! `git reset --hard` after an approved one is refused once, then goes
//! through without a question).
use crate::enforce::answers::{self, Answer, Answers};
use crate::enforce::DecideError;
use crate::record::enforcement::{
    AllowedBy, Backend, CallDecision, DecisionKind, DecisionNote, Enforcement,
};

use super::*;

/// A request waiting for `abm approve`.
#[derive(Clone, Debug)]
pub struct Pending {
    pub id: u64,
    pub key: AllowKey,
    pub rule: String,
    pub what: String,
    pub action: Action,
    pub requested_ns: u64,
    /// The rule's reason (for the caller's reason line).
    pub reason: String,
    /// Whether a caller was refused per call for it (an approval then
    /// also grants a one-shot allowance for the object); held callers are
    /// in [`ApprovalState::holds`].
    pub per_call: bool,
}

/// A decision record not yet matched to its syscall record.
pub(super) struct Held {
    pub(super) action: Action,
    pub(super) enforcement: Enforcement,
}

/// Requests and allowances, shared by the session loop (which records
/// decisions) and the control socket's thread (`abm approve|deny|pending`).
#[derive(Clone)]
pub struct Approvals {
    pub(super) inner: Arc<Mutex<ApprovalState>>,
}

pub(super) struct ApprovalState {
    /// `LSM_ALLOW` (`None` only in tests without a kernel).
    pub(super) allow: Option<BpfHashMap<MapData, AllowKey, Allowance>>,
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) next_request: u64,
    /// Approved and preserved requests, by key: id, how, what was kept;
    /// for the `allowed_once` record of the retry.
    pub(super) granted: HashMap<AllowKey, (u64, AllowedBy, Value)>,
    pub(super) counts: BTreeMap<DecisionKind, u64>,
    /// Answers for the trace, written by the session loop.
    pub(super) notes: Vec<Note>,
    /// The run's answers per logical action (shared with the control
    /// socket through [`crate::enforce::Shared`]).
    pub(super) answers: Arc<Answers>,
    /// The allowance key of every request asked, answered or not.
    pub(super) keys: HashMap<u64, AllowKey>,
    /// `LSM_ANSWERS` (`None` only in tests without a kernel).
    pub(super) answer_map: Option<BpfHashMap<MapData, u32, ActionAnswers>>,
    /// Held callers by request: (tgid, kernel rule index).
    pub(super) holds: HashMap<u64, Vec<(u32, u32)>>,
    /// The request whose answer a process has for a rule (in the kernel's
    /// `LSM_ANSWERS`, or waiting for it).
    pub(super) held_by: HashMap<(u32, u32), u64>,
    /// The reason line on a held caller's stderr when it is refused.
    pub(super) notify: Option<Arc<crate::enforce::notify::Notifier>>,
    /// A held caller's question left unanswered this long is refused.
    pub(super) timeout: std::time::Duration,
}

/// What became of a `confirm` refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Confirm {
    /// A new question: request id.
    Asked(u64),
    /// The same action's question is waiting: its request id.
    Joined(u64),
    /// The same action was refused by this request: refused again, unasked.
    RefusedBefore(u64),
    /// The same action was approved by this request: the refusal used up
    /// the allowance, a new one-shot allowance lets the retry through.
    ApprovedBefore(u64),
}

impl ApprovalState {
    pub(super) fn new(
        allow: Option<BpfHashMap<MapData, AllowKey, Allowance>>,
        answers: Arc<Answers>,
    ) -> ApprovalState {
        ApprovalState {
            answer_map: None,
            holds: HashMap::new(),
            held_by: HashMap::new(),
            notify: None,
            timeout: DEFAULT_HOLD_TIMEOUT,
            allow,
            pending: BTreeMap::new(),
            next_request: 1,
            granted: HashMap::new(),
            counts: BTreeMap::new(),
            notes: Vec::new(),
            answers,
            keys: HashMap::new(),
        }
    }

    pub(super) fn grant(&mut self, key: AllowKey) -> Result<(), DecideError> {
        let a = Allowance {
            expires_ns: monotonic_ns() + ALLOW_TTL_NS,
            tid: 0,
            _pad: 0,
        };
        Ok(self
            .allow
            .as_mut()
            .ok_or(DecideError::NoAllowMap)?
            .insert(key, a, 0)?)
    }

    /// A kernel `confirm` refusal of `a` (rule `rule`, allowance key
    /// `key`): one question per logical action ([`answers::key`]), and a
    /// request waiting for the same object under the same rule is the
    /// same question too.
    pub(super) fn confirm(&mut self, a: &Action, rule: &str, key: AllowKey) -> Confirm {
        self.ask(a, rule, key, String::new(), true)
    }

    /// [`ApprovalState::confirm`] for a caller refused per call
    /// (`per_call`, which an approval lets through with a one-shot
    /// allowance) or held (which gets the answer for its process,
    /// [`ApprovalState::hold`]); `reason`: the rule's.
    pub(super) fn ask(
        &mut self,
        a: &Action,
        rule: &str,
        key: AllowKey,
        reason: String,
        per_call: bool,
    ) -> Confirm {
        let logical = answers::key(a, rule);
        match self.answers.lookup(&logical) {
            Some(Answer::Waiting(id)) => {
                if let Some(p) = self.pending.get_mut(&id) {
                    p.per_call |= per_call;
                }
                return Confirm::Joined(id);
            }
            Some(Answer::Refused(id, _)) => return Confirm::RefusedBefore(id),
            Some(Answer::Approved(id)) if !per_call => return Confirm::ApprovedBefore(id),
            Some(Answer::Approved(id)) => {
                if let Err(e) = self.grant(key) {
                    tracing::warn!("re-granting approved request {id}: {e}");
                }
                self.granted
                    .insert(key, (id, AllowedBy::Approval, Value::Null));
                return Confirm::ApprovedBefore(id);
            }
            None => {}
        }
        if let Some(p) = self.pending.values_mut().find(|p| p.key == key) {
            p.per_call |= per_call;
            return Confirm::Joined(p.id);
        }
        let id = self.next_request;
        self.next_request += 1;
        self.answers.ask(logical, id);
        self.keys.insert(id, key);
        self.pending.insert(
            id,
            Pending {
                id,
                key,
                rule: rule.to_owned(),
                what: crate::enforce::describe(a),
                action: a.clone(),
                requested_ns: monotonic_ns(),
                reason,
                per_call,
            },
        );
        Confirm::Asked(id)
    }
}

impl Approvals {
    /// Requests over the kernel's `LSM_ALLOW` map, answers in `answers`.
    pub(super) fn new(
        allow: Option<BpfHashMap<MapData, AllowKey, Allowance>>,
        answers: Arc<Answers>,
    ) -> Approvals {
        Approvals {
            inner: Arc::new(Mutex::new(ApprovalState::new(allow, answers))),
        }
    }

    /// The state, also after a panic of another holder (see
    /// [`crate::enforce::lock`] for why that is sound).
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, ApprovalState> {
        crate::enforce::lock(&self.inner)
    }

    /// Uses the run's answer store (shared with the control socket)
    /// instead of this backend's own. Call before the command starts.
    pub fn share_answers(&self, answers: Arc<Answers>) {
        self.lock().answers = answers;
    }

    /// Whether `id` is a request of this backend, waiting or answered.
    pub fn owns(&self, id: u64) -> bool {
        let st = self.lock();
        st.pending.contains_key(&id) || st.keys.contains_key(&id)
    }

    /// Answers a request. Held callers get the answer for their process
    /// and are continued (approved: the call and the rest of the action go
    /// on; refused: they fail with EPERM). For callers refused per call,
    /// approving grants a one-shot allowance: the next identical call
    /// (same object, same rule) within [`ALLOW_TTL_NS`] goes through once;
    /// refusing closes the request (the call already failed with EPERM).
    /// Either way the same action keeps the answer. A request answered
    /// before gets its answer changed for the next identical call.
    pub fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        let decision = if approve {
            DecisionKind::Approved
        } else {
            DecisionKind::Refused
        };
        self.lock().decide_as(id, approve, by, decision)
    }
}

impl ApprovalState {
    /// Answers request `id` as `decision` (`approved`, `refused`,
    /// `timeout`), then continues its held callers with that answer.
    pub(super) fn decide_as(
        &mut self,
        id: u64,
        approve: bool,
        by: &str,
        decision: DecisionKind,
    ) -> Result<(), DecideError> {
        let st = self;
        let Some(p) = st.pending.get(&id).cloned() else {
            return st.reconsider(id, approve, by);
        };
        if approve && (p.per_call || !st.holds.contains_key(&id)) {
            st.grant(p.key)?;
            st.granted
                .insert(p.key, (id, AllowedBy::Approval, Value::Null));
        }
        st.pending.remove(&id);
        st.answers.record(&p.action, approve, id);
        let as_name = if decision == DecisionKind::Timeout {
            "timeout"
        } else {
            "denied"
        };
        st.answers.answered(id, approve, as_name);
        st.release(&p, approve, decision);
        *st.counts.entry(decision).or_default() += 1;
        let enf = Enforcement {
            request: Some(id),
            rule: Some(p.rule.clone()),
            decided_by: Some(by.to_owned()),
            ..Enforcement::new(Backend::Lsm, decision)
        };
        let note = CallDecision {
            what: Some(p.what.clone()),
            op: Some(p.action.op),
            path: Some(p.action.path.clone()),
            ..CallDecision::of(enf)
        };
        st.notes
            .push(Note::decision(Some(p.action.pid), DecisionNote::Call(note)));
        Ok(())
    }
}

impl Approvals {
    /// Waiting requests, for `abm pending`.
    pub fn pending_list(&self) -> Vec<Value> {
        let now = monotonic_ns();
        self.lock()
            .pending
            .values()
            .map(|p| {
                json!({
                    "id": p.id, "backend": "lsm", "what": p.what, "op": p.action.op, "path": p.action.path,
                    "path2": p.action.path2, "argv": p.action.argv, "cwd": p.action.cwd, "pid": p.action.pid,
                    "comm": p.action.comm, "rule": p.rule,
                    "waiting_secs": (now.saturating_sub(p.requested_ns)) as f64 / 1e9,
                    "retry": if p.per_call {
                        "the call was refused; approving lets the next identical call through once"
                    } else {
                        "the call waits; approving lets it and the rest of its action go on"
                    },
                })
            })
            .collect()
    }
}

impl ApprovalState {
    /// `abm approve|deny ID` of a request answered before.
    fn reconsider(&mut self, id: u64, approve: bool, by: &str) -> Result<(), DecideError> {
        let key = *self.keys.get(&id).ok_or(DecideError::NoLsmRequest(id))?;
        self.answers
            .reconsider(id, approve)
            .ok_or(DecideError::NoAnswerToChange(id))?;
        self.rewrite_answers(id, approve);
        if approve {
            self.grant(key)?;
            self.granted
                .insert(key, (id, AllowedBy::Approval, Value::Null));
        } else if self.granted.get(&key).is_some_and(|g| g.0 == id) {
            self.granted.remove(&key);
            if let Some(m) = self.allow.as_mut() {
                let _ = m.remove(&key);
            }
        }
        let decision = if approve {
            DecisionKind::ApprovedForRetry
        } else {
            DecisionKind::DeniedForRetry
        };
        let enforcement = Enforcement {
            request: Some(id),
            decided_by: Some(by.to_owned()),
            ..Enforcement::new(Backend::Lsm, decision)
        };
        self.notes
            .push(Note::decision(None, DecisionNote::Nested { enforcement }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(path: &str) -> Action {
        Action {
            op: Some(Op::Exec),
            path: Some(path.into()),
            argv: Some(vec!["git".into(), "reset".into(), "--hard".into()]),
            cwd: Some("/w".into()),
            pid: 7,
            ..Default::default()
        }
    }

    fn key(ino: u64) -> AllowKey {
        AllowKey {
            ino,
            dev: 1,
            op: 0,
            rule: 3,
        }
    }

    fn approvals() -> Approvals {
        Approvals::new(None, Default::default())
    }

    #[test]
    fn a_path_search_asks_once_and_a_no_sticks() {
        let ap = approvals();
        let mut st = ap.lock();
        // Three PATH entries, three executables: one question.
        assert_eq!(st.confirm(&exec("/a/git"), "r", key(1)), Confirm::Asked(1));
        assert_eq!(st.confirm(&exec("/b/git"), "r", key(2)), Confirm::Joined(1));
        assert_eq!(st.confirm(&exec("/c/git"), "r", key(3)), Confirm::Joined(1));
        assert_eq!(st.pending.len(), 1);
        // Elsewhere it is another action.
        let mut other = exec("/a/git");
        other.cwd = Some("/other".into());
        assert_eq!(st.confirm(&other, "r", key(4)), Confirm::Asked(2));
        drop(st);
        ap.decide(1, false, "control:0").unwrap();
        let mut st = ap.lock();
        assert_eq!(st.pending.len(), 1);
        for p in ["/a/git", "/b/git", "/c/git"] {
            assert_eq!(st.confirm(&exec(p), "r", key(1)), Confirm::RefusedBefore(1));
        }
        assert_eq!(st.pending.len(), 1, "no new question after a no");
        let refused = st
            .notes
            .iter()
            .filter(|n| matches!(n, Note::Enforcement(d) if d.decision() == DecisionKind::Refused))
            .count();
        assert_eq!(refused, 1);
        drop(st);
        // Request 1 is this backend's, answered; 9 is nobody's.
        assert!(ap.owns(1) && ap.owns(2) && !ap.owns(9));
        assert!(ap.decide(9, true, "control:0").is_err());
        // Approving needs the kernel map here: the request stays waiting.
        assert!(ap.decide(2, true, "control:0").is_err());
        assert_eq!(ap.pending_list().len(), 1);
    }

    #[test]
    fn an_approved_action_is_not_asked_again() {
        let ap = approvals();
        let mut st = ap.lock();
        let victim = Action {
            op: Some(Op::Unlink),
            path: Some("/w/victim".into()),
            ..Default::default()
        };
        assert_eq!(st.confirm(&victim, "r", key(5)), Confirm::Asked(1));
        // The same object under the same rule is the same question, even
        // when the path reads differently.
        let mut alias = victim.clone();
        alias.path = Some("/w/./victim".into());
        assert_eq!(st.confirm(&alias, "r", key(5)), Confirm::Joined(1));
        st.pending.remove(&1);
        st.answers.answered(1, true, "denied");
        assert_eq!(st.confirm(&victim, "r", key(5)), Confirm::ApprovedBefore(1));
        assert_eq!(st.granted.get(&key(5)).map(|g| g.0), Some(1));
        assert!(st.pending.is_empty());
    }

    #[test]
    fn both_backends_share_one_store() {
        let shared: Arc<Answers> = Default::default();
        let ap = approvals();
        ap.share_answers(shared.clone());
        let mut st = ap.lock();
        assert_eq!(st.confirm(&exec("/a/git"), "r", key(1)), Confirm::Asked(1));
        assert_eq!(
            shared.lookup(&answers::key(&exec("/usr/bin/git"), "other")),
            Some(Answer::Waiting(1))
        );
    }
}
