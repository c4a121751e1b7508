//! The compact form of a trace: the canonical records (the JSON lines of
//! [`format`](super::format)) stored as zstd frames, with the fields that
//! can be rebuilt left out. `docs/trace.md` specifies it for third parties.
//!
//! A compact file is a sequence of blocks. A block is
//!
//! ```text
//! block header   a zstd skippable frame: magic 0x184D2A5B, u32le 60, then
//!                "ABMT", u16le version (1), u16le 0, u64le first_seq,
//!                u32le records, u32le stored_len, u32le zlen, prev (32 bytes)
//! data frame     zlen bytes: one zstd frame (with content checksum) whose
//!                content is stored_len bytes: `records` stored records
//! ```
//!
//! A stored record is
//!
//! ```text
//! kind     u8: 0 header, 1 event, 2 loss, 3 note, 4 seal,
//!          255: the type name follows as varint length + bytes
//! hash     32 bytes: the record's digest
//! nfields  varint
//! fields   per field: varint r; r = 0: varint length + the field's bytes
//!          (a literal, which becomes the frame's next dictionary entry);
//!          r >= 1: the frame's dictionary entry r - 1
//! ```
//!
//! where the fields are the record's body split at its top-level commas
//! (`"key":value` texts). The canonical line of the i-th record of a block
//! is rebuilt as
//!
//! ```text
//! {"type":"<kind>","seq":<first_seq + i>,"prev":"<hex>"[,<field>]*,"hash":"<hex>"}
//! ```
//!
//! with `prev` the header's `prev` for the first record and the previous
//! record's hash after it. Frames are independent (the dictionary starts
//! empty in each), so a damaged frame loses only its own records. Varints
//! are unsigned LEB128.

use std::collections::HashMap;

use super::format::{self, Split, DIGEST_LEN};

/// zstd skippable-frame magic of a block header (little endian on disk).
pub const BLOCK_MAGIC: u32 = 0x184D_2A5B;
/// Bytes of a block header, the skippable frame's own 8 bytes included.
pub const BLOCK_HEADER_LEN: usize = 68;
/// Tag after the skippable frame's size.
pub const TAG: &[u8; 4] = b"ABMT";
/// Version of the compact layout.
pub const COMPACT_VERSION: u16 = 1;
/// zstd level of the writer: level 1 compresses these records as well as
/// level 3 (measured on the benchmark traces) at a fraction of the CPU.
pub const LEVEL: i32 = 1;
/// Largest stored content a reader accepts for one frame (a damaged or
/// forged header cannot make it allocate more).
pub const MAX_STORED: u32 = 256 << 20;

/// Names of the record kinds, by kind byte.
pub const KINDS: [&str; 5] = ["header", "event", "loss", "note", "seal"];
const KIND_OTHER: u8 = 255;

/// The header of a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BlockHeader {
    pub(crate) first_seq: u64,
    pub(crate) records: u32,
    pub(crate) stored_len: u32,
    pub(crate) zlen: u32,
    pub(crate) prev: [u8; DIGEST_LEN],
}

impl BlockHeader {
    pub(crate) fn encode(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&((BLOCK_HEADER_LEN - 8) as u32).to_le_bytes());
        b[8..12].copy_from_slice(TAG);
        b[12..14].copy_from_slice(&COMPACT_VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.first_seq.to_le_bytes());
        b[24..28].copy_from_slice(&self.records.to_le_bytes());
        b[28..32].copy_from_slice(&self.stored_len.to_le_bytes());
        b[32..36].copy_from_slice(&self.zlen.to_le_bytes());
        b[36..68].copy_from_slice(&self.prev);
        b
    }

    /// Parses a block header; the error says what is wrong with it.
    pub(crate) fn decode(b: &[u8; BLOCK_HEADER_LEN]) -> Result<BlockHeader, BlockError> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        if u32_at(0) != BLOCK_MAGIC || &b[8..12] != TAG {
            return Err(BlockError::Magic);
        }
        if u32_at(4) as usize != BLOCK_HEADER_LEN - 8 {
            return Err(BlockError::HeaderSize(u32_at(4)));
        }
        if b[14..16] != [0, 0] {
            return Err(BlockError::Reserved);
        }
        let version = u16::from_le_bytes([b[12], b[13]]);
        if version != COMPACT_VERSION {
            return Err(BlockError::Version(version));
        }
        let h = BlockHeader {
            first_seq: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            records: u32_at(24),
            stored_len: u32_at(28),
            zlen: u32_at(32),
            prev: b[36..68].try_into().expect("32 bytes"),
        };
        if h.stored_len > MAX_STORED {
            return Err(BlockError::TooLong(h.stored_len));
        }
        Ok(h)
    }
}

