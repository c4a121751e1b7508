//! The anchor: the chain head, sent out of abm while the trace grows, to a
//! file descriptor the caller holds (`abm run --anchor-fd N`), so that a
//! trace rewritten or completed by someone else after abm stopped no longer
//! matches what abm said (`abm verify --anchor FILE`).
//!
//! The anchor is a stream of JSON lines, one per flush of the trace and one
//! at the end:
//!
//! ```text
//! {"seq":1042,"hash":"<64 hex>"}
//! {"seq":2077,"hash":"<64 hex>","seal":true}
//! ```
//!
//! `seq` and `hash` are the last record handed to the file at that moment
//! and its digest (the same digest as in the trace, in both forms); the
//! `seal` line names the seal record. Since every digest covers the one
//! before it, the last line pins every record up to its `seq`.

use std::fs::File;
use std::io::{BufRead as _, ErrorKind, Write as _};
use std::os::fd::{FromRawFd as _, RawFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::format::{self, DIGEST_LEN};

/// Why an anchor cannot be taken or read.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error(
        "{flag} {fd}: descriptors 0-2 are the command's stdin, stdout and stderr; give \
         another descriptor (e.g. `{flag} 3 3>FILE`)"
    )]
    StandardDescriptor { flag: &'static str, fd: RawFd },
    #[error(
        "{flag} {fd}: descriptor {fd} is not open; open it in the calling shell (e.g. \
         `{flag} {fd} {fd}>FILE`)"
    )]
    NotOpen { flag: &'static str, fd: RawFd },
    #[error("{flag} {fd}: cannot set close-on-exec: {source}")]
    CloseOnExec {
        flag: &'static str,
        fd: RawFd,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "--anchor-fd {fd}: descriptor {fd} is open read-only; open it for writing \
         (`{fd}>FILE` or a pipe's write end)"
    )]
    ReadOnly { fd: RawFd },
    #[error("{}: cannot {action} the anchor: {source}", .path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {reason}", .path.display())]
    Line {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error(
        "{}: the anchor holds no chain head (abm wrote nothing to it: was it given to \
         `abm run --anchor-fd`, and did the run get as far as its first flush?)",
        .path.display()
    )]
    Empty { path: PathBuf },
}

/// Writes the chain head to the caller's descriptor.
pub struct AnchorWriter {
    file: File,
    /// The seq of the last line written.
    last: Option<u64>,
    /// The first write error, reported once.
    failed: bool,
}

/// Takes ownership of descriptor `fd` (given to abm by its caller) and keeps
/// it from the watched command: close-on-exec is set at once.
///
/// Refused when `fd` is not open, is one of 0-2, or is not writable.
pub fn take_fd(fd: RawFd, flag: &'static str) -> Result<File, AnchorError> {
    if fd <= 2 {
        return Err(AnchorError::StandardDescriptor { flag, fd });
    }
    // SAFETY: fcntl on an integer descriptor has no memory effects; a closed
    // descriptor returns -1 (EBADF).
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(AnchorError::NotOpen { flag, fd });
    }
    // SAFETY: as above; sets FD_CLOEXEC so no child of abm inherits it.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        return Err(AnchorError::CloseOnExec {
            flag,
            fd,
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: the descriptor is open (F_GETFL succeeded), and the caller gave
    // it to abm for this purpose: abm owns it from here on and nothing else
    // in abm uses it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl AnchorWriter {
    /// An anchor on descriptor `fd` (see [`take_fd`]); it must be writable.
    pub fn from_fd(fd: RawFd) -> Result<AnchorWriter, AnchorError> {
        // SAFETY: fcntl on an integer descriptor has no memory effects.
        let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if fl >= 0 && fl & libc::O_ACCMODE == libc::O_RDONLY {
            return Err(AnchorError::ReadOnly { fd });
        }
        Ok(AnchorWriter {
            file: take_fd(fd, "--anchor-fd")?,
            last: None,
            failed: false,
        })
    }

    /// An anchor written to a file abm opened itself (the daemon's anchor
    /// directory).
    pub fn from_file(file: File) -> AnchorWriter {
        AnchorWriter {
            file,
            last: None,
            failed: false,
        }
    }

    /// Sends the head `seq`/`digest` unless it was the last one sent.
    pub fn head(&mut self, seq: u64, digest: &[u8; DIGEST_LEN]) {
        if self.last != Some(seq) {
            self.send(seq, digest, false);
        }
    }

    /// Sends the seal line: the seal record's seq and digest.
    pub fn seal(&mut self, seq: u64, digest: &[u8; DIGEST_LEN]) {
        self.send(seq, digest, true);
    }

    fn send(&mut self, seq: u64, digest: &[u8; DIGEST_LEN], seal: bool) {
        if self.failed {
            return;
        }
        let line = AnchorLine {
            seq,
            hash: hex::encode(digest),
            seal,
        };
        let mut text = serde_json::to_vec(&line).expect("an anchor line serializes");
        text.push(b'\n');
        // One write(2) per line: a reader of a pipe never sees half a line
        // from abm (lines are far below PIPE_BUF).
        let r = loop {
            match self.file.write(&text) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Ok(n) if n == text.len() => break Ok(()),
                Ok(n) => {
                    break Err(std::io::Error::new(
                        ErrorKind::WriteZero,
                        format!("short write ({n} of {} bytes)", text.len()),
                    ))
                }
                Err(e) => break Err(e),
            }
        };
        match r {
            Ok(()) => self.last = Some(seq),
            Err(e) => {
                self.failed = true;
                tracing::error!(
                    "cannot write to the anchor descriptor: {e}; no further chain heads are sent, \
                     so `abm verify --anchor` will name the last one written"
                );
            }
        }
    }
}

