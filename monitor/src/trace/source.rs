//! Reading a trace in either form: [`TraceReader`] detects the form and
//! yields the canonical lines, so every consumer (verify, read, cat, replay,
//! oracle) reads both forms the same way.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compact::{self, BlockError, BlockHeader, FrameDecoder, FrameError, BLOCK_HEADER_LEN};
use super::TraceError;

/// The two forms of a trace file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// zstd frames of records with their redundant fields left out
    /// (docs/trace.md, "The compact form"); about 10x smaller.
    #[default]
    Compact,
    /// JSON lines, one canonical record per line.
    Jsonl,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Compact => "compact",
            TraceFormat::Jsonl => "jsonl",
        }
    }

    /// The form asked for, else the one the file name suggests: JSON lines
    /// for a `.jsonl` name, compact otherwise.
    pub fn for_path(explicit: Option<TraceFormat>, path: &Path) -> TraceFormat {
        explicit.unwrap_or_else(|| {
            if path.extension().is_some_and(|x| x == "jsonl") {
                TraceFormat::Jsonl
            } else {
                TraceFormat::Compact
            }
        })
    }

    /// File name extension for traces of this form (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Compact => "abmt",
            TraceFormat::Jsonl => "jsonl",
        }
    }
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The end of a trace cut short by a crash: a last line without a newline
/// (JSON lines) or an incomplete last block (compact form).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TruncatedTail {
    /// 1-based line number (in the canonical lines) of the first record
    /// that is not there.
    pub line: u64,
    /// Bytes of the incomplete line or block present in the file.
    pub bytes: u64,
    /// Compact form: the byte offset of the incomplete block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_offset: Option<u64>,
    /// Compact form: the length the block's header announces (header
    /// included), when the header itself is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_len: Option<u64>,
}

/// A block of a compact trace that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// 1-based line number (in the canonical lines) of the first record
    /// lost.
    pub line: u64,
    /// Byte offset of the damaged block in the file.
    pub offset: u64,
    /// What is wrong with it.
    pub reason: String,
    /// The seq the first lost record would have, when known.
    pub first_seq: Option<u64>,
    /// The seq of the first record readable after the damage, when a later
    /// block could be found.
    pub resumes_at_seq: Option<u64>,
}

impl Damage {
    /// "records seq A to B (N records) are lost" in words.
    pub fn lost_records(&self) -> String {
        match (self.first_seq, self.resumes_at_seq) {
            (Some(a), Some(b)) if b > a => format!(
                "records seq {a} to {} ({} record(s)) cannot be read; the file continues \
                 with seq {b}",
                b - 1,
                b - a
            ),
            (Some(a), _) => {
                format!("records from seq {a} to the end of the file cannot be read")
            }
            (None, Some(b)) => {
                format!("the records of this block cannot be read; the file continues with seq {b}")
            }
            (None, None) => "the rest of the file cannot be read".into(),
        }
    }
}

/// What [`TraceReader::next`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// A complete canonical line (in the caller's buffer, without newline).
    Line,
    /// The trace ends with an incomplete line or block; nothing follows.
    Truncated(TruncatedTail),
    /// A compact block is damaged; reading may continue after it (the next
    /// call returns the following block's first line, or the end).
    Damaged(Damage),
}

/// Bytes of JSON lines read at once (a piece ends at the last newline in
/// them).
const PLAIN_PIECE: u64 = 1 << 20;

/// A piece of a trace file as read, before any decoding. Pieces come in
/// file order from [`PieceReader`]; decoding one needs
/// nothing from the others, so pieces can be decoded on several threads.
pub(crate) enum Piece {
    /// JSON lines: complete lines, each with its newline.
    Lines(Vec<u8>),
    /// A compact block, read in full.
    Block(RawBlock),
    /// The file ends with an incomplete line or block; nothing follows.
    Truncated(Cut),
    /// A compact block header that cannot be read: nothing after it can be
    /// found, and nothing follows.
    BadHeader { offset: u64, reason: BlockError },
}

