//! The trusted trace: a JSON-lines file of every traced action, linked by a
//! hash chain (SHA-256, or HMAC-SHA256 with a signing key) so that edits,
//! deletions, insertions, reordering and truncation are detectable.
//!
//! - [`TraceWriter`] writes a trace: header, events, loss records, notes,
//!   and a seal, in the compact form (zstd frames, the default) or as
//!   JSON lines ([`TraceFormat`]).
//! - [`TraceReader`] reads either form and yields the canonical JSON lines;
//!   every reader below goes through it.
//! - [`read_trace`] parses a trace without verifying it.
//! - [`verify`] checks a trace and returns a [`VerifyReport`];
//!   [`render`] is its text form (`abm verify` is in `crate::cmd::verify`).
//!
//! The format, the exact hashing rule and the guarantees are documented in
//! `docs/trace.md`; [`format`] implements the hashing rule over the
//! canonical lines, [`compact`] the compact form. Digests are the same in
//! both forms.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::Action;

pub mod anchor;
pub mod compact;
mod event_check;
pub mod format;
pub mod loss;
pub mod note;
pub mod ocsf;
mod packer;
mod read;
mod report;
pub mod sequence;
mod source;
mod text;
mod verify;
mod writer;

#[cfg(test)]
mod tests;

pub use format::{key_id, CatFormat, ChainAlg, SCHEMA};
pub use loss::Cause;
pub use read::{read_header, read_trace, RecordError};
pub use report::{
    Authentication, EventTime, Problem, ProblemKind, VerifyReport, VerifyStatus, EXIT_BROKEN,
    EXIT_ERROR, EXIT_INTACT, EXIT_UNAUTHENTICATED, EXIT_UNSEALED,
};
pub use source::{read_canonical, Damage, Next, TraceFormat, TraceReader, TruncatedTail};
pub use text::render;
pub use verify::{verify, verify_anchored};
pub use writer::TraceWriter;

/// Describes the run; the first record of every trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Record layout version ([`SCHEMA`]); 0 is replaced by [`SCHEMA`] when
    /// writing.
    pub schema: u32,
    pub monitor_version: String,
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Active kernel backends (tracepoints, LSM hooks, seccomp, ...).
    pub backends: Vec<String>,
    /// Digest of the policy in force.
    pub policy_digest: String,
    /// The monitored command, argv[0] first (empty in daemon mode).
    pub command: Vec<String>,
    pub workspace: String,
    /// RFC 3339 UTC.
    pub start_time: String,
    /// Free-form run details (target name, cgroup, ...).
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A parsed header record: the run description plus the chain parameters.
/// Dereferences to [`Header`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeaderRecord {
    pub chain: ChainAlg,
    /// [`key_id`] of the signing key for `hmac-sha256` chains.
    pub key_id: Option<String>,
    pub header: Header,
}

impl std::ops::Deref for HeaderRecord {
    type Target = Header;
    fn deref(&self) -> &Header {
        &self.header
    }
}

/// Events that were not recorded. Always explicit in the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Loss {
    /// Why they were lost: a [`Cause`]'s name (`ringbuf_full`, ...).
    pub cause: String,
    /// Number of events lost.
    pub count: u64,
    /// CPU the losses were counted on, when known.
    pub cpu: Option<u32>,
    /// CLOCK_MONOTONIC window in which the losses happened.
    pub window_start_ns: u64,
    pub window_end_ns: u64,
}

/// What the run loop knows at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SealInfo {
    /// RFC 3339 UTC.
    pub end_time: String,
    /// Total events lost by cause, as counted by the run loop. Any excess
    /// over the loss records already written is written as a final loss
    /// record before the seal, so that the seal always equals the sum of the
    /// trace's loss records.
    pub lost_by_cause: BTreeMap<String, u64>,
    /// Exit code of the monitored command, when it exited normally.
    pub exit_code: Option<i32>,
}

/// The last record of a complete trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealRecord {
    /// Records before the seal, header included (equals the seal's seq).
    pub records: u64,
    /// Event records in the trace.
    pub events: u64,
    /// Sum of the trace's loss records by cause.
    pub lost: BTreeMap<String, u64>,
    /// Event records whose `ktime_ns` is lower than the previous event's.
    pub ktime_regressions: u64,
    pub end_time: String,
    pub exit_code: Option<i32>,
    /// Hash of the record before the seal.
    pub final_digest: String,
}

/// Returned by [`TraceWriter::seal`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SealSummary {
    pub path: PathBuf,
    pub chain: ChainAlg,
    /// Records in the file, header and seal included.
    pub records: u64,
    pub events: u64,
    pub lost_by_cause: BTreeMap<String, u64>,
    /// Hash of the seal record: commits to the whole trace. Keep it elsewhere
    /// to detect replacement or truncation of the file later.
    pub final_digest: String,
}

/// One record of a trace.
// Nearly every record is an event, so boxing the action would only add an
// allocation per record.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum TraceRecord {
    Header(HeaderRecord),
    Event {
        seq: u64,
        action: Action,
    },
    Loss {
        seq: u64,
        loss: Loss,
    },
    Note {
        seq: u64,
        kind: String,
        body: serde_json::Value,
    },
    Seal {
        seq: u64,
        seal: SealRecord,
    },
}

impl TraceRecord {
    pub fn seq(&self) -> u64 {
        match self {
            TraceRecord::Header(_) => 0,
            TraceRecord::Event { seq, .. }
            | TraceRecord::Loss { seq, .. }
            | TraceRecord::Note { seq, .. }
            | TraceRecord::Seal { seq, .. } => *seq,
        }
    }