/// One line of an anchor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorLine {
    pub seq: u64,
    pub hash: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seal: bool,
}

/// The last head an anchor file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AnchorPoint {
    /// The anchor file.
    pub path: PathBuf,
    /// Its line holding this head (1-based).
    pub line: u64,
    pub seq: u64,
    #[serde(serialize_with = "hex_digest")]
    pub hash: [u8; DIGEST_LEN],
    /// The head is the seal record.
    pub seal: bool,
}

fn hex_digest<S: serde::Serializer>(d: &[u8; DIGEST_LEN], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(d))
}

/// Reads the last head of an anchor file. A last line without a newline
/// (abm stopped while writing it) is left out. Errors name the line.
pub fn read_anchor(path: &Path) -> Result<AnchorPoint, AnchorError> {
    let io = |action| {
        move |source| AnchorError::Io {
            path: path.to_owned(),
            action,
            source,
        }
    };
    let f = File::open(path).map_err(io("open"))?;
    let mut last: Option<AnchorPoint> = None;
    let mut r = std::io::BufReader::new(f);
    let mut buf = Vec::new();
    for line_no in 1u64.. {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(io("read"))?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        let at = |reason: String| AnchorError::Line {
            path: path.to_owned(),
            line: line_no,
            reason,
        };
        if let Some(p) = &last {
            if p.seal {
                return Err(at(format!(
                    "a line after the seal line {}: abm writes nothing after the seal, so this \
                     anchor was written to by something else",
                    p.line
                )));
            }
        }
        let l: AnchorLine = serde_json::from_slice(&buf).map_err(|e| {
            at(format!(
                "not an anchor line ({e}); an anchor holds lines like \
                 {{\"seq\":N,\"hash\":\"<64 hex>\"}} written by `abm run --anchor-fd`"
            ))
        })?;
        let hash = format::parse_digest(l.hash.as_bytes())
            .ok_or_else(|| at("\"hash\" is not 64 lowercase hex digits".into()))?;
        if let Some(p) = &last {
            if l.seq < p.seq {
                return Err(at(format!(
                    "seq {} goes back from seq {} on line {}: abm only sends later heads",
                    l.seq, p.seq, p.line
                )));
            }
        }
        last = Some(AnchorPoint {
            path: path.to_owned(),
            line: line_no,
            seq: l.seq,
            hash,
            seal: l.seal,
        });
    }
    last.ok_or_else(|| AnchorError::Empty {
        path: path.to_owned(),
    })
}

/// What the anchor says of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AnchorCheck {
    /// The trace holds the anchored head: every record up to it is the one
    /// abm wrote; with `sealed`, the trace ends with the anchored seal.
    Matches { seq: u64, sealed: bool },
    /// The trace holds the anchored head, and `records` more records after it
    /// that abm never anchored (it was stopped before the next flush, or
    /// they were appended by someone else): they cannot be trusted.
    Unanchored { seq: u64, records: u64 },
    /// The trace is not what abm anchored.
    Rejected { detail: String },
}