/// A compact block as read from the file.
pub(crate) struct RawBlock {
    pub(crate) header: BlockHeader,
    pub(crate) data: Vec<u8>,
    /// Byte offset of the block in the file.
    pub(crate) offset: u64,
}

/// An incomplete end of the file.
pub(crate) struct Cut {
    bytes: u64,
    block_offset: Option<u64>,
    block_len: Option<u64>,
    /// The first seq of the incomplete block, when its header is complete.
    first_seq: Option<u64>,
}

/// Why a piece's lines stopped before its end.
pub(crate) enum PieceDamage {
    /// The block does not decompress.
    Undecodable(String),
    /// The record with `seq` (and the rest of the block) cannot be rebuilt.
    Malformed { seq: u64, reason: FrameError },
}

impl Piece {
    /// The first seq of a compact block (complete or cut short) whose
    /// header could be read: where reading resumes after a damaged block.
    pub(crate) fn first_seq(&self) -> Option<u64> {
        match self {
            Piece::Block(b) => Some(b.header.first_seq),
            Piece::Truncated(c) => c.first_seq,
            Piece::Lines(_) | Piece::BadHeader { .. } => None,
        }
    }
}

impl RawBlock {
    /// The block's lines; `Err` when it does not decompress.
    pub(crate) fn lines(
        self,
        z: &mut zstd::bulk::Decompressor<'_>,
    ) -> Result<PieceLines, PieceDamage> {
        let want = self.header.stored_len as usize;
        match z.decompress(&self.data, want) {
            Ok(s) if s.len() == want => Ok(PieceLines::Frame(FrameDecoder::new(&self.header, s))),
            Ok(s) => Err(PieceDamage::Undecodable(format!(
                "decompresses to {} bytes, its header says {want}",
                s.len()
            ))),
            Err(e) => Err(PieceDamage::Undecodable(format!(
                "does not decompress (zstd: {e})"
            ))),
        }
    }
}

impl PieceDamage {
    /// The damage as a reader reports it: `line` is the line number of the
    /// first record lost, `offset` the block's, `resumes` the first seq of
    /// the next block (see [`Piece::first_seq`]).
    pub(crate) fn report(
        self,
        line: u64,
        offset: u64,
        first_seq: u64,
        resumes: Option<u64>,
    ) -> Damage {
        let (reason, first_seq) = match self {
            PieceDamage::Undecodable(reason) => (reason, first_seq),
            PieceDamage::Malformed { seq, reason } => {
                (format!("holds malformed records: {reason}"), seq)
            }
        };
        Damage {
            line,
            offset,
            reason,
            first_seq: Some(first_seq),
            resumes_at_seq: resumes,
        }
    }
}

impl Cut {
    pub(crate) fn report(&self, line: u64) -> TruncatedTail {
        TruncatedTail {
            line,
            bytes: self.bytes,
            block_offset: self.block_offset,
            block_len: self.block_len,
        }
    }
}

/// A bad block header as a reader reports it; `next_seq` is the seq after
/// the last record read.
pub(crate) fn bad_header(
    line: u64,
    offset: u64,
    reason: &BlockError,
    next_seq: Option<u64>,
) -> Damage {
    Damage {
        line,
        offset,
        reason: format!("has a bad block header: {reason}"),
        first_seq: next_seq,
        resumes_at_seq: None,
    }
}

/// The canonical lines of one piece, in order.
pub(crate) enum PieceLines {
    Plain { text: Vec<u8>, at: usize },
    Frame(FrameDecoder),
}

