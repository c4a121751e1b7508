//! Verifies a trace: chain, sequence, seal, and (with the key) authenticity.
//!
//! This file walks the records and checks each one's position in the
//! chain; `pipeline` prepares the records after the header on several
//! threads (rebuilding, digests, event bodies); `header` checks the header
//! and the seal.

use std::path::Path;

use serde_json::Value;

use super::anchor::{self, AnchorPoint};
use super::compact::{self, LineParts};
use super::event_check::decode_full;
use super::format::{self, ChainAlg, Hasher, Split, DIGEST_LEN, ZERO_DIGEST};
use super::read::{decode_body, take_envelope, RecordError};
use super::report::EventTime;
use super::source::{bad_header, Damage};
use super::{
    key_id, Authentication, Header, Next, Problem, ProblemKind, SealRecord, TraceError,
    TraceReader, TraceRecord, TruncatedTail, VerifyReport, VerifyStatus,
};
use crate::record::Op;

mod header;
mod pipeline;

use pipeline::{EventItem, Item, Ordered};

/// How record digests are checked.
enum Mode {
    /// Before the header.
    Start,
    /// Every digest is recomputed.
    Full(Hasher),
    /// Keyed trace without the key: links and sequence only.
    LinkageOnly,
}

enum Fail {
    Problem(Problem),
    /// The line's seq is ahead of the expected one: missing or reordered,
    /// decided by looking at the rest of the file.
    SeqAhead {
        line: u64,
        found: u64,
        expected: u64,
    },
}

fn problem(line: u64, seq: Option<u64>, kind: ProblemKind, detail: impl std::fmt::Display) -> Fail {
    Fail::Problem(Problem {
        line,
        seq,
        kind,
        detail: detail.to_string(),
    })
}

struct Verifier<'k> {
    key: Option<&'k [u8]>,
    mode: Mode,
    expected_seq: u64,
    prev: [u8; DIGEST_LEN],
    sealed_at: Option<u64>,
    last_ktime: Option<u64>,
    /// Events by operation, folded into the report at the end (no
    /// allocation per event).
    ops: Vec<(Option<Op>, u64)>,
    /// The seq and ktime of the last event counted, and its time.
    last_event: Option<(u64, u64)>,
    last_time: String,
    /// The seq an anchor names, and the digest the trace holds there.
    anchor_seq: Option<u64>,
    anchor_found: Option<[u8; DIGEST_LEN]>,
    report: VerifyReport,
}

/// Verifies the trace at `path`. With `key`, a keyed (`hmac-sha256`) trace
/// is authenticated; an unkeyed trace is then reported as broken (kind
/// [`ProblemKind::NotKeyed`]), because a keyed trace rewritten as unkeyed
/// looks exactly like that.
///
/// Returns an error only when the file cannot be read (or the key is empty);
/// everything found in the file is in the report.
pub fn verify(path: &Path, key: Option<&[u8]>) -> Result<VerifyReport, TraceError> {
    if key.is_some_and(|k| k.is_empty()) {
        return Err(TraceError::EmptyKey);
    }
    verify_source(TraceReader::open(path)?, key, None)
}

/// [`verify`], then the trace compared with the last head of an anchor
/// (`abm run --anchor-fd`): the result is in [`VerifyReport::anchor`], and a
/// rejection makes the exit code [`EXIT_BROKEN`](crate::trace::EXIT_BROKEN).
pub fn verify_anchored(
    path: &Path,
    key: Option<&[u8]>,
    anchor: &AnchorPoint,
) -> Result<VerifyReport, TraceError> {
    if key.is_some_and(|k| k.is_empty()) {
        return Err(TraceError::EmptyKey);
    }
    verify_source(TraceReader::open(path)?, key, Some(anchor))
}

/// [`verify`] on an open trace of either form.
pub(crate) fn verify_source(
    reader: TraceReader,
    key: Option<&[u8]>,
    anchor: Option<&AnchorPoint>,
) -> Result<VerifyReport, TraceError> {
    let (mut report, found) = walk(reader, key, anchor.map(|a| a.seq))?;
    if let Some(a) = anchor {
        let sealed_seq = report.is_intact().then(|| report.records.saturating_sub(1));
        report.anchor = Some(anchor::check(a, found, report.records, sealed_seq));
    }
    Ok(report)
}

