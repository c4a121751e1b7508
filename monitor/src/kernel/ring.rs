//! The ring buffer the kernel programs write records into, and the thread
//! that empties it.
//!
//! A drain thread does nothing but copy records out of the kernel's ring
//! into a queue in userspace memory, so the ring empties promptly even while
//! the event loop is busy judging, resolving and writing a large batch. The
//! event loop takes records from that queue ([`Ring::take`]). The kernel
//! ring can therefore be small: it only has to hold what arrives between two
//! turns of the drain thread, not between two turns of the judge.
//!
//! The queue is bounded ([`MAX_QUEUE_BYTES`]): a record that arrives while
//! it is full is consumed from the kernel ring and counted
//! ([`Ring::dropped`]), and the commands write the count as a loss of cause
//! [`crate::trace::Cause::QueueFull`], like the kernel's own `ringbuf_full`.
use std::{
    collections::VecDeque,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex, MutexGuard,
    },
    thread::JoinHandle,
};

use anyhow::Context as _;
use aya::maps::{MapData, RingBuf};

use super::probes::Probes;

/// Records handed to the pipeline per turn of the event loop.
pub const DRAIN_BATCH: usize = 1024;
/// Period at which the drain thread empties the ring when the kernel did
/// not wake it (the programs wake userspace only once the ring is 1/8
/// full), and at which the event loop looks at the queue.
pub const DRAIN_INTERVAL_MS: u64 = 25;
/// Most bytes of records the userspace queue holds (records that arrive
/// while it is full are lost, cause [`crate::trace::Cause::QueueFull`]).
pub const MAX_QUEUE_BYTES: usize = 64 << 20;
/// Size of one block of the queue (records are copied in blocks, not one
/// allocation each).
const CHUNK: usize = 64 << 10;
/// Empty blocks kept for reuse.
const MAX_FREE_CHUNKS: usize = 16;
/// Nice value of the drain thread: it must run soon after the kernel wakes
/// it even when abm was started with a low priority, and it only copies.
const DRAIN_NICE: i32 = -10;

struct Queue {
    /// Blocks of `[u32 length][record]`, oldest first.
    chunks: VecDeque<Vec<u8>>,
    free: Vec<Vec<u8>>,
}

struct Shared {
    kernel: Mutex<RingBuf<MapData>>,
    queue: Mutex<Queue>,
    /// Bytes in `queue.chunks`.
    queued: AtomicUsize,
    dropped: AtomicU64,
    stop: AtomicBool,
    ready: tokio::sync::Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn chunk(&self) -> Vec<u8> {
        lock(&self.queue)
            .free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK))
    }

    fn publish(&self, chunk: Vec<u8>) {
        self.queued.fetch_add(chunk.len(), Ordering::AcqRel);
        lock(&self.queue).chunks.push_back(chunk);
        self.ready.notify_one();
    }

    /// Moves everything the kernel ring holds into the queue; returns the
    /// number of records read.
    fn drain_kernel(&self) -> usize {
        let mut rb = lock(&self.kernel);
        let mut buf: Option<Vec<u8>> = None;
        let mut n = 0;
        while let Some(item) = rb.next() {
            n += 1;
            let len = 4 + item.len();
            let pending = buf.as_ref().map_or(0, Vec::len);
            if self.queued.load(Ordering::Acquire) + pending + len > MAX_QUEUE_BYTES {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if pending > 0 && pending + len > CHUNK {
                if let Some(full) = buf.take() {
                    self.publish(full);
                }
            }
            let b = buf.get_or_insert_with(|| self.chunk());
            b.extend_from_slice(&(item.len() as u32).to_ne_bytes());
            b.extend_from_slice(&item);
        }
        drop(rb);
        if let Some(mut b) = buf {
            // A small last block does not keep a whole block's memory while
            // it waits in the queue.
            if b.len() < CHUNK / 4 {
                b.shrink_to_fit();
            }
            self.publish(b);
        }
        n
    }
}

/// The kernel's ring buffer with its drain thread and queue.
pub struct Ring {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// An eventfd that wakes the drain thread to stop.
    stop_fd: OwnedFd,
    /// The block being handed out, and the offset of its next record.
    current: Option<(Vec<u8>, usize)>,
}

/// Takes the ring buffer out of the loaded programs and starts its drain
/// thread.
pub fn register(probes: &mut Probes) -> anyhow::Result<Ring> {
    let ring = probes.events.take().context("ring buffer already taken")?;
    Ring::start(ring)
}

