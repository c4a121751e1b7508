//! The records after the header, prepared on several threads: the main
//! thread reads the file in pieces (compact blocks, or about a megabyte of
//! JSON lines) and hands them to workers, which decompress and rebuild the
//! canonical lines, compute the digest of each event record and check its
//! body. The results come back in file order as [`Item`]s, small enough to
//! check in order on the main thread (sequence, links, seal), which is all
//! that needs the chain state.

use std::collections::VecDeque;
use std::sync::{mpsc, Mutex};

use super::super::compact::{self, BlockError, FieldRef};
use super::super::event_check::BodyChecker;
use super::super::format::{Hasher, DIGEST_LEN};
use super::super::source::{Cut, Piece, PieceDamage, PieceLines, PieceReader};
use super::super::{RecordError, TraceError};

/// Most worker threads.
pub(super) const MAX_THREADS: usize = 4;
/// Pieces read ahead of the one being checked, per worker.
const AHEAD_PER_WORKER: usize = 4;
/// Bytes of records (JSON lines, or a block's stored records) read before
/// workers are started (they are checked on the calling thread).
const INLINE_BYTES: u64 = 2 << 20;
/// Bytes of rebuilt lines a worker holds at once for one compact block (a
/// large block is checked in parts of about this size).
const REBUILT_BYTES: usize = 256 << 10;

/// An event record in the canonical layout, as a worker left it.
pub(super) struct EventItem {
    pub(super) seq: u64,
    pub(super) prev: [u8; DIGEST_LEN],
    pub(super) hash: [u8; DIGEST_LEN],
    /// The digest of the line (when the chain is checked in full).
    pub(super) digest: Option<[u8; DIGEST_LEN]>,
    pub(super) facts: Result<ItemFacts, RecordError>,
}

/// What the verifier reads of a valid event body; its `time` is
/// `texts[time.0..time.1]` of the [`Checked`].
pub(super) struct ItemFacts {
    pub(super) op: Option<crate::record::Op>,
    pub(super) ktime_ns: u64,
    pub(super) time: (usize, usize),
}

/// One line of a piece.
pub(super) enum Item {
    Event(EventItem),
    /// Any other line (header, loss, note, seal, or not in the canonical
    /// layout): its bytes are `others[start..end]` of its [`Checked`].
    Other {
        start: usize,
        end: usize,
    },
}

/// The lines of one piece, prepared.
pub(super) struct Checked {
    pub(super) items: Vec<Item>,
    pub(super) others: Vec<u8>,
    /// The `time` texts of the events.
    pub(super) texts: Vec<u8>,
    /// The lines stop early: the block is damaged from here on.
    pub(super) damage: Option<PieceDamage>,
    /// Compact form: the block's offset and first seq.
    pub(super) block: Option<(u64, u64)>,
    /// Compact form: the seq after the last line.
    pub(super) next_seq: Option<u64>,
}

impl Checked {
    /// The bytes of an `Other` item.
    pub(super) fn other(&self, start: usize, end: usize) -> &[u8] {
        &self.others[start..end]
    }

    /// The `time` of an event's facts.
    pub(super) fn time(&self, f: &ItemFacts) -> &str {
        // The texts are copies of `str`s, cut at their ends.
        std::str::from_utf8(&self.texts[f.time.0..f.time.1]).unwrap_or_default()
    }

    /// The seq of item `i`, for diagnostics (see `lenient_seq`).
    pub(super) fn seq_of(&self, i: usize) -> Option<u64> {
        match &self.items[i] {
            Item::Event(e) => Some(e.seq),
            Item::Other { start, end } => super::lenient_seq(self.other(*start, *end)),
        }
    }
}

/// What comes next, in file order.
pub(super) enum Ordered {
    /// A piece's lines; with damage, `resumes` is the first seq of the next
    /// block when its header can be read.
    Lines {
        checked: Checked,
        resumes: Option<u64>,
    },
    /// The file ends with an incomplete line or block.
    Truncated(Cut),
    /// A block header that cannot be read; nothing after it is read.
    BadHeader { offset: u64, reason: BlockError },
}

enum Slot {
    /// Checked on the calling thread when its turn comes.
    Inline(Piece),
    Pending {
        reply: mpsc::Receiver<Checked>,
        first_seq: Option<u64>,
    },
    End(Piece),
}

struct Job {
    piece: Piece,
    reply: mpsc::SyncSender<Checked>,
}

