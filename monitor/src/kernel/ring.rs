//! The ring buffer the kernel programs write records into, registered with
//! the event loop.
use anyhow::Context as _;
use aya::maps::{MapData, RingBuf};
use tokio::io::unix::AsyncFd;

use super::probes::Probes;

/// Records read from the ring buffer per turn of the event loop.
pub const DRAIN_BATCH: usize = 8192;
/// Period of the timer that drains the ring buffer when the kernel did not
/// wake the loop (it wakes it only once the ring is 1/8 full).
pub const DRAIN_INTERVAL_MS: u64 = 25;

/// The ring buffer, readable from the async event loop.
pub type Ring = AsyncFd<RingBuf<MapData>>;

/// Takes the ring buffer out of the loaded programs and registers it with
/// the event loop.
pub fn register(probes: &mut Probes) -> anyhow::Result<Ring> {
    let ring = probes.events.take().context("ring buffer already taken")?;
    // SAFETY: the ring buffer owns its fd for as long as it is registered
    // (the AsyncFd owns the ring buffer).
    unsafe { AsyncFd::register(ring) }
        .map_err(|e| anyhow::anyhow!("registering the ring buffer: {e}"))
}

/// Reads at most `max` records from the ring buffer into `push`; returns how
/// many were read (fewer than `max` means the ring is empty).
pub fn drain_ring(rb: &mut RingBuf<MapData>, max: usize, mut push: impl FnMut(&[u8])) -> usize {
    let mut n = 0;
    while n < max {
        let Some(item) = rb.next() else { break };
        push(&item);
        n += 1;
    }
    n
}

/// Everything the ring holds now.
pub fn drain_all(ring: &mut Ring, push: impl FnMut(&[u8])) -> usize {
    drain_ring(ring.get_mut(), usize::MAX, push)
}