impl Ring {
    fn start(ring: RingBuf<MapData>) -> anyhow::Result<Ring> {
        // SAFETY: eventfd(2) has no memory arguments.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("eventfd for the drain thread");
        }
        // SAFETY: a new descriptor this function owns.
        let stop_fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ring_fd = ring.as_raw_fd();
        let shared = Arc::new(Shared {
            kernel: Mutex::new(ring),
            queue: Mutex::new(Queue {
                chunks: VecDeque::new(),
                free: Vec::new(),
            }),
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            ready: tokio::sync::Notify::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("abm-drain".into())
            .spawn(move || drain_thread(&s, ring_fd, fd))
            .context("starting the ring buffer's drain thread")?;
        Ok(Ring {
            shared,
            thread: Some(thread),
            stop_fd,
            current: None,
        })
    }

    /// Waits until the drain thread has queued records (may wake without
    /// any: callers take what is there).
    pub async fn ready(&self) {
        self.shared.ready.notified().await;
    }

    /// Hands at most `max` queued records to `push`; returns how many.
    pub fn take(&mut self, max: usize, mut push: impl FnMut(&[u8])) -> usize {
        let mut n = 0;
        while n < max {
            let (chunk, off) = match &mut self.current {
                Some((c, off)) if *off < c.len() => (c, off),
                _ => {
                    let mut q = lock(&self.shared.queue);
                    if let Some((old, _)) = self.current.take() {
                        if q.free.len() < MAX_FREE_CHUNKS && old.capacity() <= 2 * CHUNK {
                            let mut old = old;
                            old.clear();
                            q.free.push(old);
                        }
                    }
                    let Some(next) = q.chunks.pop_front() else {
                        break;
                    };
                    drop(q);
                    self.shared.queued.fetch_sub(next.len(), Ordering::AcqRel);
                    let (c, off) = self.current.insert((next, 0));
                    (c, off)
                }
            };
            let mut len = [0u8; 4];
            len.copy_from_slice(&chunk[*off..*off + 4]);
            let len = u32::from_ne_bytes(len) as usize;
            push(&chunk[*off + 4..*off + 4 + len]);
            *off += 4 + len;
            n += 1;
        }
        if n == max {
            // More may be queued: the next turn of the loop takes it.
            self.shared.ready.notify_one();
        }
        n
    }

    /// Records dropped because the queue was full, since the start.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Bytes of records waiting in the queue.
    pub fn queued_bytes(&self) -> usize {
        self.shared.queued.load(Ordering::Relaxed)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        let one = 1u64;
        // SAFETY: write(2) of 8 bytes from a live local to our eventfd.
        let _ = unsafe { libc::write(self.stop_fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn drain_thread(shared: &Shared, ring_fd: i32, stop_fd: i32) {
    // SAFETY: gettid(2) and setpriority(2) have no memory arguments; a
    // failure (no CAP_SYS_NICE) leaves the thread at abm's own priority.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, DRAIN_NICE);
    }
    // Edge-triggered on the ring: woken when the kernel wakes readers (once
    // the ring is 1/8 full), not for every record, so records are copied in
    // batches; the timeout drains a quiet ring.
    // SAFETY: epoll_create1(2) has no memory arguments.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        tracing::error!(
            "drain thread: epoll_create1: {}; draining on a timer only",
            std::io::Error::last_os_error()
        );
    }
    for (fd, flags) in [
        (ring_fd, libc::EPOLLIN | libc::EPOLLET),
        (stop_fd, libc::EPOLLIN),
    ] {
        let mut ev = libc::epoll_event {
            events: flags as u32,
            u64: fd as u64,
        };
        // SAFETY: epoll_ctl(2) reads the live local `ev`.
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 2];
    while !shared.stop.load(Ordering::Acquire) {
        if ep >= 0 {
            // SAFETY: epoll_wait(2) writes at most 2 events into the live
            // local array.
            unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 2, DRAIN_INTERVAL_MS as i32) };
        } else {
            std::thread::sleep(std::time::Duration::from_millis(DRAIN_INTERVAL_MS));
        }
        shared.drain_kernel();
    }
    if ep >= 0 {
        // SAFETY: closing the epoll descriptor this function created.
        unsafe { libc::close(ep) };
    }
}

/// Everything the kernel ring holds now and everything queued.
pub fn drain_all(ring: &mut Ring, push: impl FnMut(&[u8])) -> usize {
    ring.shared.drain_kernel();
    ring.take(usize::MAX, push)
}
