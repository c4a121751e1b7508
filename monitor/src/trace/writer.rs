//! Writes a trace file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::anchor::AnchorWriter;
use super::format::{Encoder, Hasher, SCHEMA};
use super::packer::Packer;
use super::{
    key_id, ChainAlg, Header, Loss, SealInfo, SealRecord, SealSummary, TraceError, TraceFormat,
};
use crate::record::Action;

/// Buffered bytes above which an append writes the buffer out by itself.
const AUTO_FLUSH_BYTES: usize = 256 << 10;
/// Capacity of a new batch: a full batch and its last record.
const BATCH_CAPACITY: usize = AUTO_FLUSH_BYTES + (64 << 10);

#[derive(Serialize)]
struct HeaderBody<'a> {
    chain: ChainAlg,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<&'a str>,
    #[serde(flatten)]
    header: &'a Header,
}

#[derive(Serialize)]
struct NoteBody<'a> {
    kind: &'a str,
    body: &'a serde_json::Value,
}

/// Writes a trace: the header on creation, then events, loss records and
/// notes, then the seal.
///
/// Records are encoded (and chained) into a memory buffer of canonical
/// lines; [`flush`](Self::flush) writes the buffer out (the run loop calls
/// it at least every second and on exit), and an append flushes by itself
/// once the buffer exceeds 256 KiB. In the JSON-lines form a flush is a
/// write(2) of the lines. In the compact form a flush hands the lines to a
/// thread of their own, which packs them into one zstd frame and appends it,
/// so compression never runs on the caller's thread.
///
/// Dropping an unsealed writer writes what is buffered (best effort): the
/// file then verifies as unsealed.
pub struct TraceWriter {
    path: PathBuf,
    form: TraceFormat,
    /// JSON lines: the file. Compact form: `None`, the packer owns it.
    file: Option<File>,
    packer: Option<Packer>,
    buf: Vec<u8>,
    enc: Encoder,
    events: u64,
    lost: BTreeMap<String, u64>,
    ktime_regressions: u64,
    last_ktime: Option<u64>,
    min_ktime: Option<u64>,
    max_ktime: Option<u64>,
    /// Where the chain head goes after each flush and at the seal.
    anchor: Option<AnchorWriter>,
}

impl TraceWriter {
    /// Creates the trace file with mode 0600 and writes the header to it.
    ///
    /// The path must not exist, or must be an empty regular file owned by the
    /// caller (as made by `mktemp`); anything else is refused, so an old trace
    /// is never overwritten. Symbolic links are not followed.
    ///
    /// With a key, records are chained with HMAC-SHA256 under it; without,
    /// with plain SHA-256. The file is in the default form (compact); see
    /// [`create_as`](Self::create_as).
    pub fn create(
        path: &Path,
        key: Option<Vec<u8>>,
        header: Header,
    ) -> Result<TraceWriter, TraceError> {
        Self::create_as(path, key, header, TraceFormat::default())
    }

    /// [`create`](Self::create) in the given form.
    pub fn create_as(
        path: &Path,
        key: Option<Vec<u8>>,
        mut header: Header,
        form: TraceFormat,
    ) -> Result<TraceWriter, TraceError> {
        if key.as_ref().is_some_and(|k| k.is_empty()) {
            return Err(TraceError::EmptyKey);
        }
        if header.schema == 0 {
            header.schema = SCHEMA;
        }
        if header.schema != SCHEMA {
            return Err(TraceError::Schema(header.schema));
        }
        let file = open_new(path)?;
        let hasher = Hasher::new(key.as_deref());
        let kid = key.as_deref().map(key_id);
        let (file, packer) = match form {
            TraceFormat::Jsonl => (Some(file), None),
            TraceFormat::Compact => (None, Some(Packer::start(path, file)?)),
        };
        let mut w = TraceWriter {
            path: path.to_owned(),
            form,
            file,
            packer,
            buf: Vec::with_capacity(64 * 1024),
            enc: Encoder::new(hasher),
            events: 0,
            lost: BTreeMap::new(),
            ktime_regressions: 0,
            last_ktime: None,
            min_ktime: None,
            max_ktime: None,
            anchor: None,
        };
        let body = HeaderBody {
            chain: w.enc.alg(),
            key_id: kid.as_deref(),
            header: &header,
        };
        w.encode("header", &body)?;
        // The header is the only record worth a synchronous disk write at
        // start: with it on disk, a crash leaves a verifiable (unsealed) file.
        w.sync()?;
        sync_parent_dir(path);
        Ok(w)
    }

