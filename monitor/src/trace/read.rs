//! Parses trace records without verifying the chain.

use std::path::Path;

use serde_json::{Map, Value};

use super::format::{self, ChainAlg, Split};
use super::{Header, HeaderRecord, Loss, Next, SealRecord, TraceError, TraceReader, TraceRecord};

/// Envelope of a parsed line: the fields every record has.
pub(crate) struct Envelope {
    pub(crate) kind: String,
    pub(crate) seq: u64,
    pub(crate) prev: String,
}

/// Removes and checks the envelope fields of a parsed record object.
pub(crate) fn take_envelope(obj: &mut Map<String, Value>) -> Result<Envelope, String> {
    let kind = match obj.remove("type") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("\"type\" is not a string".into()),
        None => return Err("missing \"type\"".into()),
    };
    let seq = match obj.remove("seq") {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| "\"seq\" is not an unsigned integer".to_string())?,
        None => return Err("missing \"seq\"".into()),
    };
    let prev = match obj.remove("prev") {
        Some(Value::String(s)) if format::parse_digest(s.as_bytes()).is_some() => s,
        Some(_) => return Err("\"prev\" is not 64 lowercase hex digits".into()),
        None => return Err("missing \"prev\"".into()),
    };
    Ok(Envelope { kind, seq, prev })
}

/// Decodes a record body (the object without envelope fields).
pub(crate) fn decode_body(
    kind: &str,
    seq: u64,
    mut body: Map<String, Value>,
) -> Result<TraceRecord, String> {
    fn from<T: serde::de::DeserializeOwned>(
        what: &str,
        body: Map<String, Value>,
    ) -> Result<T, String> {
        serde_json::from_value(Value::Object(body)).map_err(|e| format!("bad {what} body: {e}"))
    }
    match kind {
        "header" => {
            let chain = match body.remove("chain") {
                Some(Value::String(s)) => ChainAlg::from_name(&s).ok_or_else(|| {
                    format!("unknown chain algorithm {s:?} (known: sha256, hmac-sha256)")
                })?,
                Some(_) => return Err("header \"chain\" is not a string".into()),
                None => return Err("header has no \"chain\"".into()),
            };
            let key_id = match body.remove("key_id") {
                Some(Value::String(s)) => Some(s),
                None => None,
                Some(_) => return Err("header \"key_id\" is not a string".into()),
            };
            match (chain, &key_id) {
                (ChainAlg::HmacSha256, None) => {
                    return Err("hmac-sha256 header has no \"key_id\"".into())
                }
                (ChainAlg::Sha256, Some(_)) => return Err("sha256 header has a \"key_id\"".into()),
                _ => {}
            }
            if let Some(schema) = body.get("schema").and_then(Value::as_u64) {
                if schema != u64::from(format::SCHEMA) {
                    return Err(format!(
                        "header schema {schema} is not supported (this abm reads schema {}); \
                         use the abm version that wrote the trace",
                        format::SCHEMA
                    ));
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
                _ => return Err("note has no string \"kind\"".into()),
            };
            let note = body.remove("body").unwrap_or(Value::Null);
            if let Some(k) = body.keys().next() {
                return Err(format!("bad note body: unknown field {k:?}"));
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
        other => Err(format!(
            "unknown record type {other:?} (known: header, event, loss, note, seal)"
        )),
    }
}

/// Parses one line (without newline) into a record, without checking its
/// digest.
pub(crate) fn parse_line(line: &[u8]) -> Result<TraceRecord, String> {
    let prefix = match format::split_line(line) {
        Split::Ok { prefix, .. } => prefix,
        Split::BadDigest { .. } => return Err("\"hash\" is not 64 lowercase hex digits".into()),
        Split::NoSuffix => return Err("line does not end with the record's \"hash\" field".into()),
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
    let parse = |reason: String| TraceError::Parse {
        path: path.to_owned(),
        line: 1,
        reason,
    };
    match reader.next(&mut line)? {
        Some(Next::Line) => match parse_line(&line).map_err(parse)? {
            TraceRecord::Header(h) => Ok(h),
            other => Err(parse(format!(
                "the first record is a {:?} record, not a header: this is not the start of a trace",
                other.type_name()
            ))),
        },
        Some(Next::Damaged(damage)) => Err(TraceError::Damaged {
            path: path.to_owned(),
            damage,
        }),
        Some(Next::Truncated(_)) | None => Err(parse(
            "the file ends before its header record is complete".into(),
        )),
    }
}
