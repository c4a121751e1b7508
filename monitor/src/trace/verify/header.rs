//! The trace's first and last records, checked by the verifier: the
//! header (format, chain algorithm, key id, anchoring) and the seal (the
//! counts and times it states agree with the records before it).

use super::*;

impl Verifier<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_header(
        &mut self,
        line_no: u64,
        prefix: &[u8],
        hash: &[u8; DIGEST_LEN],
        kind: String,
        seq: u64,
        own_prev: &[u8; DIGEST_LEN],
        mut obj: serde_json::Map<String, Value>,
    ) -> Result<(), Fail> {
        if kind != "header" {
            if seq > 0 {
                return Err(Fail::SeqAhead {
                    line: line_no,
                    found: seq,
                    expected: 0,
                });
            }
            return Err(self.header_malformed(
                line_no,
                prefix,
                hash,
                own_prev,
                Some(seq),
                format!("the first record is a {kind:?} record; a trace starts with its header"),
            ));
        }
        let chain = match obj.get("chain").and_then(Value::as_str) {
            Some(s) => ChainAlg::from_name(s).ok_or_else(|| {
                self.header_malformed(
                    line_no,
                    prefix,
                    hash,
                    own_prev,
                    Some(0),
                    format!(
                        "unknown chain algorithm {s:?} (known: sha256, hmac-sha256): the header \
                         was modified, or the trace was written by a newer abm"
                    ),
                )
            })?,
            None => {
                return Err(self.header_malformed(
                    line_no,
                    prefix,
                    hash,
                    own_prev,
                    Some(0),
                    "the header has no string \"chain\" field",
                ))
            }
        };
        let trace_key_id = obj.get("key_id").and_then(Value::as_str).map(str::to_owned);
        self.report.chain = Some(chain);
        match (chain, self.key) {
            (ChainAlg::Sha256, Some(_)) => {
                return Err(problem(
                    line_no,
                    Some(0),
                    ProblemKind::NotKeyed,
                    "the trace is not keyed (chain \"sha256\") but a key was given: it was \
                     recorded without a signing key, or a keyed trace was rewritten as unkeyed; \
                     either way its records are not authenticated",
                ));
            }
            (ChainAlg::Sha256, None) => {
                self.mode = Mode::Full(Hasher::new(None));
                self.report.authentication = Authentication::Unkeyed;
            }
            (ChainAlg::HmacSha256, key) => {
                let Some(tid) = trace_key_id else {
                    return Err(self.header_malformed(
                        line_no,
                        prefix,
                        hash,
                        own_prev,
                        Some(0),
                        "the hmac-sha256 header has no string \"key_id\" field",
                    ));
                };
                match key {
                    Some(k) => {
                        let given = key_id(k);
                        if given != tid {
                            return Err(problem(
                                line_no,
                                Some(0),
                                ProblemKind::WrongKey,
                                format!(
                                    "the trace was signed with key id {tid} but the given key has \
                                     id {given}: use the key given to --sign-key when recording \
                                     (or the header's key id was modified)"
                                ),
                            ));
                        }
                        self.mode = Mode::Full(Hasher::new(Some(k)));
                        self.report.authentication = Authentication::Authenticated { key_id: tid };
                    }
                    None => {
                        self.mode = Mode::LinkageOnly;
                        self.report.authentication = Authentication::KeyNotGiven { key_id: tid };
                    }
                }
            }
        }
        if let Mode::Full(h) = &self.mode {
            if h.digest(own_prev, prefix) != *hash {
                let why = match chain {
                    ChainAlg::HmacSha256 => {
                        "the header does not match its HMAC: it was modified, or written without \
                         this key"
                    }
                    ChainAlg::Sha256 => "the header does not match its hash: it was modified",
                };
                return Err(problem(line_no, Some(0), ProblemKind::Modified, why));
            }
        }
        if seq != 0 {
            return Err(self.header_malformed(
                line_no,
                prefix,
                hash,
                own_prev,
                Some(seq),
                "the header's seq must be 0",
            ));
        }
        if *own_prev != ZERO_DIGEST {
            return Err(problem(
                line_no,
                Some(0),
                ProblemKind::ChainBroken,
                "the header's \"prev\" must be 64 zeros: it is not the first record of its trace",
            ));
        }
        if let Some(schema) = obj.get("schema").and_then(Value::as_u64) {
            if schema != u64::from(format::SCHEMA) {
                return Err(problem(
                    line_no,
                    Some(0),
                    ProblemKind::UnsupportedSchema,
                    format!(
                        "schema {schema} is not supported (this abm verifies schema {}): use the \
                         abm version that wrote the trace",
                        format::SCHEMA
                    ),
                ));
            }
        }
        obj.remove("chain");
        obj.remove("key_id");
        let header: Header = serde_json::from_value(Value::Object(obj)).map_err(|e| {
            self.header_malformed(
                line_no,
                prefix,
                hash,
                own_prev,
                Some(0),
                format!("bad header body: {e}"),
            )
        })?;
        self.report.header = Some(header);
        self.accept(*hash);
        Ok(())
    }

    /// A header that cannot be used. When its digest matches neither
    /// SHA-256 nor (with a key) HMAC, it was modified after writing.
    pub(super) fn header_malformed(
        &self,
        line: u64,
        prefix: &[u8],
        hash: &[u8; DIGEST_LEN],
        prev: &[u8; DIGEST_LEN],
        seq: Option<u64>,
        why: impl Into<String>,
    ) -> Fail {
        let why = why.into();
        let authentic = Hasher::new(None).digest(prev, prefix) == *hash
            || self
                .key
                .is_some_and(|k| Hasher::new(Some(k)).digest(prev, prefix) == *hash);
        if authentic {
            problem(line, seq, ProblemKind::Malformed, why)
        } else {
            problem(
                line,
                seq,
                ProblemKind::Modified,
                format!("{why}; the line does not match its hash: it was modified"),
            )
        }
    }

    pub(super) fn check_seal(&self, line_no: u64, seq: u64, seal: &SealRecord) -> Result<(), Fail> {
        let r = &self.report;
        let mut wrong = Vec::new();
        if seal.records != seq {
            wrong.push(format!(
                "it counts {} records before it, the trace has {seq}",
                seal.records
            ));
        }
        if seal.events != r.events {
            wrong.push(format!(
                "it counts {} events, the trace has {}",
                seal.events, r.events
            ));
        }
        if seal.lost != r.lost {
            wrong.push(format!(
                "its losses {:?} differ from the loss records' sum {:?}",
                seal.lost, r.lost
            ));
        }
        if seal.ktime_regressions != r.ktime_regressions {
            wrong.push(format!(
                "it counts {} ktime regressions, the events have {}",
                seal.ktime_regressions, r.ktime_regressions
            ));
        }
        let prev_hex = hex::encode(self.prev);
        if seal.final_digest != prev_hex {
            wrong.push(format!(
                "its final_digest {} is not the previous record's hash {prev_hex}",
                seal.final_digest
            ));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(problem(
                line_no,
                Some(seq),
                ProblemKind::ForgedSeal,
                format!("the seal disagrees with the trace: {}", wrong.join("; ")),
            ))
        }
    }
}
