//! The line format and the hashing rule, shared by the writer and the
//! verifier. `docs/trace.md` describes the same rule for third parties.
//!
//! A record line is
//!
//! ```text
//! P ,"hash":"<64 lowercase hex>"} \n
//! ```
//!
//! where `P` is the record's JSON object without its closing brace: it starts
//! with `{"type":"…","seq":N,"prev":"<64 hex>"` and continues with the body
//! fields. The digest is
//!
//! ```text
//! hash = SHA-256(prev_raw || P)                 chain "sha256"
//! hash = HMAC-SHA256(key, prev_raw || P)        chain "hmac-sha256"
//! ```
//!
//! with `prev_raw` the 32 bytes that the record's own `prev` field encodes
//! (all zeros for the header). A valid record's `prev` equals the previous
//! record's `hash`. Verification works on the line's bytes as they are in the
//! file, so no JSON canonicalisation is needed.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Version of the record layout. Bumped on any incompatible change.
pub const SCHEMA: u32 = 1;

/// Length of a digest in bytes.
pub const DIGEST_LEN: usize = 32;

/// The `prev` of the header record.
pub const ZERO_DIGEST: [u8; DIGEST_LEN] = [0; DIGEST_LEN];

/// Bytes between the hashed prefix and the digest.
pub(crate) const HASH_KEY: &[u8] = b",\"hash\":\"";
/// Bytes after the digest (the line's closing brace; the newline is separate).
pub(crate) const HASH_END: &[u8] = b"\"}";
/// Length of the unhashed suffix `,"hash":"<64 hex>"}` (without newline).
pub(crate) const SUFFIX_LEN: usize = HASH_KEY.len() + 2 * DIGEST_LEN + HASH_END.len();

/// Output of `abm trace cat` and `abm tail`: the records, or OCSF events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CatFormat {
    /// The canonical JSON lines.
    Jsonl,
    /// OCSF events, one JSON object per line (docs/ocsf.md).
    Ocsf,
}

/// Which digest links the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainAlg {
    /// Plain SHA-256: detects accidental damage and edits by anyone who does
    /// not recompute the chain; it does not authenticate the writer.
    #[serde(rename = "sha256")]
    Sha256,
    /// HMAC-SHA256 under a secret key: only a key holder can produce a valid
    /// trace.
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
}

impl ChainAlg {
    pub fn name(self) -> &'static str {
        match self {
            ChainAlg::Sha256 => "sha256",
            ChainAlg::HmacSha256 => "hmac-sha256",
        }
    }

    pub fn from_name(s: &str) -> Option<ChainAlg> {
        match s {
            "sha256" => Some(ChainAlg::Sha256),
            "hmac-sha256" => Some(ChainAlg::HmacSha256),
            _ => None,
        }
    }
}

impl std::fmt::Display for ChainAlg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Public identifier of a signing key: the first 16 hex digits of
/// SHA-256("abm-trace-key-id\0" || key). Lets `abm verify` tell a wrong key
/// from a modified header; it reveals nothing an HMAC record does not.
pub fn key_id(key: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"abm-trace-key-id\0");
    h.update(key);
    hex::encode(&h.finalize()[..8])
}

/// Computes record digests for one chain.
#[derive(Clone)]
pub(crate) enum Hasher {
    Sha256,
    Hmac(Box<Hmac<Sha256>>),
}

impl Hasher {
    /// `key` must not be empty (checked by the callers, which can name the
    /// key's origin in the error).
    pub(crate) fn new(key: Option<&[u8]>) -> Hasher {
        match key {
            None => Hasher::Sha256,
            Some(k) => Hasher::Hmac(Box::new(
                <Hmac<Sha256> as Mac>::new_from_slice(k).expect("HMAC accepts keys of any length"),
            )),
        }
    }

    pub(crate) fn alg(&self) -> ChainAlg {
        match self {
            Hasher::Sha256 => ChainAlg::Sha256,
            Hasher::Hmac(_) => ChainAlg::HmacSha256,
        }
    }

    /// The digest of a record with previous digest `prev` and hashed prefix
    /// `prefix` (the line without its `,"hash":"…"}` suffix and newline).
    pub(crate) fn digest(&self, prev: &[u8; DIGEST_LEN], prefix: &[u8]) -> [u8; DIGEST_LEN] {
        match self {
            Hasher::Sha256 => {
                let mut h = Sha256::new();
                h.update(prev);
                h.update(prefix);
                h.finalize().into()
            }
            Hasher::Hmac(mac) => {
                let mut m = (**mac).clone();
                m.update(prev);
                m.update(prefix);
                m.finalize().into_bytes().into()
            }
        }
    }
}

/// Appends records to a byte buffer, maintaining the chain state.
#[derive(Clone)]
pub(crate) struct Encoder {
    hasher: Hasher,
    prev: [u8; DIGEST_LEN],
    next_seq: u64,
}

impl Encoder {
    pub(crate) fn new(hasher: Hasher) -> Encoder {
        Encoder {
            hasher,
            prev: ZERO_DIGEST,
            next_seq: 0,
        }
    }

    pub(crate) fn alg(&self) -> ChainAlg {
        self.hasher.alg()
    }