/// Checks every record; returns the report and, with `anchor_seq`, the
/// digest of the intact record at that seq.
fn walk(
    mut reader: TraceReader,
    key: Option<&[u8]>,
    anchor_seq: Option<u64>,
) -> Result<(VerifyReport, Option<[u8; DIGEST_LEN]>), TraceError> {
    if key.is_some_and(|k| k.is_empty()) {
        return Err(TraceError::EmptyKey);
    }
    let mut v = Verifier {
        key,
        mode: Mode::Start,
        expected_seq: 0,
        prev: ZERO_DIGEST,
        sealed_at: None,
        last_ktime: None,
        ops: Vec::new(),
        last_event: None,
        last_time: String::new(),
        anchor_seq,
        anchor_found: None,
        report: VerifyReport::new(),
    };
    v.report.format = Some(reader.form());
    // The header and the rest of the piece it is in, line by line: the
    // header decides how digests are computed.
    let mut line = Vec::new();
    while matches!(v.mode, Mode::Start) || reader.has_buffered_lines() {
        let next = match reader.next(&mut line)? {
            None => return Ok(v.end(None)),
            Some(n) => n,
        };
        match next {
            Next::Line => match v.check_line(reader.lines_read(), &line) {
                Ok(()) => {}
                Err(Fail::Problem(p)) => return Ok(v.end_broken(p)),
                Err(Fail::SeqAhead {
                    line,
                    found,
                    expected,
                }) => {
                    let later = find_seq(&mut reader, expected)?;
                    return Ok(v.end_broken(seq_ahead(line, found, expected, later)));
                }
            },
            Next::Truncated(t) => return Ok(v.end(Some(t))),
            Next::Damaged(d) => {
                let p = v.damaged(d);
                return Ok(v.end_broken(p));
            }
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, pipeline::MAX_THREADS);
    let hasher = match &v.mode {
        Mode::Full(h) => Some(h.clone()),
        Mode::Start | Mode::LinkageOnly => None,
    };
    let (pieces, peeked, lines, next_seq) = reader.into_pieces();
    pipeline::with_pipeline(pieces, peeked, hasher.as_ref(), threads, |pipe| {
        v.walk_pieces(pipe, lines, next_seq)
    })
}

impl Verifier<'_> {
    /// Checks the records the pipeline prepared, in order, after `lines`
    /// lines; `next_seq` is the seq after the last record read.
    fn walk_pieces(
        mut self,
        pipe: &mut pipeline::Pipeline<'_, '_>,
        mut lines: u64,
        mut next_seq: Option<u64>,
    ) -> Result<(VerifyReport, Option<[u8; DIGEST_LEN]>), TraceError> {
        while let Some(o) = pipe.next()? {
            let (checked, resumes) = match o {
                Ordered::Lines { checked, resumes } => (checked, resumes),
                Ordered::Truncated(cut) => return Ok(self.end(Some(cut.report(lines + 1)))),
                Ordered::BadHeader { offset, reason } => {
                    let p = self.damaged(bad_header(lines + 1, offset, &reason, next_seq));
                    return Ok(self.end_broken(p));
                }
            };
            for i in 0..checked.items.len() {
                lines += 1;
                let r = match &checked.items[i] {
                    Item::Event(e) => self.check_item(lines, e, &checked),
                    &Item::Other { start, end } => {
                        self.check_line(lines, checked.other(start, end))
                    }
                };
                match r {
                    Ok(()) => {}
                    Err(Fail::Problem(p)) => return Ok(self.end_broken(p)),
                    Err(Fail::SeqAhead {
                        line,
                        found,
                        expected,
                    }) => {
                        let later = find_seq_in(&checked, i + 1, line, expected);
                        let later = match later {
                            Some(n) => Some(n),
                            None if checked.damage.is_none() => {
                                let after = lines + (checked.items.len() - i - 1) as u64;
                                find_seq_pieces(pipe, after, expected)?
                            }
                            None => None,
                        };
                        return Ok(self.end_broken(seq_ahead(line, found, expected, later)));
                    }
                }
            }
            next_seq = checked.next_seq.or(next_seq);
            if let Some(d) = checked.damage {
                let (offset, first_seq) = checked.block.unwrap_or((0, 0));
                let p = self.damaged(d.report(lines + 1, offset, first_seq, resumes));
                return Ok(self.end_broken(p));
            }
        }
        Ok(self.end(None))
    }

    /// The problem for a damaged block.
    fn damaged(&self, d: Damage) -> Problem {
        if self.sealed_at.is_some() {
            return Problem {
                line: d.line,
                seq: None,
                kind: ProblemKind::AfterSeal,
                detail: format!(
                    "bytes after the seal (from byte {}) that are not a valid block: a sealed \
                     trace ends with its seal",
                    d.offset
                ),
            };
        }
        Problem {
            line: d.line,
            seq: d.first_seq,
            kind: ProblemKind::DamagedFrame,
            detail: format!(
                "the compressed block at byte {} {}: {}",
                d.offset,
                d.reason,
                d.lost_records()
            ),
        }
    }
}