/// Pieces in flight to the workers, in file order. The first
/// [`INLINE_BYTES`] are checked on the calling thread: a small trace is
/// verified without starting any thread.
pub(super) struct Pipeline<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    rx: &'env Mutex<mpsc::Receiver<Job>>,
    hasher: Option<&'env Hasher>,
    threads: usize,
    spawned: usize,
    /// Bytes of pieces read so far.
    read_bytes: u64,
    z: Option<zstd::bulk::Decompressor<'static>>,
    pieces: PieceReader,
    peeked: Option<Option<Piece>>,
    queue: VecDeque<Slot>,
    jobs: mpsc::Sender<Job>,
    ahead: usize,
    read_all: bool,
}

/// Runs `body` with a [`Pipeline`] over `pieces` served by up to `threads`
/// workers; `hasher` is the chain's when digests are checked.
pub(super) fn with_pipeline<R>(
    pieces: PieceReader,
    peeked: Option<Option<Piece>>,
    hasher: Option<&Hasher>,
    threads: usize,
    body: impl FnOnce(&mut Pipeline<'_, '_>) -> R,
) -> R {
    let (jobs, rx) = mpsc::channel::<Job>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        let mut p = Pipeline {
            scope: s,
            rx: &rx,
            hasher,
            threads: threads.max(1),
            spawned: 0,
            read_bytes: 0,
            z: None,
            pieces,
            peeked,
            queue: VecDeque::new(),
            jobs,
            ahead: AHEAD_PER_WORKER * threads.max(1),
            read_all: false,
        };
        // Dropping the pipeline closes the job channel: the workers finish
        // their pieces (nobody waits for them) and stop.
        body(&mut p)
    })
}

impl Pipeline<'_, '_> {
    /// The next piece's lines, or the end of the file, in order.
    pub(super) fn next(&mut self) -> Result<Option<Ordered>, TraceError> {
        self.fill()?;
        let Some(slot) = self.queue.pop_front() else {
            return Ok(None);
        };
        let checked = match slot {
            Slot::Inline(piece) => {
                if self.z.is_none() {
                    self.z = zstd::bulk::Decompressor::new().ok();
                }
                check_piece(piece, self.hasher, &mut self.z)
            }
            Slot::Pending { reply, .. } => reply.recv().expect("a worker answers every piece"),
            Slot::End(Piece::Truncated(cut)) => return Ok(Some(Ordered::Truncated(cut))),
            Slot::End(Piece::BadHeader { offset, reason }) => {
                return Ok(Some(Ordered::BadHeader { offset, reason }))
            }
            Slot::End(Piece::Lines(_) | Piece::Block(_)) => unreachable!("pieces with lines"),
        };
        let resumes = if checked.damage.is_some() {
            self.fill()?;
            match self.queue.front() {
                Some(Slot::Pending { first_seq, .. }) => *first_seq,
                Some(Slot::Inline(p) | Slot::End(p)) => p.first_seq(),
                None => None,
            }
        } else {
            None
        };
        Ok(Some(Ordered::Lines { checked, resumes }))
    }

    fn fill(&mut self) -> Result<(), TraceError> {
        while !self.read_all && self.queue.len() < self.ahead {
            let next = match self.peeked.take() {
                Some(p) => p,
                None => self.pieces.next()?,
            };
            let Some(piece) = next else {
                self.read_all = true;
                break;
            };
            let size = match &piece {
                Piece::Lines(text) => text.len(),
                // Blocks count by their records' bytes, as lines do.
                Piece::Block(b) => b.header.stored_len as usize,
                Piece::Truncated(_) | Piece::BadHeader { .. } => {
                    self.read_all = true;
                    self.queue.push_back(Slot::End(piece));
                    break;
                }
            };
            if self.read_bytes < INLINE_BYTES {
                self.read_bytes += size as u64;
                self.queue.push_back(Slot::Inline(piece));
                continue;
            }
            if self.spawned < self.threads {
                let (rx, hasher) = (self.rx, self.hasher);
                self.scope.spawn(move || worker(rx, hasher));
                self.spawned += 1;
            }
            let first_seq = piece.first_seq();
            let (tx, reply) = mpsc::sync_channel(1);
            self.jobs
                .send(Job { piece, reply: tx })
                .expect("the workers run while the pipeline exists");
            self.queue.push_back(Slot::Pending { reply, first_seq });
        }
        Ok(())
    }
}

