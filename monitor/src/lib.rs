//! Action boundary monitor: the library behind the `abm` binary.
//!
//! One module per concern:
//! - [`probes`]: loading and attaching the kernel programs; kernel capabilities.
//! - [`events`]: decoding kernel records.
//! - [`resolve`]: absolute and container paths, flag/errno/syscall names.
//! - [`order`]: pairing syscall entries with results, timestamp order.
//! - [`record`]: the action record shared by the trace, policy and oracle.
//! - [`policy`]: policy files, verdicts, `abm policy` and `abm replay`.
//! - [`trace`]: the tamper-evident trace writer and `abm verify`.
//! - [`protect`]: keeping the trace out of the watched tree's reach.
//! - [`session`]: `abm run`.
//! - [`daemon`]: `abm daemon`: containers, pods and process trees, one trace each.
//! - [`oracle`]: benchmark verdicts from traces (`abm oracle`, `abm score`).
//! - [`enforce`]: the guardrail: seccomp fallback, confirmation, preservation, undo.
//! - [`lsm`]: the BPF LSM enforcement backend.
//! - [`report`]: `abm report`, an HTML page of one or more runs.
//! - [`cli`]: the command line.

pub mod cli;
pub mod daemon;
pub mod enforce;
pub mod events;
pub mod lsm;
pub mod oracle;
pub mod order;
pub mod policy;
pub mod probes;
pub mod protect;
pub mod record;
pub mod report;
pub mod resolve;
pub mod session;
pub mod summary;
pub mod trace;
