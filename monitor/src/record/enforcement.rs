//! What enforcement decided, typed: the `enforcement` object of a record
//! and the bodies of `enforcement` notes, as both backends (seccomp, BPF
//! LSM) write them (docs/enforcement.md, docs/lsm.md). A field that is
//! `None` is left out; the fields of an `enforcement` object are declared
//! in the order they are written (by name).
use std::cmp::Ordering;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{Op, Treatment};

/// The backend that decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// The name of a decision (`decision`), also the key of the decision
/// counters of `enforcement_summary` and `lsm_summary`. Ordered by name,
/// so that counters keyed by it are written in the order of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Refused by a rule, or by an earlier answer to the same action.
    Denied,
    /// A confirm request approved.
    Approved,
    /// A confirm request nobody answered in time (seccomp).
    Timeout,
    /// The waiting call went away before its answer (seccomp).
    Abandoned,
    /// A copy was kept, then the call ran (seccomp).
    Preserved,
    /// A call waits for a human (seccomp).
    Pending,
    /// A request answered before changed its answer for the next identical
    /// call.
    ApprovedForRetry,
    DeniedForRetry,
    /// A call whose verdict blocks it ran (seccomp).
    Unenforced,
    /// A confirm request refused (BPF LSM).
    Refused,
    /// A confirm request asked (BPF LSM).
    ConfirmRequested,
    /// The call was refused until a confirm request is approved (BPF LSM).
    PendingConfirmation,
    /// The call was refused until its copy is kept (BPF LSM).
    PreservePending,
    /// The retry an approval or a copy let through (BPF LSM).
    AllowedOnce,
    /// The exec was killed: its argv changed after the decision (BPF LSM).
    Killed,
    /// The caller was stopped until its action's question was answered;
    /// the call restarts then (BPF LSM; the call's record has
    /// `errno: ERESTARTNOINTR`, the restarted call a record of its own).
    Held,
    /// The first call of a process let through by the answer to its held
    /// action (BPF LSM); the action's later calls in that process pass
    /// without a decision of their own.
    Allowed,
    /// A kernel decision abm does not know.
    Unknown,
}

