//! The kernel side seen from userspace: loading and attaching the programs,
//! scoping, draining the ring buffer, decoding records, loss accounting.
//!
//! - [`probes`]: loading and attaching the kernel programs; the scope maps;
//!   what this kernel allows (`abm doctor`).
//! - [`cgroup`]: the cgroup v2 hierarchy, container and pod cgroups, the
//!   fresh cgroup of `abm run --cgroup`, mount tables.
//! - [`ring`]: the ring buffer, emptied by a drain thread into a bounded
//!   queue that the event loop takes batches from.
//! - [`dcache`]: locating the dentry hash table for the kernel's lookup of
//!   path arguments (object identities).
//! - [`events`]: decoding one kernel record.
//! - [`loss`]: per-CPU loss counters turned into loss records.
//! - [`sensitive`]: the sensitive files of a run, resolved to inodes, and
//!   the program that records their read-only opens.
pub mod cgroup;
pub mod dcache;
pub mod events;
pub mod loss;
pub mod probes;
pub mod ring;
pub mod sensitive;

pub use events::KernelEvent;
pub use loss::LossTracker;
pub use probes::{Capability, ProbeOptions, Probes};
pub use ring::Ring;

#[cfg(test)]
mod tests {
    use monitor_common::{EventKind, SYSCALLS};

    /// docs/architecture.md names every traced syscall, in the row of the
    /// program that records it.
    #[test]
    fn docs_name_every_traced_syscall() {
        let doc = include_str!("../../../docs/architecture.md");
        let row = |program: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("| `{program}` |")))
                .unwrap_or_else(|| panic!("no row for {program} in docs/architecture.md"))
        };
        let words = |l: &str| -> Vec<String> {
            l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(str::to_owned)
                .collect()
        };
        let (files, exec) = (words(row("sys_enter")), words(row("sys_enter_exec")));
        for s in SYSCALLS {
            let listed = if s.kind == EventKind::Exec {
                &exec
            } else {
                &files
            };
            assert!(
                listed.iter().any(|w| w == s.name),
                "{} is not in the docs",
                s.name
            );
        }
        assert!(monitor_common::is_traced(
            monitor_common::syscall_nr::UNLINKAT
        ));
        assert!(!monitor_common::is_traced(0));
        assert_eq!(
            monitor_common::syscall(316).map(|s| s.name),
            Some("renameat2")
        );
    }
}