fn worker(jobs: &Mutex<mpsc::Receiver<Job>>, hasher: Option<&Hasher>) {
    let mut z = zstd::bulk::Decompressor::new().ok();
    loop {
        let job = {
            let Ok(rx) = jobs.lock() else { return };
            match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            }
        };
        let checked = check_piece(job.piece, hasher, &mut z);
        // The caller may have stopped reading (a problem was found).
        let _ = job.reply.send(checked);
    }
}

/// Prepares the lines of one `Lines` or `Block` piece.
fn check_piece(
    piece: Piece,
    hasher: Option<&Hasher>,
    z: &mut Option<zstd::bulk::Decompressor<'static>>,
) -> Checked {
    let mut out = Checked {
        items: Vec::new(),
        others: Vec::new(),
        texts: Vec::new(),
        damage: None,
        block: None,
        next_seq: None,
    };
    match piece {
        Piece::Lines(text) => {
            let mut bodies = BodyChecker::default();
            let mut rest: &[u8] = &text;
            out.items.reserve(text.len() / 512);
            while let Some(n) = memchr::memchr(b'\n', rest) {
                check_line(&rest[..n], None, None, hasher, &mut bodies, &mut out);
                rest = &rest[n + 1..];
            }
        }
        Piece::Block(b) => {
            let first_seq = b.header.first_seq;
            out.block = Some((b.offset, first_seq));
            out.next_seq = Some(first_seq);
            out.items.reserve(b.header.records.min(1 << 16) as usize);
            let Some(z) = z else {
                out.damage = Some(PieceDamage::Undecodable(
                    "cannot be decompressed: no zstd context could be made".into(),
                ));
                return out;
            };
            match b.lines(z) {
                Ok(lines) => check_block(lines, hasher, &mut out),
                Err(d) => out.damage = Some(d),
            }
        }
        Piece::Truncated(_) | Piece::BadHeader { .. } => unreachable!("kept by the pipeline"),
    }
    out
}

/// Rebuilds a block's lines (in parts of about [`REBUILT_BYTES`]) and
/// prepares them.
fn check_block(mut lines: PieceLines, hasher: Option<&Hasher>, out: &mut Checked) {
    let mut text = Vec::new();
    let mut fields: Vec<FieldRef> = Vec::new();
    // Per line: its end in `text`, its fields' end in `fields`, and what
    // the decoder knows of it.
    let mut ends: Vec<(usize, usize, Option<compact::Restored>)> = Vec::new();
    loop {
        text.clear();
        fields.clear();
        ends.clear();
        let mut end = false;
        while text.len() < REBUILT_BYTES {
            match lines.append_line(&mut text, Some(&mut fields)) {
                Ok(true) => ends.push((text.len(), fields.len(), lines.restored())),
                Ok(false) => {
                    end = true;
                    break;
                }
                Err(d) => {
                    out.damage = Some(d);
                    end = true;
                    break;
                }
            }
        }
        let mut bodies = BodyChecker::default();
        let (mut at, mut f_at) = (0, 0);
        let mut refs: Vec<(&[u8], u32)> = Vec::new();
        for &(e, fe, restored) in &ends {
            let line_fields = &fields[f_at..fe];
            // Fields the decoder could not vouch for are split again.
            let known = line_fields.iter().all(|f| f.id != compact::UNSPLIT);
            refs.clear();
            refs.extend(line_fields.iter().map(|f| (&text[f.start..f.end], f.id)));
            check_line(
                &text[at..e],
                restored,
                known.then_some(&refs[..]),
                hasher,
                &mut bodies,
                out,
            );
            (at, f_at) = (e, fe);
        }
        out.next_seq = lines.next_seq();
        if end {
            break;
        }
    }
}

