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

use serde::Deserialize as _;
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

/// The required keys of an event body and a stand-in value for each, worked
/// out once from [`Action`]'s own deserializer (so there is no second copy
/// of the schema).
fn required() -> &'static [(Vec<u8>, Value)] {
    static REQUIRED: OnceLock<Vec<(Vec<u8>, Value)>> = OnceLock::new();
    REQUIRED.get_or_init(|| {
        let Ok(Value::Object(all)) = serde_json::to_value(Action::default()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in &all {
            let mut without = all.clone();
            without.remove(k);
            if serde_json::from_value::<Action>(Value::Object(without)).is_err() {
                out.push((k.as_bytes().to_vec(), v.clone()));
            }
        }
        out
    })
}

/// Nesting a value may have to be decoded on its own: serde_json limits
/// nesting to 128 levels, and inside the body's object a value has one
/// level less, so deeper values go to the full decoder.
const MAX_BRACKETS: usize = 100;

/// Some fields of a body (each value parsed from its own text, as
/// serde_json parses it inside the object) and stand-ins for the required
/// fields left out, as one map for [`Action`]'s deserializer.
struct FieldMap<'s, 'a> {
    decoded: &'s [(&'a str, &'a [u8])],
    stand_ins: &'s [&'static (Vec<u8>, Value)],
    at: usize,
}

impl<'a> serde::de::MapAccess<'a> for FieldMap<'_, 'a> {
    type Error = serde_json::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, serde_json::Error> {
        let key = match self.decoded.get(self.at) {
            Some((k, _)) => k,
            None => match self.stand_ins.get(self.at - self.decoded.len()) {
                // Stand-in keys are field names of `Action` (ASCII).
                Some((k, _)) => std::str::from_utf8(k).map_err(serde::de::Error::custom)?,
                None => return Ok(None),
            },
        };
        seed.deserialize(serde::de::value::StrDeserializer::<serde_json::Error>::new(
            key,
        ))
        .map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'a>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, serde_json::Error> {
        let i = self.at;
        self.at += 1;
        match self.decoded.get(i) {
            Some(&(_, text)) => {
                let mut de = serde_json::Deserializer::from_slice(text);
                let v = seed.deserialize(&mut de)?;
                de.end()?;
                Ok(v)
            }
            None => match self.stand_ins.get(i - self.decoded.len()) {
                Some((_, v)) => seed.deserialize(v),
                None => Err(serde::de::Error::custom("a value without a key")),
            },
        }
    }
}

struct FieldMapDe<'s, 'a>(FieldMap<'s, 'a>);

impl<'de> serde::Deserializer<'de> for FieldMapDe<'_, 'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        visitor.visit_map(self.0)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
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

/// A field's `id` when nothing is known about it.
const NO_ID: u32 = u32::MAX;

