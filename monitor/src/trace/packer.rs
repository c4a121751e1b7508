//! The compact form's writing thread: packs batches of canonical lines into
//! zstd frames and appends them to the file, off the caller's thread.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::compact;
use super::writer::write_pending;
use super::TraceError;

/// Stored bytes above which a batch is split into several frames.
const MAX_FRAME_STORED: usize = 8 << 20;
/// Batches waiting for the thread; a caller that gets further ahead waits.
const QUEUE: usize = 2;

enum Job {
    /// Canonical lines, each ending with a newline: one frame.
    Lines(Vec<u8>),
    /// Write what is pending and fdatasync; answer on the channel.
    Sync(SyncSender<std::io::Result<()>>),
}

/// Nice value of the packing thread.
const PACK_NICE: libc::c_int = 10;

/// Handle of the packing thread.
pub(crate) struct Packer {
    tx: Option<SyncSender<Job>>,
    /// The first write error the thread met since the last check.
    error: Arc<Mutex<Option<std::io::Error>>>,
    thread: Option<JoinHandle<()>>,
}

impl Packer {
    pub(crate) fn start(path: &Path, file: File) -> Result<Packer, TraceError> {
        let z = compact::compressor().map_err(|e| TraceError::io(path, "start zstd", e))?;
        let (tx, rx) = sync_channel(QUEUE);
        let error = Arc::new(Mutex::new(None));
        let err = error.clone();
        let thread = std::thread::Builder::new()
            .name("abm-trace-pack".into())
            .spawn(move || run(rx, file, z, err))
            .map_err(|e| TraceError::io(path, "start the packing thread", e))?;
        Ok(Packer {
            tx: Some(tx),
            error,
            thread: Some(thread),
        })
    }

    /// Hands a batch of lines to the thread (waits only when it is
    /// `QUEUE` batches behind). Returns the write error the thread met since
    /// the last call, if any; the bytes it could not write stay pending and
    /// are retried with the next batch.
    pub(crate) fn submit(&mut self, lines: Vec<u8>) -> std::io::Result<()> {
        let pending_error = self.take_error();
        if !lines.is_empty() || pending_error.is_some() {
            self.send(Job::Lines(lines))?;
        }
        match pending_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits until everything submitted is written and fdatasync'ed.
    pub(crate) fn sync(&mut self) -> std::io::Result<()> {
        let (tx, rx) = sync_channel(1);
        self.send(Job::Sync(tx))?;
        let r = rx.recv().map_err(|_| gone())?;
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        r
    }

    /// Writes everything submitted, fsyncs, and stops the thread.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        let r = self.sync();
        self.stop();
        r
    }

    fn send(&self, job: Job) -> std::io::Result<()> {
        self.tx
            .as_ref()
            .ok_or_else(gone)?
            .send(job)
            .map_err(|_| gone())
    }

    fn take_error(&self) -> Option<std::io::Error> {
        match self.error.lock() {
            Ok(mut e) => e.take(),
            Err(_) => None,
        }
    }

    fn stop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Packer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn gone() -> std::io::Error {
    std::io::Error::other("the trace packing thread stopped")
}

fn run(
    rx: Receiver<Job>,
    mut file: File,
    mut z: zstd::bulk::Compressor<'static>,
    error: Arc<Mutex<Option<std::io::Error>>>,
) {
    // Compression yields to the watched workload: a lower priority than
    // abm's other threads, so on a busy machine the work waits (its queue
    // is bounded) rather than slowing the command down.
    // SAFETY: gettid(2) and setpriority(2) have no memory arguments; a
    // failure leaves the thread at abm's own priority.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, PACK_NICE);
    }
    let mut pending: Vec<u8> = Vec::new();
    let note = |e: std::io::Error| {
        if let Ok(mut slot) = error.lock() {
            slot.get_or_insert(e);
        }
    };
    for job in rx {
        match job {
            Job::Lines(lines) => {
                if !lines.is_empty() {
                    if let Err(e) =
                        compact::pack_lines(&lines, 1, MAX_FRAME_STORED, &mut z, &mut pending)
                    {
                        // The writer only produces canonical lines: this is a
                        // bug, reported like a write error.
                        note(std::io::Error::other(format!("cannot pack records: {e}")));
                        continue;
                    }
                }
                if let Err(e) = write_pending(&mut file, &mut pending) {
                    note(e);
                }
            }
            Job::Sync(reply) => {
                let r = write_pending(&mut file, &mut pending).and_then(|()| file.sync_data());
                let _ = reply.send(r);
            }
        }
    }
    // The caller is gone (dropped without sealing): best effort.
    let _ = write_pending(&mut file, &mut pending);
}
