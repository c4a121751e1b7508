//! The result of a verification: [`VerifyReport`] and its parts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ChainAlg, Header, SealRecord, TraceFormat, TruncatedTail};

// The exit codes of `abm verify`, from [`VerifyReport::exit_code`].

/// Every record checks out and the trace is sealed.
pub const EXIT_INTACT: i32 = 0;
/// A record was modified, deleted, inserted, reordered, the seal is forged,
/// or the key does not fit.
pub const EXIT_BROKEN: i32 = 1;
/// No seal (the run was killed, or the end was cut off); the records present
/// check out.
pub const EXIT_UNSEALED: i32 = 2;
/// The trace is keyed and no `--key` was given: contents not authenticated.
pub const EXIT_UNAUTHENTICATED: i32 = 3;
/// The trace or key file could not be read.
pub const EXIT_ERROR: i32 = 4;

/// Overall result of a verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum VerifyStatus {
    /// Every record checks out and the trace ends with a valid seal.
    Intact,
    /// Every record checks out but there is no seal: the run was killed or
    /// the machine crashed (or the end of the file was cut off). The first
    /// `intact_records` records are good.
    Unsealed { intact_records: u64 },
    /// A problem was found (see [`VerifyReport::first_bad`]); the first
    /// `intact_records` records before it are good.
    Broken { intact_records: u64 },
}

/// What a verification could establish about who wrote the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Authentication {
    /// No header could be verified.
    Unknown,
    /// `sha256` chain, fully checked: detects damage and edits that did not
    /// recompute the chain, but anyone who can write the file can recompute
    /// it.
    Unkeyed,
    /// `hmac-sha256` chain, fully checked with the key: only a key holder
    /// could have written these records.
    Authenticated { key_id: String },
    /// `hmac-sha256` chain but no key was given: only the sequence numbers,
    /// the `prev` links and the seal were checked; record contents were not
    /// authenticated.
    KeyNotGiven { key_id: String },
}

/// Kinds of problems, named for what most likely happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The file is empty or ends inside the header record.
    NoHeader,
    /// A line is not a well-formed record (and, when checkable, its digest
    /// does match, so it was written that way).
    Malformed,
    /// A record's content does not match its digest.
    Modified,
    /// Sequence numbers skip: records were deleted.
    Missing,
    /// A record appears before one with a lower sequence number.
    Reordered,
    /// A sequence number appears twice: a record was inserted or duplicated.
    Duplicated,
    /// A record's `prev` is not the previous record's digest.
    ChainBroken,
    /// The seal disagrees with the records before it.
    ForgedSeal,
    /// Data after the seal.
    AfterSeal,
    /// A key was given but the trace is not keyed.
    NotKeyed,
    /// The trace was signed with another key.
    WrongKey,
    /// The trace was written with an unsupported schema version.
    UnsupportedSchema,
    /// A block of a compact trace does not decompress or decode.
    DamagedFrame,
}

impl ProblemKind {
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::NoHeader => "no header",
            ProblemKind::Malformed => "malformed",
            ProblemKind::Modified => "modified",
            ProblemKind::Missing => "missing records",
            ProblemKind::Reordered => "reordered",
            ProblemKind::Duplicated => "inserted or duplicated",
            ProblemKind::ChainBroken => "chain broken",
            ProblemKind::ForgedSeal => "forged seal",
            ProblemKind::AfterSeal => "data after seal",
            ProblemKind::NotKeyed => "not keyed",
            ProblemKind::WrongKey => "wrong key",
            ProblemKind::UnsupportedSchema => "unsupported schema",
            ProblemKind::DamagedFrame => "damaged frame",
        }
    }
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The first problem found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// 1-based line number in the file.
    pub line: u64,
    /// The `seq` the line claims, when it could be read.
    pub seq: Option<u64>,
    pub kind: ProblemKind,
    /// What is wrong, in words.
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(seq) = self.seq {
            write!(f, " (seq {seq})")?;
        }
        write!(f, ": {}: {}", self.kind, self.detail)
    }
}

/// An event's time stamps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventTime {
    pub seq: u64,
    pub time: String,
    pub ktime_ns: u64,
}

/// The result of [`verify`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerifyReport {
    pub status: VerifyStatus,
    pub authentication: Authentication,
    /// Records verified (header and seal included), up to the first problem.
    pub records: u64,
    /// Event records among them.
    pub events: u64,
    /// Events lost by cause: the sum of the verified loss records.
    pub lost: BTreeMap<String, u64>,
    /// The first problem, when the status is `Broken`.
    pub first_bad: Option<Problem>,
    /// An incomplete last line, when there is one.
    pub truncated_tail: Option<TruncatedTail>,
    pub chain: Option<ChainAlg>,
    /// The form of the file.
    pub format: Option<TraceFormat>,
    pub header: Option<Header>,
    pub seal: Option<SealRecord>,
    pub events_by_op: BTreeMap<String, u64>,
    pub notes_by_kind: BTreeMap<String, u64>,
    pub loss_records: u64,
    pub first_event: Option<EventTime>,
    pub last_event: Option<EventTime>,
    /// Lowest and highest event `ktime_ns`.
    pub ktime_span_ns: Option<(u64, u64)>,
    /// Events whose `ktime_ns` is lower than the previous event's.
    pub ktime_regressions: u64,
    /// Digest of the last verified record (the seal's, for an intact trace).
    pub final_digest: Option<String>,
    /// The trace compared with an anchor (`abm verify --anchor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<super::anchor::AnchorCheck>,
}

impl VerifyReport {
    pub(crate) fn new() -> VerifyReport {
        VerifyReport {
            status: VerifyStatus::Broken { intact_records: 0 },
            authentication: Authentication::Unknown,
            records: 0,
            events: 0,
            lost: BTreeMap::new(),
            first_bad: None,
            truncated_tail: None,
            chain: None,
            format: None,
            header: None,
            seal: None,
            events_by_op: BTreeMap::new(),
            notes_by_kind: BTreeMap::new(),
            loss_records: 0,
            first_event: None,
            last_event: None,
            ktime_span_ns: None,
            ktime_regressions: 0,
            final_digest: None,
            anchor: None,
        }
    }

    /// The `abm verify` exit code: 1 broken, 3 keyed trace checked without
    /// the key, 2 unsealed, 0 intact (first match wins).
    pub fn exit_code(&self) -> i32 {
        if self.anchor.as_ref().is_some_and(|a| a.is_rejected()) {
            return EXIT_BROKEN;
        }
        match (&self.status, &self.authentication) {
            (VerifyStatus::Broken { .. }, _) => EXIT_BROKEN,
            (_, Authentication::KeyNotGiven { .. }) => EXIT_UNAUTHENTICATED,
            (VerifyStatus::Unsealed { .. }, _) => EXIT_UNSEALED,
            (VerifyStatus::Intact, _) => EXIT_INTACT,
        }
    }

    pub fn is_intact(&self) -> bool {
        self.status == VerifyStatus::Intact
    }
}
