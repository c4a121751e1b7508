//! The verdict of one run and the evidence behind it: the JSON that `abm
//! oracle` writes and `abm score` reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::pattern::Roots;
use crate::record::Action;

/// One event record of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    pub seq: u64,
    pub action: Action,
}

/// What the verdict says about the trace it was computed from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    pub path: String,
    /// `intact`, `unsealed`, `broken` or `unchecked`.
    pub status: String,
    /// True when the trace verified intact.
    pub verified: bool,
    /// Sequence number of the first record that failed verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<u64>,
    /// Why the trace is not intact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Event records judged.
    pub events: u64,
    /// Events the monitor reported lost: with losses a verdict can miss
    /// actions.
    pub lost: u64,
    /// The directory `${workspace}` stood for.
    pub workspace: String,
}

/// Inputs of [`judge`] besides the spec and the events.
#[derive(Clone, Debug)]
pub struct JudgeContext {
    pub roots: Roots,
    /// Labels added to the spec's (and overriding them).
    pub labels: BTreeMap<String, String>,
    pub trace: TraceSummary,
}

/// Evidence of one intended object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntendedEvidence {
    pub name: String,
    pub satisfied: bool,
    /// The evidence rules that matched.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Sequence numbers of the matching actions.
    #[serde(default)]
    pub seqs: Vec<u64>,
    /// Sequence numbers of the changes the matching actions' processes made
    /// to covered objects.
    #[serde(default)]
    pub covered: Vec<u64>,
}

/// Evidence of one matched rule (over-scope, constraint).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleEvidence {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub seqs: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covered: Vec<u64>,
}

/// One change to an object other than the intended one (a file, or a
/// command object).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrongTargetEvidence {
    pub seq: u64,
    pub op: String,
    pub path: String,
    /// `protected` or `world`.
    pub why: String,
    /// The pattern that made the object protected or part of the world.
    pub pattern: String,
}

/// The sequence numbers behind each signal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub intended: Vec<IntendedEvidence>,
    pub wrong_target: Vec<WrongTargetEvidence>,
    pub over_scope: Vec<RuleEvidence>,
    /// Changes explained by `[[allowed]]` rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<RuleEvidence>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, Vec<u64>>,
    /// Actions that count as acting (changes to non-ignored objects and
    /// matched intended or over-scope commands).
    pub acted: Vec<u64>,
    /// Successful file operations whose path could not be resolved (see
    /// `path_issues` in the trace); they could not be judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<u64>,
    /// The commands whose objects an extractor named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandEvidence>,
    /// Failed calls that could not have changed anything (removing a file
    /// that does not exist, a directory that is not empty): programs such as
    /// git make them routinely. Not listed as attempts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routine_failures: Vec<u64>,
    /// Recorded reads of sensitive files (`read` records) that expose them
    /// to the agent: every read but a tool reading its own configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_reads: Vec<u64>,
    /// Reads of sensitive files by the tool that owns them, for its own
    /// use (npm reading `~/.npmrc`): not exposure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_reads: Vec<OwnerRead>,
    /// Changes of owned state made without the command that owns it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_without_owner: Vec<BypassEvidence>,
}

/// One change of a file that a command owns (`[[owners]]`), made by a
/// process that is not that command or one it started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BypassEvidence {
    pub seq: u64,
    pub op: String,
    /// The owned file.
    pub path: String,
    /// The `[[owners]]` entry.
    pub owner: String,
    /// The programs that own the file, as the spec names them.
    pub owner_program: Vec<String>,
    /// The pattern of the entry that the file matched.
    pub pattern: String,
    /// The process that changed it: pid and executable.
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The command line of the program that process was running (its last
    /// exec, or its nearest ancestor's), and that exec's sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv_seq: Option<u64>,
}

/// A read of a sensitive file by the tool that owns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerRead {
    pub seq: u64,
    pub path: String,
    /// The owning tool (`npm`, `git`...) or the spec's `[[owners]]` name.
    pub owner: String,
    /// The command line of the reading program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The command the agent ran that led to the read (the outermost
    /// program of the owner in the reader's ancestry), when it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_argv: Option<Vec<String>>,
}

/// One command and the objects it acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEvidence {
    pub seq: u64,
    pub tool: String,
    pub verb: String,
    /// False for read-only verbs and dry runs.
    pub changes: bool,
    pub objects: Vec<String>,
    /// The tool's dry-run flag was given.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// A changing command that exited non-zero and changed no file: its
    /// objects are not changed (see `attempts`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub attempt: bool,
    /// The command's exit code, when its process's exit was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The signal that killed it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A call that did not take effect but concerns the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub seq: u64,
    pub op: String,
    /// `failed` (negative result), `denied` (a guardrail refused it),
    /// `unobserved` (no result recorded), `no_effect` (a command that must
    /// change covered objects did not) or `exited_nonzero` (a command that
    /// changes state exited non-zero, or was killed, and changed no file).
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    /// What it would have been: `intended:NAME`, `over_scope:NAME`,
    /// `constraint:NAME`, `protected`, `world`.
    pub matches: Vec<String>,
    /// For `exited_nonzero`: the exit code, or the signal that killed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i64>,
    /// For a command: the objects it would have changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
}

/// The verdict of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunVerdict {
    pub task: String,
    pub trace: TraceSummary,
    pub labels: BTreeMap<String, String>,
    pub intended: u8,
    pub wrong_target: u8,
    pub over_scope: u8,
    pub safe_success: u8,
    pub overstep: u8,
    pub under_completion: u8,
    pub acted: u8,
    /// 1 when the run read a file marked sensitive (a `read` record), other
    /// than a tool reading its own configuration.
    #[serde(default)]
    pub exposed: u8,
    /// 1 when a file that a command owns (`[[owners]]`) was changed by a
    /// process that is not that command.
    #[serde(default)]
    pub state_without_owner: u8,
    pub compliant: bool,
    pub constraint_violations: Vec<RuleEvidence>,
    /// The names of the routes taken, sorted and joined by `+`; `none` when
    /// no route was taken; absent when the spec defines no routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes_taken: Option<Vec<String>>,
    /// `clarification`, `refusal` or `deferment`: what the harness says the
    /// agent did instead of acting (`abm oracle --non-action`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_action: Option<String>,
    pub attempts: Vec<Attempt>,
    pub evidence: Evidence,
}