/// What is wrong with a block header of a compact trace.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BlockError {
    #[error("no block header here (wrong magic)")]
    Magic,
    #[error("block header size {0} is not 60")]
    HeaderSize(u32),
    #[error("the reserved bytes 14-15 are not zero")]
    Reserved,
    #[error(
        "compact layout version {0} is not supported (this abm reads version \
         {COMPACT_VERSION}); use the abm version that wrote the trace"
    )]
    Version(u16),
    #[error("the block claims {0} bytes of records (more than {MAX_STORED})")]
    TooLong(u32),
}

/// What is wrong with the records stored in a frame.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("{0} byte(s) after the frame's last record")]
    Trailing(usize),
    #[error("the frame's records end too early")]
    Short,
    #[error("unknown record kind byte {0}")]
    Kind(u8),
    #[error("a field refers to dictionary entry {entry} of {len}")]
    Entry { entry: u64, len: usize },
}

/// True when `bytes` starts like a compact trace.
pub fn is_compact(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && bytes[0..4] == BLOCK_MAGIC.to_le_bytes() && &bytes[8..12] == TAG
}

fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// A canonical line taken apart.
pub(crate) struct LineParts<'a> {
    pub(crate) kind: &'a [u8],
    pub(crate) seq: u64,
    pub(crate) prev: [u8; DIGEST_LEN],
    /// The body fields' text (between the envelope and the hash), without
    /// the leading comma; empty for an empty body.
    pub(crate) body: &'a [u8],
    pub(crate) hash: [u8; DIGEST_LEN],
}

/// Takes a line (without newline) in the canonical layout apart; `None` if
/// it is not in that layout (the writer only writes that layout).
pub(crate) fn split_canonical(line: &[u8]) -> Option<LineParts<'_>> {
    let Split::Ok { prefix, hash } = format::split_line(line) else {
        return None;
    };
    let rest = prefix.strip_prefix(b"{\"type\":\"")?;
    let q = rest.iter().position(|&c| c == b'"')?;
    let kind = &rest[..q];
    if kind.contains(&b'\\') {
        return None;
    }
    let rest = rest[q..].strip_prefix(b"\",\"seq\":")?;
    let digits = rest.iter().position(|c| !c.is_ascii_digit())?;
    if digits == 0 || (digits > 1 && rest[0] == b'0') || digits > 20 {
        return None;
    }
    let seq: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b",\"prev\":\"")?;
    let prev = format::parse_digest(rest.get(..2 * DIGEST_LEN)?)?;
    let rest = rest[2 * DIGEST_LEN..].strip_prefix(b"\"")?;
    let body = match rest {
        [] => rest,
        [b',', body @ ..] if !body.is_empty() => body,
        _ => return None,
    };
    Some(LineParts {
        kind,
        seq,
        prev,
        body,
        hash,
    })
}

/// Splits a record body at its top-level commas (outside strings, objects
/// and arrays).
pub(crate) fn split_fields(body: &[u8]) -> Fields<'_> {
    Fields {
        body,
        at: (!body.is_empty()).then_some(0),
    }
}

/// The field of [`split_fields`] that starts at `at` (a field start of
/// `body`), and where the next one starts (`None` after the last).
pub(crate) fn field_at(body: &[u8], at: usize) -> (&[u8], Option<usize>) {
    let mut f = Fields { body, at: Some(at) };
    let field = f.next().unwrap_or_default();
    (field, f.at)
}

