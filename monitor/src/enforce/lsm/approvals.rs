//! Requests waiting for `abm approve|deny` and the one-shot allowances
//! the kernel consumes.
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
}

/// A decision record not yet matched to its syscall record.
pub(super) struct Held {
    pub(super) action: Action,
    pub(super) enforcement: Value,
}

/// Requests and allowances, shared by the session loop (which records
/// decisions) and the control socket's thread (`abm approve|deny|pending`).
#[derive(Clone)]
pub struct Approvals {
    pub(super) inner: Arc<Mutex<ApprovalState>>,
}

pub(super) struct ApprovalState {
    pub(super) allow: BpfHashMap<MapData, AllowKey, Allowance>,
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) next_request: u64,
    /// Approved and preserved requests, by key: id, how, what was kept;
    /// for the `allowed_once` record of the retry.
    pub(super) granted: HashMap<AllowKey, (u64, &'static str, Value)>,
    pub(super) counts: BTreeMap<String, u64>,
    /// Answers for the trace, written by the session loop.
    pub(super) notes: Vec<Note>,
}

impl ApprovalState {
    pub(super) fn grant(&mut self, key: AllowKey) -> Result<(), String> {
        let a = Allowance {
            expires_ns: monotonic_ns() + ALLOW_TTL_NS,
            tid: 0,
            _pad: 0,
        };
        self.allow
            .insert(key, a, 0)
            .map_err(|e| format!("LSM_ALLOW: {e}"))
    }
}

impl Approvals {
    /// The state, also after a panic of another holder (see
    /// [`crate::enforce::lock`] for why that is sound).
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, ApprovalState> {
        crate::enforce::lock(&self.inner)
    }

    /// Whether `id` is a request of this backend.
    pub fn owns(&self, id: u64) -> bool {
        self.lock().pending.contains_key(&id)
    }

    /// Answers a waiting request. Approving grants a one-shot allowance:
    /// the next identical call (same object, same rule) within
    /// [`ALLOW_TTL_NS`] goes through once; refusing only closes the request
    /// (the call already failed with EPERM).
    pub fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), String> {
        let mut st = self.lock();
        let p = st
            .pending
            .remove(&id)
            .ok_or_else(|| format!("no pending BPF LSM request {id}"))?;
        let decision = if approve {
            st.grant(p.key)?;
            st.granted.insert(p.key, (id, "approval", Value::Null));
            "approved"
        } else {
            "refused"
        };
        *st.counts.entry(decision.into()).or_default() += 1;
        let enf = json!({ "backend": "lsm", "decision": decision, "request": id, "rule": p.rule, "decided_by": by });
        let note = json!({ "enforcement": enf, "what": p.what, "op": p.action.op, "path": p.action.path, "pid": p.action.pid });
        st.notes.push(Note::Enforcement(note));
        Ok(())
    }

    /// Waiting requests, for `abm pending`.
    pub fn pending_list(&self) -> Vec<Value> {
        let now = monotonic_ns();
        self.lock()
            .pending
            .values()
            .map(|p| {
                json!({
                    "id": p.id, "backend": "lsm", "what": p.what, "op": p.action.op, "path": p.action.path,
                    "path2": p.action.path2, "argv": p.action.argv, "pid": p.action.pid, "comm": p.action.comm,
                    "rule": p.rule, "waiting_secs": (now.saturating_sub(p.requested_ns)) as f64 / 1e9,
                    "retry": "the call was refused; approving lets the next identical call through once",
                })
            })
            .collect()
    }
}