/// Checks the event bodies of one run of lines, in order.
#[derive(Default)]
pub(crate) struct BodyChecker<'a> {
    /// Fields of the last body found valid, with their ids (see
    /// [`check_fields`](Self::check_fields)).
    last: Vec<(&'a [u8], u32)>,
    /// The keys of `last`.
    last_keys: Vec<&'a [u8]>,
    fields: Vec<(&'a [u8], u32)>,
    keys: Vec<&'a [u8]>,
    /// The fields to decode: key and value text.
    decoded: Vec<(&'a str, &'a [u8])>,
    stand_ins: Vec<&'static (Vec<u8>, Value)>,
    sorted: Vec<&'a [u8]>,
    text: Vec<u8>,
}

/// True when two fields are known to be the same bytes: by their ids when
/// both have one (different ids are taken as different fields, which at
/// worst decodes a field that did not change), else by their bytes.
fn same(a: (&[u8], u32), b: (&[u8], u32)) -> bool {
    if a.1 != NO_ID && b.1 != NO_ID {
        a.1 == b.1
    } else {
        a.0 == b.0
    }
}

impl<'a> BodyChecker<'a> {
    /// Checks one body; the result is the full decoder's.
    pub(crate) fn check(&mut self, body: &'a [u8]) -> Result<EventFacts, String> {
        self.fields.clear();
        self.fields
            .extend(super::compact::split_fields(body).map(|f| (f, NO_ID)));
        self.check_split(body)
    }

    /// [`check`](Self::check) of a body already split into its fields
    /// (those of [`split_fields`](super::compact::split_fields)), each with
    /// an id: fields with the same id (other than `u32::MAX`) have the same
    /// bytes, which spares comparing them.
    pub(crate) fn check_fields(
        &mut self,
        body: &'a [u8],
        fields: &[(&'a [u8], u32)],
    ) -> Result<EventFacts, String> {
        self.fields.clear();
        self.fields.extend_from_slice(fields);
        self.check_split(body)
    }

    fn check_split(&mut self, body: &'a [u8]) -> Result<EventFacts, String> {
        if let Some(facts) = self.quick() {
            return Ok(facts);
        }
        self.last.clear();
        self.last_keys.clear();
        decode_full(body, &mut self.text)
    }

    /// `Some` when the body in `fields` is valid; `None` when it is not,
    /// or when the quick way cannot tell.
    fn quick(&mut self) -> Option<EventFacts> {
        self.keys.clear();
        self.decoded.clear();
        // Same keys in the same places as the last valid body: the key set
        // is known to be complete and without repeats.
        let mut same_keys = !self.last.is_empty() && self.fields.len() == self.last.len();
        for (i, &f) in self.fields.iter().enumerate() {
            let last = self.last.get(i).copied();
            if last.is_some_and(|l| same(f, l)) {
                // The same field as in the last valid body: the same key.
                let key = self.last_keys[i];
                self.keys.push(key);
                if !is_read_key(key) {
                    continue;
                }
                self.decoded
                    .push((std::str::from_utf8(key).ok()?, &f.0[key.len() + 3..]));
                continue;
            }
            let key = field_key(f.0)?;
            self.keys.push(key);
            if same_keys {
                same_keys = self.last_keys.get(i) == Some(&key);
            }
            let value = &f.0[key.len() + 3..];
            if value.len() >= MAX_BRACKETS
                && value.iter().filter(|&&c| c == b'[' || c == b'{').count() >= MAX_BRACKETS
            {
                return None;
            }
            self.decoded.push((std::str::from_utf8(key).ok()?, value));
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
        self.stand_ins.clear();
        for r in required() {
            if !self.decoded.iter().any(|(k, _)| k.as_bytes() == r.0) {
                self.stand_ins.push(r);
            }
        }
        let map = FieldMap {
            decoded: &self.decoded,
            stand_ins: &self.stand_ins,
            at: 0,
        };
        let a = Action::deserialize(FieldMapDe(map)).ok()?;
        std::mem::swap(&mut self.last, &mut self.fields);
        std::mem::swap(&mut self.last_keys, &mut self.keys);
        Some(a.into())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

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
            base.replace("\"pid\":1", "\"pid\": 1 "),
            base.replace("\"pid\":1", "\"pid\":1 2"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":18446744073709551616"),
            // Nesting at serde_json's limit, inside the object and alone.
            format!(
                "{base},\"argv\":{}\"a\"{}",
                "[".repeat(127),
                "]".repeat(127)
            ),
            format!(
                "{base},\"argv\":{}\"a\"{}",
                "[".repeat(126),
                "]".repeat(126)
            ),
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
        // The same with fields given with ids, as a compact block's
        // decoder gives them: equal bytes, equal id.
        let mut ids: HashMap<&[u8], u32> = HashMap::new();
        let mut c = BodyChecker::default();
        for a in &cases {
            for b in &cases {
                for body in [a, b] {
                    let fields: Vec<(&[u8], u32)> =
                        crate::trace::compact::split_fields(body.as_bytes())
                            .map(|f| {
                                let n = ids.len() as u32;
                                (f, *ids.entry(f).or_insert(n))
                            })
                            .collect();
                    let quick = c.check_fields(body.as_bytes(), &fields);
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
