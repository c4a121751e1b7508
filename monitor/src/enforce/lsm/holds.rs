//! Held callers: one decision per logical action under BPF LSM.
//!
//! A `confirm` of a file rule stops its caller in the kernel
//! (`decision::CONFIRM_HELD`: `SIGSTOP`, the call returns
//! `-ERESTARTNOINTR`, so it restarts when the caller is continued). Here
//! the question is asked once per logical action ([`ApprovalState::ask`]);
//! its answer is written for the process and rule into `LSM_ANSWERS`
//! ([`ActionAnswers`]) before the caller is continued, so the restarted
//! call and the action's other calls (the unlinks of an `rm -rf`) get it
//! in the kernel without a question: allowed, or `EPERM`. An identical
//! retry after an answer (a new process) is answered at once from the
//! run's answer store. A question nobody answers is refused after the
//! timeout; one whose held callers all went away is forgotten.
use crate::enforce::notify::Outcome;
use crate::record::enforcement::{
    Backend, CallDecision, DecisionKind, DecisionNote, Enforcement, WENT_AWAY,
};

use super::*;

/// How long a held caller's question waits when the run sets no other
/// time-out (the daemon; `abm run` uses `--confirm-timeout`).
pub const DEFAULT_HOLD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl ApprovalState {
    /// A caller held by a `confirm` of kernel rule `index` (`rule`: its
    /// id, `reason`: its reason): joins the question its process already
    /// waits on, or the logical action's ([`ApprovalState::ask`]); a new
    /// question otherwise. An action answered before is answered for this
    /// process at once, and the caller continued (told why when refused).
    pub(super) fn hold(
        &mut self,
        a: &Action,
        rule: &str,
        index: u32,
        key: AllowKey,
        reason: String,
    ) -> Confirm {
        let proc_key = (a.pid, index);
        if let Some(id) = self.held_by.get(&proc_key).copied() {
            if self.pending.contains_key(&id) {
                self.add_hold(id, proc_key);
                return Confirm::Joined(id);
            }
        }
        let c = self.ask(a, rule, key, reason.clone(), false);
        match c {
            Confirm::Asked(id) | Confirm::Joined(id) => self.add_hold(id, proc_key),
            Confirm::RefusedBefore(id) => {
                self.held_by.insert(proc_key, id);
                self.answer_process(a.pid, index, false);
                if let Some(n) = &self.notify {
                    n.tell(Outcome::Refused, a, rule, &reason, Some(id));
                }
                cont(a.pid);
            }
            Confirm::ApprovedBefore(id) => {
                self.held_by.insert(proc_key, id);
                self.answer_process(a.pid, index, true);
                cont(a.pid);
            }
        }
        c
    }

    fn add_hold(&mut self, id: u64, proc_key: (u32, u32)) {
        self.held_by.insert(proc_key, id);
        let v = self.holds.entry(id).or_default();
        if !v.contains(&proc_key) {
            v.push(proc_key);
        }
    }

    /// Continues the callers held for request `p` with its answer.
    pub(super) fn release(&mut self, p: &Pending, approve: bool, decision: DecisionKind) {
        let id = p.id;
        let Some(held) = self.holds.remove(&id) else {
            return;
        };
        let outcome = if decision == DecisionKind::Timeout {
            Outcome::TimedOut
        } else {
            Outcome::Refused
        };
        for (tgid, index) in held {
            self.answer_process(tgid, index, approve);
            if !approve {
                if let Some(n) = &self.notify {
                    let mut a = p.action.clone();
                    a.pid = tgid;
                    a.tid = tgid;
                    n.tell(outcome, &a, &p.rule, &p.reason, Some(id));
                }
            }
            cont(tgid);
        }
    }

    /// Writes the answer of process `tgid` for kernel rule `index`. When it
    /// cannot be written the held process is killed: continued without it,
    /// it would be held again at once, for ever.
    fn answer_process(&mut self, tgid: u32, index: u32, approve: bool) {
        let Some(m) = self.answer_map.as_mut() else {
            return;
        };
        let bit = 1u64 << (index & 63);
        let mut v: ActionAnswers = m.get(&tgid, 0).unwrap_or_default();
        if approve {
            v.allowed |= bit;
            v.denied &= !bit;
        } else {
            v.denied |= bit;
            v.allowed &= !bit;
            v.seen &= !bit;
        }
        if let Err(e) = m.insert(tgid, v, 0) {
            tracing::warn!("LSM_ANSWERS: answer for process {tgid} not written ({e}); killing it");
            // SAFETY: kill(2) with integer arguments.
            unsafe { libc::kill(tgid as i32, libc::SIGKILL) };
        }
    }

    /// `abm approve|deny ID` of a request answered before: the live
    /// processes it answered get the new answer too.
    pub(super) fn rewrite_answers(&mut self, id: u64, approve: bool) {
        let procs: Vec<(u32, u32)> = self
            .held_by
            .iter()
            .filter(|(_, r)| **r == id)
            .map(|(k, _)| *k)
            .collect();
        for (tgid, index) in procs {
            if alive(tgid) {
                self.answer_process(tgid, index, approve);
            } else {
                self.held_by.remove(&(tgid, index));
            }
        }
    }

    /// The request whose answer process `tgid` has for kernel rule `index`.
    pub(super) fn answered_by(&self, tgid: u32, index: u32) -> Option<u64> {
        self.held_by.get(&(tgid, index)).copied()
    }

    /// Refuses the questions of held callers left unanswered past the
    /// time-out, and forgets those whose held callers all went away.
    pub(super) fn sweep(&mut self) {
        let now = monotonic_ns();
        let timeout = self.timeout.as_nanos() as u64;
        let ids: Vec<u64> = self.holds.keys().copied().collect();
        for id in ids {
            let Some(p) = self.pending.get(&id) else {
                self.holds.remove(&id);
                continue;
            };
            let (requested, per_call) = (p.requested_ns, p.per_call);
            if now.saturating_sub(requested) >= timeout {
                if let Err(e) = self.decide_as(id, false, "timeout", DecisionKind::Timeout) {
                    tracing::warn!("timing out request {id}: {e}");
                }
                continue;
            }
            let held = self.holds.entry(id).or_default();
            held.retain(|(tgid, _)| alive(*tgid));
            if held.is_empty() && !per_call {
                self.holds.remove(&id);
                self.abandon(id);
            }
        }
        self.held_by.retain(|(tgid, _), _| alive(*tgid));
    }

    /// Request `id`'s held callers went away unanswered: asked again next
    /// time.
    fn abandon(&mut self, id: u64) {
        let Some(p) = self.pending.remove(&id) else {
            return;
        };
        self.answers.abandoned(id);
        *self.counts.entry(DecisionKind::Abandoned).or_default() += 1;
        let enf = Enforcement {
            request: Some(id),
            rule: Some(p.rule.clone()),
            reason: Some(WENT_AWAY.to_owned()),
            ..Enforcement::new(Backend::Lsm, DecisionKind::Abandoned)
        };
        let note = CallDecision {
            what: Some(p.what.clone()),
            op: Some(p.action.op),
            path: Some(p.action.path.clone()),
            ..CallDecision::of(enf)
        };
        self.notes
            .push(Note::decision(Some(p.action.pid), DecisionNote::Call(note)));
    }
}

