//! The kernel side seen from userspace: loading and attaching the programs,
//! scoping, draining the ring buffer, decoding records, loss accounting.
//!
//! - [`probes`]: loading and attaching the kernel programs; the scope maps;
//!   what this kernel allows (`abm doctor`).
//! - [`cgroup`]: the cgroup v2 hierarchy, container and pod cgroups, the
//!   fresh cgroup of `abm run --cgroup`, mount tables.
//! - [`ring`]: the ring buffer registered with the event loop, bounded drains.
//! - [`events`]: decoding one kernel record.
//! - [`loss`]: per-CPU loss counters turned into loss records.
pub mod cgroup;
pub mod events;
pub mod loss;
pub mod probes;
pub mod ring;

pub use events::KernelEvent;
pub use loss::LossTracker;
pub use probes::{Capability, ProbeOptions, Probes};
pub use ring::Ring;