    /// The `type` field.
    pub fn type_name(&self) -> &'static str {
        match self {
            TraceRecord::Header(_) => "header",
            TraceRecord::Event { .. } => "event",
            TraceRecord::Loss { .. } => "loss",
            TraceRecord::Note { .. } => "note",
            TraceRecord::Seal { .. } => "seal",
        }
    }
}

/// Errors of the trace API. Tampering found by [`verify`] is not an error:
/// it is reported in the [`VerifyReport`].
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: cannot {action}: {source}", .path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{}: refusing to overwrite an existing trace; choose a new path or remove the file first",
        .path.display()
    )]
    Exists { path: PathBuf },
    #[error("{}: {reason}", .path.display())]
    BadTarget { path: PathBuf, reason: String },
    #[error("key file {}: {reason}", .path.display())]
    Key { path: PathBuf, reason: String },
    #[error("the signing key is empty; generate one with `head -c 32 /dev/urandom > KEYFILE`")]
    EmptyKey,
    #[error("header schema {0} is not supported by this writer, which writes schema {SCHEMA}")]
    Schema(u32),
    #[error("cannot encode {what} record: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}:{line}: {reason}", .path.display())]
    Parse {
        path: PathBuf,
        line: u64,
        reason: RecordError,
    },
    #[error("{}: the block at byte {} {}: {}", .path.display(), .damage.offset, .damage.reason, .damage.lost_records())]
    Damaged { path: PathBuf, damage: Damage },
}

impl TraceError {
    pub(crate) fn io(path: &Path, action: &'static str, source: std::io::Error) -> TraceError {
        TraceError::Io {
            path: path.to_owned(),
            action,
            source,
        }
    }
}

/// Reads a signing key file. The file's bytes are the key, as they are
/// (a trailing newline is part of the key). Create one with
/// `head -c 32 /dev/urandom > key && chmod 600 key`.
pub fn read_key(path: &Path) -> Result<Vec<u8>, TraceError> {
    let key = std::fs::read(path).map_err(|e| TraceError::Key {
        path: path.to_owned(),
        reason: format!("cannot read: {e}"),
    })?;
    if key.is_empty() {
        return Err(TraceError::Key {
            path: path.to_owned(),
            reason: "file is empty; generate a key with `head -c 32 /dev/urandom > KEYFILE`".into(),
        });
    }
    Ok(key)
}

/// Reads a signing key from a stream (stdin, or a descriptor the caller
/// passed) to its end; `what` names the source in errors. The key then
/// exists only in abm's memory.
pub fn read_key_from(mut r: impl std::io::Read, what: &str) -> Result<Vec<u8>, TraceError> {
    let mut key = Vec::new();
    r.read_to_end(&mut key).map_err(|e| TraceError::Key {
        path: PathBuf::from(what),
        reason: format!("cannot read: {e}"),
    })?;
    if key.is_empty() {
        return Err(TraceError::Key {
            path: PathBuf::from(what),
            reason: "no key bytes (end of input at once); pass the key's bytes, e.g. \
                     `--sign-key-fd 3 3<KEYFILE`"
                .into(),
        });
    }
    Ok(key)
}

/// A typical event record: an `unlinkat` in a workspace with a verdict.
pub fn sample_action(i: u64) -> Action {
    use crate::record::{Irreversibility, Op, Scope, Treatment, Verdict};
    Action {
        op: Some(Op::Unlink),
        syscall: "unlinkat".into(),
        ktime_ns: 1_000_000_000 + i * 1_000,
        time: "2025-06-01T12:00:00.123456789Z".into(),
        pid: 4242,
        tid: 4242,
        ppid: 4200,
        uid: 1000,
        gid: 1000,
        comm: "rm".into(),
        exe: Some("/usr/bin/rm".into()),
        cgroup_id: 12345,
        target: None,
        path: Some(format!("/home/dev/project/src/module_{}/file.rs", i % 100)),
        raw_path: Some(format!("src/module_{}/file.rs", i % 100)),
        fd: Some(-100),
        result: Some(0),
        verdict: Some(Verdict {
            rule: "workspace-delete".into(),
            treatment: Treatment::Audit,
            irreversibility: Irreversibility::Recoverable,
            scope: Scope::Workspace,
            reason: "deletes a tracked file in the workspace".into(),
        }),
        ..Action::default()
    }
}

/// Measures how fast event records are serialized and chained, without I/O:
/// returns (events/s with SHA-256, events/s with HMAC-SHA256) over `n`
/// records like [`sample_action`].
pub fn hashing_throughput(n: usize) -> (f64, f64) {
    let n = n.max(1);
    let actions: Vec<Action> = (0..64).map(sample_action).collect();
    let run = |key: Option<&[u8]>| {
        let mut enc = format::Encoder::new(format::Hasher::new(key));
        let mut buf = Vec::with_capacity(1 << 20);
        let start = std::time::Instant::now();
        for i in 0..n {
            enc.encode(&mut buf, "event", &actions[i % actions.len()])
                .expect("sample actions serialize");
            if buf.len() > (1 << 20) {
                buf.clear();
            }
        }
        std::hint::black_box(&buf);
        n as f64 / start.elapsed().as_secs_f64()
    };
    let sha = run(None);
    let hmac = run(Some(&[0x5a; 32]));
    (sha, hmac)
}
