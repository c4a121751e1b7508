//! Why records were lost: the closed set of causes abm writes in loss
//! records (docs/trace.md, "loss"). A trace read back keeps its cause as a
//! string ([`super::Loss::cause`]): a reader meets causes of other versions.
use monitor_common::{LossCause, ReadFailure};

use super::Loss;

/// One cause of loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A loss counter of the kernel programs (`ringbuf_full`, ...).
    Kernel(LossCause),
    /// A read the kernel programs carried on past with 0 or an empty value
    /// (`user_read_failed`, ...).
    ReadFailed(ReadFailure),
    /// Ring records that could not be decoded.
    DecodeError,
    /// Ring records dropped because the userspace queue was full.
    QueueFull,
    /// Decision records of the BPF LSM ring that could not be decoded.
    LsmDecodeError,
    /// The daemon: records of no target.
    Unattributed,
    /// The daemon: records of a new container cgroup beyond what is held
    /// while its target is looked up.
    PendingOverflow,
    /// The daemon: records released while no trace file could be opened.
    TraceUnwritable,
}

impl Cause {
    /// The kernel's counters, in the order `Probes::loss_counters` reads
    /// them: events not delivered ([`LossCause`]), then failed reads
    /// ([`ReadFailure`]).
    pub const KERNEL: [Cause; LossCause::ALL.len() + ReadFailure::ALL.len()] = {
        let mut all = [Cause::DecodeError; LossCause::ALL.len() + ReadFailure::ALL.len()];
        let mut i = 0;
        while i < LossCause::ALL.len() {
            all[i] = Cause::Kernel(LossCause::ALL[i]);
            i += 1;
        }
        let mut j = 0;
        while j < ReadFailure::ALL.len() {
            all[i + j] = Cause::ReadFailed(ReadFailure::ALL[j]);
            j += 1;
        }
        all
    };

    /// The name written in the record's `cause`.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::Kernel(c) => c.name(),
            Cause::ReadFailed(r) => r.name(),
            Cause::DecodeError => "decode_error",
            Cause::QueueFull => "queue_full",
            Cause::LsmDecodeError => "lsm_decode_error",
            Cause::Unattributed => "unattributed",
            Cause::PendingOverflow => "pending_overflow",
            Cause::TraceUnwritable => "trace_unwritable",
        }
    }
}

impl Loss {
    /// A loss record of `count` records lost for `cause` in the
    /// CLOCK_MONOTONIC window `window` (`cpu`: where it was counted).
    pub fn new(cause: Cause, count: u64, cpu: Option<u32>, window: (u64, u64)) -> Loss {
        Loss {
            cause: cause.name().to_owned(),
            count,
            cpu,
            window_start_ns: window.0,
            window_end_ns: window.1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_names_are_distinct_and_as_documented() {
        let mut names: Vec<&str> = Cause::KERNEL.iter().map(|c| c.name()).collect();
        names.extend(
            [
                Cause::DecodeError,
                Cause::QueueFull,
                Cause::LsmDecodeError,
                Cause::Unattributed,
                Cause::PendingOverflow,
                Cause::TraceUnwritable,
            ]
            .map(Cause::name),
        );
        let docs = [
            include_str!("../../../docs/trace.md"),
            include_str!("../../../docs/daemon.md"),
        ]
        .concat();
        for n in &names {
            assert!(
                docs.contains(&format!("`{n}`")),
                "docs/trace.md or daemon.md names {n}"
            );
        }
        let set: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len());
    }
}
