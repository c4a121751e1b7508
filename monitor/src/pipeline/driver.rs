//! The event loop `abm run` and the daemon both drive: the ring buffer is
//! drained into the command's pipeline (a bounded batch per wake-up, and on
//! a timer because the kernel wakes the loop only once the ring is 1/8
//! full); every other wake-up (the command exiting, a signal, a control
//! socket call) goes to the command; after each turn the command releases
//! ordered records, accounts losses and flushes.
use std::time::Duration;

use tokio::time::MissedTickBehavior;

use crate::kernel::ring::{drain_ring, Ring, DRAIN_BATCH, DRAIN_INTERVAL_MS};

/// Whether the loop goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// What a command does at each point of the loop.
pub(crate) trait Driver {
    /// A wake-up other than kernel records.
    type Wake;
    /// One kernel record.
    fn push(&mut self, bytes: &[u8]);
    /// Waits for the next wake-up other than kernel records (must be
    /// cancel-safe: the loop drops it when records arrive first).
    async fn wake(&mut self) -> anyhow::Result<Self::Wake>;
    /// Handles that wake-up.
    async fn handle(&mut self, wake: Self::Wake, ring: &mut Ring) -> anyhow::Result<Flow>;
    /// After every turn: release ordered records, losses, flushing.
    async fn turn(&mut self, ring: &mut Ring) -> anyhow::Result<Flow>;
}

/// Runs the loop until the driver stops it. The caller drains what is left
/// in the ring afterwards.
pub(crate) async fn drive<D: Driver>(ring: &mut Ring, d: &mut D) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_millis(DRAIN_INTERVAL_MS));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let wake = tokio::select! {
            guard = ring.readable_mut() => {
                let mut guard = guard?;
                // A bounded batch keeps memory flat under bursts; the rest
                // is read on the next turn of the loop.
                let n = drain_ring(guard.get_inner_mut(), DRAIN_BATCH, |b| d.push(b));
                if n < DRAIN_BATCH {
                    guard.clear_ready();
                }
                None
            }
            // The kernel wakes this loop only once the ring is 1/8 full; the
            // timer drains what a quiet ring holds.
            _ = tick.tick() => {
                drain_ring(ring.get_mut(), DRAIN_BATCH, |b| d.push(b));
                None
            }
            w = d.wake() => Some(w?),
        };
        if let Some(w) = wake {
            if d.handle(w, ring).await? == Flow::Stop {
                return Ok(());
            }
        }
        if d.turn(ring).await? == Flow::Stop {
            return Ok(());
        }
    }
}
