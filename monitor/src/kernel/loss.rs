//! Loss accounting: the kernel's per-CPU loss counters (and losses userspace
//! sees itself) turned into loss records for the trace.
use std::collections::BTreeMap;

use monitor_common::{LossCause, ReadFailure};

use super::probes::Probes;
use crate::{core::monotonic_ns, trace::Loss};

/// The kernel's counters as loss causes, in the order
/// [`Probes::loss_counters`] reads them: events not delivered
/// ([`LossCause`]), then reads that failed where a program carried on with
/// a zero or an empty value ([`ReadFailure`]), so that no such failure is
/// silent in the trace.
pub const KERNEL_COUNTERS: [&str; LossCause::ALL.len() + ReadFailure::ALL.len()] = {
    let mut names = [""; LossCause::ALL.len() + ReadFailure::ALL.len()];
    let mut i = 0;
    while i < LossCause::ALL.len() {
        names[i] = LossCause::ALL[i].name();
        i += 1;
    }
    let mut j = 0;
    while j < ReadFailure::ALL.len() {
        names[i + j] = ReadFailure::ALL[j].name();
        j += 1;
    }
    names
};

/// Tracks per-CPU loss counters and turns increases into loss records.
pub struct LossTracker {
    last: Vec<Vec<u64>>,
    last_poll_ns: u64,
    pub total: BTreeMap<String, u64>,
}

impl LossTracker {
    pub fn new(probes: &Probes) -> LossTracker {
        LossTracker {
            last: probes.loss_counters(),
            last_poll_ns: monotonic_ns(),
            total: BTreeMap::new(),
        }
    }

    /// Loss records for the counters that grew since the last poll.
    pub fn poll(&mut self, probes: &Probes) -> Vec<Loss> {
        // The kernel programs' log lines, at the same cadence.
        probes.flush_kernel_log();
        let now = monotonic_ns();
        let cur = probes.loss_counters();
        let out = self.diff(&cur, now);
        self.last = cur;
        self.last_poll_ns = now;
        out
    }

    fn diff(&mut self, cur: &[Vec<u64>], now: u64) -> Vec<Loss> {
        let mut out = Vec::new();
        for (ci, cause) in KERNEL_COUNTERS.iter().enumerate() {
            let (Some(c), Some(l)) = (cur.get(ci), self.last.get(ci)) else {
                continue;
            };
            for (cpu, v) in c.iter().enumerate() {
                let d = v.saturating_sub(l.get(cpu).copied().unwrap_or(0));
                if d > 0 {
                    *self.total.entry((*cause).to_owned()).or_default() += d;
                    out.push(Loss {
                        cause: (*cause).to_owned(),
                        count: d,
                        cpu: Some(cpu as u32),
                        window_start_ns: self.last_poll_ns,
                        window_end_ns: now,
                    });
                }
            }
        }
        out
    }

    /// A userspace-side loss (decode errors, unattributed records).
    pub fn userspace(&mut self, cause: &str, count: u64) -> Loss {
        *self.total.entry(cause.to_owned()).or_default() += count;
        Loss {
            cause: cause.to_owned(),
            count,
            cpu: None,
            window_start_ns: self.last_poll_ns,
            window_end_ns: monotonic_ns(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_increases_become_per_cpu_losses() {
        let mut t = LossTracker {
            last: vec![vec![0, 5]; KERNEL_COUNTERS.len()],
            last_poll_ns: 10,
            total: BTreeMap::new(),
        };
        let mut cur = vec![vec![0, 5]; KERNEL_COUNTERS.len()];
        cur[0] = vec![3, 5];
        let out = t.diff(&cur, 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cause, LossCause::ALL[0].name());
        assert_eq!((out[0].count, out[0].cpu), (3, Some(0)));
        assert_eq!((out[0].window_start_ns, out[0].window_end_ns), (10, 20));
        assert_eq!(t.total[LossCause::ALL[0].name()], 3);
    }

    #[test]
    fn read_failures_become_losses_named_by_their_kind() {
        let n = KERNEL_COUNTERS.len();
        let mut t = LossTracker {
            last: vec![vec![0, 0]; n],
            last_poll_ns: 10,
            total: BTreeMap::new(),
        };
        let mut cur = vec![vec![0, 0]; n];
        let user = LossCause::ALL.len() + ReadFailure::User as usize;
        cur[user] = vec![0, 2];
        let out = t.diff(&cur, 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cause, "user_read_failed");
        assert_eq!((out[0].count, out[0].cpu), (2, Some(1)));
        assert_eq!(t.total["user_read_failed"], 2);
    }

    #[test]
    fn kernel_counter_names_are_distinct() {
        let set: std::collections::BTreeSet<_> = KERNEL_COUNTERS.iter().collect();
        assert_eq!(set.len(), KERNEL_COUNTERS.len());
        assert!(KERNEL_COUNTERS.iter().all(|n| !n.is_empty()));
    }
}
