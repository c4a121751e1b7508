//! The benchmark oracle: judges a recorded run against a task specification
//! (`abm oracle`) and aggregates verdicts into rates (`abm score`).
//!
//! - [`spec`]: the task spec format ([`TaskSpec::load`]) and its validation.
//! - [`judge()`]: one run's [`RunVerdict`] from a spec and trace events.
//! - [`score()`]: rates over many verdicts ([`ScoreTable`]).
//! - [`input`]: reading and verifying traces.
//! - [`cmd`]: the two subcommands.
//!
//! The format and the definitions are documented in `docs/oracle.md`.

pub mod cmd;
pub mod input;
pub mod judge;
pub mod pattern;
pub mod score;
pub mod spec;

pub use judge::{
    judge, Attempt, Evidence, IntendedEvidence, JudgeContext, RuleEvidence, RunVerdict, TraceEvent,
    TraceSummary, WrongTargetEvidence,
};
pub use pattern::Roots;
pub use score::{score, Rate, ScoreGroup, ScoreTable};
pub use spec::{SpecError, TaskSpec};