impl AnchorCheck {
    pub fn is_rejected(&self) -> bool {
        matches!(self, AnchorCheck::Rejected { .. })
    }
}

/// Compares a verified trace with the anchor's last head.
///
/// `found` is the digest the trace holds at the anchored seq (if it got that
/// far intact), `records` the intact records, `sealed_seq` the seq of the
/// trace's seal if it is sealed.
pub(crate) fn check(
    a: &AnchorPoint,
    found: Option<[u8; DIGEST_LEN]>,
    records: u64,
    sealed_seq: Option<u64>,
) -> AnchorCheck {
    let reject = |detail: String| AnchorCheck::Rejected { detail };
    let Some(found) = found else {
        return reject(format!(
            "the anchor names seq {} (line {}) but the trace's intact records end at seq {}: \
             anchored records were removed or damaged",
            a.seq,
            a.line,
            records.saturating_sub(1)
        ));
    };
    if found != a.hash {
        return reject(format!(
            "the trace's record seq {} has hash {} but the anchor (line {}) says {}: the trace \
             was rewritten",
            a.seq,
            hex::encode(found),
            a.line,
            hex::encode(a.hash)
        ));
    }
    match (a.seal, sealed_seq) {
        (true, Some(s)) if s == a.seq => AnchorCheck::Matches {
            seq: a.seq,
            sealed: true,
        },
        (true, _) => reject(format!(
            "the anchor names the seal at seq {} but the trace does not end with it",
            a.seq
        )),
        (false, Some(s)) => reject(format!(
            "the trace's seal (seq {s}) is not in the anchor, whose last head is seq {} (line \
             {}): abm sends its seal to the anchor, so this seal was written by something else \
             after abm stopped",
            a.seq, a.line
        )),
        (false, None) if records > a.seq + 1 => AnchorCheck::Unanchored {
            seq: a.seq,
            records: records - a.seq - 1,
        },
        (false, None) => AnchorCheck::Matches {
            seq: a.seq,
            sealed: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::IntoRawFd as _;

    use super::*;
    use crate::trace::{sample_action, verify, verify_anchored, Header, SealInfo, TraceFormat};
    use crate::trace::{TraceWriter, VerifyStatus};

    fn anchored_trace(dir: &Path, form: TraceFormat, seal: bool) -> (PathBuf, PathBuf) {
        let trace = dir.join(format!("t.{}", form.extension()));
        let anchor = dir.join("anchor");
        let fd = File::create(&anchor).unwrap().into_raw_fd();
        let mut w = TraceWriter::create_as(&trace, None, Header::default(), form).unwrap();
        w.set_anchor(AnchorWriter::from_fd(fd).unwrap());
        for i in 0..5 {
            w.append_event(&sample_action(i)).unwrap();
        }
        w.sync().unwrap();
        for i in 5..8 {
            w.append_event(&sample_action(i)).unwrap();
        }
        if seal {
            w.seal(SealInfo::default()).unwrap();
        } else {
            w.sync().unwrap();
        }
        (trace, anchor)
    }

    #[test]
    fn the_writer_sends_each_flushed_head_and_the_seal() {
        for form in [TraceFormat::Jsonl, TraceFormat::Compact] {
            let dir = tempfile::tempdir().unwrap();
            let (trace, anchor) = anchored_trace(dir.path(), form, true);
            let text = std::fs::read_to_string(&anchor).unwrap();
            let lines: Vec<AnchorLine> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            // The header at once, the first five events, the seal (seq 9).
            let seqs: Vec<(u64, bool)> = lines.iter().map(|l| (l.seq, l.seal)).collect();
            assert_eq!(seqs, vec![(0, false), (5, false), (9, true)], "{text}");
            let r = verify(&trace, None).unwrap();
            assert_eq!(lines[2].hash, r.final_digest.unwrap());
            let a = read_anchor(&anchor).unwrap();
            let r = verify_anchored(&trace, None, &a).unwrap();
            assert_eq!(
                r.anchor,
                Some(AnchorCheck::Matches {
                    seq: 9,
                    sealed: true
                })
            );
            assert_eq!(r.exit_code(), 0);
        }
    }

    #[test]
    fn records_after_the_last_head_are_unanchored_and_a_seal_must_be_anchored() {
        let dir = tempfile::tempdir().unwrap();
        let (trace, anchor) = anchored_trace(dir.path(), TraceFormat::Jsonl, false);
        let mut a = read_anchor(&anchor).unwrap();
        assert_eq!((a.seq, a.seal), (8, false));
        let r = verify_anchored(&trace, None, &a).unwrap();
        assert_eq!(
            r.anchor,
            Some(AnchorCheck::Matches {
                seq: 8,
                sealed: false
            })
        );
        assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 9 });
        // An earlier head: three records after it are not anchored.
        a.seq = 5;
        a.hash = line_hash(&trace, 5);
        let r = verify_anchored(&trace, None, &a).unwrap();
        assert_eq!(
            r.anchor,
            Some(AnchorCheck::Unanchored { seq: 5, records: 3 })
        );
        assert_eq!(r.exit_code(), crate::trace::EXIT_UNSEALED);
        // A different digest at the anchored seq: rewritten.
        a.hash[0] ^= 1;
        let r = verify_anchored(&trace, None, &a).unwrap();
        assert!(r.anchor.as_ref().unwrap().is_rejected(), "{:?}", r.anchor);
        assert_eq!(r.exit_code(), crate::trace::EXIT_BROKEN);
        // A head beyond the end: anchored records were removed.
        a.seq = 40;
        let r = verify_anchored(&trace, None, &a).unwrap();
        match r.anchor.unwrap() {
            AnchorCheck::Rejected { detail } => {
                assert!(detail.contains("intact records end at seq 8"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        // An anchored seal that the trace does not end with.
        let mut s = read_anchor(&anchor).unwrap();
        s.seal = true;
        let r = verify_anchored(&trace, None, &s).unwrap();
        assert!(r.anchor.unwrap().is_rejected());
    }

    fn line_hash(trace: &Path, seq: usize) -> [u8; DIGEST_LEN] {
        let text = std::fs::read_to_string(trace).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.lines().nth(seq).unwrap()).unwrap();
        format::parse_digest(v["hash"].as_str().unwrap().as_bytes()).unwrap()
    }

    #[test]
    fn bad_anchor_files_are_refused_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        let h = "ab".repeat(32);
        let cases: [(String, &str); 5] = [
            (String::new(), "holds no chain head"),
            ("garbage\n".into(), ":1: not an anchor line"),
            (
                format!("{{\"seq\":1,\"hash\":\"{h}\",\"seal\":true}}\n{{\"seq\":2,\"hash\":\"{h}\"}}\n"),
                ":2: a line after the seal line 1",
            ),
            (
                format!("{{\"seq\":3,\"hash\":\"{h}\"}}\n{{\"seq\":2,\"hash\":\"{h}\"}}\n"),
                ":2: seq 2 goes back",
            ),
            (
                format!("{{\"seq\":3,\"hash\":\"{}\"}}\n", "AB".repeat(32)),
                ":1: \"hash\" is not 64 lowercase hex",
            ),
        ];
        for (text, want) in cases {
            std::fs::write(&p, &text).unwrap();
            let e = read_anchor(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // A last line cut short is left out.
        std::fs::write(
            &p,
            format!("{{\"seq\":3,\"hash\":\"{h}\"}}\n{{\"seq\":4,\"ha"),
        )
        .unwrap();
        assert_eq!(read_anchor(&p).unwrap().seq, 3);
    }

    #[test]
    fn descriptors_that_cannot_be_an_anchor_are_refused() {
        assert!(AnchorWriter::from_fd(1).is_err());
        let e = AnchorWriter::from_fd(987).err().unwrap().to_string();
        assert!(e.contains("is not open"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r");
        std::fs::write(&p, b"").unwrap();
        let fd = File::open(&p).unwrap().into_raw_fd();
        let e = AnchorWriter::from_fd(fd).err().unwrap().to_string();
        assert!(e.contains("read-only"), "{e}");
        // SAFETY: fd was opened above and is not used elsewhere.
        drop(unsafe { File::from_raw_fd(fd) });
    }
}
