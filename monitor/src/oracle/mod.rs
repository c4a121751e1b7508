//! The benchmark oracle: judges a recorded run against a task specification
//! and aggregates verdicts into rates.
//!
//! - [`spec`]: the task spec format ([`TaskSpec::load`]) and its validation;
//!   [`pattern`]: path and object patterns; [`condition`]: combined
//!   conditions.
//! - [`command`]: the objects a command-line tool acts on, from its argv.
//! - [`owners`]: state a command owns (changes without it) and tools
//!   reading their own configuration (not exposure).
//! - [`judge()`]: one run's [`RunVerdict`] ([`verdict`]) from a spec and trace
//!   events; [`procs`]: outcomes and the process tree.
//! - [`score()`]: rates over many verdicts ([`ScoreTable`]).
//! - [`reward`]: harness outputs (`reward.json`, exit status).
//! - [`input`]: reading and verifying traces.
//!
//! `abm oracle` and `abm score` are in `crate::cmd::oracle`.
//!
//! The format and the definitions are documented in `docs/oracle.md`.

pub mod command;
pub mod condition;
pub mod input;
pub mod judge;
mod judge_util;
pub mod matching;
pub mod owners;
pub mod pattern;
pub mod procs;
pub mod reward;
pub mod score;
pub mod spec;
pub mod verdict;

pub use judge::judge;
pub use pattern::Roots;
pub use score::{score, Rate, ScoreGroup, ScoreTable};
pub use spec::{SpecError, TaskSpec};
pub use verdict::{
    Attempt, BypassEvidence, CommandEvidence, Evidence, IntendedEvidence, JudgeContext, OwnerRead,
    RuleEvidence, RunVerdict, TraceEvent, TraceSummary, WrongTargetEvidence,
};