impl PieceLines {
    /// Appends the next line (without newline) to `out`; with `fields`
    /// (compact form only), where its body fields are. `Ok(false)` after
    /// the last line.
    pub(crate) fn append_line(
        &mut self,
        out: &mut Vec<u8>,
        fields: Option<&mut Vec<compact::FieldRef>>,
    ) -> Result<bool, PieceDamage> {
        match self {
            PieceLines::Plain { text, at } => {
                let rest = &text[*at..];
                let Some(n) = memchr::memchr(b'\n', rest) else {
                    return Ok(false);
                };
                out.extend_from_slice(&rest[..n]);
                *at += n + 1;
                Ok(true)
            }
            PieceLines::Frame(f) => {
                let seq = f.next_seq();
                f.append_line(out, fields)
                    .map_err(|reason| PieceDamage::Malformed { seq, reason })
            }
        }
    }

    /// What the block decoder knows of the last line (compact form).
    pub(crate) fn restored(&self) -> Option<compact::Restored> {
        match self {
            PieceLines::Plain { .. } => None,
            PieceLines::Frame(f) => f.last(),
        }
    }

    /// True when no line is left (the next call returns `Ok(false)`).
    pub(crate) fn is_done(&self) -> bool {
        match self {
            PieceLines::Plain { text, at } => *at == text.len(),
            PieceLines::Frame(f) => f.is_done(),
        }
    }

    /// The seq after the last line returned (compact form).
    pub(crate) fn next_seq(&self) -> Option<u64> {
        match self {
            PieceLines::Plain { .. } => None,
            PieceLines::Frame(f) => Some(f.next_seq()),
        }
    }
}

/// Reads a trace file in pieces, in order, without decoding them.
pub(crate) struct PieceReader {
    path: PathBuf,
    file: Box<dyn BufRead + Send>,
    form: TraceFormat,
    /// Byte offset of the next block (compact form).
    offset: u64,
    /// Plain form: bytes after the last newline read so far.
    carry: Vec<u8>,
    /// Nothing more can be read.
    done: bool,
}

impl PieceReader {
    /// The next piece; `None` at the end of the file (and after a
    /// `Truncated` or `BadHeader` piece).
    pub(crate) fn next(&mut self) -> Result<Option<Piece>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let r = match self.form {
            TraceFormat::Jsonl => self.next_plain(),
            TraceFormat::Compact => self.next_block(),
        };
        if !matches!(r, Ok(Some(Piece::Lines(_) | Piece::Block(_)))) {
            self.done = true;
        }
        r
    }

    fn next_plain(&mut self) -> Result<Option<Piece>, TraceError> {
        let mut buf = std::mem::take(&mut self.carry);
        buf.reserve(PLAIN_PIECE as usize);
        loop {
            let before = buf.len();
            let got = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut self.file, PLAIN_PIECE),
                &mut buf,
            )
            .map_err(|e| TraceError::io(&self.path, "read", e))?;
            let Some(nl) = memchr::memrchr(b'\n', &buf[before..]) else {
                if got == 0 {
                    // The end: what is left is an incomplete line.
                    let cut = Piece::Truncated(Cut {
                        bytes: buf.len() as u64,
                        block_offset: None,
                        block_len: None,
                        first_seq: None,
                    });
                    return Ok((!buf.is_empty()).then_some(cut));
                }
                continue;
            };
            self.carry = buf.split_off(before + nl + 1);
            return Ok(Some(Piece::Lines(buf)));
        }
    }

    fn next_block(&mut self) -> Result<Option<Piece>, TraceError> {
        let offset = self.offset;
        let mut hb = [0u8; BLOCK_HEADER_LEN];
        let got = read_full(&mut self.file, &mut hb)
            .map_err(|e| TraceError::io(&self.path, "read", e))?;
        if got == 0 {
            return Ok(None);
        }
        if got < BLOCK_HEADER_LEN {
            return Ok(Some(Piece::Truncated(Cut {
                bytes: got as u64,
                block_offset: Some(offset),
                block_len: None,
                first_seq: None,
            })));
        }
        let h = match BlockHeader::decode(&hb) {
            Ok(h) => h,
            Err(reason) => return Ok(Some(Piece::BadHeader { offset, reason })),
        };
        // Read as much as is there (a damaged length must not make the
        // reader allocate it up front).
        let mut data = Vec::new();
        let got = std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut self.file, u64::from(h.zlen)),
            &mut data,
        )
        .map_err(|e| TraceError::io(&self.path, "read", e))?;
        let block_len = (BLOCK_HEADER_LEN + h.zlen as usize) as u64;
        if got < h.zlen as usize {
            return Ok(Some(Piece::Truncated(Cut {
                bytes: (BLOCK_HEADER_LEN + got) as u64,
                block_offset: Some(offset),
                block_len: Some(block_len),
                first_seq: Some(h.first_seq),
            })));
        }
        self.offset = offset + block_len;
        Ok(Some(Piece::Block(RawBlock {
            header: h,
            data,
            offset,
        })))
    }
}