/// Prepares one line: an event in the canonical layout becomes an
/// [`Item::Event`] (digest computed, body checked); anything else is kept
/// for the in-order checks. `restored` and `fields` are what the block
/// decoder knows of the line and its body fields.
fn check_line<'a>(
    line: &'a [u8],
    restored: Option<compact::Restored>,
    fields: Option<&[(&'a [u8], u32)]>,
    hasher: Option<&Hasher>,
    bodies: &mut BodyChecker<'a>,
    out: &mut Checked,
) {
    let event = restored
        .and_then(|r| r.event_parts(line))
        .or_else(|| compact::split_canonical(line).filter(|p| p.kind == b"event"));
    let Some(p) = event else {
        let start = out.others.len();
        out.others.extend_from_slice(line);
        out.items.push(Item::Other {
            start,
            end: out.others.len(),
        });
        return;
    };
    let prefix = &line[..line.len() - super::super::format::SUFFIX_LEN];
    let digest = hasher.map(|h| h.digest(&p.prev, prefix));
    let facts = match fields {
        Some(f) => bodies.check_fields(p.body, f),
        None => bodies.check(p.body),
    }
    .map(|f| {
        let start = out.texts.len();
        out.texts.extend_from_slice(f.time.as_bytes());
        ItemFacts {
            op: f.op,
            ktime_ns: f.ktime_ns,
            time: (start, out.texts.len()),
        }
    });
    out.items.push(Item::Event(EventItem {
        seq: p.seq,
        prev: p.prev,
        hash: p.hash,
        digest,
        facts,
    }));
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::trace::{
        compact, read_canonical, sample_action, verify, Header, ProblemKind, SealInfo, TraceFormat,
        TraceReader, TraceWriter, VerifyStatus,
    };

    /// Events in the test trace: several pieces in either form.
    const EVENTS: u64 = 6000;

    fn header() -> Header {
        Header {
            monitor_version: "0.1.0".into(),
            workspace: "/home/dev/project".into(),
            start_time: "2025-06-01T12:00:00Z".into(),
            ..Header::default()
        }
    }

    /// A sealed trace of EVENTS events (header seq 0, seal seq EVENTS + 1)
    /// and its canonical lines.
    fn write(path: &Path, form: TraceFormat) -> Vec<String> {
        let mut w = TraceWriter::create_as(path, None, header(), form).unwrap();
        for i in 0..EVENTS {
            let mut a = sample_action(i);
            a.path = Some(format!("/home/dev/project/f{i}"));
            w.append_event(&a).unwrap();
            if i % 1000 == 999 {
                w.flush().unwrap();
            }
        }
        w.seal(SealInfo::default()).unwrap();
        let (text, end) = read_canonical(path).unwrap();
        assert_eq!(end, None);
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Writes edited canonical lines back in `form` (compact: blocks of
    /// 64 KiB of stored records, so there are many).
    fn rewrite(path: &Path, form: TraceFormat, lines: &[String]) {
        let mut text = lines.join("\n").into_bytes();
        text.push(b'\n');
        let bytes = match form {
            TraceFormat::Jsonl => text,
            TraceFormat::Compact => {
                let mut z = compact::compressor().unwrap();
                let mut out = Vec::new();
                compact::pack_lines(&text, 1, 64 << 10, &mut z, &mut out).unwrap();
                out
            }
        };
        std::fs::write(path, bytes).unwrap();
    }

    /// Edits far from the header, in later pieces than the records they
    /// concern, are found at their line, as in a short trace.
    #[test]
    fn edits_across_pieces_are_found_at_their_line() {
        for form in [TraceFormat::Jsonl, TraceFormat::Compact] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format!("t.{}", form.extension()));
            let orig = write(&path, form);
            if form == TraceFormat::Jsonl {
                assert!(std::fs::metadata(&path).unwrap().len() > 2 << 20);
            }
            // Most lines are after the header's piece: they go through the
            // pipeline.
            let mut rd = TraceReader::open(&path).unwrap();
            let mut line = Vec::new();
            rd.next(&mut line).unwrap();
            while rd.has_buffered_lines() {
                rd.next(&mut line).unwrap();
            }
            assert!(rd.lines_read() < EVENTS / 3, "{form}: {}", rd.lines_read());
            let r = verify(&path, None).unwrap();
            assert_eq!(r.status, VerifyStatus::Intact, "{form}");
            assert_eq!((r.records, r.events), (EVENTS + 2, EVENTS));
            rewrite(&path, form, &orig);
            assert!(verify(&path, None).unwrap().is_intact(), "{form}");

            // Seq 1000 moved to line 5001 (several pieces later).
            let mut ls = orig.clone();
            let moved = ls.remove(1000);
            ls.insert(5000, moved);
            rewrite(&path, form, &ls);
            let r = verify(&path, None).unwrap();
            let p = r.first_bad.clone().unwrap();
            assert_eq!(
                (p.kind, p.line, p.seq),
                (ProblemKind::Reordered, 1001, Some(1001)),
                "{form}"
            );
            assert!(p.detail.contains("seq 1000 is at line 5001"), "{p}");
            assert_eq!(
                r.status,
                VerifyStatus::Broken {
                    intact_records: 1000
                }
            );

            // One byte of a body in a late piece.
            let mut ls = orig.clone();
            ls[4500] = ls[4500].replace("/f4499\"", "/f4498\"");
            rewrite(&path, form, &ls);
            let p = verify(&path, None).unwrap().first_bad.unwrap();
            assert_eq!(
                (p.kind, p.line, p.seq),
                (ProblemKind::Modified, 4501, Some(4500)),
                "{form}"
            );

            // A record deleted: nothing later has its seq.
            let mut ls = orig.clone();
            ls.remove(4000);
            rewrite(&path, form, &ls);
            let p = verify(&path, None).unwrap().first_bad.unwrap();
            assert_eq!(
                (p.kind, p.line, p.seq),
                (ProblemKind::Missing, 4001, Some(4001)),
                "{form}"
            );
            // An event body that is not an action, re-chained by a forger.
            let mut ls = orig.clone();
            ls[3000] = ls[3000].replace("\"pid\":4242,", "\"pid\":-1,");
            rechain(&mut ls, 3000);
            rewrite(&path, form, &ls);
            let p = verify(&path, None).unwrap().first_bad.unwrap();
            assert_eq!(
                (p.kind, p.line, p.seq),
                (ProblemKind::Malformed, 3001, Some(3000)),
                "{form}"
            );
            assert!(p.detail.contains("bad event body"), "{p}");
        }
    }

    /// Recomputes `prev` and `hash` (SHA-256) from line `from` on.
    fn rechain(lines: &mut [String], from: usize) {
        use sha2::Digest as _;
        for i in from..lines.len() {
            let prev = lines[i - 1][lines[i - 1].len() - 66..lines[i - 1].len() - 2].to_owned();
            let l = &mut lines[i];
            let at = l.find("\"prev\":\"").unwrap() + 8;
            l.replace_range(at..at + 64, &prev);
            let cut = l.rfind(",\"hash\":\"").unwrap();
            let mut h = sha2::Sha256::new();
            h.update(hex::decode(&prev).unwrap());
            h.update(&l.as_bytes()[..cut]);
            let d = hex::encode(h.finalize());
            l.replace_range(cut + 9..cut + 9 + 64, &d);
        }
    }
}

#[cfg(test)]
mod restored_tests {
    use crate::trace::compact::{split_canonical, BlockHeader, FrameDecoder};

    /// What the block decoder says of a rebuilt event line is what
    /// `split_canonical` finds in it, for every layout a block can hold.
    #[test]
    fn the_decoder_takes_lines_apart_as_split_canonical_does() {
        // (kind byte, fields) of stored records.
        let records: &[(u8, &[&[u8]])] = &[
            (1, &[]),
            (1, &[b""]),
            (1, &[b"\"a\":1", b""]),
            (1, &[b"", b""]),
            (1, &[b"\"op\":\"unlink\"", b"\"path\":\"/w/,a\""]),
            (1, &[b"\"a\":1,\"b\":2"]),
            (2, &[b"\"cause\":\"x\""]),
            (4, &[]),
        ];
        let mut stored = Vec::new();
        for (i, (kind, fields)) in records.iter().enumerate() {
            stored.push(*kind);
            stored.extend_from_slice(&[i as u8; 32]);
            stored.push(fields.len() as u8);
            for f in *fields {
                stored.push(0);
                stored.push(f.len() as u8);
                stored.extend_from_slice(f);
            }
        }
        // The same record as a KIND_OTHER named "event".
        stored.push(255);
        stored.push(5);
        stored.extend_from_slice(b"event");
        stored.extend_from_slice(&[9; 32]);
        stored.extend_from_slice(&[1, 0, 5]);
        stored.extend_from_slice(b"\"a\":1");
        let h = BlockHeader {
            first_seq: 7,
            records: records.len() as u32 + 1,
            stored_len: stored.len() as u32,
            zlen: 0,
            prev: [3; 32],
        };
        let mut d = FrameDecoder::new(&h, stored);
        let mut vouched = 0;
        for _ in 0..=records.len() {
            let mut line = Vec::new();
            assert!(d.append_line(&mut line, Some(&mut Vec::new())).unwrap());
            let r = d.last().unwrap();
            let split = split_canonical(&line);
            if let Some(p) = r.event_parts(&line) {
                vouched += 1;
                let s = split.expect("split_canonical takes it apart too");
                assert_eq!(
                    (p.kind, p.seq, p.prev, p.body, p.hash),
                    (s.kind, s.seq, s.prev, s.body, s.hash),
                    "{}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
        assert!(d.is_done());
        // All the events but the one with a lone empty field.
        assert_eq!(vouched, 5);
    }
}
