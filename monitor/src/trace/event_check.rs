//! Checking that event bodies are valid records, fast.
//!
//! `abm verify` checks that every event body decodes as an
//! [`Action`](crate::record::Action). Consecutive events repeat most of
//! their fields byte for byte (process, verdict, measurement), so a
//! [`BodyChecker`] decodes, for each event, only the fields that differ from
//! the previous valid event's field at the same position, together with the
//! fields the verifier reads (`op`, `ktime_ns`, `time`) and stand-in values
//! for the required fields it skipped. Since the fields of an `Action` are
//! independent (no flattening, unknown keys refused), a body is valid exactly
//! when each field is valid for its key, no key repeats and every required
//! key is there; the checker establishes the same, and hands anything it is
//! not sure about (escaped keys, odd layout, any error) to the full decoder,
//! so the verdict and the error message are the full decoder's.

use std::sync::OnceLock;

use serde_json::Value;

use crate::record::{Action, Op};

/// What the verifier reads of an event.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EventFacts {
    pub(crate) op: Option<Op>,
    pub(crate) ktime_ns: u64,
    pub(crate) time: String,
}

impl From<Action> for EventFacts {
    fn from(a: Action) -> EventFacts {
        EventFacts {
            op: a.op,
            ktime_ns: a.ktime_ns,
            time: a.time,
        }
    }
}

/// Keys whose values the verifier reads (`op`, `ktime_ns`, `time`): always
/// decoded.
fn is_read_key(k: &[u8]) -> bool {
    match k.len() {
        2 => k == b"op",
        4 => k == b"time",
        8 => k == b"ktime_ns",
        _ => false,
    }
}

/// The required keys of an event body and a stand-in `"key":value` text for
/// each, worked out once from [`Action`]'s own deserializer (so there is no
/// second copy of the schema).
fn required() -> &'static [(Vec<u8>, Vec<u8>)] {
    static REQUIRED: OnceLock<Vec<(Vec<u8>, Vec<u8>)>> = OnceLock::new();
    REQUIRED.get_or_init(|| {
        let Ok(Value::Object(all)) = serde_json::to_value(Action::default()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in &all {
            let mut without = all.clone();
            without.remove(k);
            if serde_json::from_value::<Action>(Value::Object(without)).is_err() {
                let text = format!("{}:{v}", Value::String(k.clone()));
                out.push((k.as_bytes().to_vec(), text.into_bytes()));
            }
        }
        out
    })
}

/// Decodes an event body in full (the fields between the envelope and the
/// hash).
pub(crate) fn decode_full(body: &[u8], text: &mut Vec<u8>) -> Result<EventFacts, String> {
    text.clear();
    text.push(b'{');
    text.extend_from_slice(body);
    text.push(b'}');
    serde_json::from_slice::<Action>(text)
        .map(EventFacts::from)
        .map_err(|e| format!("bad event body: {e}"))
}

/// The key of a `"key":value` field text, when it has no escapes.
fn field_key(f: &[u8]) -> Option<&[u8]> {
    let rest = f.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    (rest[end] == b'"' && rest.get(end + 1) == Some(&b':')).then(|| &rest[..end])
}

/// Checks the event bodies of one run of lines, in order.
#[derive(Default)]
pub(crate) struct BodyChecker<'a> {
    /// Fields of the last body found valid.
    last: Vec<&'a [u8]>,
    fields: Vec<&'a [u8]>,
    keys: Vec<&'a [u8]>,
    decoded_keys: Vec<&'a [u8]>,
    sorted: Vec<&'a [u8]>,
    text: Vec<u8>,
}

impl<'a> BodyChecker<'a> {
    /// Checks one body; the result is the full decoder's.
    pub(crate) fn check(&mut self, body: &'a [u8]) -> Result<EventFacts, String> {
        if let Some(facts) = self.quick(body) {
            return Ok(facts);
        }
        self.last.clear();
        decode_full(body, &mut self.text)
    }