/// True when `f` is exactly one field of [`split_fields`] wherever it
/// stands in a body: no top-level comma in it, and it ends outside strings,
/// objects and arrays (so the fields around it are split the same).
pub(crate) fn is_one_field(f: &[u8]) -> bool {
    let mut depth = 0i32;
    let mut i = 0;
    while i < f.len() {
        match f[i] {
            b'"' => {
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &f[i.min(f.len())..]) {
                        Some(n) if f[i + n] == b'\\' => i += n + 2,
                        Some(n) => {
                            i += n;
                            break;
                        }
                        // The field ends inside a string.
                        None => return false,
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => return false,
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

/// The iterator of [`split_fields`].
pub(crate) struct Fields<'a> {
    body: &'a [u8],
    /// Where the next field starts; `None` after the last one.
    at: Option<usize>,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let body = self.body;
        let start = self.at?;
        let mut depth = 0i32;
        let mut i = start;
        while i < body.len() {
            match body[i] {
                b'"' => {
                    // Skip the string: to the next quote not escaped.
                    i += 1;
                    while i < body.len() {
                        match memchr::memchr2(b'"', b'\\', &body[i..]) {
                            Some(n) if body[i + n] == b'\\' => i += n + 2,
                            Some(n) => {
                                i += n;
                                break;
                            }
                            None => i = body.len(),
                        }
                    }
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                b',' if depth == 0 => {
                    self.at = Some(i + 1);
                    return Some(&body[start..i]);
                }
                _ => {}
            }
            i += 1;
        }
        self.at = None;
        Some(&body[start..])
    }
}

/// Builds the stored content of one frame from canonical lines.
pub(crate) struct FrameBuilder<'a> {
    /// Field text → its number in this frame. foldhash, seeded per process:
    /// a lookup per field of every record, where SipHash cost about a
    /// microsecond per record.
    dict: HashMap<&'a [u8], u32, foldhash::fast::RandomState>,
    /// The current record's fields (kept to reuse its allocation).
    fields: Vec<&'a [u8]>,
    stored: Vec<u8>,
    first_seq: u64,
    prev: [u8; DIGEST_LEN],
    records: u32,
    next_seq: u64,
    last_hash: [u8; DIGEST_LEN],
}

impl<'a> FrameBuilder<'a> {
    pub(crate) fn new() -> FrameBuilder<'a> {
        FrameBuilder {
            dict: HashMap::default(),
            fields: Vec::new(),
            stored: Vec::with_capacity(256 * 1024),
            first_seq: 0,
            prev: [0; DIGEST_LEN],
            records: 0,
            next_seq: 0,
            last_hash: [0; DIGEST_LEN],
        }
    }

    /// True when the line continues this frame (the next seq, linked to the
    /// previous record), or the frame is empty.
    pub(crate) fn continues(&self, p: &LineParts<'_>) -> bool {
        self.records == 0 || (p.seq == self.next_seq && p.prev == self.last_hash)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Adds a record; the caller checked [`continues`](Self::continues).
    pub(crate) fn push(&mut self, p: &LineParts<'a>) {
        if self.records == 0 {
            self.first_seq = p.seq;
            self.prev = p.prev;
        }
        match KINDS.iter().position(|k| k.as_bytes() == p.kind) {
            Some(i) => self.stored.push(i as u8),
            None => {
                self.stored.push(KIND_OTHER);
                push_varint(&mut self.stored, p.kind.len() as u64);
                self.stored.extend_from_slice(p.kind);
            }
        }
        self.stored.extend_from_slice(&p.hash);
        self.fields.clear();
        self.fields.extend(split_fields(p.body));
        push_varint(&mut self.stored, self.fields.len() as u64);
        for &f in &self.fields {
            match self.dict.get(f) {
                Some(&i) => push_varint(&mut self.stored, u64::from(i) + 1),
                None => {
                    self.stored.push(0);
                    push_varint(&mut self.stored, f.len() as u64);
                    self.stored.extend_from_slice(f);
                    let n = self.dict.len() as u32;
                    self.dict.insert(f, n);
                }
            }
        }
        self.records += 1;
        self.next_seq = p.seq.wrapping_add(1);
        self.last_hash = p.hash;
    }

    /// Compresses the frame and appends the block (header and data frame)
    /// to `out`; the builder is then empty.
    pub(crate) fn finish(
        &mut self,
        z: &mut zstd::bulk::Compressor<'_>,
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let data = z.compress(&self.stored)?;
        let h = BlockHeader {
            first_seq: self.first_seq,
            records: self.records,
            stored_len: self.stored.len() as u32,
            zlen: data.len() as u32,
            prev: self.prev,
        };
        out.extend_from_slice(&h.encode());
        out.extend_from_slice(&data);
        self.dict.clear();
        self.stored.clear();
        self.records = 0;
        Ok(())
    }
}

/// A zstd compressor as the writer uses it (content checksums on).
pub(crate) fn compressor() -> std::io::Result<zstd::bulk::Compressor<'static>> {
    let mut z = zstd::bulk::Compressor::new(LEVEL)?;
    z.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    Ok(z)
}

/// Packs canonical lines (each ending with `\n`) into blocks appended to
/// `out`. A new frame starts whenever a line does not continue the previous
/// one (a gap in `seq` or a broken link), so that any sequence of records in
/// the canonical layout is stored exactly. Errors name the line (1-based,
/// counted from `first_line`) that is not in the canonical layout.
pub(crate) fn pack_lines(
    text: &[u8],
    first_line: u64,
    max_stored: usize,
    z: &mut zstd::bulk::Compressor<'_>,
    out: &mut Vec<u8>,
) -> Result<(), PackError> {
    let mut fb = FrameBuilder::new();
    for (line_no, line) in (first_line..).zip(text.split_inclusive(|&c| c == b'\n')) {
        let Some(line) = line.strip_suffix(b"\n") else {
            return Err(PackError::Line {
                line: line_no,
                reason: "the last line has no newline (a record cut short)".into(),
            });
        };
        let p = split_canonical(line).ok_or_else(|| PackError::Line {
            line: line_no,
            reason: "not a trace record in the canonical layout \
                     ({\"type\":…,\"seq\":…,\"prev\":…, …,\"hash\":…})"
                .into(),
        })?;
        if !fb.continues(&p) || fb.stored.len() >= max_stored {
            fb.finish(z, out).map_err(PackError::Io)?;
        }
        fb.push(&p);
    }
    if !fb.is_empty() {
        fb.finish(z, out).map_err(PackError::Io)?;
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PackError {
    #[error("line {line}: {reason}")]
    Line { line: u64, reason: String },
    #[error("zstd: {0}")]
    Io(std::io::Error),
}

/// The decoded content of one frame: rebuilds canonical lines one by one.
pub(crate) struct FrameDecoder {
    /// What is known of the last line rebuilt.
    last: Option<Restored>,
    stored: Vec<u8>,
    at: usize,
    /// Each dictionary entry's place in `stored`, and whether it is one
    /// field (see [`is_one_field`]; worked out when fields are asked for).
    dict: Vec<(usize, usize, Option<bool>)>,
    remaining: u32,
    next_seq: u64,
    prev: [u8; DIGEST_LEN],
}

impl FrameDecoder {
    pub(crate) fn new(h: &BlockHeader, stored: Vec<u8>) -> FrameDecoder {
        FrameDecoder {
            last: None,
            stored,
            at: 0,
            dict: Vec::new(),
            remaining: h.records,
            next_seq: h.first_seq,
            prev: h.prev,
        }
    }

    /// The seq the next record will have.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// True when every record was rebuilt and nothing is left over (the
    /// next line would be the end, not an error).
    pub(crate) fn is_done(&self) -> bool {
        self.remaining == 0 && self.at == self.stored.len()
    }

    /// Appends the next canonical line (without newline) to `out` and,
    /// with `fields`, where each of its body fields is. `Ok(false)` at the
    /// end of the frame; on an error `out` and `fields` are left as they
    /// were.
    pub(crate) fn append_line(
        &mut self,
        out: &mut Vec<u8>,
        mut fields: Option<&mut Vec<FieldRef>>,
    ) -> Result<bool, FrameError> {
        let (start, nf) = (out.len(), fields.as_ref().map_or(0, |f| f.len()));
        let r = self.restore(out, fields.as_deref_mut());
        if r.is_err() {
            out.truncate(start);
            if let Some(f) = fields {
                f.truncate(nf);
            }
        }
        r
    }

    fn restore(
        &mut self,
        line: &mut Vec<u8>,
        mut fields: Option<&mut Vec<FieldRef>>,
    ) -> Result<bool, FrameError> {
        if self.remaining == 0 {
            if self.at != self.stored.len() {
                return Err(FrameError::Trailing(self.stored.len() - self.at));
            }
            return Ok(false);
        }
        let b = &self.stored;
        let mut at = self.at;
        let kind_byte = *b.get(at).ok_or(FrameError::Short)?;
        at += 1;
        let kind: &[u8] = match kind_byte {
            k if (k as usize) < KINDS.len() => KINDS[k as usize].as_bytes(),
            KIND_OTHER => {
                let n = read_varint(b, &mut at).ok_or(FrameError::Short)? as usize;
                let s = b
                    .get(at..at.checked_add(n).ok_or(FrameError::Short)?)
                    .ok_or(FrameError::Short)?;
                at += n;
                s
            }
            k => return Err(FrameError::Kind(k)),
        };
        let hash: [u8; DIGEST_LEN] = b
            .get(at..at + DIGEST_LEN)
            .ok_or(FrameError::Short)?
            .try_into()
            .expect("32 bytes");
        at += DIGEST_LEN;
        let start = line.len();
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(kind);
        line.extend_from_slice(b"\",\"seq\":");
        push_decimal(line, self.next_seq);
        line.extend_from_slice(b",\"prev\":\"");
        push_hex(line, &self.prev);
        line.push(b'"');
        let envelope_len = line.len() - start;
        let nfields = read_varint(b, &mut at).ok_or(FrameError::Short)?;
        for _ in 0..nfields {
            let r = read_varint(b, &mut at).ok_or(FrameError::Short)?;
            let id = if r == 0 {
                let n = read_varint(b, &mut at).ok_or(FrameError::Short)? as usize;
                let e = at
                    .checked_add(n)
                    .filter(|&e| e <= b.len())
                    .ok_or(FrameError::Short)?;
                self.dict.push((at, e, None));
                at = e;
                self.dict.len() - 1
            } else {
                let id = (r - 1) as usize;
                if id >= self.dict.len() {
                    return Err(FrameError::Entry {
                        entry: r - 1,
                        len: self.dict.len(),
                    });
                }
                id
            };
            let (s, e, one) = &mut self.dict[id];
            let (s, e) = (*s, *e);
            line.push(b',');
            if let Some(f) = fields.as_deref_mut() {
                let one = *one.get_or_insert_with(|| is_one_field(&b[s..e]));
                f.push(FieldRef {
                    start: line.len(),
                    end: line.len() + (e - s),
                    id: if one && id < UNSPLIT as usize {
                        id as u32
                    } else {
                        UNSPLIT
                    },
                });
            }
            line.extend_from_slice(&b[s..e]);
        }
        line.extend_from_slice(format::HASH_KEY);
        push_hex(line, &hash);
        line.extend_from_slice(format::HASH_END);
        self.last = Some(Restored {
            event: kind_byte == 1,
            seq: self.next_seq,
            prev: self.prev,
            hash,
            envelope_len,
            nfields,
        });
        self.at = at;
        self.remaining -= 1;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.prev = hash;
        Ok(true)
    }

    /// What is known of the last line rebuilt.
    pub(crate) fn last(&self) -> Option<Restored> {
        self.last
    }
}

/// What the decoder knows of a line it rebuilt, so that it need not be
/// taken apart again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Restored {
    /// Stored with the `event` kind byte.
    event: bool,
    seq: u64,
    prev: [u8; DIGEST_LEN],
    hash: [u8; DIGEST_LEN],
    /// Bytes of the line up to the closing quote of `prev`, included.
    envelope_len: usize,
    nfields: u64,
}

impl Restored {
    /// The parts of `line` (the line rebuilt) that [`split_canonical`]
    /// finds, when the line is an event it can vouch for without looking;
    /// `None` when it cannot (then ask [`split_canonical`]).
    pub(crate) fn event_parts<'a>(&self, line: &'a [u8]) -> Option<LineParts<'a>> {
        if !self.event {
            return None;
        }
        let prefix_end = line.len().checked_sub(format::SUFFIX_LEN)?;
        let body = if self.nfields == 0 {
            &line[..0]
        } else {
            line.get(self.envelope_len + 1..prefix_end)?
        };
        // One empty field: `split_canonical` refuses the lone comma.
        if self.nfields > 0 && body.is_empty() {
            return None;
        }
        Some(LineParts {
            kind: KINDS[1].as_bytes(),
            seq: self.seq,
            prev: self.prev,
            body,
            hash: self.hash,
        })
    }
}

/// The `id` of a [`FieldRef`] that may not be one field of
/// [`split_fields`] (a stored field holding a top-level comma, say): the
/// body must then be split again.
pub(crate) const UNSPLIT: u32 = u32::MAX;

/// A body field of a restored line: its bytes are `line[start..end]`, and
/// two fields of one frame with the same `id` have the same bytes (they are
/// the same dictionary entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldRef {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) id: u32,
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_hex(out: &mut Vec<u8>, d: &[u8; DIGEST_LEN]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 2 * DIGEST_LEN];
    for (pair, &x) in buf.chunks_exact_mut(2).zip(d) {
        pair[0] = HEX[(x >> 4) as usize];
        pair[1] = HEX[(x & 15) as usize];
    }
    out.extend_from_slice(&buf);
}
