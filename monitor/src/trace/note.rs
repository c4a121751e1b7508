//! Trace notes, typed: every kind of note abm writes is a variant with its
//! fields. A note is written as `{"type": "note", "kind": <kind>, "body":
//! <fields>}` (docs/trace.md); the kind is the variant's name in
//! snake_case.
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{TraceError, TraceWriter};
use crate::record::enforcement::{Backend, DecisionKind, DecisionNote};

/// One note.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "body", rename_all = "snake_case")]
pub enum Note {
    /// `abm run`: the command could not be started.
    SpawnFailed { error: String },
    /// `abm run`: SIGINT, SIGTERM or SIGHUP (`signal`); the processes
    /// still in scope were terminated.
    Interrupted {
        terminated_pids: Vec<u32>,
        signal: &'static str,
    },
    /// `abm run`: the run loop failed (a trace write): the command was
    /// stopped and what could be sealed was sealed.
    RunError { error: String },
    /// `abm run --keep-orphans`: descendants left running after `--linger`.
    OrphansLeftRunning { pids: Vec<u32> },
    /// `abm run`: descendants terminated after `--linger`.
    OrphansTerminated { pids: Vec<u32> },
    /// Results whose syscall entry record was lost (counted as a loss).
    UnpairedResults { count: u64 },
    /// The daemon put a reloaded policy in force.
    PolicyReloaded {
        policy_digest: String,
        changed: bool,
    },
    /// The daemon's target ended: its cgroup or processes are gone.
    TargetGone(TargetEnd),
    /// The daemon's target was removed (`abm watch remove`).
    TargetRemoved(TargetEnd),
    /// The daemon stopped.
    DaemonStopped(TargetEnd),
    /// The pod is no longer selected.
    PodDeselected(TargetEnd),
    /// The target's cgroup could not be watched.
    WatchFailed(TargetEnd),
    /// A decision of the guard (docs/enforcement.md, docs/lsm.md).
    Enforcement(Box<Decision>),
    /// The seccomp supervisor's handling cost.
    EnforcementStats(EnforcementStats),
    /// The end of an enforcing run: decisions by kind, what was preserved.
    EnforcementSummary(EnforcementSummary),
    /// The BPF LSM backend at the end of the run.
    LsmSummary(LsmSummary),
    /// A container whose cgroup was created while the run followed
    /// containers is in scope from its first process (docs/harness.md).
    ContainerFollowed(ContainerFollowed),
    /// A target's coverage started after its first process: records
    /// before `from` are missing (docs/daemon.md).
    CoverageLate(CoverageLate),
    /// `abm run`: a file the watched tree created under a sensitive
    /// pattern; its read-only opens are recorded from this record on
    /// (`full`: the kernel's set was full, so they are not).
    SensitiveAdded { path: String, full: bool },
    /// The daemon: a trace file's anchor could not be created, so the
    /// file has none (docs/daemon.md).
    Warning { anchor: String, error: String },
    /// `preserve` refused a call whose copy would exceed
    /// `--quarantine-limit` (docs/enforcement.md); written once per run.
    QuarantineLimit(QuarantineLimit),
    /// A logical action ended: what it was, did and how it was judged.
    Action(Box<crate::record::ActionNote>),
    /// The run's decision cost: the last note of a run.
    ActionStats(crate::record::ActionStats),
}

/// Body of `enforcement`: a decision of the guard (docs/enforcement.md,
/// docs/lsm.md). The process it concerns is a typed field, by which the
/// daemon sorts the note to that process's target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(flatten)]
    pub body: DecisionNote,
}

impl Decision {
    /// The decision's name.
    pub fn decision(&self) -> DecisionKind {
        self.body.enforcement().decision
    }
}

/// Body of `container_followed`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContainerFollowed {
    /// The container id its cgroup's name carries.
    pub container: String,
    /// The cgroup, from the root of the v2 hierarchy.
    pub cgroup: String,
    pub cgroup_id: u64,
    /// Why it is the run's: `client_running` (a container client of the
    /// watched tree was running) or `all` (`--follow-containers=all`).
    pub reason: &'static str,
}

/// Body of `coverage_late`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoverageLate {
    pub target: String,
    /// RFC 3339 time from which the target is covered.
    pub from: String,
    pub reason: String,
}

/// Body of the notes that end a daemon target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetEnd {
    pub target: String,
    pub reason: String,
}

/// Body of `lsm_summary`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LsmSummary {
    /// `lsm`.
    pub backend: Backend,
    /// Decisions by name.
    pub decisions: BTreeMap<DecisionKind, u64>,
    /// Confirm requests still waiting when the run ended (refused).
    pub unanswered_requests: Vec<u64>,
    pub quarantine: String,
}