/// Reads the canonical lines of a trace in either form.
pub struct TraceReader {
    pieces: PieceReader,
    /// The piece after the current one, when it was read early (to say
    /// where reading resumes after a damaged block).
    peeked: Option<Option<Piece>>,
    /// The lines of the piece being read, and its block's offset.
    current: Option<(PieceLines, u64)>,
    z: Option<zstd::bulk::Decompressor<'static>>,
    lines: u64,
    /// The seq after the last record returned, when known.
    next_seq: Option<u64>,
    done: bool,
}

impl TraceReader {
    /// Opens a trace file and detects its form from its first bytes. Only
    /// regular files are accepted.
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let f = File::open(path).map_err(|e| TraceError::io(path, "open", e))?;
        let meta = f.metadata().map_err(|e| TraceError::io(path, "stat", e))?;
        if !meta.is_file() {
            return Err(TraceError::BadTarget {
                path: path.to_owned(),
                reason: "is not a regular file; give the path of a trace file".into(),
            });
        }
        Self::from_reader(Box::new(BufReader::with_capacity(256 * 1024, f)), path)
    }

    /// Reads a trace from any byte stream; `path` names it in messages.
    pub fn from_reader(
        mut file: Box<dyn BufRead + Send>,
        path: &Path,
    ) -> Result<TraceReader, TraceError> {
        let head = file
            .fill_buf()
            .map_err(|e| TraceError::io(path, "read", e))?;
        let (form, z) = if compact::is_compact(head) {
            let z = zstd::bulk::Decompressor::new().map_err(|e| TraceError::io(path, "read", e))?;
            (TraceFormat::Compact, Some(z))
        } else {
            (TraceFormat::Jsonl, None)
        };
        Ok(TraceReader {
            pieces: PieceReader {
                path: path.to_owned(),
                file,
                form,
                offset: 0,
                carry: Vec::new(),
                done: false,
            },
            peeked: None,
            current: None,
            z,
            lines: 0,
            next_seq: Some(0),
            done: false,
        })
    }

    /// The form of the file.
    pub fn form(&self) -> TraceFormat {
        self.pieces.form
    }

    pub fn path(&self) -> &Path {
        &self.pieces.path
    }

    /// Complete lines returned so far.
    pub fn lines_read(&self) -> u64 {
        self.lines
    }

    /// Reads the next canonical line into `line` (without newline).
    /// `Ok(None)` at the end of the trace. Errors are I/O errors only;
    /// damage in the file is returned as [`Next::Damaged`] or
    /// [`Next::Truncated`].
    pub fn next(&mut self, line: &mut Vec<u8>) -> Result<Option<Next>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_inner(line);
        match &r {
            Ok(Some(Next::Line)) => self.lines += 1,
            Ok(Some(Next::Truncated(_))) | Ok(None) | Err(_) => self.done = true,
            Ok(Some(Next::Damaged(_))) => {}
        }
        r
    }

    /// True while lines of a piece already read are waiting to be
    /// returned.
    pub(crate) fn has_buffered_lines(&self) -> bool {
        self.current.as_ref().is_some_and(|(l, _)| !l.is_done())
    }

    /// The rest of the trace as pieces, once no lines are buffered (see
    /// [`has_buffered_lines`](Self::has_buffered_lines)): the piece reader,
    /// the piece already read ahead, the lines returned and the seq after
    /// the last record returned.
    pub(crate) fn into_pieces(self) -> (PieceReader, Option<Option<Piece>>, u64, Option<u64>) {
        debug_assert!(!self.has_buffered_lines(), "lines are buffered");
        let pieces = if self.done {
            PieceReader {
                done: true,
                ..self.pieces
            }
        } else {
            self.pieces
        };
        let peeked = if self.done { Some(None) } else { self.peeked };
        (pieces, peeked, self.lines, self.next_seq)
    }

    fn take_piece(&mut self) -> Result<Option<Piece>, TraceError> {
        match self.peeked.take() {
            Some(p) => Ok(p),
            None => self.pieces.next(),
        }
    }

    /// The first seq of the next block, without consuming it.
    fn peek_first_seq(&mut self) -> Result<Option<u64>, TraceError> {
        if self.peeked.is_none() {
            self.peeked = Some(self.pieces.next()?);
        }
        Ok(self.peeked.as_ref().and_then(|p| p.as_ref()?.first_seq()))
    }

    fn next_inner(&mut self, line: &mut Vec<u8>) -> Result<Option<Next>, TraceError> {
        loop {
            if let Some((lines, offset)) = &mut self.current {
                let offset = *offset;
                line.clear();
                match lines.append_line(line, None) {
                    Ok(true) => {
                        if let Some(s) = lines.next_seq() {
                            self.next_seq = Some(s);
                        }
                        return Ok(Some(Next::Line));
                    }
                    Ok(false) => self.current = None,
                    Err(damage) => {
                        self.current = None;
                        let resumes = self.peek_first_seq()?;
                        let first = self.next_seq.unwrap_or(0);
                        return Ok(Some(Next::Damaged(damage.report(
                            self.lines + 1,
                            offset,
                            first,
                            resumes,
                        ))));
                    }
                }
            }
            let Some(piece) = self.take_piece()? else {
                return Ok(None);
            };
            match piece {
                Piece::Truncated(cut) => {
                    return Ok(Some(Next::Truncated(cut.report(self.lines + 1))))
                }
                Piece::BadHeader { offset, reason } => {
                    return Ok(Some(Next::Damaged(bad_header(
                        self.lines + 1,
                        offset,
                        &reason,
                        self.next_seq,
                    ))))
                }
                Piece::Lines(text) => self.current = Some((PieceLines::Plain { text, at: 0 }, 0)),
                Piece::Block(b) => {
                    let (offset, first_seq) = (b.offset, b.header.first_seq);
                    let z = match &mut self.z {
                        Some(z) => z,
                        None => self.z.insert(
                            zstd::bulk::Decompressor::new()
                                .map_err(|e| TraceError::io(&self.pieces.path, "read", e))?,
                        ),
                    };
                    match b.lines(z) {
                        Ok(lines) => self.current = Some((lines, offset)),
                        Err(damage) => {
                            let resumes = self.peek_first_seq()?;
                            return Ok(Some(Next::Damaged(damage.report(
                                self.lines + 1,
                                offset,
                                first_seq,
                                resumes,
                            ))));
                        }
                    }
                }
            }
        }
    }
}

fn read_full(r: &mut (impl std::io::Read + ?Sized), buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads a whole trace's canonical lines (each with its newline), for
/// `abm trace cat` and for tools that want the JSON-lines text. Damage and
/// truncation end the text; they are returned next to it.
pub fn read_canonical(path: &Path) -> Result<(Vec<u8>, Option<Next>), TraceError> {
    let mut r = TraceReader::open(path)?;
    let mut out = Vec::new();
    let mut line = Vec::new();
    while let Some(n) = r.next(&mut line)? {
        match n {
            Next::Line => {
                out.extend_from_slice(&line);
                out.push(b'\n');
            }
            other => return Ok((out, Some(other))),
        }
    }
    Ok((out, None))
}