/// The line number of the first item from `from` of `checked` with `seq`;
/// item `from - 1` is at line `at`.
fn find_seq_in(checked: &pipeline::Checked, from: usize, at: u64, seq: u64) -> Option<u64> {
    (from..checked.items.len())
        .find(|&j| checked.seq_of(j) == Some(seq))
        .map(|j| at + (j + 1 - from) as u64)
}

/// Scans the pieces still to come for a line with `seq` (up to the first
/// damage or the end); `lines` lines came before them.
fn find_seq_pieces(
    pipe: &mut pipeline::Pipeline<'_, '_>,
    mut lines: u64,
    seq: u64,
) -> Result<Option<u64>, TraceError> {
    while let Some(Ordered::Lines { checked, .. }) = pipe.next()? {
        if let Some(n) = find_seq_in(&checked, 0, lines, seq) {
            return Ok(Some(n));
        }
        if checked.damage.is_some() {
            return Ok(None);
        }
        lines += checked.items.len() as u64;
    }
    Ok(None)
}

/// The problem for a record whose seq is ahead of the expected one:
/// reordered when the expected seq is found later (at line `later`),
/// missing otherwise.
fn seq_ahead(line: u64, found: u64, expected: u64, later: Option<u64>) -> Problem {
    match later {
        Some(at) => Problem {
            line,
            seq: Some(found),
            kind: ProblemKind::Reordered,
            detail: format!(
                "expected seq {expected} here but found seq {found}; seq {expected} \
                 is at line {at}: records were moved"
            ),
        },
        None => {
            let gap = found - expected;
            let which = if gap == 1 {
                format!("seq {expected}")
            } else {
                format!("seq {expected} to {}", found - 1)
            };
            let header = if expected == 0 { " (the header)" } else { "" };
            Problem {
                line,
                seq: Some(found),
                kind: ProblemKind::Missing,
                detail: format!(
                    "expected seq {expected} but found seq {found}: {gap} record(s) \
                     ({which}{header}) are missing; records were deleted"
                ),
            }
        }
    }
}