/// Body of `quarantine_limit`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuarantineLimit {
    /// The quarantine directory.
    pub quarantine: String,
    /// `--quarantine-limit`.
    pub limit_bytes: u64,
    /// Bytes kept when the call came.
    pub used_bytes: u64,
    /// The file whose copy did not fit, and its size.
    pub path: String,
    pub size: u64,
    /// What happens from then on: [`QuarantineLimit::RULE`].
    pub rule: &'static str,
}

impl QuarantineLimit {
    pub const RULE: &'static str =
        "calls whose copy does not fit are refused (EPERM) until the run ends";
}

/// Body of `enforcement_stats`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnforcementStats {
    pub backend: Backend,
    pub notifications: u64,
    pub mean_handling_us: f64,
    pub max_handling_us: f64,
}

/// `notified` of `enforcement_summary`: the reason lines written to
/// refused callers (enforce::notify).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Notified {
    pub enabled: bool,
    pub failed: u64,
    pub sent: u64,
    pub suppressed: u64,
}

/// Body of `enforcement_summary`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnforcementSummary {
    pub backend: Backend,
    pub decisions: BTreeMap<DecisionKind, u64>,
    pub preserved_entries: u64,
    pub quarantine: Option<String>,
    /// Reason lines written to refused callers (enforce::notify).
    pub notified: Notified,
}

impl Note {
    /// An `enforcement` note about process `pid`.
    pub fn decision(pid: Option<u32>, body: DecisionNote) -> Note {
        Note::Enforcement(Box::new(Decision { pid, body }))
    }

