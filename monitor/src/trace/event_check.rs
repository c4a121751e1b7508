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

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::Deserialize as _;
use serde_json::Value;

use super::RecordError;
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

/// [`EventFacts`] with the time borrowed from the body when it has no
/// escapes (no allocation per event).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FactsRef<'a> {
    pub(crate) op: Option<Op>,
    pub(crate) ktime_ns: u64,
    pub(crate) time: Cow<'a, str>,
}

impl FactsRef<'_> {
    #[cfg(test)]
    fn owned(self) -> EventFacts {
        EventFacts {
            op: self.op,
            ktime_ns: self.ktime_ns,
            time: self.time.into_owned(),
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

/// The scalar types of [`Action`]'s fields whose values the quick check
/// can judge without serde (see [`FieldType::accepts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scalar {
    Str,
    Bool,
    U32,
    U64,
    I32,
    I64,
}

/// The declared type of one field of [`Action`], as far as the quick check
/// knows it: a scalar, possibly optional. Fields of any other type (enums,
/// structs, lists, custom decoders) are left to serde.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FieldType {
    scalar: Scalar,
    optional: bool,
}

impl FieldType {
    /// The type named by `std::any::type_name` of the value seed serde's
    /// derived code asks for (`PhantomData<T>` for a field of type `T`).
    fn from_seed_name(seed: &str) -> Option<FieldType> {
        let t = seed
            .strip_prefix("core::marker::PhantomData<")?
            .strip_suffix('>')?;
        let (t, optional) = match t
            .strip_prefix("core::option::Option<")
            .and_then(|t| t.strip_suffix('>'))
        {
            Some(inner) => (inner, true),
            None => (t, false),
        };
        let scalar = match t {
            "alloc::string::String" => Scalar::Str,
            "bool" => Scalar::Bool,
            "u32" => Scalar::U32,
            "u64" => Scalar::U64,
            "i32" => Scalar::I32,
            "i64" => Scalar::I64,
            _ => return None,
        };
        Some(FieldType { scalar, optional })
    }

    /// True when serde_json decodes the value text `v` (alone) as this
    /// type. `false` means "not sure": the caller asks serde. Only the
    /// plain forms the writer produces are judged here: strings without
    /// escapes and integers without sign or leading zeros (a minus sign for
    /// signed types), `true`, `false`, `null`.
    fn accepts(self, v: &[u8]) -> bool {
        if self.optional && v == b"null" {
            return true;
        }
        match self.scalar {
            Scalar::Str => plain_str(v).is_some(),
            Scalar::Bool => v == b"true" || v == b"false",
            Scalar::U32 => plain_uint(v).is_some_and(|n| n <= u64::from(u32::MAX)),
            Scalar::U64 => plain_uint(v).is_some(),
            Scalar::I32 => plain_int(v).is_some_and(|n| i32::try_from(n).is_ok()),
            Scalar::I64 => plain_int(v).is_some(),
        }
    }
}

/// The text of a JSON string without escapes and control characters (as
/// serde_json decodes it: the bytes between the quotes, valid UTF-8).
fn plain_str(v: &[u8]) -> Option<&str> {
    let inner = v.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    let mut ascii = true;
    for &c in inner {
        if c < 0x20 || c == b'"' || c == b'\\' {
            return None;
        }
        ascii &= c < 0x80;
    }
    if ascii {
        // SAFETY: every byte is ASCII, so the bytes are valid UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(inner) });
    }
    std::str::from_utf8(inner).ok()
}

/// An unsigned integer written as JSON writes it: digits, no leading zero
/// (but `0` itself), and within u64.
fn plain_uint(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 20 || (v.len() > 1 && v[0] == b'0') {
        return None;
    }
    let mut n: u64 = 0;
    for &c in v {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(n)
}

/// A signed integer: an optional minus sign before a [`plain_uint`], within
/// i64 (but not `-0` or `i64::MIN`, left to serde).
fn plain_int(v: &[u8]) -> Option<i64> {
    match v.strip_prefix(b"-") {
        Some(d) => {
            let n = i64::try_from(plain_uint(d)?).ok()?;
            (n != 0).then_some(-n)
        }
        None => i64::try_from(plain_uint(v)?).ok(),
    }
}

/// The declared type of each field of [`Action`] that the quick check can
/// judge, sorted by key; worked out once from [`Action`]'s own
/// deserializer (the field list it declares, and the type of value it asks
/// for under each key), so there is no second copy of the schema.
fn field_types() -> &'static [(&'static str, FieldType)] {
    static TYPES: OnceLock<Vec<(&'static str, FieldType)>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut out: Vec<(&'static str, FieldType)> = probe::field_names()
            .iter()
            .filter_map(|&k| Some((k, FieldType::from_seed_name(probe::seed_name(k)?)?)))
            .collect();
        out.sort_unstable_by_key(|(k, _)| *k);
        out
    })
}

