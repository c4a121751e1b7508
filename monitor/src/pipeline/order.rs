//! Pairing syscall entries with their results, and releasing records in
//! kernel-timestamp order.
//!
//! Guarantee: records leave in nondecreasing `ktime_ns` of syscall entry.
//! The ring buffer is shared by all CPUs and filled in reservation order,
//! which can differ from timestamp order by the few microseconds between a
//! program reading the clock and reserving; a record is held until it has
//! its result and is older than [`REORDER_WINDOW_NS`], so such inversions are
//! repaired. A record whose result does not arrive within
//! [`MAX_RESULT_WAIT_NS`] (a syscall blocked that long, e.g. an open of a
//! FIFO) is released without it (`result_note: "pending"`).
use std::collections::{BTreeMap, HashMap};

use crate::{
    kernel::events::{Field, KernelEvent},
    record::{Action, ResultNote},
};

pub const REORDER_WINDOW_NS: u64 = 50_000_000;
pub const MAX_RESULT_WAIT_NS: u64 = 2_000_000_000;

struct Slot {
    action: Action,
    ready: bool,
    /// The entry record, kept when an argument must be read again at exit.
    event: Option<Box<KernelEvent>>,
}

#[derive(Default)]
pub struct Orderer {
    /// Boxed: an `Action` is large, and a B-tree moves its values within
    /// and between nodes on every insert and removal.
    queue: BTreeMap<(u64, u64), Box<Slot>>,
    pending: HashMap<u32, (u64, u64)>,
    arrivals: u64,
}

impl Orderer {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The latest exec record of thread `tid` entered at or before
    /// `ktime_ns` that is still held here (for a decision about that exec
    /// made inside the call, which needs its command line).
    pub fn exec_entry(&self, tid: u32, ktime_ns: u64) -> Option<&Action> {
        self.queue
            .range(..=(ktime_ns, u64::MAX))
            .rev()
            .take(4096)
            .map(|(_, s)| &s.action)
            .find(|a| a.tid == tid && a.op == Some(crate::record::Op::Exec))
    }

    /// A syscall entry: waits for its result. `event` is kept (only) when
    /// the exit may carry arguments that were unreadable at entry.
    pub fn enter(&mut self, action: Action, event: Option<KernelEvent>) {
        let key = (action.ktime_ns, self.arrivals);
        self.arrivals += 1;
        if let Some(old) = self.pending.insert(action.tid, key) {
            // The thread entered a new traced syscall before the previous
            // one's result arrived: that result was lost (or the thread
            // called execve from a multithreaded process).
            if let Some(slot) = self.queue.get_mut(&old) {
                slot.ready = true;
                slot.action.result_note = Some(ResultNote::ExitNotSeen);
            }
        }
        self.queue.insert(
            key,
            Box::new(Slot {
                action,
                ready: false,
                event: event.map(Box::new),
            }),
        );
    }

    /// A record that needs no result (fork, exit).
    pub fn ready(&mut self, action: Action) {
        let key = (action.ktime_ns, self.arrivals);
        self.arrivals += 1;
        self.queue.insert(
            key,
            Box::new(Slot {
                action,
                ready: true,
                event: None,
            }),
        );
    }

    /// The result of the thread's pending syscall, with path arguments read
    /// again at exit (`reread`). Returns the completed action, or `None`
    /// when no entry was pending (its entry record was lost).
    pub fn exit(&mut self, tid: u32, result: i64, reread: &[Field]) -> Option<&mut Action> {
        let key = self.pending.remove(&tid)?;
        let slot = self.queue.get_mut(&key)?;
        if let (Some(mut ev), false) = (slot.event.take(), reread.is_empty()) {
            for f in reread {
                if let Some(old) = ev.fields.iter_mut().find(|o| o.tag == f.tag) {
                    *old = f.clone();
                }
            }
            slot.action = super::resolve::action_from_event(&ev);
            slot.action.result_note = Some(ResultNote::PathReadAtExit);
        }
        super::resolve::apply_result(&mut slot.action, reread);
        slot.action.result = Some(result);
        if result < 0 {
            slot.action.errno = Some(super::resolve::errno_name(result));
        }
        slot.ready = true;
        Some(&mut slot.action)
    }