    /// Digest of the last record encoded (all zeros before the header).
    pub(crate) fn last_digest(&self) -> [u8; DIGEST_LEN] {
        self.prev
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one complete line (with newline) to `out` and returns its seq.
    /// `body` must serialize to a JSON object whose keys are not envelope
    /// keys. On error `out` is left as it was and the chain does not advance.
    pub(crate) fn encode<T: Serialize + ?Sized>(
        &mut self,
        out: &mut Vec<u8>,
        kind: &str,
        body: &T,
    ) -> Result<u64, serde_json::Error> {
        let start = out.len();
        let r = self.encode_inner(out, start, kind, body);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn encode_inner<T: Serialize + ?Sized>(
        &mut self,
        out: &mut Vec<u8>,
        start: usize,
        kind: &str,
        body: &T,
    ) -> Result<u64, serde_json::Error> {
        use serde::ser::Error as _;
        let seq = self.next_seq;
        out.extend_from_slice(b"{\"type\":");
        serde_json::to_writer(&mut *out, kind)?;
        out.extend_from_slice(b",\"seq\":");
        out.extend_from_slice(seq.to_string().as_bytes());
        out.extend_from_slice(b",\"prev\":\"");
        push_hex(out, &self.prev);
        out.push(b'"');

        let body_start = out.len();
        serde_json::to_writer(&mut *out, body)?;
        let b = &out[body_start..];
        if b.len() < 2 || b[0] != b'{' || b[b.len() - 1] != b'}' {
            return Err(serde_json::Error::custom(
                "record body does not serialize to a JSON object",
            ));
        }
        if b == b"{}" {
            out.truncate(body_start);
        } else {
            out[body_start] = b',';
            out.pop();
        }

        let digest = self.hasher.digest(&self.prev, &out[start..]);
        out.extend_from_slice(HASH_KEY);
        push_hex(out, &digest);
        out.extend_from_slice(HASH_END);
        out.push(b'\n');
        self.prev = digest;
        self.next_seq += 1;
        Ok(seq)
    }
}

fn push_hex(out: &mut Vec<u8>, digest: &[u8; DIGEST_LEN]) {
    let mut buf = [0u8; 2 * DIGEST_LEN];
    hex::encode_to_slice(digest, &mut buf).expect("buffer is twice the digest length");
    out.extend_from_slice(&buf);
}

/// Value of each byte as a lowercase hex digit; 0xff for every other byte.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Decodes 64 lowercase hex digits. Uppercase is rejected: the writer never
/// emits it, so it can only come from an edit.
pub(crate) fn parse_digest(s: &[u8]) -> Option<[u8; DIGEST_LEN]> {
    if s.len() != 2 * DIGEST_LEN {
        return None;
    }
    let mut d = [0u8; DIGEST_LEN];
    let mut bad = 0u8;
    for (o, pair) in d.iter_mut().zip(s.chunks_exact(2)) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        bad |= hi | lo;
        *o = (hi << 4) | (lo & 0x0f);
    }
    (bad & 0xf0 == 0).then_some(d)
}

/// A line split into hashed prefix and the digest text of its suffix.
pub(crate) enum Split<'a> {
    Ok {
        prefix: &'a [u8],
        hash: [u8; DIGEST_LEN],
    },
    /// The line ends like a record but the digest is not 64 lowercase hex.
    BadDigest { prefix: &'a [u8] },
    /// The line does not end with a `,"hash":"…"}` suffix at all.
    NoSuffix,
}

/// Splits a line (without its newline) into the hashed prefix and digest.
pub(crate) fn split_line(line: &[u8]) -> Split<'_> {
    if line.len() < SUFFIX_LEN || !line.ends_with(HASH_END) {
        return Split::NoSuffix;
    }
    let cut = line.len() - SUFFIX_LEN;
    let (prefix, suffix) = line.split_at(cut);
    if !suffix.starts_with(HASH_KEY) {
        return Split::NoSuffix;
    }
    let hash_hex = &suffix[HASH_KEY.len()..suffix.len() - HASH_END.len()];
    match parse_digest(hash_hex) {
        Some(hash) => Split::Ok { prefix, hash },
        None => Split::BadDigest { prefix },
    }
}

/// A JSON object parsed with duplicate keys rejected, so that every reader
/// sees the same value for every key.
pub(crate) struct StrictObject(pub serde_json::Map<String, serde_json::Value>);

impl<'de> Deserialize<'de> for StrictObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StrictObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<StrictObject, A::Error> {
                let mut m = serde_json::Map::new();
                while let Some(k) = map.next_key::<String>()? {
                    if m.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    let v: serde_json::Value = map.next_value()?;
                    m.insert(k, v);
                }
                Ok(StrictObject(m))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses the hashed prefix (which lacks the closing brace) as a JSON object.
pub(crate) fn parse_prefix(
    prefix: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, super::read::RecordError> {
    let mut text = Vec::with_capacity(prefix.len() + 1);
    text.extend_from_slice(prefix);
    text.push(b'}');
    match serde_json::from_slice::<StrictObject>(&text) {
        Ok(StrictObject(m)) => {
            if m.contains_key("hash") {
                Err(super::read::RecordError::HashNotLast)
            } else {
                Ok(m)
            }
        }
        Err(e) => Err(super::read::RecordError::NotJson(e)),
    }
}