/// The declared type of the field `key`, when the quick check can judge
/// its values.
fn field_type(key: &[u8]) -> Option<FieldType> {
    let t = field_types();
    t.binary_search_by(|(k, _)| k.as_bytes().cmp(key))
        .ok()
        .map(|i| t[i].1)
}

/// Asks [`Action`]'s derived deserializer what it expects.
mod probe {
    use std::cell::Cell;

    use serde::de::{self, value::Error, Deserialize as _, Visitor};

    use crate::record::Action;

    /// The field names [`Action`] declares.
    pub(super) fn field_names() -> &'static [&'static str] {
        let names = Cell::new(None);
        let _ = Action::deserialize(Fields(&names));
        names.get().unwrap_or(&[])
    }

    /// `std::any::type_name` of the seed serde's derived code uses for the
    /// value under `key`.
    pub(super) fn seed_name(key: &'static str) -> Option<&'static str> {
        let seed = Cell::new(None);
        let _ = Action::deserialize(OneKey {
            key,
            seed: &seed,
            done: false,
        });
        seed.get()
    }

    struct Fields<'c>(&'c Cell<Option<&'static [&'static str]>>);

    impl<'de> de::Deserializer<'de> for Fields<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(de::Error::custom("probe"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            self.0.set(Some(fields));
            Err(de::Error::custom("probe"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    /// A map with one key whose value records the seed asked for it.
    struct OneKey<'c> {
        key: &'static str,
        seed: &'c Cell<Option<&'static str>>,
        done: bool,
    }

    impl<'de> de::Deserializer<'de> for OneKey<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.visit_map(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    }

    impl<'de> de::MapAccess<'de> for OneKey<'_> {
        type Error = Error;

        fn next_key_seed<K: de::DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            if self.done {
                return Ok(None);
            }
            self.done = true;
            seed.deserialize(de::value::StrDeserializer::<Error>::new(self.key))
                .map(Some)
        }

        fn next_value_seed<V: de::DeserializeSeed<'de>>(
            &mut self,
            _: V,
        ) -> Result<V::Value, Error> {
            self.seed.set(Some(std::any::type_name::<V>()));
            Err(de::Error::custom("probe"))
        }
    }
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
pub(crate) fn decode_full(body: &[u8], text: &mut Vec<u8>) -> Result<EventFacts, RecordError> {
    text.clear();
    text.push(b'{');
    text.extend_from_slice(body);
    text.push(b'}');
    serde_json::from_slice::<Action>(text)
        .map(EventFacts::from)
        .map_err(|error| RecordError::Body {
            what: "event",
            error,
        })
}

/// The key of a `"key":value` field text, when it has no escapes.
fn field_key(f: &[u8]) -> Option<&[u8]> {
    let rest = f.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    (rest[end] == b'"' && rest.get(end + 1) == Some(&b':')).then(|| &rest[..end])
}

/// A field's `id` when nothing is known about it.
const NO_ID: u32 = u32::MAX;

/// Values of `op` remembered with what they decode to.
const MAX_OPS: usize = 32;