    /// Releases records that are complete and older than the reorder
    /// window (`force`: everything, at the end of a run), at most `max` of
    /// them: the rest stay, in order, for the next call.
    pub fn release(&mut self, now_ns: u64, force: bool, max: usize, out: &mut Vec<Action>) {
        let releasable = |key: &(u64, u64), slot: &Slot| {
            let age = now_ns.saturating_sub(key.0);
            force || (slot.ready && age >= REORDER_WINDOW_NS) || age >= MAX_RESULT_WAIT_NS
        };
        // Room for all of them at once: actions are large, and growing the
        // vector by doubling would copy them again and again.
        out.reserve(
            self.queue
                .iter()
                .take(max)
                .take_while(|(k, s)| releasable(k, s))
                .count(),
        );
        let mut n = 0;
        while let Some(entry) = self.queue.first_entry().filter(|_| n < max) {
            n += 1;
            let key = *entry.key();
            if !releasable(&key, entry.get()) {
                break;
            }
            let mut slot = *entry.remove();
            if !slot.ready {
                self.pending.retain(|_, k| *k != key);
                slot.action.result_note = Some(if force {
                    ResultNote::ExitNotSeen
                } else {
                    ResultNote::Pending
                });
            }
            out.push(slot.action);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Op;

    impl Orderer {
        fn enter_test(&mut self, a: Action) {
            self.enter(a, None);
        }
    }

    fn act(tid: u32, t: u64, op: Op) -> Action {
        Action {
            op: Some(op),
            tid,
            ktime_ns: t,
            ..Default::default()
        }
    }

    #[test]
    fn releases_in_timestamp_order_after_results() {
        let mut o = Orderer::default();
        o.enter_test(act(2, 200, Op::Unlink)); // arrives first, later timestamp
        o.enter_test(act(1, 100, Op::Rename));
        let mut out = Vec::new();
        o.release(1_000_000_000, false, usize::MAX, &mut out);
        assert!(out.is_empty(), "nothing has a result yet");
        assert!(o.exit(2, 0, &[]).is_some());
        o.release(1_000_000_000, false, usize::MAX, &mut out);
        assert!(out.is_empty(), "head of line (t=100) still waits");
        assert!(o.exit(1, -2, &[]).is_some());
        o.release(1_000_000_000, false, usize::MAX, &mut out);
        assert_eq!(
            out.iter().map(|a| a.ktime_ns).collect::<Vec<_>>(),
            vec![100, 200]
        );
        assert_eq!(out[0].errno.as_deref(), Some("ENOENT"));
        assert_eq!(out[1].result, Some(0));
    }

    #[test]
    fn reorder_window_holds_recent_records() {
        let mut o = Orderer::default();
        o.ready(act(1, 1_000, Op::Fork));
        let mut out = Vec::new();
        o.release(1_000 + REORDER_WINDOW_NS - 1, false, usize::MAX, &mut out);
        assert!(out.is_empty());
        o.release(1_000 + REORDER_WINDOW_NS, false, usize::MAX, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn release_takes_at_most_max_in_order_and_leaves_the_rest() {
        let mut o = Orderer::default();
        for t in [30, 10, 50, 20, 40] {
            o.ready(act(1, t, Op::Fork));
        }
        let mut out = Vec::new();
        o.release(u64::MAX / 2, false, 2, &mut out);
        assert_eq!(out.iter().map(|a| a.ktime_ns).collect::<Vec<_>>(), [10, 20]);
        assert_eq!(o.len(), 3);
        out.clear();
        o.release(u64::MAX / 2, true, 2, &mut out);
        assert_eq!(out.iter().map(|a| a.ktime_ns).collect::<Vec<_>>(), [30, 40]);
        out.clear();
        o.release(u64::MAX / 2, true, 2, &mut out);
        assert_eq!(out.iter().map(|a| a.ktime_ns).collect::<Vec<_>>(), [50]);
        assert!(o.is_empty());
    }

    #[test]
    fn lost_exit_is_marked_not_silently_dropped() {
        let mut o = Orderer::default();
        o.enter_test(act(5, 10, Op::Unlink));
        o.enter_test(act(5, 20, Op::Unlink)); // the first exit never came
        assert!(o.exit(5, 0, &[]).is_some());
        assert!(
            o.exit(9, 0, &[]).is_none(),
            "exit without entry is reported"
        );
        let mut out = Vec::new();
        o.release(u64::MAX / 2, false, usize::MAX, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].result, None);
        assert_eq!(out[0].result_note, Some(ResultNote::ExitNotSeen));
        assert_eq!(out[1].result, Some(0));
    }

    #[test]
    fn stuck_syscall_is_released_as_pending_after_max_wait() {
        let mut o = Orderer::default();
        o.enter_test(act(3, 0, Op::Write));
        let mut out = Vec::new();
        o.release(MAX_RESULT_WAIT_NS, false, usize::MAX, &mut out);
        assert_eq!(out[0].result_note, Some(ResultNote::Pending));
        assert!(
            o.exit(3, 0, &[]).is_none(),
            "its late result no longer pairs"
        );
    }
}
