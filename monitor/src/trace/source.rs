//! Reading a trace in either form: [`TraceReader`] detects the form and
//! yields the canonical lines, so every consumer (verify, read, cat, replay,
//! oracle) reads both forms the same way.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compact::{self, BlockHeader, FrameDecoder, BLOCK_HEADER_LEN};
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

enum Form {
    Plain,
    Compact(Box<CompactState>),
}

struct CompactState {
    z: zstd::bulk::Decompressor<'static>,
    /// Byte offset of the next block.
    offset: u64,
    /// Byte offset of the block being decoded.
    frame_offset: u64,
    frame: Option<FrameDecoder>,
    /// The seq after the last record returned, when known.
    next_seq: Option<u64>,
    /// No more blocks can be found (a header could not be read).
    lost_sync: bool,
}

/// Reads the canonical lines of a trace in either form.
pub struct TraceReader {
    path: PathBuf,
    file: Box<dyn BufRead + Send>,
    form: TraceFormat,
    state: Form,
    lines: u64,
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
        let (form, state) = if compact::is_compact(head) {
            let z = zstd::bulk::Decompressor::new().map_err(|e| TraceError::io(path, "read", e))?;
            (
                TraceFormat::Compact,
                Form::Compact(Box::new(CompactState {
                    z,
                    offset: 0,
                    frame_offset: 0,
                    frame: None,
                    next_seq: Some(0),
                    lost_sync: false,
                })),
            )
        } else {
            (TraceFormat::Jsonl, Form::Plain)
        };
        Ok(TraceReader {
            path: path.to_owned(),
            file,
            form,
            state,
            lines: 0,
            done: false,
        })
    }

    /// The form of the file.
    pub fn form(&self) -> TraceFormat {
        self.form
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        let r = match &mut self.state {
            Form::Plain => self.next_plain(line),
            Form::Compact(_) => self.next_compact(line),
        };
        match &r {
            Ok(Some(Next::Line)) => self.lines += 1,
            Ok(Some(Next::Truncated(_))) | Ok(None) | Err(_) => self.done = true,
            Ok(Some(Next::Damaged(_))) => {}
        }
        r
    }

    fn next_plain(&mut self, line: &mut Vec<u8>) -> Result<Option<Next>, TraceError> {
        line.clear();
        let n = self
            .file
            .read_until(b'\n', line)
            .map_err(|e| TraceError::io(&self.path, "read", e))?;
        if n == 0 {
            return Ok(None);
        }
        if line.last() != Some(&b'\n') {
            return Ok(Some(Next::Truncated(TruncatedTail {
                line: self.lines + 1,
                bytes: line.len() as u64,
                block_offset: None,
                block_len: None,
            })));
        }
        line.pop();
        Ok(Some(Next::Line))
    }

    fn next_compact(&mut self, line: &mut Vec<u8>) -> Result<Option<Next>, TraceError> {
        let Form::Compact(st) = &mut self.state else {
            unreachable!("compact state")
        };
        loop {
            if let Some(frame) = &mut st.frame {
                let seq = frame.next_seq();
                match frame.next_line(line) {
                    Ok(true) => {
                        st.next_seq = Some(seq.wrapping_add(1));
                        return Ok(Some(Next::Line));
                    }
                    Ok(false) => st.frame = None,
                    Err(reason) => {
                        st.frame = None;
                        let resumes = peek_first_seq(&mut *self.file, &self.path)?;
                        return Ok(Some(Next::Damaged(Damage {
                            line: self.lines + 1,
                            offset: st.frame_offset,
                            reason: format!("holds malformed records: {reason}"),
                            first_seq: Some(seq),
                            resumes_at_seq: resumes,
                        })));
                    }
                }
            }
            if st.lost_sync {
                return Ok(None);
            }
            // The next block.
            let offset = st.offset;
            let mut hb = [0u8; BLOCK_HEADER_LEN];
            let got = read_full(&mut self.file, &mut hb)
                .map_err(|e| TraceError::io(&self.path, "read", e))?;
            if got == 0 {
                return Ok(None);
            }
            if got < BLOCK_HEADER_LEN {
                return Ok(Some(Next::Truncated(TruncatedTail {
                    line: self.lines + 1,
                    bytes: got as u64,
                    block_offset: Some(offset),
                    block_len: None,
                })));
            }
            let h = match BlockHeader::decode(&hb) {
                Ok(h) => h,
                Err(reason) => {
                    st.lost_sync = true;
                    return Ok(Some(Next::Damaged(Damage {
                        line: self.lines + 1,
                        offset,
                        reason: format!("has a bad block header: {reason}"),
                        first_seq: st.next_seq,
                        resumes_at_seq: None,
                    })));
                }
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
                return Ok(Some(Next::Truncated(TruncatedTail {
                    line: self.lines + 1,
                    bytes: (BLOCK_HEADER_LEN + got) as u64,
                    block_offset: Some(offset),
                    block_len: Some(block_len),
                })));
            }
            st.offset = offset + block_len;
            st.frame_offset = offset;
            let stored = match st.z.decompress(&data, h.stored_len as usize) {
                Ok(s) if s.len() == h.stored_len as usize => Ok(s),
                Ok(s) => Err(format!(
                    "decompresses to {} bytes, its header says {}",
                    s.len(),
                    h.stored_len
                )),
                Err(e) => Err(format!("does not decompress (zstd: {e})")),
            };
            match stored {
                Ok(stored) => {
                    st.frame = Some(FrameDecoder::new(&h, stored));
                }
                Err(reason) => {
                    let resumes = peek_first_seq(&mut *self.file, &self.path)?;
                    return Ok(Some(Next::Damaged(Damage {
                        line: self.lines + 1,
                        offset,
                        reason,
                        first_seq: Some(h.first_seq),
                        resumes_at_seq: resumes,
                    })));
                }
            }
        }
    }
}

/// The first seq of the next block, without consuming it.
fn peek_first_seq(file: &mut dyn BufRead, path: &Path) -> Result<Option<u64>, TraceError> {
    let buf = file
        .fill_buf()
        .map_err(|e| TraceError::io(path, "read", e))?;
    if buf.len() < BLOCK_HEADER_LEN {
        return Ok(None);
    }
    let hb: &[u8; BLOCK_HEADER_LEN] = buf[..BLOCK_HEADER_LEN].try_into().expect("length");
    Ok(BlockHeader::decode(hb).ok().map(|h| h.first_seq))
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