    /// The note's kind and body, as written.
    pub fn parts(&self) -> (String, Value) {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => {
                let kind = match m.remove("kind") {
                    Some(Value::String(k)) => k,
                    _ => String::new(),
                };
                (kind, m.remove("body").unwrap_or(Value::Null))
            }
            _ => (String::new(), Value::Null),
        }
    }

    /// The note's kind.
    pub fn kind(&self) -> String {
        self.parts().0
    }

    /// Appends the note to a trace; returns its `seq`.
    pub fn append_to(&self, w: &mut TraceWriter) -> Result<u64, TraceError> {
        let (kind, body) = self.parts();
        w.append_note(&kind, body)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::enforcement::Enforcement;

    #[test]
    fn notes_are_written_as_their_kind_and_fields() {
        let cases = [
            (
                Note::Interrupted {
                    terminated_pids: vec![3, 4],
                    signal: "SIGHUP",
                },
                "interrupted",
                json!({ "terminated_pids": [3, 4], "signal": "SIGHUP" }),
            ),
            (
                Note::UnpairedResults { count: 2 },
                "unpaired_results",
                json!({ "count": 2 }),
            ),
            (
                Note::DaemonStopped(TargetEnd {
                    target: "a".into(),
                    reason: "daemon_stopped".into(),
                }),
                "daemon_stopped",
                json!({ "target": "a", "reason": "daemon_stopped" }),
            ),
            (
                Note::decision(
                    Some(7),
                    DecisionNote::Flat(Enforcement::new(Backend::Seccomp, DecisionKind::Denied)),
                ),
                "enforcement",
                json!({ "backend": "seccomp", "decision": "denied", "pid": 7 }),
            ),
            (
                Note::EnforcementSummary(EnforcementSummary {
                    backend: Backend::Seccomp,
                    decisions: BTreeMap::from([
                        (DecisionKind::Timeout, 1),
                        (DecisionKind::Approved, 2),
                        (DecisionKind::Denied, 1),
                    ]),
                    preserved_entries: 0,
                    quarantine: None,
                    notified: Notified {
                        sent: 1,
                        ..Notified::default()
                    },
                }),
                "enforcement_summary",
                json!({ "backend": "seccomp", "decisions": { "approved": 2, "denied": 1, "timeout": 1 },
                        "preserved_entries": 0, "quarantine": null,
                        "notified": { "enabled": false, "failed": 0, "sent": 1, "suppressed": 0 } }),
            ),
            (
                Note::LsmSummary(LsmSummary {
                    backend: Backend::Lsm,
                    decisions: BTreeMap::from([(DecisionKind::Denied, 2)]),
                    unanswered_requests: vec![4],
                    quarantine: "/q".into(),
                }),
                "lsm_summary",
                json!({ "backend": "lsm", "decisions": { "denied": 2 },
                        "unanswered_requests": [4], "quarantine": "/q" }),
            ),
        ];
        for (note, kind, body) in cases {
            assert_eq!(note.parts(), (kind.to_owned(), body));
        }
    }

    /// The body of each line written: what follows the chain fields, up to
    /// the hash.
    fn bodies(trace: &str) -> Vec<String> {
        trace
            .lines()
            .skip(1)
            .map(|l| {
                let from = l.find("\"prev\":\"").expect("prev") + "\"prev\":\"".len() + 65;
                let to = l.rfind(",\"hash\":").expect("hash");
                l[from + 1..to].to_owned()
            })
            .collect()
    }

    /// The note and loss lines the docs show are what the types write,
    /// byte for byte (their chain fields aside).
    #[test]
    fn documented_lines_are_written_byte_for_byte() {
        use monitor_common::LossCause;

        use crate::trace::{Cause, Header, Loss, TraceFormat};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w =
            TraceWriter::create_as(&path, None, Header::default(), TraceFormat::Jsonl).unwrap();
        // docs/enforcement.md, "Quarantine limit".
        Note::QuarantineLimit(QuarantineLimit {
            quarantine: "/tmp/demo2/q".into(),
            limit_bytes: 4096,
            used_bytes: 3000,
            path: "/tmp/demo2/ws/b".into(),
            size: 3000,
            rule: QuarantineLimit::RULE,
        })
        .append_to(&mut w)
        .unwrap();
        // docs/trace.md, the example trace.
        Note::Action(Box::new(example_action()))
            .append_to(&mut w)
            .unwrap();
        w.append_loss(&Loss::new(
            Cause::Kernel(LossCause::RingbufFull),
            12,
            Some(1),
            (5_200_000_000, 5_300_000_000),
        ))
        .unwrap();
        w.flush().unwrap();
        let written = bodies(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(written.len(), 3);
        assert!(written[0].starts_with("\"kind\":\"quarantine_limit\",\"body\":{"));
        assert!(written[1].starts_with("\"kind\":\"action\",\"body\":{"));
        assert!(written[2].starts_with("\"cause\":\"ringbuf_full\","));
        let docs = [
            include_str!("../../../docs/enforcement.md"),
            include_str!("../../../docs/trace.md"),
        ]
        .concat();
        for body in &written {
            assert!(docs.contains(body.as_str()), "the docs show {body}");
        }
    }

    /// The `action` note of docs/trace.md's example trace.
    fn example_action() -> crate::record::ActionNote {
        crate::record::ActionNote {
            action: 111,
            argv: vec!["rm".into(), "-rf".into(), "../sib".into()],
            cwd: Some("/tmp/jt/ws".into()),
            counts: crate::record::ActionCounts {
                records: 61,
                blast: crate::record::Blast {
                    files: 60,
                    irreversible: 50,
                    untracked: 4,
                    modified: 3,
                    git_internal: 50,
                    outside: 50,
                    recoverable: 0,
                    reversible: 1,
                    unmeasured: 9,
                    ..Default::default()
                },
            },
            previewed: true,
            treatment: crate::record::Treatment::Confirm,
            rule: "action.destroy-outside".into(),
            reason: "…".into(),
            decision_us: 5879.5,
        }
    }

    /// The typed `action` and `action_stats` notes are the bytes the
    /// judge's `json!` objects were.
    #[test]
    fn action_notes_are_the_bytes_of_their_json_objects() {
        let n = example_action();
        let (r, c) = (n.counts.records, &n.counts.blast);
        let old = json!({
            "action": n.action,
            "argv": &n.argv[..],
            "cwd": n.cwd,
            "counts": {
                "records": r,
                "files": c.files,
                "irreversible": c.irreversible,
                "untracked": c.untracked,
                "modified": c.modified,
                "git_internal": c.git_internal,
                "outside": c.outside,
                "recoverable": c.recoverable,
                "reversible": c.reversible,
                "unmeasured": c.unmeasured,
            },
            "previewed": n.previewed,
            "treatment": json!(n.treatment),
            "rule": json!(n.rule),
            "reason": json!(n.reason),
            "decision_us": n.decision_us,
        });
        let (kind, body) = Note::Action(Box::new(n.clone())).parts();
        assert_eq!(kind, "action");
        assert_eq!(body.to_string(), old.to_string());
        let none = crate::record::ActionNote { cwd: None, ..n };
        assert_eq!(Note::Action(Box::new(none)).parts().1["cwd"], Value::Null);
        let s = crate::record::ActionStats {
            actions: 3,
            decision_us_total: 12.5,
            decision_us_per_action: 12.5 / 3.0,
        };
        let old = json!({
            "actions": 3,
            "decision_us_total": 12.5,
            "decision_us_per_action": 12.5 / 3.0,
        });
        let (kind, body) = Note::ActionStats(s).parts();
        assert_eq!(kind, "action_stats");
        assert_eq!(body.to_string(), old.to_string());
    }
}