impl Verifier<'_> {
    fn end_broken(self, p: Problem) -> (VerifyReport, Option<[u8; DIGEST_LEN]>) {
        let found = self.anchor_found;
        (self.broken(p), found)
    }

    fn end(self, tail: Option<TruncatedTail>) -> (VerifyReport, Option<[u8; DIGEST_LEN]>) {
        let found = self.anchor_found;
        (self.finish(tail), found)
    }

    /// Moves the counts kept during the walk into the report.
    fn fold(&mut self) {
        for (op, n) in std::mem::take(&mut self.ops) {
            let op = op.map_or("unknown", |o| o.name());
            *self.report.events_by_op.entry(op.to_owned()).or_insert(0) += n;
        }
        if let Some((seq, ktime_ns)) = self.last_event.take() {
            self.report.last_event = Some(EventTime {
                seq,
                time: std::mem::take(&mut self.last_time),
                ktime_ns,
            });
        }
        if self.report.records > 0 {
            self.report.final_digest = Some(hex::encode(self.prev));
        }
    }

    fn broken(mut self, p: Problem) -> VerifyReport {
        self.fold();
        self.report.status = VerifyStatus::Broken {
            intact_records: self.report.records,
        };
        self.report.first_bad = Some(p);
        self.report
    }

    fn finish(mut self, tail: Option<TruncatedTail>) -> VerifyReport {
        self.fold();
        if let (Some(t), Some(seal_line)) = (&tail, self.sealed_at) {
            return self.broken(Problem {
                line: t.line,
                seq: None,
                kind: ProblemKind::AfterSeal,
                detail: format!(
                    "{} byte(s) without a newline after the seal at line {seal_line}; a sealed \
                     trace ends with its seal",
                    t.bytes
                ),
            });
        }
        if self.report.records == 0 {
            let detail = match &tail {
                None => "the file is empty: there is no header record".to_string(),
                Some(t) => format!(
                    "the file ends inside the header record ({} byte(s), no newline): the writer \
                     was stopped before the header was complete",
                    t.bytes
                ),
            };
            return self.broken(Problem {
                line: 1,
                seq: None,
                kind: ProblemKind::NoHeader,
                detail,
            });
        }
        self.report.truncated_tail = tail;
        self.report.status = if self.sealed_at.is_some() {
            VerifyStatus::Intact
        } else {
            VerifyStatus::Unsealed {
                intact_records: self.report.records,
            }
        };
        self.report
    }

    /// On a line that does not parse: recheck its digest against the chain
    /// so that an edit is called an edit.
    fn unparsable(
        &self,
        line: u64,
        prefix: &[u8],
        hash: &[u8; DIGEST_LEN],
        why: RecordError,
    ) -> Fail {
        let seq = lenient_seq(prefix);
        let matches = match &self.mode {
            Mode::Full(h) => Some(h.digest(&self.prev, prefix) == *hash),
            // The header: its digest would be SHA-256, or HMAC under the key.
            Mode::Start => Some(
                Hasher::new(None).digest(&ZERO_DIGEST, prefix) == *hash
                    || self.key.is_some_and(|k| {
                        Hasher::new(Some(k)).digest(&ZERO_DIGEST, prefix) == *hash
                    }),
            ),
            Mode::LinkageOnly => None,
        };
        if matches == Some(false) {
            return problem(
                line,
                seq,
                ProblemKind::Modified,
                format!("the record does not parse ({why}) and does not match its hash: it was modified"),
            );
        }
        problem(line, seq, ProblemKind::Malformed, why)
    }

    fn check_line(&mut self, line_no: u64, line: &[u8]) -> Result<(), Fail> {
        if let Some(seal_line) = self.sealed_at {
            return Err(after_seal(line_no, lenient_seq(line), seal_line));
        }
        let (prefix, hash) = match format::split_line(line) {
            Split::Ok { prefix, hash } => (prefix, hash),
            Split::BadDigest { prefix } => {
                return Err(problem(
                    line_no,
                    lenient_seq(prefix),
                    ProblemKind::Modified,
                    "the \"hash\" field is not 64 lowercase hex digits: it was modified",
                ))
            }
            Split::NoSuffix => {
                // Inside a trace, a line without a digest is an edit (a
                // changed or added newline splits a record in two).
                let kind = if matches!(self.mode, Mode::Start) && !line.starts_with(b"{\"type\":") {
                    ProblemKind::Malformed
                } else {
                    ProblemKind::Modified
                };
                return Err(problem(
                    line_no,
                    lenient_seq(line),
                    kind,
                    "the line does not end with a \"hash\" field: it is not a complete \
                     trace record (it was modified, or this is not a trace)",
                ));
            }
        };
        if !matches!(self.mode, Mode::Start) {
            if let Some(p) = compact::split_canonical(line).filter(|p| p.kind == b"event") {
                return self.check_event(line_no, prefix, hash, &p);
            }
        }
        let mut obj = match format::parse_prefix(prefix) {
            Ok(o) => o,
            Err(why) => return Err(self.unparsable(line_no, prefix, &hash, why)),
        };
        let env = match take_envelope(&mut obj) {
            Ok(e) => e,
            Err(why) => return Err(self.unparsable(line_no, prefix, &hash, why)),
        };
        let seq = Some(env.seq);
        let own_prev = format::parse_digest(env.prev.as_bytes()).expect("checked by take_envelope");

        if matches!(self.mode, Mode::Start) {
            return self.check_header(line_no, prefix, &hash, env.kind, env.seq, &own_prev, obj);
        }

        self.check_position(line_no, prefix, &hash, &env.kind, env.seq, &own_prev)?;
        // 4. Body.
        let record = decode_body(&env.kind, env.seq, obj)
            .map_err(|why| problem(line_no, seq, ProblemKind::Malformed, why))?;
        match record {
            TraceRecord::Header(_) => unreachable!("handled above"),
            TraceRecord::Event { seq, action } => {
                self.count_event(seq, action.op, action.ktime_ns, &action.time)
            }
            TraceRecord::Loss { loss, .. } => {
                let r = &mut self.report;
                r.loss_records += 1;
                let total = r.lost.entry(loss.cause).or_insert(0);
                *total = total.saturating_add(loss.count);
            }
            TraceRecord::Note { kind, .. } => {
                *self.report.notes_by_kind.entry(kind).or_insert(0) += 1;
            }
            TraceRecord::Seal { seq, seal } => {
                self.check_seal(line_no, seq, &seal)?;
                self.report.seal = Some(seal);
                self.sealed_at = Some(line_no);
            }
        }
        self.accept(hash);
        Ok(())
    }

    /// An event record in the writer's layout, checked without building a
    /// generic JSON object. The checks and their order are the same as in
    /// [`check_line`](Self::check_line).
    fn check_event(
        &mut self,
        line_no: u64,
        prefix: &[u8],
        hash: [u8; DIGEST_LEN],
        p: &LineParts<'_>,
    ) -> Result<(), Fail> {
        self.check_position(line_no, prefix, &hash, "event", p.seq, &p.prev)?;
        let facts = decode_full(p.body, &mut Vec::new())
            .map_err(|why| problem(line_no, Some(p.seq), ProblemKind::Malformed, why))?;
        self.count_event(p.seq, facts.op, facts.ktime_ns, &facts.time);
        self.accept(hash);
        Ok(())
    }

    /// An event record prepared by the pipeline (most records): the checks
    /// of [`check_event`](Self::check_event), with the digest and the body
    /// already worked out.
    fn check_item(
        &mut self,
        line_no: u64,
        e: &EventItem,
        checked: &pipeline::Checked,
    ) -> Result<(), Fail> {
        if let Some(seal_line) = self.sealed_at {
            return Err(after_seal(line_no, Some(e.seq), seal_line));
        }
        let digest = e.digest;
        self.check_position_with(line_no, &e.hash, "event", e.seq, &e.prev, |_| digest)?;
        let facts = match &e.facts {
            Ok(f) => f,
            Err(why) => return Err(problem(line_no, Some(e.seq), ProblemKind::Malformed, why)),
        };
        self.count_event(e.seq, facts.op, facts.ktime_ns, checked.time(facts));
        self.accept(e.hash);
        Ok(())
    }

    /// Content (the digest), position (the seq) and link (`prev`) of a
    /// record after the header.
    fn check_position(
        &self,
        line_no: u64,
        prefix: &[u8],
        hash: &[u8; DIGEST_LEN],
        kind: &str,
        found: u64,
        own_prev: &[u8; DIGEST_LEN],
    ) -> Result<(), Fail> {
        self.check_position_with(line_no, hash, kind, found, own_prev, |h| {
            Some(h.digest(own_prev, prefix))
        })
    }

    /// [`check_position`](Self::check_position) with the line's digest
    /// from `digest` (`None`: not known, which fails the check).
    fn check_position_with(
        &self,
        line_no: u64,
        hash: &[u8; DIGEST_LEN],
        kind: &str,
        found: u64,
        own_prev: &[u8; DIGEST_LEN],
        digest: impl FnOnce(&Hasher) -> Option<[u8; DIGEST_LEN]>,
    ) -> Result<(), Fail> {
        let seq = Some(found);
        // 1. Content: the line's bytes against its digest.
        if let Mode::Full(h) = &self.mode {
            if digest(h) != Some(*hash) {
                let why = if matches!(
                    self.report.authentication,
                    Authentication::Authenticated { .. }
                ) {
                    "the record does not match its HMAC: it was modified, or written without the key"
                } else {
                    "the record does not match its hash: it was modified"
                };
                return Err(problem(line_no, seq, ProblemKind::Modified, why));
            }
        }
        // 2. Position: the sequence number.
        if found > self.expected_seq {
            return Err(Fail::SeqAhead {
                line: line_no,
                found,
                expected: self.expected_seq,
            });
        }
        if found < self.expected_seq {
            return Err(problem(
                line_no,
                seq,
                ProblemKind::Duplicated,
                format!(
                    "seq {found} already appeared at line {}: a record was inserted or duplicated",
                    found + 1
                ),
            ));
        }
        if kind == "header" {
            return Err(problem(
                line_no,
                seq,
                ProblemKind::Malformed,
                "a second header record; a trace has one header, on its first line",
            ));
        }
        // 3. Link: prev is the previous record's digest.
        if *own_prev != self.prev {
            return Err(problem(
                line_no,
                seq,
                ProblemKind::ChainBroken,
                format!(
                    "\"prev\" is {} but the previous record's hash is {}: a record was replaced",
                    hex::encode(own_prev),
                    hex::encode(self.prev)
                ),
            ));
        }
        Ok(())
    }

    fn count_event(&mut self, seq: u64, op: Option<Op>, k: u64, time: &str) {
        let r = &mut self.report;
        r.events += 1;
        let n = match self.ops.iter_mut().find(|(o, _)| *o == op) {
            Some((_, n)) => n,
            None => {
                self.ops.push((op, 0));
                &mut self.ops.last_mut().expect("just pushed").1
            }
        };
        *n += 1;
        if self.last_ktime.is_some_and(|last| k < last) {
            r.ktime_regressions += 1;
        }
        self.last_ktime = Some(k);
        r.ktime_span_ns = Some(match r.ktime_span_ns {
            None => (k, k),
            Some((lo, hi)) => (lo.min(k), hi.max(k)),
        });
        if r.first_event.is_none() {
            r.first_event = Some(EventTime {
                seq,
                time: time.to_owned(),
                ktime_ns: k,
            });
        }
        // The last event's time is kept in a reused buffer and put into
        // the report at the end (no allocation per event).
        self.last_event = Some((seq, k));
        self.last_time.clear();
        self.last_time.push_str(time);
    }

    fn accept(&mut self, hash: [u8; DIGEST_LEN]) {
        if self.anchor_seq == Some(self.expected_seq) {
            self.anchor_found = Some(hash);
        }
        self.prev = hash;
        self.expected_seq += 1;
        self.report.records += 1;
    }
}

/// The `seq` of a line that may be damaged, for diagnostics only.
fn lenient_seq(line: &[u8]) -> Option<u64> {
    let key = b"\"seq\":";
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let digits: &[u8] = &line[at..];
    let end = digits
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// Scans the remaining complete lines for one with `seq`; returns its line
/// number.
fn find_seq(reader: &mut TraceReader, seq: u64) -> Result<Option<u64>, TraceError> {
    let mut line = Vec::new();
    while let Some(Next::Line) = reader.next(&mut line)? {
        if lenient_seq(&line) == Some(seq) {
            return Ok(Some(reader.lines_read()));
        }
    }
    Ok(None)
}

/// A record after the seal.
fn after_seal(line_no: u64, seq: Option<u64>, seal_line: u64) -> Fail {
    problem(
        line_no,
        seq,
        ProblemKind::AfterSeal,
        format!(
            "a line after the seal at line {seal_line}: a sealed trace ends with its seal, so \
             this was appended or inserted"
        ),
    )
}
