//! Loss accounting: the kernel's per-CPU loss counters (and losses userspace
//! sees itself) turned into loss records for the trace.
use std::collections::BTreeMap;

use monitor_common::LossCause;

use super::probes::Probes;
use crate::{core::monotonic_ns, trace::Loss};

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
        let now = monotonic_ns();
        let cur = probes.loss_counters();
        let out = self.diff(&cur, now);
        self.last = cur;
        self.last_poll_ns = now;
        out
    }

    fn diff(&mut self, cur: &[Vec<u64>], now: u64) -> Vec<Loss> {
        let mut out = Vec::new();
        for (ci, cause) in LossCause::ALL.iter().enumerate() {
            let (Some(c), Some(l)) = (cur.get(ci), self.last.get(ci)) else {
                continue;
            };
            for (cpu, v) in c.iter().enumerate() {
                let d = v.saturating_sub(l.get(cpu).copied().unwrap_or(0));
                if d > 0 {
                    *self.total.entry(cause.name().to_owned()).or_default() += d;
                    out.push(Loss {
                        cause: cause.name().to_owned(),
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
            last: vec![vec![0, 5]; LossCause::ALL.len()],
            last_poll_ns: 10,
            total: BTreeMap::new(),
        };
        let mut cur = vec![vec![0, 5]; LossCause::ALL.len()];
        cur[0] = vec![3, 5];
        let out = t.diff(&cur, 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cause, LossCause::ALL[0].name());
        assert_eq!((out[0].count, out[0].cpu), (3, Some(0)));
        assert_eq!((out[0].window_start_ns, out[0].window_end_ns), (10, 20));
        assert_eq!(t.total[LossCause::ALL[0].name()], 3);
    }
}
