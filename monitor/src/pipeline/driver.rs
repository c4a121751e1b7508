//! The event loop `abm run` and the daemon both drive: records the ring's
//! drain thread queued ([`crate::kernel::ring`]) go into the command's
//! pipeline (a bounded batch per wake-up, and on a timer); every other
//! wake-up (the command exiting, a signal, a control
//! socket call) goes to the command; after each turn the command releases
//! ordered records, accounts losses and flushes.
use std::time::Duration;

use tokio::time::MissedTickBehavior;

use crate::kernel::ring::{Ring, DRAIN_BATCH, DRAIN_INTERVAL_MS};

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
            // The drain thread queued records: a bounded batch keeps the
            // other wake-ups and the release of ordered records going; the
            // rest is taken on the next turn.
            _ = ring.ready() => {
                ring.take(DRAIN_BATCH, |b| d.push(b));
                None
            }
            // A turn at least every interval: ordered records are released
            // once their reorder window has passed.
            _ = tick.tick() => {
                ring.take(DRAIN_BATCH, |b| d.push(b));
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
