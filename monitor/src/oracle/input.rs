//! Reading the trace a verdict is computed from, and deciding whether it can
//! be trusted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::judge::{TraceEvent, TraceSummary};
use crate::record::Action;
use crate::trace::{self, Authentication, TraceRecord, VerifyReport, VerifyStatus};

/// Errors reading a trace or verdicts.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: {reason}", .path.display())]
    Trace { path: PathBuf, reason: String },
    #[error("{}:{line}: {reason}", .path.display())]
    TraceLine {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// The trace did not verify and `--unverified` was not given.
    #[error("{}: refusing to judge this trace: {reason}", .path.display())]
    Refused { path: PathBuf, reason: String },
}

/// The result of checking a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceCheck {
    /// `intact`, `unsealed`, `broken` or `unauthenticated`.
    pub status: String,
    pub first_bad: Option<u64>,
    /// Why the trace cannot be trusted as it is; `None` when intact.
    pub problem: Option<String>,
}

/// Verifies the trace's hash chain and seal (with `key`, its authenticity).
/// This is the single place where trust in a trace is decided.
pub fn check_trace(path: &Path, key: Option<&[u8]>) -> Result<TraceCheck, InputError> {
    let report = trace::verify(path, key).map_err(|e| InputError::Trace {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(check_from_report(&report))
}

fn check_from_report(r: &VerifyReport) -> TraceCheck {
    let first_bad = r.first_bad.as_ref().and_then(|p| p.seq);
    match (&r.status, &r.authentication) {
        (VerifyStatus::Broken { intact_records }, _) => TraceCheck {
            status: "broken".into(),
            first_bad,
            problem: Some(match &r.first_bad {
                Some(p) => format!(
                    "it fails verification at {p} ({intact_records} records before it are intact)"
                ),
                None => "it fails verification".into(),
            }),
        },
        (_, Authentication::KeyNotGiven { key_id }) => TraceCheck {
            status: "unauthenticated".into(),
            first_bad,
            problem: Some(format!(
                "it is signed (hmac-sha256, key id {key_id}) but no key was given, so its \
                 records could not be authenticated; pass --key FILE"
            )),
        },
        (VerifyStatus::Unsealed { intact_records }, _) => TraceCheck {
            status: "unsealed".into(),
            first_bad,
            problem: Some(format!(
                "it has no seal: the run was interrupted (killed or crashed) or the file was \
                 cut short, so actions at the end may be missing ({intact_records} records \
                 verified)"
            )),
        },
        (VerifyStatus::Intact, _) => TraceCheck {
            status: "intact".into(),
            first_bad: None,
            problem: None,
        },
    }
}

/// The events of a trace and what its header says.
#[derive(Clone, Debug, Default)]
pub struct LoadedTrace {
    pub events: Vec<TraceEvent>,
    pub workspace: Option<String>,
    pub home: Option<String>,
    /// Sum of the loss records.
    pub lost: u64,
}

/// Reads a trace's records. Uses the strict reader, and falls back to a
/// line-by-line reader that skips unreadable lines when `tolerant` (used for
/// traces judged with `--unverified`).
pub fn read_events(path: &Path, tolerant: bool) -> Result<LoadedTrace, InputError> {
    match trace::read_trace(path) {
        Ok(records) => Ok(from_records(records)),
        Err(e) if !tolerant => Err(InputError::Trace {
            path: path.to_owned(),
            reason: e.to_string(),
        }),
        Err(_) => read_lines_tolerant(path),
    }
}

fn from_records(records: Vec<TraceRecord>) -> LoadedTrace {
    let mut out = LoadedTrace::default();
    for r in records {
        match r {
            TraceRecord::Header(h) => {
                out.workspace = Some(h.header.workspace.clone()).filter(|w| !w.is_empty());
                out.home = h
                    .header
                    .extra
                    .get("home")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            TraceRecord::Event { seq, action } => out.events.push(TraceEvent { seq, action }),
            TraceRecord::Loss { loss, .. } => out.lost += loss.count,
            TraceRecord::Note { .. } | TraceRecord::Seal { .. } => {}
        }
    }
    out
}

/// Envelope keys removed before an event body is read as an [`Action`].
const ENVELOPE: [&str; 6] = ["type", "seq", "prev", "hash", "v", "mac"];

fn read_lines_tolerant(path: &Path) -> Result<LoadedTrace, InputError> {
    let err = |e: trace::TraceError| InputError::Trace {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let mut reader = trace::TraceReader::open(path).map_err(err)?;
    let mut out = LoadedTrace::default();
    let mut line = Vec::new();
    // Unreadable lines and damaged blocks are skipped: the verdict already
    // records that the trace did not verify.
    while let Some(next) = reader.next(&mut line).map_err(err)? {
        if next != trace::Next::Line {
            continue;
        }
        let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let seq = obj.get("seq").and_then(Value::as_u64);
        match kind.as_str() {
            "header" => {
                out.workspace = obj
                    .get("workspace")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .filter(|w| !w.is_empty());
                out.home = obj
                    .get("extra")
                    .and_then(|x| x.get("home"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "event" => {
                let Some(seq) = seq else { continue };
                for k in ENVELOPE {
                    obj.remove(k);
                }
                if let Ok(action) = serde_json::from_value::<Action>(Value::Object(obj)) {
                    out.events.push(TraceEvent { seq, action });
                }
            }
            "loss" => out.lost += obj.get("count").and_then(Value::as_u64).unwrap_or(0),
            _ => {}
        }
    }
    out.events.sort_by_key(|e| e.seq);
    Ok(out)
}

/// Checks and reads a trace. Refuses a trace that is not intact (or, signed,
/// was not authenticated) unless `unverified`.
pub fn load_trace(
    path: &Path,
    key: Option<&[u8]>,
    unverified: bool,
) -> Result<(LoadedTrace, TraceSummary), InputError> {
    let check = check_trace(path, key)?;
    if let Some(problem) = &check.problem {
        if !unverified {
            return Err(InputError::Refused {
                path: path.to_owned(),
                reason: format!(
                    "{problem}. Pass --unverified to judge it anyway; the verdict then records \
                     the trace status `{}`",
                    check.status
                ),
            });
        }
    }
    let loaded = read_events(path, unverified)?;
    let summary = TraceSummary {
        path: path.display().to_string(),
        status: check.status.clone(),
        verified: check.problem.is_none(),
        first_bad: check.first_bad,
        problem: check.problem.clone(),
        events: loaded.events.len() as u64,
        lost: loaded.lost,
        workspace: String::new(),
    };
    Ok((loaded, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Op;
    use crate::trace::{Header, Loss, SealInfo, TraceWriter};

    fn header() -> Header {
        Header {
            workspace: "/w".into(),
            command: vec!["sh".into(), "x.sh".into()],
            ..Header::default()
        }
    }

    fn unlink(path: &str) -> Action {
        Action {
            op: Some(Op::Unlink),
            syscall: "unlinkat".into(),
            pid: 7,
            tid: 7,
            ppid: 1,
            path: Some(path.into()),
            result: Some(0),
            ..Action::default()
        }
    }

    /// Writes a trace with two events and a loss record; sealed or not.
    fn write(dir: &Path, name: &str, key: Option<&[u8]>, sealed: bool) -> PathBuf {
        let p = dir.join(name);
        let form = crate::trace::TraceFormat::for_path(None, &p);
        let mut w = TraceWriter::create_as(&p, key.map(<[u8]>::to_vec), header(), form).unwrap();
        w.append_event(&unlink("/w/a")).unwrap();
        w.append_loss(&Loss {
            cause: "ringbuf_full".into(),
            count: 4,
            ..Loss::default()
        })
        .unwrap();
        w.append_event(&unlink("/w/b")).unwrap();
        if sealed {
            w.seal(SealInfo::default()).unwrap();
        } else {
            w.flush().unwrap();
            std::mem::forget(w);
        }
        p
    }

    #[test]
    fn intact_trace_is_read_with_header_and_losses() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "t.jsonl", None, true);
        let (t, s) = load_trace(&p, None, false).unwrap();
        assert_eq!(s.status, "intact");
        assert!(s.verified && s.problem.is_none());
        assert_eq!(t.workspace.as_deref(), Some("/w"));
        assert_eq!(t.lost, 4);
        assert_eq!((s.events, s.lost), (2, 4));
        let paths: Vec<&str> = t
            .events
            .iter()
            .map(|e| e.action.path.as_deref().unwrap())
            .collect();
        assert_eq!(paths, ["/w/a", "/w/b"]);
        assert_eq!(t.events[0].seq, 1);
        assert_eq!(t.events[1].seq, 3);
    }

    #[test]
    fn unsealed_trace_is_refused_unless_unverified() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "t.jsonl", None, false);
        let e = load_trace(&p, None, false).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, InputError::Refused { .. }), "{msg}");
        assert!(
            msg.contains("no seal") && msg.contains("--unverified"),
            "{msg}"
        );
        let (t, s) = load_trace(&p, None, true).unwrap();
        assert_eq!(s.status, "unsealed");
        assert!(!s.verified);
        assert_eq!(t.events.len(), 2);
    }

    #[test]
    fn tampered_trace_is_broken_and_read_tolerantly() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "t.jsonl", None, true);
        let text = std::fs::read_to_string(&p).unwrap();
        let bad = d.path().join("bad.jsonl");
        // An edited path, and a line that is no longer a record at all.
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[1] = lines[1].replace("/w/a", "/w/z");
        lines.insert(2, "garbage".into());
        std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
        let e = load_trace(&bad, None, false).unwrap_err();
        assert!(
            e.to_string().contains("fails verification at line 2"),
            "{e}"
        );
        let (t, s) = load_trace(&bad, None, true).unwrap();
        assert_eq!(s.status, "broken");
        assert_eq!(s.first_bad, Some(1));
        let paths: Vec<&str> = t
            .events
            .iter()
            .map(|e| e.action.path.as_deref().unwrap())
            .collect();
        assert_eq!(
            paths,
            ["/w/z", "/w/b"],
            "the unverified content is what is judged"
        );
    }

    #[test]
    fn signed_trace_needs_its_key() {
        let d = tempfile::tempdir().unwrap();
        let key = b"0123456789abcdef0123456789abcdef";
        let p = write(d.path(), "t.jsonl", Some(key), true);
        let e = load_trace(&p, None, false).unwrap_err();
        assert!(e.to_string().contains("pass --key FILE"), "{e}");
        let (_, s) = load_trace(&p, Some(key), false).unwrap();
        assert_eq!(s.status, "intact");
        let e = load_trace(&p, Some(b"wrong key"), false).unwrap_err();
        assert!(matches!(e, InputError::Refused { .. }), "{e}");
    }

    #[test]
    fn unreadable_trace_is_an_error_not_a_refusal() {
        let e = load_trace(Path::new("/nonexistent/t.jsonl"), None, true).unwrap_err();
        assert!(matches!(e, InputError::Trace { .. }), "{e}");
        assert!(e.to_string().starts_with("/nonexistent/t.jsonl: "), "{e}");
    }
}