    /// Appends an event record; returns its seq. Events whose `ktime_ns` goes
    /// back are written as they come and counted in the seal's
    /// `ktime_regressions`.
    pub fn append_event(&mut self, action: &Action) -> Result<u64, TraceError> {
        let seq = self.encode("event", action)?;
        self.events += 1;
        let k = action.ktime_ns;
        if self.last_ktime.is_some_and(|last| k < last) {
            self.ktime_regressions += 1;
        }
        self.last_ktime = Some(k);
        self.min_ktime = Some(self.min_ktime.map_or(k, |m| m.min(k)));
        self.max_ktime = Some(self.max_ktime.map_or(k, |m| m.max(k)));
        self.maybe_flush();
        Ok(seq)
    }

    /// Appends a loss record; returns its seq.
    pub fn append_loss(&mut self, loss: &Loss) -> Result<u64, TraceError> {
        let seq = self.encode("loss", loss)?;
        let total = self.lost.entry(loss.cause.clone()).or_insert(0);
        *total = total.saturating_add(loss.count);
        self.maybe_flush();
        Ok(seq)
    }

    /// Appends a note (`denial`, `approval`, `warning`, ...); returns its seq.
    pub fn append_note(&mut self, kind: &str, body: serde_json::Value) -> Result<u64, TraceError> {
        let seq = self.encode("note", &NoteBody { kind, body: &body })?;
        self.maybe_flush();
        Ok(seq)
    }

    /// Sends the chain head to `anchor` after every flush from now on (the
    /// header's at once), and the seal's when sealing.
    pub fn set_anchor(&mut self, anchor: AnchorWriter) {
        self.anchor = Some(anchor);
        self.send_head();
    }

    /// The last record handed to the file, to the anchor.
    fn send_head(&mut self) {
        if !self.buf.is_empty() {
            return;
        }
        if let (Some(a), Some(seq)) = (&mut self.anchor, self.enc.next_seq().checked_sub(1)) {
            a.head(seq, &self.enc.last_digest());
        }
    }