impl DecisionKind {
    /// The name, as written.
    pub fn name(self) -> &'static str {
        use DecisionKind::*;
        match self {
            Denied => "denied",
            Approved => "approved",
            Timeout => "timeout",
            Abandoned => "abandoned",
            Preserved => "preserved",
            Pending => "pending",
            ApprovedForRetry => "approved_for_retry",
            DeniedForRetry => "denied_for_retry",
            Unenforced => "unenforced",
            Refused => "refused",
            ConfirmRequested => "confirm_requested",
            PendingConfirmation => "pending_confirmation",
            PreservePending => "preserve_pending",
            AllowedOnce => "allowed_once",
            Killed => "killed",
            Held => "held",
            Allowed => "allowed",
            Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Ord for DecisionKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for DecisionKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What let a BPF LSM retry through (`allowed_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllowedBy {
    Approval,
    Preserved,
}

/// `retry` of a BPF LSM decision that lets the next identical call through.
pub const RETRY_ALLOWED_ONCE: &str = "allowed once";
/// `answer` of a call refused by an earlier answer to the same action.
pub const REFUSED_BEFORE: &str = "the same action was refused before in this run";
/// `reason` of an `abandoned` decision.
pub const WENT_AWAY: &str = "the waiting call went away (the process exited or was interrupted)";

/// The `enforcement` object: one decision about one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enforcement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_by: Option<AllowedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_before: Option<u64>,
    pub backend: Backend,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    pub decision: DecisionKind,
    /// seccomp `preserved`: the ids of the quarantine entries kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// BPF LSM: the hook that decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_error: Option<String>,
    /// BPF LSM: the quarantine entries kept (their manifest lines;
    /// docs/enforcement.md); `null` when the allowance came from an
    /// approval.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub preserved: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as_request: Option<u64>,
    /// The deciding rule's treatment; `null` when the BPF LSM backend does
    /// not know the rule.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub treatment: Option<Option<Treatment>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
}

/// A field that is there, `null` or not, is `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl Enforcement {
    /// A decision with nothing else known yet.
    pub fn new(backend: Backend, decision: DecisionKind) -> Enforcement {
        Enforcement {
            allowed_by: None,
            answer: None,
            approved_before: None,
            backend,
            decided_at: None,
            decided_by: None,
            decision,
            entries: None,
            error: None,
            hook: None,
            preserve_error: None,
            preserved: None,
            quarantine: None,
            reason: None,
            request: None,
            requested_at: None,
            retry: None,
            rule: None,
            same_as_request: None,
            treatment: None,
            waited_ms: None,
        }
    }
}

/// Body of an `enforcement` note besides its `pid`: the decision, nested
/// under `enforcement` beside the call it concerns, or flat with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DecisionNote {
    /// seccomp: a call let through after a confirm or preserve answer, or
    /// a confirm request approved or refused (BPF LSM), with the call.
    Call(CallDecision),
    /// seccomp: a call that waits for a human (`pending`), flat.
    Pending(PendingCall),
    /// seccomp: a waiting call that went away (`abandoned`), flat.
    Gone(GoneCall),
    /// A request whose answer changed for the next identical call
    /// (seccomp, flat: `approved_for_retry`, `denied_for_retry`).
    Flat(Enforcement),
    /// A request whose answer changed (BPF LSM, nested).
    Nested { enforcement: Enforcement },
}

/// A decision (`enforcement`) beside the call it concerns. Which of the
/// call's fields a note has depends on who wrote it: a field that is
/// `None` is left out, `Some(None)` is written `null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallDecision {
    pub enforcement: Enforcement,
    /// BPF LSM: the action in words (`enforce::describe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<Option<Op>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscall: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path2: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ktime_ns: Option<u64>,
    /// seccomp `preserved`: the quarantine entries kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserved: Option<Vec<Value>>,
}

impl CallDecision {
    /// `enforcement` with none of the call's fields.
    pub fn of(enforcement: Enforcement) -> CallDecision {
        CallDecision {
            enforcement,
            what: None,
            op: None,
            syscall: None,
            path: None,
            path2: None,
            argv: None,
            cwd: None,
            tid: None,
            comm: None,
            ktime_ns: None,
            preserved: None,
        }
    }
}

/// seccomp `pending`: the decision's fields (`backend`, `decision`,
/// `request`, `rule`, `reason`, `requested_at`) and the waiting call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingCall {
    #[serde(flatten)]
    pub enforcement: Enforcement,
    pub op: Option<Op>,
    pub syscall: String,
    pub path: Option<String>,
    pub path2: Option<String>,
    pub argv: Option<Vec<String>>,
    pub tid: u32,
    pub comm: String,
    /// What the action would destroy, when abm can tell.
    pub would: Option<String>,
    /// The request this one waits on (the same action).
    pub same_as_request: Option<u64>,
    pub timeout_secs: f64,
    pub control_socket: String,
}

/// seccomp `abandoned` of a waiting call nobody answered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GoneCall {
    #[serde(flatten)]
    pub enforcement: Enforcement,
    pub op: Option<Op>,
    pub path: Option<String>,
    pub tid: u32,
}