    /// `Some` when the body is valid; `None` when it is not, or when the
    /// quick way cannot tell.
    fn quick(&mut self, body: &'a [u8]) -> Option<EventFacts> {
        self.fields.clear();
        self.fields.extend(super::compact::split_fields(body));
        self.keys.clear();
        self.decoded_keys.clear();
        self.text.clear();
        self.text.push(b'{');
        // Same keys in the same places as the last valid body: the key set
        // is known to be complete and without repeats.
        let mut same_keys = !self.last.is_empty() && self.fields.len() == self.last.len();
        for (i, &f) in self.fields.iter().enumerate() {
            let key = field_key(f)?;
            self.keys.push(key);
            if self.last.get(i) == Some(&f) {
                if !is_read_key(key) {
                    continue;
                }
            } else if same_keys {
                same_keys = self.last.get(i).and_then(|l| field_key(l)) == Some(key);
            }
            if self.text.len() > 1 {
                self.text.push(b',');
            }
            self.text.extend_from_slice(f);
            self.decoded_keys.push(key);
        }
        if !same_keys {
            self.sorted.clear();
            self.sorted.extend_from_slice(&self.keys);
            self.sorted.sort_unstable();
            if self.sorted.windows(2).any(|w| w[0] == w[1]) {
                return None;
            }
            if required()
                .iter()
                .any(|(k, _)| self.sorted.binary_search(&k.as_slice()).is_err())
            {
                return None;
            }
        }
        for (k, stand_in) in required() {
            if !self.decoded_keys.contains(&k.as_slice()) {
                if self.text.len() > 1 {
                    self.text.push(b',');
                }
                self.text.extend_from_slice(stand_in);
            }
        }
        self.text.push(b'}');
        let a: Action = serde_json::from_slice(&self.text).ok()?;
        std::mem::swap(&mut self.last, &mut self.fields);
        Some(a.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bodies the quick check must judge exactly as the full decoder.
    #[test]
    fn the_quick_check_agrees_with_the_full_decoder() {
        let base = r#""op":"unlink","syscall":"unlinkat","ktime_ns":5,"time":"t","pid":1,"tid":1,"ppid":0,"uid":0,"gid":0,"comm":"rm","cgroup_id":1,"path":"/w/a","result":0"#;
        let cases = [
            base.to_string(),
            base.replace("\"/w/a\"", "\"/w/b\""),
            base.replace("\"pid\":1", "\"pid\":-1"),
            base.replace("\"pid\":1", "\"pid\":\"1\""),
            base.replace("\"comm\":\"rm\",", ""),
            base.replace("\"path\":\"/w/a\"", "\"path\":\"/w/a\",\"path\":\"/w/b\""),
            base.replace("\"path\":\"/w/a\"", "\"pathx\":\"/w/a\""),
            base.replace("\"op\":\"unlink\"", "\"op\":\"nope\""),
            base.replace("\"p\\u0069d\"", "\"pid\"")
                .replace("\"pid\":1", "\"p\\u0069d\":1"),
            base.replace("\"tid\":1", "\"tid\":1,\"tid\":1"),
            base.replace("\"result\":0", "\"result\":null"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":4"),
            format!("{base},\"verdict\":{{\"rule\":\"r\"}}"),
            String::new(),
            base.to_string(),
            base.replace("\"path\":\"/w/a\"", "\"path\":\"/w/\\\"a,\\\\\""),
        ];
        // In order (the quick check keeps the previous body), and each case
        // after every other, so each field differs or repeats in turn.
        let mut c = BodyChecker::default();
        for a in &cases {
            for b in &cases {
                for body in [a, b] {
                    let quick = c.check(body.as_bytes());
                    let full = decode_full(body.as_bytes(), &mut Vec::new());
                    assert_eq!(quick, full, "{body}");
                }
            }
        }
        assert!(decode_full(cases[4].as_bytes(), &mut Vec::new())
            .unwrap_err()
            .contains("missing field `comm`"));
        assert!(required().iter().any(|(k, _)| k == b"pid"));
        assert!(!required().iter().any(|(k, _)| k == b"op" || k == b"path"));
    }
}
