//! What the trace says about a quarantine's entries: for each entry, the
//! call that made it (its trace `seq`, result and logical action), and for
//! each path, the later calls that changed it. `abm undo` plans with this.
//!
//! The manifest is written before a call runs; the trace records the call
//! with its result and lists the entry ids it produced (`enforcement.entries`
//! for seccomp, `enforcement.preserved[].id` for BPF LSM, where the entries
//! appear on the refused first attempt and on the allowed retry). An entry
//! whose calls all failed is void: the call destroyed nothing.
//!
//! The logical action of a record is its `action` field. Traces without
//! it fall back to the process: the `seq` of the last successful exec of
//! the record's pid (a forked child without its own exec inherits its
//! parent's), else the record's own `seq`.
use std::{
    collections::{BTreeMap, HashMap},
    io,
    path::Path,
};

use serde_json::Value;

/// The trace record of the call that made an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub seq: u64,
    pub action: u64,
    pub pid: u32,
    /// 0 or a file descriptor (success), -errno, or unknown.
    pub result: Option<i64>,
    pub errno: Option<String>,
}

impl Call {
    pub fn failed(&self) -> bool {
        self.result.is_some_and(|r| r < 0)
    }
}

/// A successful call that changed the file system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub seq: u64,
    pub action: u64,
    pub op: String,
    pub path: Vec<u8>,
    pub path2: Option<Vec<u8>>,
}

/// A logical action: its id and its command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionInfo {
    pub argv: Vec<String>,
}

#[derive(Debug, Default)]
pub struct History {
    /// Entry id -> its call (a successful one when any call succeeded).
    pub calls: HashMap<u64, Call>,
    pub actions: BTreeMap<u64, ActionInfo>,
    /// Successful changes, in trace order.
    pub changes: Vec<Change>,
    /// Path -> indexes into `changes` (as source or destination).
    by_path: HashMap<Vec<u8>, Vec<usize>>,
    /// Paths created by a successful `O_CREAT|O_EXCL` open: (seq, action, path).
    pub exclusive_creates: Vec<(u64, u64, Vec<u8>)>,
    /// Whether the trace carries the `action` field (else the fallback).
    pub has_action_field: bool,
}

use monitor_common::open_flags::{O_CREAT, O_EXCL};

fn bytes(v: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(b) = v[format!("{key}_b64")].as_str() {
        use base64::Engine as _;
        if let Ok(x) = base64::engine::general_purpose::STANDARD.decode(b) {
            return Some(x);
        }
    }
    v[key].as_str().map(|s| s.as_bytes().to_vec())
}

