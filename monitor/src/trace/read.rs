//! Parses trace records without verifying the chain.

use std::path::Path;

use serde_json::{Map, Value};

use super::format::{self, ChainAlg, Split};
use super::{Header, HeaderRecord, Loss, Next, SealRecord, TraceError, TraceReader, TraceRecord};

/// Why one line is not a readable trace record. The text names the field
/// that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("line does not end with the record's \"hash\" field")]
    NoHash,
    #[error("\"{0}\" is not 64 lowercase hex digits")]
    NotDigest(&'static str),
    #[error("the \"hash\" key must appear once, as the last key")]
    HashNotLast,
    #[error("not a valid JSON object: {0}")]
    NotJson(serde_json::Error),
    #[error("missing \"{0}\"")]
    Missing(&'static str),
    #[error("\"{0}\" is not a string")]
    NotString(&'static str),
    #[error("\"seq\" is not an unsigned integer")]
    SeqNotUnsigned,
    #[error("unknown chain algorithm {0:?} (known: sha256, hmac-sha256)")]
    UnknownChain(String),
    #[error("header has no \"{0}\"")]
    HeaderMissing(&'static str),
    #[error("header \"{0}\" is not a string")]
    HeaderNotString(&'static str),
    #[error("hmac-sha256 header has no \"key_id\"")]
    HmacWithoutKeyId,
    #[error("sha256 header has a \"key_id\"")]
    Sha256WithKeyId,
    #[error(
        "header schema {0} is not supported (this abm reads schema {schema}); \
         use the abm version that wrote the trace",
        schema = format::SCHEMA
    )]
    Schema(u64),
    #[error("bad {what} body: {error}")]
    Body {
        what: &'static str,
        error: serde_json::Error,
    },
    #[error("note has no string \"kind\"")]
    NoteKind,
    #[error("bad note body: unknown field {0:?}")]
    NoteField(String),
    #[error("unknown record type {0:?} (known: header, event, loss, note, seal)")]
    UnknownType(String),
    #[error("the first record is a {0:?} record, not a header: this is not the start of a trace")]
    NotHeader(&'static str),
    #[error("the file ends before its header record is complete")]
    HeaderCut,
    #[error("malformed `{key}` in the header: {0}", key = super::sequence::CONTINUES)]
    Continues(serde_json::Error),
}

/// Envelope of a parsed line: the fields every record has.
pub(crate) struct Envelope {
    pub(crate) kind: String,
    pub(crate) seq: u64,
    pub(crate) prev: String,
}

/// Removes and checks the envelope fields of a parsed record object.
pub(crate) fn take_envelope(obj: &mut Map<String, Value>) -> Result<Envelope, RecordError> {
    let kind = match obj.remove("type") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(RecordError::NotString("type")),
        None => return Err(RecordError::Missing("type")),
    };
    let seq = match obj.remove("seq") {
        Some(v) => v.as_u64().ok_or(RecordError::SeqNotUnsigned)?,
        None => return Err(RecordError::Missing("seq")),
    };
    let prev = match obj.remove("prev") {
        Some(Value::String(s)) if format::parse_digest(s.as_bytes()).is_some() => s,
        Some(_) => return Err(RecordError::NotDigest("prev")),
        None => return Err(RecordError::Missing("prev")),
    };
    Ok(Envelope { kind, seq, prev })
}

/// Decodes a record body (the object without envelope fields).
pub(crate) fn decode_body(
    kind: &str,
    seq: u64,
    mut body: Map<String, Value>,
) -> Result<TraceRecord, RecordError> {
    fn from<T: serde::de::DeserializeOwned>(
        what: &'static str,
        body: Map<String, Value>,
    ) -> Result<T, RecordError> {
        serde_json::from_value(Value::Object(body))
            .map_err(|error| RecordError::Body { what, error })
    }
    match kind {
        "header" => {
            let chain = match body.remove("chain") {
                Some(Value::String(s)) => match ChainAlg::from_name(&s) {
                    Some(c) => c,
                    None => return Err(RecordError::UnknownChain(s)),
                },
                Some(_) => return Err(RecordError::HeaderNotString("chain")),
                None => return Err(RecordError::HeaderMissing("chain")),
            };
            let key_id = match body.remove("key_id") {
                Some(Value::String(s)) => Some(s),
                None => None,
                Some(_) => return Err(RecordError::HeaderNotString("key_id")),
            };
            match (chain, &key_id) {
                (ChainAlg::HmacSha256, None) => return Err(RecordError::HmacWithoutKeyId),
                (ChainAlg::Sha256, Some(_)) => return Err(RecordError::Sha256WithKeyId),
                _ => {}
            }
            if let Some(schema) = body.get("schema").and_then(Value::as_u64) {
                if schema != u64::from(format::SCHEMA) {
                    return Err(RecordError::Schema(schema));
                }
            }
            let header: Header = from("header", body)?;
            Ok(TraceRecord::Header(HeaderRecord {
                chain,
                key_id,
                header,
            }))
        }
        "event" => Ok(TraceRecord::Event {
            seq,
            action: from("event", body)?,
        }),
        "loss" => Ok(TraceRecord::Loss {
            seq,
            loss: from::<Loss>("loss", body)?,
        }),
        "note" => {
            let note_kind = match body.remove("kind") {
                Some(Value::String(s)) => s,
                _ => return Err(RecordError::NoteKind),
            };
            let note = body.remove("body").unwrap_or(Value::Null);
            if let Some(k) = body.keys().next() {
                return Err(RecordError::NoteField(k.clone()));
            }
            Ok(TraceRecord::Note {
                seq,
                kind: note_kind,
                body: note,
            })
        }
        "seal" => Ok(TraceRecord::Seal {
            seq,
            seal: from::<SealRecord>("seal", body)?,
        }),
        other => Err(RecordError::UnknownType(other.to_string())),
    }
}

/// Parses one line (without newline) into a record, without checking its
/// digest.
pub(crate) fn parse_line(line: &[u8]) -> Result<TraceRecord, RecordError> {
    let prefix = match format::split_line(line) {
        Split::Ok { prefix, .. } => prefix,
        Split::BadDigest { .. } => return Err(RecordError::NotDigest("hash")),
        Split::NoSuffix => return Err(RecordError::NoHash),
    };
    let mut obj = format::parse_prefix(prefix)?;
    let env = take_envelope(&mut obj)?;
    decode_body(&env.kind, env.seq, obj)
}

/// Reads every record of a trace, in either form, without verifying the
/// chain (use [`verify`](super::verify) for that). An incomplete end (a
/// line or block cut short by a crash) is skipped; any other unreadable
/// record, or a damaged block, is an error naming the line.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRecord>, TraceError> {
    let mut reader = TraceReader::open(path)?;
    let mut records = Vec::new();
    let mut line = Vec::new();
    while let Some(next) = reader.next(&mut line)? {
        match next {
            Next::Line => {
                let rec = parse_line(&line).map_err(|reason| TraceError::Parse {
                    path: path.to_owned(),
                    line: reader.lines_read(),
                    reason,
                })?;
                records.push(rec);
            }
            Next::Truncated(_) => break,
            Next::Damaged(damage) => {
                return Err(TraceError::Damaged {
                    path: path.to_owned(),
                    damage,
                })
            }
        }
    }
    Ok(records)
}

/// Reads the header record of a trace, in either form.
pub fn read_header(path: &Path) -> Result<HeaderRecord, TraceError> {
    let mut reader = TraceReader::open(path)?;
    let mut line = Vec::new();
    let parse = |reason: RecordError| TraceError::Parse {
        path: path.to_owned(),
        line: 1,
        reason,
    };
    match reader.next(&mut line)? {
        Some(Next::Line) => match parse_line(&line).map_err(parse)? {
            TraceRecord::Header(h) => Ok(h),
            other => Err(parse(RecordError::NotHeader(other.type_name()))),
        },
        Some(Next::Damaged(damage)) => Err(TraceError::Damaged {
            path: path.to_owned(),
            damage,
        }),
        Some(Next::Truncated(_)) | None => Err(parse(RecordError::HeaderCut)),
    }
}