impl DecisionNote {
    /// The decision the note carries.
    pub fn enforcement(&self) -> &Enforcement {
        match self {
            DecisionNote::Call(c) => &c.enforcement,
            DecisionNote::Pending(p) => &p.enforcement,
            DecisionNote::Gone(g) => &g.enforcement,
            DecisionNote::Flat(e) | DecisionNote::Nested { enforcement: e } => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const AT: &str = "2026-01-02T03:04:05.000000006Z";
    const ASKED_AT: &str = "2026-01-02T03:04:00.000000000Z";
    const UNENFORCED: &str = "the call ran: the supervisor judged it before it ran and let it through (its verdict then differed: the result and what the call left were not known yet), or it never reached the supervisor (a process outside the command's seccomp filter, such as a container the runtime started)";

    /// seccomp's decided call (enforce::seccomp::verdicts::decided).
    fn decided(decision: DecisionKind, t: Treatment, by: &str) -> Enforcement {
        Enforcement {
            rule: Some("r1".into()),
            treatment: Some(Some(t)),
            decided_by: Some(by.into()),
            decided_at: Some(AT.into()),
            ..Enforcement::new(Backend::Seccomp, decision)
        }
    }

    /// The call of the examples: `rm /w/x`, pid 7, tid 8.
    fn call(e: Enforcement) -> CallDecision {
        CallDecision {
            op: Some(Some(Op::Unlink)),
            syscall: Some("unlinkat".into()),
            path: Some(Some("/w/x".into())),
            path2: Some(None),
            tid: Some(8),
            comm: Some("rm".into()),
            ktime_ns: Some(99),
            ..CallDecision::of(e)
        }
    }

    /// BPF LSM's decision of the kernel (enforce::lsm::backend).
    fn lsm(decision: DecisionKind, t: Option<Treatment>) -> Enforcement {
        Enforcement {
            rule: Some("r1".into()),
            hook: Some("path_unlink".into()),
            treatment: Some(t),
            ..Enforcement::new(Backend::Lsm, decision)
        }
    }

    fn entries() -> Vec<Value> {
        vec![
            json!({"id": 4, "path": "/w/x", "method": "hardlink"}),
            json!({"id": 5, "path": "/w/y"}),
        ]
    }

    /// The body of the note, as written (crate::trace::note).
    fn note(pid: Option<u32>, body: DecisionNote) -> String {
        let mut v = serde_json::to_value(body).unwrap();
        if let Some(pid) = pid {
            v["pid"] = json!(pid);
        }
        v.to_string()
    }

    /// Every shape of `enforcement` object both backends write, byte for
    /// byte as they were written when they were built by hand.
    #[test]
    fn enforcement_objects_are_written_byte_for_byte() {
        use DecisionKind::*;
        let mut approved = decided(Approved, Treatment::Confirm, "control:0");
        approved.requested_at = Some(ASKED_AT.into());
        approved.request = Some(3);
        approved.waited_ms = Some(1500);
        let mut timeout = approved.clone();
        timeout.decision = Timeout;
        timeout.decided_by = Some("timeout".into());
        let preserved = Enforcement {
            quarantine: Some("/q".into()),
            entries: Some(vec![4, 5]),
            ..decided(Preserved, Treatment::Preserve, "policy")
        };
        let kept = Value::Array(entries());
        let cases = [
            (
                decided(Denied, Treatment::Deny, "policy"),
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"policy","decision":"denied","rule":"r1","treatment":"deny"}"#,
            ),
            (
                Enforcement {
                    preserve_error: Some("disk full".into()),
                    ..decided(Denied, Treatment::Preserve, "policy")
                },
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"policy","decision":"denied","preserve_error":"disk full","rule":"r1","treatment":"preserve"}"#,
            ),
            (
                approved.clone(),
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"control:0","decision":"approved","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","treatment":"confirm","waited_ms":1500}"#,
            ),
            (
                timeout,
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"timeout","decision":"timeout","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","treatment":"confirm","waited_ms":1500}"#,
            ),
            (
                preserved.clone(),
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"policy","decision":"preserved","entries":[4,5],"quarantine":"/q","rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(2),
                    ..decided(Approved, Treatment::Confirm, "request:2")
                },
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"request:2","decision":"approved","request":2,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(2),
                    answer: Some(REFUSED_BEFORE.into()),
                    ..decided(Denied, Treatment::Confirm, "request:2")
                },
                r#"{"answer":"the same action was refused before in this run","backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"request:2","decision":"denied","request":2,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    rule: Some("r1".into()),
                    treatment: Some(Some(Treatment::Deny)),
                    reason: Some(UNENFORCED.into()),
                    ..Enforcement::new(Backend::Seccomp, Unenforced)
                },
                r#"{"backend":"seccomp","decision":"unenforced","reason":"the call ran: the supervisor judged it before it ran and let it through (its verdict then differed: the result and what the call left were not known yet), or it never reached the supervisor (a process outside the command's seccomp filter, such as a container the runtime started)","rule":"r1","treatment":"deny"}"#,
            ),
            (
                lsm(Denied, Some(Treatment::Deny)),
                r#"{"backend":"lsm","decision":"denied","hook":"path_unlink","rule":"r1","treatment":"deny"}"#,
            ),
            (
                lsm(Unknown, None),
                r#"{"backend":"lsm","decision":"unknown","hook":"path_unlink","rule":"r1","treatment":null}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    ..lsm(PendingConfirmation, Some(Treatment::Confirm))
                },
                r#"{"backend":"lsm","decision":"pending_confirmation","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    same_as_request: Some(3),
                    ..lsm(PendingConfirmation, Some(Treatment::Confirm))
                },
                r#"{"backend":"lsm","decision":"pending_confirmation","hook":"path_unlink","request":3,"rule":"r1","same_as_request":3,"treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    decided_by: Some("request:3".into()),
                    answer: Some(REFUSED_BEFORE.into()),
                    ..lsm(Denied, Some(Treatment::Confirm))
                },
                r#"{"answer":"the same action was refused before in this run","backend":"lsm","decided_by":"request:3","decision":"denied","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    approved_before: Some(3),
                    retry: Some(RETRY_ALLOWED_ONCE.into()),
                    ..lsm(PendingConfirmation, Some(Treatment::Confirm))
                },
                r#"{"approved_before":3,"backend":"lsm","decision":"pending_confirmation","hook":"path_unlink","request":3,"retry":"allowed once","rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    preserved: Some(kept.clone()),
                    retry: Some(RETRY_ALLOWED_ONCE.into()),
                    ..lsm(PreservePending, Some(Treatment::Preserve))
                },
                r#"{"backend":"lsm","decision":"preserve_pending","hook":"path_unlink","preserved":[{"id":4,"method":"hardlink","path":"/w/x"},{"id":5,"path":"/w/y"}],"request":3,"retry":"allowed once","rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    preserved: Some(kept.clone()),
                    error: Some("LSM_ALLOW: full".into()),
                    ..lsm(PreservePending, Some(Treatment::Preserve))
                },
                r#"{"backend":"lsm","decision":"preserve_pending","error":"LSM_ALLOW: full","hook":"path_unlink","preserved":[{"id":4,"method":"hardlink","path":"/w/x"},{"id":5,"path":"/w/y"}],"request":3,"rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    error: Some("could not keep a copy, the call stays refused: disk full".into()),
                    ..lsm(PreservePending, Some(Treatment::Preserve))
                },
                r#"{"backend":"lsm","decision":"preserve_pending","error":"could not keep a copy, the call stays refused: disk full","hook":"path_unlink","request":3,"rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    preserved: Some(Value::Null),
                    ..lsm(PreservePending, Some(Treatment::Preserve))
                },
                r#"{"backend":"lsm","decision":"preserve_pending","hook":"path_unlink","preserved":null,"request":3,"rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    allowed_by: Some(AllowedBy::Preserved),
                    preserved: Some(kept),
                    ..lsm(AllowedOnce, Some(Treatment::Preserve))
                },
                r#"{"allowed_by":"preserved","backend":"lsm","decision":"allowed_once","hook":"path_unlink","preserved":[{"id":4,"method":"hardlink","path":"/w/x"},{"id":5,"path":"/w/y"}],"request":3,"rule":"r1","treatment":"preserve"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    allowed_by: Some(AllowedBy::Approval),
                    ..lsm(AllowedOnce, Some(Treatment::Confirm))
                },
                r#"{"allowed_by":"approval","backend":"lsm","decision":"allowed_once","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    ..lsm(Held, Some(Treatment::Confirm))
                },
                r#"{"backend":"lsm","decision":"held","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    same_as_request: Some(3),
                    ..lsm(Held, Some(Treatment::Confirm))
                },
                r#"{"backend":"lsm","decision":"held","hook":"path_unlink","request":3,"rule":"r1","same_as_request":3,"treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    decided_by: Some("request:3".into()),
                    answer: Some(REFUSED_BEFORE.into()),
                    ..lsm(Held, Some(Treatment::Confirm))
                },
                r#"{"answer":"the same action was refused before in this run","backend":"lsm","decided_by":"request:3","decision":"held","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    approved_before: Some(3),
                    ..lsm(Held, Some(Treatment::Confirm))
                },
                r#"{"approved_before":3,"backend":"lsm","decision":"held","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    allowed_by: Some(AllowedBy::Approval),
                    ..lsm(Allowed, Some(Treatment::Confirm))
                },
                r#"{"allowed_by":"approval","backend":"lsm","decision":"allowed","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                Enforcement {
                    request: Some(3),
                    decided_by: Some("request:3".into()),
                    ..lsm(Denied, Some(Treatment::Confirm))
                },
                r#"{"backend":"lsm","decided_by":"request:3","decision":"denied","hook":"path_unlink","request":3,"rule":"r1","treatment":"confirm"}"#,
            ),
            (
                lsm(AllowedOnce, Some(Treatment::Deny)),
                r#"{"backend":"lsm","decision":"allowed_once","hook":"path_unlink","rule":"r1","treatment":"deny"}"#,
            ),
            (
                Enforcement {
                    reason: Some("argv changed after the decision".into()),
                    ..lsm(Killed, Some(Treatment::Deny))
                },
                r#"{"backend":"lsm","decision":"killed","hook":"path_unlink","reason":"argv changed after the decision","rule":"r1","treatment":"deny"}"#,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(serde_json::to_string(&e).unwrap(), want);
            // And read back as it was.
            let back: Enforcement = serde_json::from_str(want).unwrap();
            assert_eq!(back, e, "{want}");
        }
    }

    /// Every shape of `enforcement` note body both backends write, byte for
    /// byte (after the note's `pid`, written beside them).
    #[test]
    fn decision_notes_are_written_byte_for_byte() {
        use DecisionKind::*;
        let mut approved = decided(Approved, Treatment::Confirm, "control:0");
        approved.requested_at = Some(ASKED_AT.into());
        approved.request = Some(3);
        approved.waited_ms = Some(1500);
        let mut abandoned = approved.clone();
        abandoned.decided_by = Some("timeout".into());
        abandoned.decision = Abandoned;
        abandoned.reason = Some(WENT_AWAY.into());
        let preserved = Enforcement {
            quarantine: Some("/q".into()),
            entries: Some(vec![4, 5]),
            ..decided(Preserved, Treatment::Preserve, "policy")
        };
        let remembered = Enforcement {
            request: Some(2),
            ..decided(Approved, Treatment::Confirm, "request:2")
        };
        let pending = |argv, path2, would, leader, timeout_secs| PendingCall {
            enforcement: Enforcement {
                request: Some(3),
                rule: Some("r1".into()),
                reason: Some("why".into()),
                requested_at: Some(ASKED_AT.into()),
                ..Enforcement::new(Backend::Seccomp, Pending)
            },
            op: Some(Op::Unlink),
            syscall: "unlinkat".into(),
            path: Some("/w/x".into()),
            path2,
            argv,
            tid: 8,
            comm: "rm".into(),
            would,
            same_as_request: leader,
            timeout_secs,
            control_socket: "/run/abm.sock".into(),
        };
        let cases = [
            (
                note(Some(7), DecisionNote::Call(call(approved))),
                r#"{"comm":"rm","enforcement":{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"control:0","decision":"approved","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","treatment":"confirm","waited_ms":1500},"ktime_ns":99,"op":"unlink","path":"/w/x","path2":null,"pid":7,"syscall":"unlinkat","tid":8}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Call(CallDecision {
                        path: Some(Some("/w/x".into())),
                        ..CallDecision::of(abandoned)
                    }),
                ),
                r#"{"enforcement":{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"timeout","decision":"abandoned","reason":"the waiting call went away (the process exited or was interrupted)","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","treatment":"confirm","waited_ms":1500},"path":"/w/x","pid":7}"#,
            ),
            (
                note(
                    None,
                    DecisionNote::Flat(Enforcement {
                        request: Some(3),
                        decided_by: Some("control:0".into()),
                        decided_at: Some(AT.into()),
                        ..Enforcement::new(Backend::Seccomp, ApprovedForRetry)
                    }),
                ),
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"control:0","decision":"approved_for_retry","request":3}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Gone(GoneCall {
                        enforcement: Enforcement {
                            request: Some(3),
                            rule: Some("r1".into()),
                            decided_at: Some(AT.into()),
                            reason: Some(WENT_AWAY.into()),
                            ..Enforcement::new(Backend::Seccomp, Abandoned)
                        },
                        op: Some(Op::Unlink),
                        path: Some("/w/x".into()),
                        tid: 8,
                    }),
                ),
                r#"{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decision":"abandoned","op":"unlink","path":"/w/x","pid":7,"reason":"the waiting call went away (the process exited or was interrupted)","request":3,"rule":"r1","tid":8}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Call(CallDecision {
                        preserved: Some(entries()),
                        ..call(preserved)
                    }),
                ),
                r#"{"comm":"rm","enforcement":{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"policy","decision":"preserved","entries":[4,5],"quarantine":"/q","rule":"r1","treatment":"preserve"},"ktime_ns":99,"op":"unlink","path":"/w/x","path2":null,"pid":7,"preserved":[{"id":4,"method":"hardlink","path":"/w/x"},{"id":5,"path":"/w/y"}],"syscall":"unlinkat","tid":8}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Pending(pending(None, None, None, None, 30.0)),
                ),
                r#"{"argv":null,"backend":"seccomp","comm":"rm","control_socket":"/run/abm.sock","decision":"pending","op":"unlink","path":"/w/x","path2":null,"pid":7,"reason":"why","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","same_as_request":null,"syscall":"unlinkat","tid":8,"timeout_secs":30.0,"would":null}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Pending(pending(
                        Some(vec!["rm".into(), "x".into()]),
                        Some("/w/y".into()),
                        Some("lose 2 files".into()),
                        Some(2),
                        1.5,
                    )),
                ),
                r#"{"argv":["rm","x"],"backend":"seccomp","comm":"rm","control_socket":"/run/abm.sock","decision":"pending","op":"unlink","path":"/w/x","path2":"/w/y","pid":7,"reason":"why","request":3,"requested_at":"2026-01-02T03:04:00.000000000Z","rule":"r1","same_as_request":2,"syscall":"unlinkat","tid":8,"timeout_secs":1.5,"would":"lose 2 files"}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Call(CallDecision {
                        argv: Some(None),
                        ..call(remembered)
                    }),
                ),
                r#"{"argv":null,"comm":"rm","enforcement":{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"request:2","decision":"approved","request":2,"rule":"r1","treatment":"confirm"},"ktime_ns":99,"op":"unlink","path":"/w/x","path2":null,"pid":7,"syscall":"unlinkat","tid":8}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Call(CallDecision {
                        what: Some("rm /w/x".into()),
                        op: Some(Some(Op::Unlink)),
                        path: Some(Some("/w/x".into())),
                        ..CallDecision::of(Enforcement {
                            request: Some(3),
                            rule: Some("r1".into()),
                            decided_by: Some("control:0".into()),
                            ..Enforcement::new(Backend::Lsm, Approved)
                        })
                    }),
                ),
                r#"{"enforcement":{"backend":"lsm","decided_by":"control:0","decision":"approved","request":3,"rule":"r1"},"op":"unlink","path":"/w/x","pid":7,"what":"rm /w/x"}"#,
            ),
            (
                note(
                    None,
                    DecisionNote::Nested {
                        enforcement: Enforcement {
                            request: Some(3),
                            decided_by: Some("control:0".into()),
                            ..Enforcement::new(Backend::Lsm, DeniedForRetry)
                        },
                    },
                ),
                r#"{"enforcement":{"backend":"lsm","decided_by":"control:0","decision":"denied_for_retry","request":3}}"#,
            ),
            (
                note(
                    Some(7),
                    DecisionNote::Call(CallDecision {
                        what: Some("rm /w/x".into()),
                        op: Some(Some(Op::Unlink)),
                        path: Some(Some("/w/x".into())),
                        argv: Some(None),
                        cwd: Some(None),
                        ..CallDecision::of(Enforcement {
                            request: Some(3),
                            rule: Some("r1".into()),
                            ..Enforcement::new(Backend::Lsm, ConfirmRequested)
                        })
                    }),
                ),
                r#"{"argv":null,"cwd":null,"enforcement":{"backend":"lsm","decision":"confirm_requested","request":3,"rule":"r1"},"op":"unlink","path":"/w/x","pid":7,"what":"rm /w/x"}"#,
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    /// An event record carries its `enforcement` object as it was written.
    #[test]
    fn an_event_record_carries_the_object_byte_for_byte() {
        let a = super::super::Action {
            op: Some(Op::Unlink),
            syscall: "unlinkat".into(),
            path: Some("/w/x".into()),
            pid: 7,
            tid: 8,
            comm: "rm".into(),
            enforcement: Some(Box::new(decided(
                DecisionKind::Denied,
                Treatment::Deny,
                "policy",
            ))),
            ..Default::default()
        };
        let line = serde_json::to_string(&a).unwrap();
        assert_eq!(
            line,
            r#"{"op":"unlink","syscall":"unlinkat","ktime_ns":0,"time":"","pid":7,"tid":8,"ppid":0,"uid":0,"gid":0,"comm":"rm","cgroup_id":0,"path":"/w/x","result":null,"enforcement":{"backend":"seccomp","decided_at":"2026-01-02T03:04:05.000000006Z","decided_by":"policy","decision":"denied","rule":"r1","treatment":"deny"}}"#
        );
        let back: super::super::Action = serde_json::from_str(&line).unwrap();
        assert_eq!(back, a);
    }

    /// Counters keyed by the decision are written in the order of the
    /// names, as counters keyed by the name were.
    #[test]
    fn decisions_count_in_the_order_of_their_names() {
        use DecisionKind::*;
        let all = [
            Denied,
            Approved,
            Timeout,
            Abandoned,
            Preserved,
            Pending,
            ApprovedForRetry,
            DeniedForRetry,
            Unenforced,
            Refused,
            ConfirmRequested,
            PendingConfirmation,
            PreservePending,
            AllowedOnce,
            Killed,
            Held,
            Allowed,
            Unknown,
        ];
        let by_kind: std::collections::BTreeMap<DecisionKind, u64> =
            all.iter().map(|k| (*k, 1)).collect();
        let by_name: std::collections::BTreeMap<String, u64> =
            all.iter().map(|k| (k.name().to_owned(), 1)).collect();
        assert_eq!(
            serde_json::to_string(&by_kind).unwrap(),
            serde_json::to_string(&by_name).unwrap()
        );
        for k in all {
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.name()));
        }
    }
}
