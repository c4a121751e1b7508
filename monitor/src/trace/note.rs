//! Trace notes, typed: every kind of note abm writes is a variant with its
//! fields. A note is written as `{"type": "note", "kind": <kind>, "body":
//! <fields>}` (docs/trace.md); the kind is the variant's name in
//! snake_case.
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{TraceError, TraceWriter};

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
    Enforcement(Value),
    /// The seccomp supervisor's handling cost.
    EnforcementStats(EnforcementStats),
    /// The end of an enforcing run: decisions by kind, what was preserved.
    EnforcementSummary(EnforcementSummary),
    /// The BPF LSM backend at the end of the run.
    LsmSummary(Value),
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
    QuarantineLimit(Value),
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

/// Body of `enforcement_stats`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnforcementStats {
    pub backend: String,
    pub notifications: u64,
    pub mean_handling_us: f64,
    pub max_handling_us: f64,
}

/// Body of `enforcement_summary`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EnforcementSummary {
    pub backend: String,
    pub decisions: BTreeMap<String, u64>,
    pub preserved_entries: u64,
    pub quarantine: Option<String>,
    /// Reason lines written to refused callers (enforce::notify).
    pub notified: Value,
}

impl Note {
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
                Note::Enforcement(json!({ "decision": "denied" })),
                "enforcement",
                json!({ "decision": "denied" }),
            ),
            (
                Note::EnforcementSummary(EnforcementSummary {
                    backend: "seccomp".into(),
                    decisions: BTreeMap::from([("denied".into(), 1)]),
                    preserved_entries: 0,
                    quarantine: None,
                    notified: json!({ "sent": 1 }),
                }),
                "enforcement_summary",
                json!({ "backend": "seccomp", "decisions": { "denied": 1 },
                        "preserved_entries": 0, "quarantine": null, "notified": { "sent": 1 } }),
            ),
        ];
        for (note, kind, body) in cases {
            assert_eq!(note.parts(), (kind.to_owned(), body));
        }
    }
}