/// Checks the event bodies of one run of lines, in order.
#[derive(Default)]
pub(crate) struct BodyChecker<'a> {
    /// Fields of the last body found valid, with their ids (see
    /// [`check_fields`](Self::check_fields)).
    last: Vec<(&'a [u8], u32)>,
    /// The keys of `last`, with their declared types.
    last_keys: Vec<(&'a [u8], Option<FieldType>)>,
    fields: Vec<(&'a [u8], u32)>,
    /// Per field of `fields`: known to be the same bytes as the field of
    /// `last` at the same place.
    as_last: Vec<bool>,
    keys: Vec<(&'a [u8], Option<FieldType>)>,
    /// The fields left to serde: key and value text.
    decoded: Vec<(&'a str, &'a [u8])>,
    stand_ins: Vec<&'static (Vec<u8>, Value)>,
    sorted: Vec<&'a [u8]>,
    /// Texts of `op` values decoded before, and what they decode to.
    ops: Vec<(&'a [u8], Option<Op>)>,
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
    pub(crate) fn check(&mut self, body: &'a [u8]) -> Result<FactsRef<'a>, RecordError> {
        self.split_like_last(body);
        self.check_split(body)
    }

    /// Splits `body` into `fields` as [`split_fields`] does, sparing the
    /// scan of the fields that are the same as the last valid body's.
    ///
    /// Every field of a valid body is `"key":` and a complete JSON value,
    /// so [`split_fields`], starting a field on the same bytes, ends them
    /// outside any string and at depth 0: when those bytes are followed by
    /// a comma or the end of the body, that is where it ends the field too.
    ///
    /// [`split_fields`]: super::compact::split_fields
    fn split_like_last(&mut self, body: &'a [u8]) {
        self.fields.clear();
        self.as_last.clear();
        if body.is_empty() {
            return;
        }
        let mut at = 0;
        loop {
            let i = self.fields.len();
            if let Some(&(last, _)) = self.last.get(i) {
                let end = at + last.len();
                if body.get(at..end) == Some(last) && body.get(end).is_none_or(|&c| c == b',') {
                    self.fields.push((&body[at..end], NO_ID));
                    self.as_last.push(true);
                    if end == body.len() {
                        return;
                    }
                    at = end + 1;
                    continue;
                }
            }
            let (f, next) = super::compact::field_at(body, at);
            self.fields.push((f, NO_ID));
            self.as_last.push(false);
            match next {
                Some(n) => at = n,
                None => return,
            }
        }
    }

    /// [`check`](Self::check) of a body already split into its fields
    /// (those of [`split_fields`](super::compact::split_fields)), each with
    /// an id: fields with the same id (other than `u32::MAX`) have the same
    /// bytes, which spares comparing them.
    pub(crate) fn check_fields(
        &mut self,
        body: &'a [u8],
        fields: &[(&'a [u8], u32)],
    ) -> Result<FactsRef<'a>, RecordError> {
        self.fields.clear();
        self.fields.extend_from_slice(fields);
        self.as_last.clear();
        self.check_split(body)
    }

    fn check_split(&mut self, body: &'a [u8]) -> Result<FactsRef<'a>, RecordError> {
        if let Some(facts) = self.quick() {
            return Ok(facts);
        }
        self.last.clear();
        self.last_keys.clear();
        decode_full(body, &mut self.text).map(|f| FactsRef {
            op: f.op,
            ktime_ns: f.ktime_ns,
            time: Cow::Owned(f.time),
        })
    }

    /// `Some` when the body in `fields` is valid; `None` when it is not,
    /// or when the quick way cannot tell.
    ///
    /// A field that is the same as the last valid body's at the same place
    /// is valid. Any other field is judged from its key's declared type
    /// when its value has a plain form ([`FieldType::accepts`]), else
    /// decoded by serde together with the others of its kind. The fields
    /// the verifier reads are always decoded, each on its own.
    fn quick(&mut self) -> Option<FactsRef<'a>> {
        self.keys.clear();
        self.decoded.clear();
        // Same keys in the same places as the last valid body: the key set
        // is known to be complete and without repeats.
        let mut same_keys = !self.last.is_empty() && self.fields.len() == self.last.len();
        let (mut op, mut ktime_ns, mut time) = (None, None, None);
        for i in 0..self.fields.len() {
            let f = self.fields[i];
            let (key, value);
            let as_last = self.as_last.get(i).copied().unwrap_or(false);
            if as_last || self.last.get(i).is_some_and(|&l| same(f, l)) {
                // The same field as in the last valid body: the same key.
                let k = self.last_keys[i];
                self.keys.push(k);
                if !is_read_key(k.0) {
                    continue;
                }
                key = k.0;
                value = &f.0[key.len() + 3..];
            } else {
                key = field_key(f.0)?;
                value = &f.0[key.len() + 3..];
                let ty = match self.last_keys.get(i) {
                    Some(&(k, ty)) if k == key => ty,
                    _ => {
                        same_keys = false;
                        field_type(key)
                    }
                };
                self.keys.push((key, ty));
                if !is_read_key(key) {
                    if ty.is_some_and(|t| t.accepts(value)) {
                        continue;
                    }
                    if value.len() >= MAX_BRACKETS
                        && value.iter().filter(|&&c| c == b'[' || c == b'{').count() >= MAX_BRACKETS
                    {
                        return None;
                    }
                    self.decoded.push((std::str::from_utf8(key).ok()?, value));
                    continue;
                }
            }
            // The fields the verifier reads, each decoded as the type
            // `Action` gives it (those of `EventFacts`).
            match key {
                b"op" => op = Some(self.op(value)?),
                b"ktime_ns" => {
                    ktime_ns = Some(
                        plain_uint(value).or_else(|| serde_json::from_slice::<u64>(value).ok())?,
                    )
                }
                _ => {
                    time = Some(match plain_str(value) {
                        Some(t) => Cow::Borrowed(t),
                        None => Cow::Owned(serde_json::from_slice::<String>(value).ok()?),
                    })
                }
            }
        }
        if !same_keys {
            self.sorted.clear();
            self.sorted.extend(self.keys.iter().map(|k| k.0));
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
        if !self.decoded.is_empty() {
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
            Action::deserialize(FieldMapDe(map)).ok()?;
        }
        let facts = FactsRef {
            op: op.unwrap_or(None),
            ktime_ns: ktime_ns?,
            time: time?,
        };
        std::mem::swap(&mut self.last, &mut self.fields);
        std::mem::swap(&mut self.last_keys, &mut self.keys);
        Some(facts)
    }

    /// The value of `op` the text `v` decodes to, `None` if it does not.
    fn op(&mut self, v: &'a [u8]) -> Option<Option<Op>> {
        if let Some(&(_, op)) = self.ops.iter().find(|(t, _)| *t == v) {
            return Some(op);
        }
        let op = serde_json::from_slice::<Option<Op>>(v).ok()?;
        if self.ops.len() < MAX_OPS {
            self.ops.push((v, op));
        }
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A result with its error as the text a reader sees, to compare.
    fn text<T>(r: Result<T, RecordError>) -> Result<T, String> {
        r.map_err(|e| e.to_string())
    }

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
            // Values of the plain forms the quick check judges by type, at
            // and past each type's limits, and near misses it must leave
            // to serde.
            base.replace("\"pid\":1", "\"pid\":4294967295"),
            base.replace("\"pid\":1", "\"pid\":4294967296"),
            base.replace("\"pid\":1", "\"pid\":01"),
            base.replace("\"pid\":1", "\"pid\":-0"),
            base.replace("\"pid\":1", "\"pid\":0"),
            base.replace("\"pid\":1", "\"pid\":1.0"),
            base.replace("\"pid\":1", "\"pid\":1e2"),
            base.replace("\"pid\":1", "\"pid\":null"),
            base.replace("\"pid\":1", "\"pid\":true"),
            base.replace("\"cgroup_id\":1", "\"cgroup_id\":18446744073709551615"),
            base.replace("\"cgroup_id\":1", "\"cgroup_id\":18446744073709551616"),
            base.replace("\"cgroup_id\":1", "\"cgroup_id\":99999999999999999999"),
            base.replace("\"cgroup_id\":1", "\"cgroup_id\":-1"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":\"5\""),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":-5"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":5.5"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":null"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":0"),
            base.replace("\"ktime_ns\":5", "\"ktime_ns\":007"),
            base.replace("\"result\":0", "\"result\":-9223372036854775808"),
            base.replace("\"result\":0", "\"result\":-9223372036854775809"),
            base.replace("\"result\":0", "\"result\":9223372036854775807"),
            base.replace("\"result\":0", "\"result\":9223372036854775808"),
            base.replace("\"result\":0", "\"result\":-0"),
            base.replace("\"result\":0", "\"result\":-"),
            base.replace("\"result\":0", "\"result\":--1"),
            format!("{base},\"fd\":-1"),
            format!("{base},\"fd\":-2147483648"),
            format!("{base},\"fd\":-2147483649"),
            format!("{base},\"fd\":2147483647"),
            format!("{base},\"fd\":2147483648"),
            format!("{base},\"fd\":null"),
            format!("{base},\"fd\":\"3\""),
            format!("{base},\"mode\":4294967296"),
            format!("{base},\"argv_truncated\":true"),
            format!("{base},\"argv_truncated\":false"),
            format!("{base},\"argv_truncated\":1"),
            format!("{base},\"argv_truncated\":null"),
            format!("{base},\"argv_truncated\":True"),
            base.replace("\"comm\":\"rm\"", "\"comm\":null"),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\u{e9}\u{1F600}\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\u{1}\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\tm\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\u{7f}\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\\u0000\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\\ud800\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\\x\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"rm"),
            base.replace("\"comm\":\"rm\"", "\"comm\":rm"),
            base.replace("\"comm\":\"rm\"", "\"comm\":\"r\"m\""),
            base.replace("\"comm\":\"rm\"", "\"comm\":[\"rm\"]"),
            base.replace("\"path\":\"/w/a\"", "\"path\":null"),
            base.replace("\"path\":\"/w/a\"", "\"path\":1"),
            base.replace("\"time\":\"t\"", "\"time\":\"\""),
            base.replace("\"time\":\"t\"", "\"time\":\"t\\\"\""),
            base.replace("\"time\":\"t\"", "\"time\":\"\u{e9}\""),
            base.replace("\"time\":\"t\"", "\"time\":null"),
            base.replace("\"time\":\"t\"", "\"time\":5"),
            base.replace("\"time\":\"t\"", "\"time\":\"t\",\"time\":\"t\""),
            base.replace("\"op\":\"unlink\"", "\"op\":null"),
            base.replace("\"op\":\"unlink\"", "\"op\":\"rmdir\""),
            base.replace("\"op\":\"unlink\"", "\"op\":\"unlink\",\"op\":\"unlink\""),
            base.replace("\"op\":\"unlink\",", ""),
            base.replace("\"ktime_ns\":5,", ""),
            base.replace("\"time\":\"t\",", ""),
            format!("{base},\"ktime_ns\":5"),
            format!("{base},\"nope\":1"),
            format!("{base},\"nope\":\"x\""),
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
                    let quick = text(c.check(body.as_bytes()).map(FactsRef::owned));
                    let full = text(decode_full(body.as_bytes(), &mut Vec::new()));
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
                    let quick = text(
                        c.check_fields(body.as_bytes(), &fields)
                            .map(FactsRef::owned),
                    );
                    let full = text(decode_full(body.as_bytes(), &mut Vec::new()));
                    assert_eq!(quick, full, "{body}");
                }
            }
        }
        // Bytes that are not UTF-8 in a string, where the quick check
        // judges strings by type, and the same after a valid body.
        let good = base.as_bytes().to_vec();
        let mut bad = good.clone();
        let at = base.find("/w/a").unwrap() + 3;
        bad[at] = 0xff;
        let mut c = BodyChecker::default();
        for body in [&good, &bad, &good, &bad] {
            let quick = text(c.check(body).map(FactsRef::owned));
            assert_eq!(quick, text(decode_full(body, &mut Vec::new())));
        }
        assert!(c.check(&bad).is_err());
        // After any body, any other is split exactly as `split_fields`
        // splits it (the fields the same as the last valid body's are not
        // scanned again).
        let more = [
            format!("{base},\"path2\":\"x\""),
            format!("{base}x"),
            format!("{base},"),
            format!("{base}\",\"a\":\"b"),
            format!("{base}}}"),
            format!("{base}]"),
            base.replace("\"op\":\"unlink\"", "\"op\":\"unlink\"x"),
            base.replace("\"op\":\"unlink\"", "\"op\":[\"unlink\""),
            base.replace(",\"syscall\"", "\",\"syscall\""),
        ];
        let mut c = BodyChecker::default();
        for a in cases.iter().chain(&more) {
            for b in cases.iter().chain(&more) {
                let _ = c.check(a.as_bytes());
                c.split_like_last(b.as_bytes());
                let want: Vec<&[u8]> = crate::trace::compact::split_fields(b.as_bytes()).collect();
                let got: Vec<&[u8]> = c.fields.iter().map(|f| f.0).collect();
                assert_eq!(got, want, "{a}\n{b}");
                assert_eq!(
                    text(c.check(b.as_bytes()).map(FactsRef::owned)),
                    text(decode_full(b.as_bytes(), &mut Vec::new())),
                    "{a}\n{b}"
                );
            }
        }
        assert!(decode_full(cases[4].as_bytes(), &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("missing field `comm`"));
        assert!(required().iter().any(|(k, _)| k == b"pid"));
        assert!(!required().iter().any(|(k, _)| k == b"op" || k == b"path"));
    }

    /// The declared types are read from `Action`'s deserializer: the
    /// scalar fields are known (else every changed field goes to serde),
    /// the others are not judged by type.
    #[test]
    fn field_types_come_from_the_action_type() {
        let t = |k: &str| field_type(k.as_bytes());
        let req = |scalar| {
            Some(FieldType {
                scalar,
                optional: false,
            })
        };
        let opt = |scalar| {
            Some(FieldType {
                scalar,
                optional: true,
            })
        };
        assert_eq!(t("pid"), req(Scalar::U32));
        assert_eq!(t("ktime_ns"), req(Scalar::U64));
        assert_eq!(t("cgroup_id"), req(Scalar::U64));
        assert_eq!(t("time"), req(Scalar::Str));
        assert_eq!(t("comm"), req(Scalar::Str));
        assert_eq!(t("path"), opt(Scalar::Str));
        assert_eq!(t("raw_path"), opt(Scalar::Str));
        assert_eq!(t("fd"), opt(Scalar::I32));
        assert_eq!(t("result"), opt(Scalar::I64));
        assert_eq!(t("mode"), opt(Scalar::U32));
        assert_eq!(t("action"), opt(Scalar::U64));
        assert_eq!(t("flags"), req(Scalar::U64));
        assert_eq!(t("argv_truncated"), req(Scalar::Bool));
        for other in [
            "op",
            "verdict",
            "argv",
            "flag_names",
            "measured",
            "env",
            "nope",
            "",
        ] {
            assert_eq!(t(other), None, "{other}");
        }
        assert!(field_types().len() > 25, "{:?}", field_types());
    }

    /// The plain forms, against serde_json on the value alone.
    #[test]
    fn plain_forms_decode_as_serde_json_does() {
        for v in [
            "0",
            "7",
            "01",
            "-0",
            "-1",
            "-01",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775807",
            "-9223372036854775808",
            "1.0",
            "1e2",
            "",
            "-",
            " 1",
            "1 ",
            "+1",
            "0x1",
        ] {
            let b = v.as_bytes();
            if let Some(n) = plain_uint(b) {
                assert_eq!(serde_json::from_str::<u64>(v).ok(), Some(n), "{v}");
            }
            if let Some(n) = plain_int(b) {
                assert_eq!(serde_json::from_str::<i64>(v).ok(), Some(n), "{v}");
            }
            for (scalar, ok) in [
                (Scalar::U32, serde_json::from_str::<u32>(v).is_ok()),
                (Scalar::U64, serde_json::from_str::<u64>(v).is_ok()),
                (Scalar::I32, serde_json::from_str::<i32>(v).is_ok()),
                (Scalar::I64, serde_json::from_str::<i64>(v).is_ok()),
            ] {
                let t = FieldType {
                    scalar,
                    optional: false,
                };
                // Accepted only when serde accepts it.
                assert!(!t.accepts(b) || ok, "{v} {scalar:?}");
            }
        }
        for v in [
            "\"\"",
            "\"a\"",
            "\"\u{e9}\"",
            "\"a\\\"\"",
            "\"a\\n\"",
            "\"a\u{1}\"",
            "\"a",
            "a\"",
            "\"",
            "null",
            "\"a\"\"b\"",
        ] {
            if let Some(s) = plain_str(v.as_bytes()) {
                assert_eq!(
                    serde_json::from_str::<String>(v).ok().as_deref(),
                    Some(s),
                    "{v}"
                );
            }
        }
        assert_eq!(plain_str(b"\"a\xffb\""), None);
        assert_eq!(plain_str(b"\"/w/a\""), Some("/w/a"));
        assert_eq!(plain_uint(b"4294967296"), Some(4294967296));
        assert_eq!(plain_int(b"-12"), Some(-12));
    }
}
