//! The `abm` commands that are not a subsystem of their own: each module
//! holds one command's (or one family's) clap arguments and the function
//! that runs it, on top of the library layers. `crate::cli` dispatches to
//! them; none uses another.
//!
//! - [`verify`]: `abm verify` (the trace library's `verify`, `render`).
//! - [`trace`]: `abm trace cat|convert`.
//! - [`approve`]: `abm pending`, `abm approve`, `abm deny`.
//! - [`undo`]: `abm undo` (the quarantine library, `crate::enforce::undo`).
//! - [`doctor`]: `abm doctor`.
//! - [`policy`]: `abm policy check|explain|show` and `abm replay`.
//! - [`oracle`]: `abm oracle` and `abm score` (the oracle library,
//!   `crate::oracle`).
//! - [`daemon`]: `abm status`, `abm watch`, `abm tail`, clients of the
//!   daemon's control socket (`abm daemon` itself is `crate::daemon`).

pub mod approve;
pub mod daemon;
pub mod doctor;
pub mod oracle;
pub mod policy;
pub mod trace;
pub mod undo;
pub mod verify;
