//! The bodies of the notes that close logical actions (`action`) and a
//! run's judging (`action_stats`), docs/trace.md.

use serde::Serialize;

use super::{Blast, Treatment};

/// Body of the `action` note that closes a logical action (docs/trace.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionNote {
    /// The `seq` of the exec that began the action.
    pub action: u64,
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub counts: ActionCounts,
    /// Whether the judge previewed it before its first call.
    pub previewed: bool,
    pub treatment: Treatment,
    pub rule: String,
    pub reason: String,
    pub decision_us: f64,
}

/// `counts` of an [`ActionNote`]: its records, and what it destroys by
/// kind (the [`Blast`] counts, written beside `records`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ActionCounts {
    pub records: u64,
    #[serde(flatten)]
    pub blast: Blast,
}

/// Body of `action_stats`, the run's decision cost (the last note of a
/// run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionStats {
    pub actions: u64,
    pub decision_us_total: f64,
    pub decision_us_per_action: f64,
}
