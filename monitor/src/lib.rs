//! Action boundary monitor: the library behind the `abm` binary.
//!
//! One module per concern:
//! - [`record`]: the action record shared by the trace, policy and oracle.
//! - [`policy`]: policy files, verdicts, `abm policy` and `abm replay`.
//! - [`trace`]: the tamper-evident trace writer and `abm verify`.
//! - [`oracle`]: benchmark verdicts from traces (`abm oracle`, `abm score`).

pub mod oracle;
pub mod policy;
pub mod record;
pub mod trace;
