//! Shared ground of every layer: clocks and small system facts. The action
//! record itself is [`crate::record`].
//!
//! - [`anchor`]: how a path pattern is anchored (`${workspace}/...`).
//! - [`clock`]: kernel (monotonic) time, wall time, RFC 3339 stamps.
//! - [`out`]: a command's output on stdout ([`outln!`](crate::outln)).
//! - [`sys`]: host name and kernel release, absolute paths.
pub mod anchor;
pub mod clock;
pub mod out;
pub mod sys;

pub use clock::{monotonic_ns, parse_secs, rfc3339, Clock};
pub use sys::{absolute, open_regular, uname};