impl LsmBackend {
    /// The run ends: every question a held caller waits on is refused
    /// (`decided_by: shutdown`) and its callers continued, while the
    /// programs still decide (their restarted calls fail with `EPERM`).
    pub fn release_held(&mut self) {
        let mut st = self.approvals.lock();
        let ids: Vec<u64> = st.holds.keys().copied().collect();
        for id in ids {
            if let Err(e) = st.decide_as(id, false, "shutdown", DecisionKind::Refused) {
                tracing::warn!("refusing request {id} at shutdown: {e}");
            }
        }
    }
}

impl Approvals {
    /// Over the kernel's `LSM_ANSWERS` map.
    pub(super) fn set_answer_map(&self, m: BpfHashMap<MapData, u32, ActionAnswers>) {
        self.lock().answer_map = Some(m);
    }

    /// A held caller's question left unanswered this long is refused.
    pub fn set_timeout(&self, t: std::time::Duration) {
        self.lock().timeout = t;
    }

    /// Time-outs and callers gone (see [`ApprovalState::sweep`]).
    pub fn sweep(&self) {
        self.lock().sweep();
    }
}

/// Whether process `pid` still exists.
fn alive(pid: u32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks.
    let r = unsafe { libc::kill(pid as i32, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Continues a stopped process (held, or stopped for its reason line).
pub(super) fn cont(pid: u32) {
    // SAFETY: kill(2) with integer arguments.
    if unsafe { libc::kill(pid as i32, libc::SIGCONT) } != 0 {
        tracing::debug!("SIGCONT to {pid}: {}", std::io::Error::last_os_error());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held unlink by this test process (the SIGCONTs go to itself).
    fn unlink(path: &str) -> Action {
        Action {
            op: Some(Op::Unlink),
            path: Some(path.into()),
            pid: std::process::id(),
            tid: std::process::id(),
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

    #[test]
    fn a_held_action_is_asked_once_and_its_no_sticks() {
        let ap = Approvals::new(None, Default::default());
        let mut st = ap.lock();
        let a = unlink("/w/tree/f1");
        assert_eq!(
            st.hold(&a, "r", 3, key(1), String::new()),
            Confirm::Asked(1)
        );
        // A spurious SIGCONT re-holds the same call: the same question.
        assert_eq!(
            st.hold(&a, "r", 3, key(1), String::new()),
            Confirm::Joined(1)
        );
        // Another call of the same process under the same rule, too.
        let other = unlink("/w/tree/f2");
        assert_eq!(
            st.hold(&other, "r", 3, key(2), String::new()),
            Confirm::Joined(1)
        );
        assert_eq!(st.holds.get(&1).map(Vec::len), Some(1));
        assert!(!st.pending[&1].per_call);
        st.decide_as(1, false, "control:0", DecisionKind::Refused)
            .unwrap();
        assert!(st.pending.is_empty() && st.holds.is_empty());
        assert_eq!(st.answered_by(a.pid, 3), Some(1));
        // An identical retry (a new process): refused by the answer,
        // no new question.
        let mut retry = unlink("/w/tree/f1");
        retry.pid = std::process::id();
        st.held_by.clear();
        assert_eq!(
            st.hold(&retry, "r", 3, key(1), String::new()),
            Confirm::RefusedBefore(1)
        );
        assert!(st.pending.is_empty());
        assert_eq!(st.counts.get(&DecisionKind::Refused), Some(&1));
    }

    #[test]
    fn a_held_question_times_out() {
        let ap = Approvals::new(None, Default::default());
        ap.set_timeout(std::time::Duration::ZERO);
        let mut st = ap.lock();
        let a = unlink("/w/x");
        assert_eq!(
            st.hold(&a, "r", 3, key(1), String::new()),
            Confirm::Asked(1)
        );
        st.sweep();
        assert!(st.pending.is_empty());
        assert_eq!(st.counts.get(&DecisionKind::Timeout), Some(&1));
        assert_eq!(
            st.answers.lookup(&crate::enforce::answers::key(&a, "r")),
            Some(crate::enforce::answers::Answer::Refused(1, "timeout"))
        );
    }

    #[test]
    fn an_approval_does_not_grant_a_one_shot_allowance_to_held_callers() {
        let ap = Approvals::new(None, Default::default());
        let mut st = ap.lock();
        let a = unlink("/w/x");
        st.hold(&a, "r", 3, key(1), String::new());
        // No LSM_ALLOW here: a grant would fail; the held caller needs none.
        st.decide_as(1, true, "control:0", DecisionKind::Approved)
            .unwrap();
        assert!(st.granted.is_empty());
        assert_eq!(
            st.hold(&unlink("/w/x"), "r", 3, key(1), String::new()),
            Confirm::ApprovedBefore(1)
        );
    }
}