impl History {
    /// Reads a trace file (JSON lines; not verified: `abm verify` does that).
    pub fn load(trace: &Path) -> io::Result<History> {
        // Either trace form: the reader yields the canonical lines.
        let mut reader = crate::trace::TraceReader::open(trace)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let mut h = History::default();
        // pid -> action of its last successful exec (fallback).
        let mut by_pid: HashMap<u64, u64> = HashMap::new();
        let mut line = Vec::new();
        while let Some(next) = reader
            .next(&mut line)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
        {
            // A record cut short by a crash, or a damaged block, holds no
            // event to join with: the entries it would have named stay
            // unjoined (as with a trace that was never written).
            if !matches!(next, crate::trace::Next::Line) || line.trim_ascii().is_empty() {
                continue;
            }
            let i = reader.lines_read().saturating_sub(1);
            let v: Value = serde_json::from_slice(&line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{}: not JSON: {e}", trace.display(), i + 1),
                )
            })?;
            if v["type"] == "event" {
                h.event(&v, &mut by_pid);
            }
        }
        Ok(h)
    }

    fn event(&mut self, v: &Value, by_pid: &mut HashMap<u64, u64>) {
        let Some(seq) = v["seq"].as_u64() else { return };
        let pid = v["pid"].as_u64().unwrap_or(0);
        let op = v["op"].as_str().unwrap_or("");
        let result = v["result"].as_i64();
        let ok = result.is_some_and(|r| r >= 0);
        let action = if let Some(a) = v["action"].as_u64() {
            self.has_action_field = true;
            a
        } else if op == "exec" && ok {
            by_pid.insert(pid, seq);
            seq
        } else {
            by_pid.get(&pid).copied().unwrap_or(seq)
        };
        if op == "fork" && ok {
            if let (Some(child), Some(a)) = (result, by_pid.get(&pid).copied()) {
                by_pid.insert(child as u64, a);
            }
        }
        if op == "exec" && ok && action == seq {
            let argv = v["argv"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().unwrap_or("?").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            self.actions.insert(seq, ActionInfo { argv });
        }
        let enf = &v["enforcement"];
        let mut ids: Vec<u64> = enf["entries"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        if let Some(p) = enf["preserved"].as_array() {
            ids.extend(p.iter().filter_map(|e| e["id"].as_u64()));
        }
        let call = Call {
            seq,
            action,
            pid: pid as u32,
            result,
            errno: v["errno"].as_str().map(str::to_owned),
        };
        for id in ids {
            // A successful call wins over a refused attempt (BPF LSM retries).
            let keep_old = self
                .calls
                .get(&id)
                .is_some_and(|old| !old.failed() || call.failed());
            if !keep_old {
                self.calls.insert(id, call.clone());
            }
        }
        if !ok {
            return;
        }
        let flags = v["flags"].as_u64().unwrap_or(0);
        if let Some(path) = bytes(v, "path") {
            if matches!(
                op,
                "unlink" | "rmdir" | "rename" | "truncate" | "write" | "chmod" | "chown"
            ) {
                let path2 = bytes(v, "path2");
                let i = self.changes.len();
                self.by_path.entry(path.clone()).or_default().push(i);
                if let Some(p2) = &path2 {
                    self.by_path.entry(p2.clone()).or_default().push(i);
                }
                self.changes.push(Change {
                    seq,
                    action,
                    op: op.to_owned(),
                    path: path.clone(),
                    path2,
                });
            }
            let is_open = v["syscall"].as_str().is_some_and(|s| s.starts_with("open"));
            if is_open && flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                self.exclusive_creates.push((seq, action, path));
            }
        }
    }

    /// The action's command line, for messages.
    pub fn describe(&self, action: u64) -> String {
        match self.actions.get(&action) {
            Some(a) if !a.argv.is_empty() => a.argv.join(" "),
            _ => format!("record {action}"),
        }
    }

    /// Successful changes to `path` (as source or destination) after `seq`
    /// by actions for which `foreign` is true.
    pub fn later_changes<'a>(
        &'a self,
        path: &'a [u8],
        seq: u64,
        foreign: impl Fn(u64) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Change> + 'a {
        self.by_path
            .get(path)
            .into_iter()
            .flatten()
            .map(|i| &self.changes[*i])
            .filter(move |c| c.seq > seq && foreign(c.action))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(lines: &[&str]) -> History {
        let dir = std::env::temp_dir().join(format!(
            "abm-history-{}-{}",
            std::process::id(),
            lines.len()
        ));
        // Every line ends with a newline, as abm writes them (an
        // unterminated last line is a record cut short by a crash).
        std::fs::write(&dir, lines.join("\n") + "\n").unwrap();
        let h = History::load(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        h
    }

    #[test]
    fn entries_join_their_calls_and_failed_calls_are_void() {
        let h = load(&[
            r#"{"type":"header","seq":0}"#,
            r#"{"type":"event","seq":1,"op":"exec","pid":10,"result":0,"argv":["sh","-c","x"]}"#,
            r#"{"type":"event","seq":2,"op":"fork","pid":10,"result":11}"#,
            r#"{"type":"event","seq":3,"op":"exec","pid":11,"result":0,"argv":["mv","a","b"]}"#,
            r#"{"type":"event","seq":4,"op":"rename","syscall":"renameat2","pid":11,"path":"/w/a","path2":"/w/b","flags":1,"result":-17,"errno":"EEXIST","enforcement":{"entries":[1]}}"#,
            r#"{"type":"event","seq":5,"op":"rename","syscall":"renameat","pid":11,"path":"/w/a","path2":"/w/b","result":0,"enforcement":{"entries":[2,3]}}"#,
            r#"{"type":"event","seq":6,"op":"fork","pid":10,"result":12}"#,
            r#"{"type":"event","seq":7,"op":"unlink","pid":12,"path":"/w/b","result":0,"enforcement":{"entries":[4]}}"#,
        ]);
        assert!(!h.has_action_field);
        assert!(h.calls[&1].failed(), "EEXIST attempt is void");
        assert_eq!(h.calls[&1].errno.as_deref(), Some("EEXIST"));
        assert_eq!(h.calls[&2].seq, 5);
        assert_eq!(h.calls[&2].action, 3, "mv's exec");
        // A forked child without exec belongs to its parent's action.
        assert_eq!(h.calls[&4].action, 1);
        assert_eq!(h.describe(3), "mv a b");
        let later: Vec<u64> = h
            .later_changes(b"/w/b", 5, |a| a != 3)
            .map(|c| c.seq)
            .collect();
        assert_eq!(later, vec![7]);
        assert_eq!(h.changes.len(), 2, "only successful changes");
    }

    #[test]
    fn the_action_field_wins_and_a_successful_retry_validates_lsm_entries() {
        let h = load(&[
            r#"{"type":"event","seq":3,"op":"exec","pid":11,"result":0,"argv":["git","clean","-fdx"],"action":3}"#,
            r#"{"type":"event","seq":4,"op":"exec","pid":12,"result":0,"argv":["git","rm"],"action":3}"#,
            r#"{"type":"event","seq":5,"op":"unlink","pid":12,"path":"/w/x","result":-1,"errno":"EPERM","enforcement":{"decision":"preserve_pending","preserved":[{"id":7}]},"action":3}"#,
            r#"{"type":"event","seq":6,"op":"unlink","pid":12,"path":"/w/x","result":0,"enforcement":{"decision":"allowed_once","preserved":[{"id":7}]},"action":3}"#,
            r#"{"type":"event","seq":8,"op":"write","syscall":"openat","pid":12,"path":"/w/t","flags":194,"result":4,"action":3}"#,
        ]);
        assert!(h.has_action_field);
        assert_eq!(h.calls[&7].seq, 6);
        assert!(!h.calls[&7].failed());
        assert_eq!(h.calls[&7].action, 3);
        assert_eq!(h.exclusive_creates, vec![(8, 3, b"/w/t".to_vec())]);
        assert!(
            !h.actions.contains_key(&4),
            "git's child is not an action of its own"
        );
    }
}
