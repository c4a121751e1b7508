//! Loss accounting: the kernel's per-CPU loss counters (and losses userspace
//! sees itself) turned into loss records for the trace.
use std::collections::BTreeMap;

use super::probes::Probes;
use crate::{
    core::monotonic_ns,
    trace::{Cause, Loss},
};

/// Tracks per-CPU loss counters and turns increases into loss records.
pub struct LossTracker {
    last: Vec<Vec<u64>>,
    last_poll_ns: u64,
    /// Userspace counts already written as losses, by cause.
    reported: Vec<(Cause, u64)>,
    /// Every loss so far, by cause name (`abm status`).
    pub total: BTreeMap<String, u64>,
}

impl LossTracker {
    pub fn new(probes: &Probes) -> LossTracker {
        LossTracker {
            last: probes.loss_counters(),
            last_poll_ns: monotonic_ns(),
            reported: Vec::new(),
            total: BTreeMap::new(),
        }
    }

    /// Loss records for everything lost since the last poll: the kernel's
    /// counters that grew, then, in the order given, the userspace counts
    /// in `counted` (running totals by cause: undecodable records, the
    /// ring's full queue, ...) beyond what was written already.
    pub fn poll(&mut self, probes: &Probes, counted: &[(Cause, u64)]) -> Vec<Loss> {
        // The kernel programs' log lines, at the same cadence.
        probes.flush_kernel_log();
        let now = monotonic_ns();
        let cur = probes.loss_counters();
        let mut out = self.diff(&cur, now);
        self.last = cur;
        self.last_poll_ns = now;
        for &(cause, total) in counted {
            let at = match self.reported.iter().position(|(c, _)| *c == cause) {
                Some(at) => at,
                None => {
                    self.reported.push((cause, 0));
                    self.reported.len() - 1
                }
            };
            let done = self.reported[at].1;
            if total > done {
                self.reported[at].1 = total;
                out.push(self.userspace(cause, total - done));
            }
        }
        out
    }

    fn diff(&mut self, cur: &[Vec<u64>], now: u64) -> Vec<Loss> {
        let mut out = Vec::new();
        for (ci, cause) in Cause::KERNEL.iter().enumerate() {
            let (Some(c), Some(l)) = (cur.get(ci), self.last.get(ci)) else {
                continue;
            };
            for (cpu, v) in c.iter().enumerate() {
                let d = v.saturating_sub(l.get(cpu).copied().unwrap_or(0));
                if d > 0 {
                    *self.total.entry(cause.name().to_owned()).or_default() += d;
                    out.push(Loss::new(
                        *cause,
                        d,
                        Some(cpu as u32),
                        (self.last_poll_ns, now),
                    ));
                }
            }
        }
        out
    }

    /// A userspace-side loss of `count` records, counted once.
    pub fn userspace(&mut self, cause: Cause, count: u64) -> Loss {
        *self.total.entry(cause.name().to_owned()).or_default() += count;
        Loss::new(cause, count, None, (self.last_poll_ns, monotonic_ns()))
    }
}

#[cfg(test)]
mod tests {
    use monitor_common::{LossCause, ReadFailure};

    use super::*;

    #[test]
    fn counter_increases_become_per_cpu_losses() {
        let mut t = LossTracker {
            last: vec![vec![0, 5]; Cause::KERNEL.len()],
            last_poll_ns: 10,
            reported: Vec::new(),
            total: BTreeMap::new(),
        };
        let mut cur = vec![vec![0, 5]; Cause::KERNEL.len()];
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
        let n = Cause::KERNEL.len();
        let mut t = LossTracker {
            last: vec![vec![0, 0]; n],
            last_poll_ns: 10,
            reported: Vec::new(),
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
}