    /// Writes the buffered records to the file with write(2). This makes them
    /// survive a crash of the monitor, not of the machine; see
    /// [`sync`](Self::sync). On error the unwritten bytes stay buffered and
    /// the next call retries them.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        let r = self.write_out();
        self.send_head();
        r
    }

    fn write_out(&mut self) -> Result<(), TraceError> {
        if let Some(p) = &mut self.packer {
            // The next batch's buffer at its full size at once: growing it
            // by doubling would copy the lines written so far each time.
            let lines = if self.buf.is_empty() {
                Vec::new()
            } else {
                std::mem::replace(&mut self.buf, Vec::with_capacity(BATCH_CAPACITY))
            };
            return p
                .submit(lines)
                .map_err(|e| TraceError::io(&self.path, "write", e));
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        write_pending(file, &mut self.buf).map_err(|e| TraceError::io(&self.path, "write", e))
    }

    /// [`flush`](Self::flush), then fdatasync(2): the records survive a power
    /// loss too.
    pub fn sync(&mut self) -> Result<(), TraceError> {
        self.flush()?;
        if let Some(p) = &mut self.packer {
            return p
                .sync()
                .map_err(|e| TraceError::io(&self.path, "write or sync", e));
        }
        if let Some(f) = &self.file {
            f.sync_data()
                .map_err(|e| TraceError::io(&self.path, "sync", e))?;
        }
        Ok(())
    }

    /// Writes the seal record and flushes and fsyncs the file.
    ///
    /// Causes in `seal.lost_by_cause` whose count exceeds the loss records
    /// written get one more loss record for the difference (its window spans
    /// the run's events, because when the events were lost is unknown), so
    /// the seal's `lost` always equals the sum of the trace's loss records.
    pub fn seal(mut self, seal: SealInfo) -> Result<SealSummary, TraceError> {
        for (cause, &count) in &seal.lost_by_cause {
            let have = self.lost.get(cause).copied().unwrap_or(0);
            if count > have {
                self.append_loss(&Loss {
                    cause: cause.clone(),
                    count: count - have,
                    cpu: None,
                    window_start_ns: self.min_ktime.unwrap_or(0),
                    window_end_ns: self.max_ktime.unwrap_or(0),
                })?;
            }
        }
        let record = SealRecord {
            records: self.enc.next_seq(),
            events: self.events,
            lost: self.lost.clone(),
            ktime_regressions: self.ktime_regressions,
            end_time: seal.end_time,
            exit_code: seal.exit_code,
            final_digest: hex::encode(self.enc.last_digest()),
        };
        self.encode("seal", &record)?;
        // The seal goes to the anchor as a seal line once it is on disk.
        let anchor = self.anchor.take();
        self.flush()?;
        if let Some(p) = self.packer.take() {
            p.finish()
                .map_err(|e| TraceError::io(&self.path, "write or sync", e))?;
        } else {
            let file = self.file.take().expect("an unsealed writer has a file");
            file.sync_all()
                .map_err(|e| TraceError::io(&self.path, "sync", e))?;
        }
        if let Some(mut a) = anchor {
            a.seal(self.enc.next_seq() - 1, &self.enc.last_digest());
        }
        Ok(SealSummary {
            path: self.path.clone(),
            chain: self.enc.alg(),
            records: self.enc.next_seq(),
            events: self.events,
            lost_by_cause: self.lost.clone(),
            final_digest: hex::encode(self.enc.last_digest()),
        })
    }

    /// Records encoded so far, header included (some may still be buffered).
    pub fn records_written(&self) -> u64 {
        self.enc.next_seq()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The form the file is written in.
    pub fn format(&self) -> TraceFormat {
        self.form
    }

    /// The chain algorithm in use.
    pub fn chain(&self) -> ChainAlg {
        self.enc.alg()
    }

    /// Hex digest of the last record encoded.
    pub fn last_digest(&self) -> String {
        hex::encode(self.enc.last_digest())
    }

    fn encode<T: Serialize + ?Sized>(
        &mut self,
        what: &'static str,
        body: &T,
    ) -> Result<u64, TraceError> {
        self.enc
            .encode(&mut self.buf, what, body)
            .map_err(|source| TraceError::Encode { what, source })
    }

    fn maybe_flush(&mut self) {
        if self.buf.len() >= AUTO_FLUSH_BYTES {
            // A failure keeps the bytes buffered; the run loop's next flush()
            // retries and reports it.
            let _ = self.flush();
        }
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if (self.file.is_some() || self.packer.is_some()) && !self.buf.is_empty() {
            let _ = self.flush();
        }
        if let Some(p) = self.packer.take() {
            let _ = p.finish();
        }
    }
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter")
            .field("path", &self.path)
            .field("format", &self.form)
            .field("chain", &self.enc.alg())
            .field("records", &self.enc.next_seq())
            .field("buffered_bytes", &self.buf.len())
            .finish()
    }
}

/// Opens `path` for appending: creates it with mode 0600, or takes over an
/// existing empty regular file owned by the caller (and sets its mode to
/// 0600).
fn open_new(path: &Path) -> Result<File, TraceError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    match opts.open(path) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(TraceError::io(path, "create", e)),
    }
    let f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                TraceError::BadTarget {
                    path: path.to_owned(),
                    reason: "is a symbolic link; give the trace's real path".into(),
                }
            } else {
                TraceError::io(path, "open", e)
            }
        })?;
    let meta = f.metadata().map_err(|e| TraceError::io(path, "stat", e))?;
    if !meta.file_type().is_file() {
        return Err(TraceError::BadTarget {
            path: path.to_owned(),
            reason: "exists and is not a regular file; choose a new trace path".into(),
        });
    }
    if meta.len() != 0 {
        return Err(TraceError::Exists {
            path: path.to_owned(),
        });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        return Err(TraceError::BadTarget {
            path: path.to_owned(),
            reason: format!(
                "exists, is empty but owned by uid {} (not {euid}); another user could read or \
                 replace it; choose a new trace path",
                meta.uid()
            ),
        });
    }
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| TraceError::io(path, "chmod", e))?;
    Ok(f)
}

/// Makes the new directory entry durable. Best effort: a failure here only
/// matters on power loss, and the trace itself is written either way.
fn sync_parent_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Appends `pending` to `file`; what was written leaves `pending`, and on
/// an error the unwritten bytes stay for the next try.
pub(super) fn write_pending(file: &mut File, pending: &mut Vec<u8>) -> std::io::Result<()> {
    let mut written = 0;
    let mut result = Ok(());
    while written < pending.len() {
        match file.write(&pending[written..]) {
            Ok(0) => {
                result = Err(std::io::Error::new(
                    ErrorKind::WriteZero,
                    "write returned 0 bytes",
                ));
                break;
            }
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    pending.drain(..written);
    result
}
