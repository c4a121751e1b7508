//! Reading a quarantine: its manifest entries, the `sealed` state of
//! their paths at the end of the run, and the `run` line.

use std::{fs, io, path::Path};

use serde_json::Value;

use super::preserve::*;

/// One manifest entry, parsed.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: u64,
    pub kind: String,
    pub path: Vec<u8>,
    pub path2: Option<Vec<u8>>,
    pub quarantine: Option<String>,
    pub method: String,
    pub meta: Value,
    pub raw: Value,
}

impl Entry {
    /// Bytes of file data this entry holds in the quarantine.
    pub fn kept_bytes(&self) -> u64 {
        if self.quarantine.is_some() && self.meta["type"] == "file" && self.raw["shares"].is_null()
        {
            self.meta["size"].as_u64().unwrap_or(0)
        } else {
            0
        }
    }

    /// The operation of the call that made the entry.
    pub fn op(&self) -> &str {
        self.raw["op"].as_str().unwrap_or("?")
    }
}

fn exact_of(v: &Value, key: &str) -> Option<Vec<u8>> {
    let s = v[key].as_str().map(str::to_owned);
    let b = v[format!("{key}_b64")].as_str().map(str::to_owned);
    exact(&s, &b)
}

/// Reads a quarantine's manifest (entries only, in id order).
pub fn read_manifest(dir: &Path) -> io::Result<Vec<Entry>> {
    let text = fs::read_to_string(dir.join(MANIFEST))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}:{}: {e}", dir.join(MANIFEST).display(), i + 1),
            )
        })?;
        if v["kind"] == "run" || v["kind"] == "sealed" {
            continue;
        }
        let Some(id) = v["id"].as_u64() else { continue };
        out.push(Entry {
            id,
            kind: v["kind"].as_str().unwrap_or("").to_owned(),
            path: exact_of(&v, "path").unwrap_or_default(),
            path2: exact_of(&v, "path2"),
            quarantine: v["quarantine"].as_str().map(str::to_owned),
            method: v["method"].as_str().unwrap_or("").to_owned(),
            meta: v["meta"].clone(),
            raw: v,
        });
    }
    out.sort_by_key(|e| e.id);
    Ok(out)
}

/// The `sealed` lines of a quarantine: each path's state when the run
/// ended (`None`: absent). Empty when the run did not end normally.
pub fn read_seals(dir: &Path) -> std::collections::HashMap<Vec<u8>, Value> {
    let mut out = std::collections::HashMap::new();
    let text = fs::read_to_string(dir.join(MANIFEST)).unwrap_or_default();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["kind"] == "sealed" {
            if let Some(p) = exact_of(&v, "path") {
                out.insert(p, v["state"].clone());
            }
        }
    }
    out
}

/// The `run` line of a quarantine's manifest.
pub fn read_run(dir: &Path) -> Value {
    fs::read_to_string(dir.join(MANIFEST))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "run")
        .unwrap_or(Value::Null)
}
