//! Action boundary monitor: the library behind the `abm` binary.
//!
//! Layers, each using only the ones below it (docs/architecture.md):
//!
//! - commands: [`cli`]; [`cmd`] (`abm verify`, `abm trace`, `abm pending`,
//!   `abm approve`, `abm deny`, `abm undo`, `abm doctor`, one file each;
//!   `abm status`, `abm watch`, `abm tail`, the daemon's clients);
//!   with `abm policy`, `abm replay`, `abm oracle` and `abm score`;
//!   [`run`] (`abm run`) and [`daemon`] (`abm daemon`), leaves that use
//!   nothing of each other; [`hook`] (`abm hook`, agent harnesses);
//!   [`report`] (`abm report`, an HTML page of runs); [`cli_gen`] (hidden
//!   `abm generate`: man pages and completions for packaging).
//! - [`enforce`]: the guardrail of `abm run --enforce`: the seccomp and
//!   BPF LSM backends, confirmation, preservation, undo.
//! - [`pipeline`]: from kernel record to judged action record: path
//!   resolution, mount-namespace views, pairing and ordering, judging; the
//!   event loop `abm run` and the daemon both drive; the `Recorder`, the
//!   sink of one trace file, and the end-of-run summary.
//! - [`kernel`]: loading and attaching the kernel programs, scope, the
//!   ring buffer, decoding, loss accounting, cgroups.
//! - [`oracle`]: benchmark verdicts of recorded runs, and their rates.
//! - [`action`]: logical actions, measured recoverability, one decision
//!   per action (used by the pipeline and the enforcement backends).
//! - [`policy`]: policy files and verdicts;
//!   [`trace`]: the tamper-evident trace writer and its verification;
//!   [`protect`]: keeping the trace
//!   out of the watched tree's reach; [`lifeline`]: the watched tree dies
//!   with abm; [`self_guard`]: the watched tree cannot signal, trace or
//!   read abm; [`target_spec`]: what a daemon target is, for the daemon
//!   and its clients.
//! - [`record`]: the action record shared by the trace, policy and oracle;
//!   [`core`]: clocks and system facts.

pub mod action;
pub mod cli;
pub mod cli_gen;
pub mod cmd;
pub mod core;
pub mod daemon;
pub mod enforce;
pub mod hook;
pub mod kernel;
pub mod lifeline;
pub mod oracle;
pub mod pipeline;
pub mod policy;
pub mod protect;
pub mod record;
pub mod report;
pub mod run;
pub mod self_guard;
pub mod target_spec;
pub mod trace;
