//! OCSF export: trace records and live-stream lines as events of the Open
//! Cybersecurity Schema Framework, version [`OCSF_VERSION`], one JSON object
//! per record.
//!
//! - file operations become File System Activity (class 1001),
//! - `exec`, `fork` and `exit` become Process Activity (class 1007),
//! - loss records, notes, file records without any path and the daemon
//!   stream's other lines become Base Events (class 0, activity Other) whose
//!   `unmapped` holds the record;
//! - the header is not an event: it gives every later event its host,
//!   kernel, product version and container; the seal is left out.
//!
//! abm's fields without an OCSF attribute (verdict, enforcement, identities,
//! flags, raw arguments...) are kept under their trace names in
//! `unmapped`. The mapping table is docs/ocsf.md. [`Mapper`] is used by
//! both `abm trace cat --format ocsf` and `abm tail --format ocsf`.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::record::{Action, Op, ResultNote, Treatment};

/// The OCSF schema version the events follow (`metadata.version`).
pub const OCSF_VERSION: &str = "1.3.0";

/// Process command lines remembered for `actor.process.cmd_line`; the
/// table is emptied when it grows past this.
const MAX_KNOWN_PROCESSES: usize = 65_536;

/// A record that cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum OcsfError {
    #[error("record {seq}: not a JSON object")]
    NotObject { seq: String },
    #[error("record {seq}: not an event record abm knows: {source}")]
    Event {
        seq: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("record {seq}: time {time:?} is not RFC 3339 UTC: {reason}")]
    Time {
        seq: String,
        time: String,
        reason: humantime::TimestampError,
    },
}

/// What a record does not say about itself: where it was recorded and by
/// which abm. `abm trace cat` learns it from the trace's header; `abm tail`
/// from the daemon and the host it runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// Host name (`device.hostname`/`device.name`).
    pub host: String,
    /// Kernel release (`device.os.version`).
    pub kernel: String,
    /// abm's version (`metadata.product.version`).
    pub product_version: String,
    /// The container a daemon target watches (`container_id` of the
    /// header's `extra`): `actor.process.container`.
    pub container: Option<String>,
    /// The trace file's name (`metadata.log_name`).
    pub log_name: Option<String>,
}

/// Maps records to OCSF events, in order. It remembers each process's
/// command line from its `exec` (and its parent's through `fork`) so that
/// later events of that process name it in `actor.process.cmd_line`.
#[derive(Debug, Default)]
pub struct Mapper {
    ctx: Context,
    cmd_lines: HashMap<u32, String>,
    /// The last record time seen (ms since the epoch, RFC 3339 text): loss
    /// records and notes have none of their own.
    last_time: Option<(i64, String)>,
}

impl Mapper {
    pub fn new(ctx: Context) -> Mapper {
        Mapper {
            ctx,
            ..Mapper::default()
        }
    }

    /// One record (a canonical trace line, or a line of the daemon's live
    /// stream) as an OCSF event; `None` for the header and the seal.
    pub fn map(&mut self, rec: &Value) -> Result<Option<Value>, OcsfError> {
        let seq_text = rec
            .get("seq")
            .map_or_else(|| "without seq".to_owned(), Value::to_string);
        let Some(obj) = rec.as_object() else {
            return Err(OcsfError::NotObject { seq: seq_text });
        };
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "header" => {
                self.header(obj);
                Ok(None)
            }
            "seal" => Ok(None),
            "event" => {
                let mut body = obj.clone();
                for k in ["type", "seq", "prev", "hash"] {
                    body.remove(k);
                }
                let a: Action = serde_json::from_value(Value::Object(body)).map_err(|source| {
                    OcsfError::Event {
                        seq: seq_text.clone(),
                        source,
                    }
                })?;
                let chain = Chain::of(obj);
                self.advance_time(&a.time, &seq_text)?;
                let v = self.event(&chain, &a);
                self.remember(&a);
                Ok(Some(v))
            }
            _ => {
                if let Some(t) = obj.get("time").and_then(Value::as_str) {
                    self.advance_time(t, &seq_text)?;
                }
                Ok(Some(self.base_event(obj)))
            }
        }
    }

    fn header(&mut self, h: &Map<String, Value>) {
        let s = |k: &str| h.get(k).and_then(Value::as_str).map(str::to_owned);
        if let Some(v) = s("host") {
            self.ctx.host = v;
        }
        if let Some(v) = s("kernel") {
            self.ctx.kernel = v;
        }
        if let Some(v) = s("monitor_version") {
            self.ctx.product_version = v;
        }
        if let Some(c) = h
            .get("extra")
            .and_then(|e| e.get("container_id"))
            .and_then(Value::as_str)
        {
            self.ctx.container = Some(c.to_owned());
        }
        if let Some(t) = s("start_time") {
            if let Ok(ms) = epoch_ms(&t) {
                self.last_time = Some((ms, t));
            }
        }
    }

    fn advance_time(&mut self, t: &str, seq: &str) -> Result<(), OcsfError> {
        if t.is_empty() {
            return Ok(());
        }
        let ms = epoch_ms(t).map_err(|reason| OcsfError::Time {
            seq: seq.to_owned(),
            time: t.to_owned(),
            reason,
        })?;
        self.last_time = Some((ms, t.to_owned()));
        Ok(())
    }

    /// Learns command lines from execs and forks; forgets exited processes.
    fn remember(&mut self, a: &Action) {
        if self.cmd_lines.len() > MAX_KNOWN_PROCESSES {
            self.cmd_lines.clear();
        }
        match a.op {
            Some(Op::Exec) if a.succeeded() => {
                if let Some(argv) = &a.argv {
                    self.cmd_lines.insert(a.pid, argv.join(" "));
                }
            }
            Some(Op::Fork) => {
                let child = a.result.and_then(|r| u32::try_from(r).ok());
                if let (Some(child), Some(c)) = (child, self.cmd_lines.get(&a.pid).cloned()) {
                    self.cmd_lines.insert(child, c);
                }
            }
            Some(Op::Exit) => {
                self.cmd_lines.remove(&a.pid);
            }
            _ => {}
        }
    }

    fn metadata(&self, chain: &Chain, profiles: &[&str]) -> Value {
        let mut m = json!({
            "version": OCSF_VERSION,
            "product": {
                "name": "abm",
                "vendor_name": "abm",
                "version": self.ctx.product_version,
            },
            "log_provider": "abm",
            "profiles": profiles,
        });
        if let Some(seq) = chain.seq {
            m["sequence"] = json!(seq);
        }
        if let Some(h) = &chain.hash {
            m["uid"] = json!(h);
        }
        if let Some(l) = &self.ctx.log_name {
            m["log_name"] = json!(l);
        }
        m
    }

    fn device(&self) -> Value {
        let mut d = json!({ "type_id": 0, "type": "Unknown" });
        if !self.ctx.host.is_empty() {
            d["name"] = json!(self.ctx.host);
            if is_hostname(&self.ctx.host) {
                d["hostname"] = json!(self.ctx.host);
            }
        }
        let mut os = json!({ "name": "Linux", "type_id": 200, "type": "Linux" });
        if !self.ctx.kernel.is_empty() {
            os["version"] = json!(self.ctx.kernel);
        }
        d["os"] = os;
        d
    }

    fn container(&self) -> Option<Value> {
        let c = self.ctx.container.as_ref()?;
        // A full or abbreviated id is a uid; anything else names it.
        let is_id = c.len() >= 12 && c.bytes().all(|b| b.is_ascii_hexdigit());
        Some(if is_id {
            json!({ "uid": c })
        } else {
            json!({ "name": c })
        })
    }

    /// The acting process, as it was when it made the call.
    fn actor_process(&self, a: &Action) -> Value {
        let mut p = json!({
            "pid": a.pid,
            "tid": a.tid,
            "name": a.comm,
            "user": { "uid": a.uid.to_string() },
        });
        if let Some(c) = self.cmd_lines.get(&a.pid) {
            p["cmd_line"] = json!(c);
        }
        // An exec's `exe` is already the new program's (`process.file`).
        if let Some(exe) = a
            .exe
            .as_deref()
            .filter(|e| !e.is_empty() && a.op != Some(Op::Exec))
        {
            p["file"] = file_obj(exe, FileType::Regular, None);
        }
        p["parent_process"] = self.parent(a.ppid);
        if let Some(c) = self.container() {
            p["container"] = c;
        }
        p
    }

    fn parent(&self, ppid: u32) -> Value {
        let mut pp = json!({ "pid": ppid });
        if let Some(c) = self.cmd_lines.get(&ppid) {
            pp["cmd_line"] = json!(c);
        }
        pp
    }

    fn event(&self, chain: &Chain, a: &Action) -> Value {
        let Some(op) = a.op else {
            return self.base_event(&action_map(a, chain));
        };
        let mapped = match op {
            Op::Exec | Op::Fork | Op::Exit => self.process_activity(op, a),
            _ => match file_activity(op, a) {
                Some(f) => f,
                None => return self.base_event(&action_map(a, chain)),
            },
        };
        let Mapped {
            class_uid,
            class_name,
            activity_id,
            activity_name,
            body,
            keep,
        } = mapped;
        // An activity OCSF has no name for is named by abm's operation.
        let name = if activity_id == 99 {
            op.name()
        } else {
            activity_name
        };
        let decision = decision(a);
        let mut profiles = vec!["datetime"];
        if decision.is_some() {
            profiles.push("security_control");
        }
        if self.ctx.container.is_some() {
            profiles.push("container");
        }
        let (severity_id, severity) = severity(a.verdict.as_ref().map(|v| v.treatment));
        let (time_ms, time_dt) = self.time_of(a);
        let mut e = json!({
            "metadata": self.metadata(chain, &profiles),
            "class_uid": class_uid,
            "class_name": class_name,
            "category_uid": 1,
            "category_name": "System Activity",
            "activity_id": activity_id,
            "activity_name": name,
            "type_uid": class_uid * 100 + activity_id,
            "type_name": format!("{class_name}: {activity_name}"),
            "time": time_ms,
            "time_dt": time_dt,
            "severity_id": severity_id,
            "severity": severity,
            "device": self.device(),
            "actor": {
                "process": self.actor_process(a),
                "user": { "uid": a.uid.to_string() },
            },
            "message": message(op, a),
        });
        let o = e.as_object_mut().expect("a JSON object");
        o.extend(body);
        if op != Op::Exit {
            let (status_id, status) = match a.result {
                Some(r) if r >= 0 => (1, "Success"),
                Some(_) => (2, "Failure"),
                None => (0, "Unknown"),
            };
            o.insert("status_id".into(), json!(status_id));
            o.insert("status".into(), json!(status));
            if a.result.is_some_and(|r| r < 0) {
                let code = a
                    .errno
                    .clone()
                    .unwrap_or_else(|| a.result.unwrap_or(0).to_string());
                o.insert("status_code".into(), json!(code));
            }
        }
        if let Some(n) = a.result_note {
            o.insert("status_detail".into(), json!(n.name()));
        }
        if let Some(d) = decision {
            o.insert("action_id".into(), json!(d.action_id));
            o.insert("action".into(), json!(d.action));
            o.insert("disposition_id".into(), json!(d.disposition_id));
            o.insert("disposition".into(), json!(d.disposition));
        }
        let mut unmapped = action_fields(a);
        for k in MAPPED_FIELDS.iter().filter(|k| !keep.contains(k)) {
            unmapped.remove(*k);
        }
        o.insert("unmapped".into(), Value::Object(unmapped));
        e
    }

    fn time_of(&self, a: &Action) -> (i64, String) {
        match epoch_ms(&a.time) {
            Ok(ms) => (ms, a.time.clone()),
            Err(_) => self.last_time.clone().unwrap_or_default(),
        }
    }

    fn process_activity(&self, op: Op, a: &Action) -> Mapped {
        let mut body = Map::new();
        let (activity_id, activity_name) = match op {
            Op::Exec => {
                let mut p = json!({
                    "pid": a.pid,
                    "tid": a.tid,
                    "user": { "uid": a.uid.to_string() },
                    "parent_process": self.parent(a.ppid),
                });
                if let Some(path) = a.path.as_deref() {
                    p["name"] = json!(base_name(path));
                    p["file"] = file_obj(path, FileType::Regular, a.dev.zip(a.ino));
                }
                if let Some(argv) = &a.argv {
                    p["cmd_line"] = json!(argv.join(" "));
                }
                if let Some(c) = self.container() {
                    p["container"] = c;
                }
                body.insert("process".into(), p);
                (1, "Launch")
            }
            Op::Fork => {
                // The child; a fork that failed made none, and the process
                // is the one that tried.
                let p = match a.result.and_then(|r| u32::try_from(r).ok()) {
                    Some(child) => {
                        let mut p = json!({
                            "pid": child,
                            "name": a.comm,
                            "user": { "uid": a.uid.to_string() },
                            "parent_process": { "pid": a.pid },
                        });
                        if let Some(c) = self.cmd_lines.get(&a.pid) {
                            p["cmd_line"] = json!(c);
                        }
                        if let Some(c) = self.container() {
                            p["container"] = c;
                        }
                        p
                    }
                    None => self.actor_process(a),
                };
                body.insert("process".into(), p);
                (99, "Other")
            }
            _ => {
                // `result` is the wait status: the exit code when the
                // process exited, a signal otherwise (in `unmapped`).
                if let Some(status) = a.result.filter(|s| s & 0x7f == 0) {
                    body.insert("exit_code".into(), json!((status >> 8) & 0xff));
                }
                body.insert("process".into(), self.actor_process(a));
                (2, "Terminate")
            }
        };
        Mapped {
            class_uid: 1007,
            class_name: "Process Activity",
            activity_id,
            activity_name,
            body,
            // A fork's child pid and an exit's wait status stay as recorded.
            keep: if op == Op::Exec { &[] } else { &["result"] },
        }
    }

    /// A record that is not file or process activity: a Base Event (class
    /// 0, activity Other) carrying the record in `unmapped`.
    fn base_event(&self, rec: &Map<String, Value>) -> Value {
        let chain = Chain::of(rec);
        let kind = rec.get("type").and_then(Value::as_str).unwrap_or("record");
        let (activity_name, message, severity_id) = match kind {
            "loss" => (
                "loss".to_owned(),
                format!(
                    "{} event(s) lost: {}",
                    rec.get("count").and_then(Value::as_u64).unwrap_or(0),
                    rec.get("cause").and_then(Value::as_str).unwrap_or("?")
                ),
                3,
            ),
            "lagged" => (
                "lagged".to_owned(),
                format!(
                    "the live stream skipped {} line(s)",
                    rec.get("missed").and_then(Value::as_u64).unwrap_or(0)
                ),
                3,
            ),
            "note" => {
                let k = rec.get("kind").and_then(Value::as_str).unwrap_or("?");
                let body = rec.get("body");
                let why = body
                    .and_then(|b| b.get("reason").or_else(|| b.get("message")))
                    .and_then(Value::as_str)
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                (format!("note: {k}"), format!("note {k}{why}"), 1)
            }
            "event" => {
                let op = rec.get("op").and_then(Value::as_str).unwrap_or("?");
                (
                    format!("event: {op}"),
                    format!(
                        "{op} by {}[{}] (no path to map to a file)",
                        rec.get("comm").and_then(Value::as_str).unwrap_or("?"),
                        rec.get("pid").unwrap_or(&Value::Null)
                    ),
                    1,
                )
            }
            other => (other.to_owned(), format!("abm {other} record"), 1),
        };
        let (time_ms, time_dt) = self.last_time.clone().unwrap_or_default();
        let mut unmapped = rec.clone();
        for k in ["seq", "prev", "hash"] {
            unmapped.remove(k);
        }
        if !self.ctx.host.is_empty() {
            unmapped.insert("host".into(), json!(self.ctx.host));
        }
        let (time_ms, time_dt) = match rec.get("time").and_then(Value::as_str) {
            Some(t) => match epoch_ms(t) {
                Ok(ms) => (ms, t.to_owned()),
                Err(_) => (time_ms, time_dt),
            },
            None => (time_ms, time_dt),
        };
        let mut e = json!({
            "metadata": self.metadata(&chain, &["datetime"]),
            "class_uid": 0,
            "class_name": "Base Event",
            "category_uid": 0,
            "category_name": "Uncategorized",
            "activity_id": 99,
            "activity_name": activity_name,
            "type_uid": 99,
            "type_name": "Base Event: Other",
            "time": time_ms,
            "severity_id": severity_id,
            "severity": if severity_id == 3 { "Medium" } else { "Informational" },
            "message": message,
            "unmapped": unmapped,
        });
        if !time_dt.is_empty() {
            e["time_dt"] = json!(time_dt);
        }
        e
    }
}

/// Record fields that have an OCSF attribute and are not repeated in
/// `unmapped`.
const MAPPED_FIELDS: [&str; 12] = [
    "time",
    "pid",
    "tid",
    "ppid",
    "uid",
    "comm",
    "exe",
    "path",
    "path2",
    "result",
    "errno",
    "result_note",
];

/// The chain position of a record: `seq` and, in a trace, its digest.
struct Chain {
    seq: Option<u64>,
    hash: Option<String>,
}

impl Chain {
    fn of(rec: &Map<String, Value>) -> Chain {
        Chain {
            seq: rec.get("seq").and_then(Value::as_u64),
            hash: rec.get("hash").and_then(Value::as_str).map(str::to_owned),
        }
    }
}

struct Mapped {
    class_uid: u32,
    class_name: &'static str,
    activity_id: u32,
    activity_name: &'static str,
    /// The class's own attributes (`file`, `process`, ...).
    body: Map<String, Value>,
    /// Fields of [`MAPPED_FIELDS`] that stay in `unmapped` too.
    keep: &'static [&'static str],
}

#[derive(Clone, Copy)]
enum FileType {
    Unknown,
    Regular,
    Folder,
    Symlink,
}

impl FileType {
    fn id(self) -> (u32, &'static str) {
        match self {
            FileType::Unknown => (0, "Unknown"),
            FileType::Regular => (1, "Regular File"),
            FileType::Folder => (2, "Folder"),
            FileType::Symlink => (7, "Symbolic Link"),
        }
    }
}

/// File System Activity for a file operation; `None` when the record
/// names no file at all.
fn file_activity(op: Op, a: &Action) -> Option<Mapped> {
    let (activity_id, activity_name) = match op {
        Op::Unlink | Op::Rmdir => (4, "Delete"),
        Op::Rename => (5, "Rename"),
        Op::Chmod | Op::Chown => (7, "Set Security"),
        Op::Truncate | Op::Write => (3, "Update"),
        Op::Link | Op::Symlink => (1, "Create"),
        Op::Utimes | Op::Xattr | Op::Setflags => (6, "Set Attributes"),
        Op::Read => (2, "Read"),
        Op::CompatSyscall => (99, "Other"),
        Op::IoUringSetup | Op::Exec | Op::Fork | Op::Exit => return None,
    };
    let path = a.path.as_deref().or(a.raw_path.as_deref())?;
    let kind = match (op, a.measured.as_ref().map(|m| m.object)) {
        (Op::Rmdir, _) | (_, Some(crate::record::ObjectKind::Directory)) => FileType::Folder,
        _ => FileType::Unknown,
    };
    let mut body = Map::new();
    body.insert("file".into(), file_obj(path, kind, a.dev.zip(a.ino)));
    // The name the call makes: a rename's new name (the same object), a
    // link's or symlink's new entry.
    if let Some(p2) = a.path2.as_deref() {
        let (kind2, id2) = match op {
            Op::Symlink => (FileType::Symlink, None),
            _ => (kind, a.dev.zip(a.ino)),
        };
        body.insert("file_result".into(), file_obj(p2, kind2, id2));
    }
    Some(Mapped {
        class_uid: 1001,
        class_name: "File System Activity",
        activity_id,
        activity_name,
        body,
        keep: &[],
    })
}

/// An OCSF `file` object for a path; `uid` is `DEV:INO` when the record
/// has the object's identity.
fn file_obj(path: &str, kind: FileType, identity: Option<(u64, u64)>) -> Value {
    let (type_id, type_name) = kind.id();
    let mut f = json!({
        "name": base_name(path),
        "path": path,
        "type_id": type_id,
        "type": type_name,
    });
    if let Some(parent) = parent_folder(path) {
        f["parent_folder"] = json!(parent);
    }
    if let Some((dev, ino)) = identity {
        f["uid"] = json!(format!("{dev}:{ino}"));
    }
    f
}

fn base_name(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() {
        return if path.is_empty() { "" } else { "/" };
    }
    t.rsplit('/').next().unwrap_or(t)
}

fn parent_folder(path: &str) -> Option<&str> {
    let t = path.trim_end_matches('/');
    let i = t.rfind('/')?;
    Some(if i == 0 { "/" } else { &t[..i] })
}

/// What enforcement decided about the call, when it did.
#[derive(Debug, PartialEq, Eq)]
struct Decision {
    action_id: u32,
    action: &'static str,
    disposition_id: u32,
    disposition: &'static str,
}

const ALLOWED: Decision = Decision {
    action_id: 1,
    action: "Allowed",
    disposition_id: 1,
    disposition: "Allowed",
};
const BLOCKED: Decision = Decision {
    action_id: 2,
    action: "Denied",
    disposition_id: 2,
    disposition: "Blocked",
};

fn decision(a: &Action) -> Option<Decision> {
    let d = a.enforcement.as_ref().map(|e| e.decision.name());
    match d {
        Some("denied" | "timeout" | "preserve_pending") => return Some(BLOCKED),
        Some("approved") => {
            return Some(Decision {
                disposition_id: 8,
                disposition: "Approved",
                ..ALLOWED
            })
        }
        Some("preserved") => {
            return Some(Decision {
                disposition_id: 99,
                disposition: "Preserved",
                ..ALLOWED
            })
        }
        Some("allowed_once" | "allowed") => return Some(ALLOWED),
        _ => {}
    }
    match a.result_note {
        Some(ResultNote::DeniedBySeccomp | ResultNote::DeniedByLsm) => Some(BLOCKED),
        Some(ResultNote::AllowedByLsm) => Some(ALLOWED),
        _ => None,
    }
}

/// `severity_id` from the verdict's treatment.
fn severity(t: Option<Treatment>) -> (u32, &'static str) {
    match t {
        None | Some(Treatment::Accept) => (1, "Informational"),
        Some(Treatment::Audit) => (2, "Low"),
        Some(Treatment::Confirm | Treatment::Preserve) => (3, "Medium"),
        Some(Treatment::Deny) => (4, "High"),
    }
}

fn message(op: Op, a: &Action) -> String {
    let what = match op {
        Op::Exec => a.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default(),
        Op::Fork => format!("child {}", a.result.unwrap_or(0)),
        Op::Exit => format!("status {}", a.result.unwrap_or(0)),
        _ => match (&a.path, &a.path2) {
            (Some(p), Some(p2)) => format!("{p} -> {p2}"),
            (Some(p), None) => p.clone(),
            _ => a.raw_path.clone().unwrap_or_default(),
        },
    };
    let mut m = format!("{}[{}] {op} {what}", a.comm, a.pid);
    if let Some(e) = &a.errno {
        m.push_str(&format!(" = {e}"));
    }
    if let Some(v) = &a.verdict {
        let t = serde_json::to_value(v.treatment).unwrap_or_default();
        m.push_str(&format!(
            ": {} (rule {}, {})",
            v.reason,
            v.rule,
            t.as_str().unwrap_or("?")
        ));
    }
    m
}

/// The record's fields as the trace writes them.
fn action_fields(a: &Action) -> Map<String, Value> {
    match serde_json::to_value(a) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// An event record as a map, with its chain position, for a Base Event.
fn action_map(a: &Action, chain: &Chain) -> Map<String, Value> {
    let mut m = action_fields(a);
    m.insert("type".into(), json!("event"));
    if let Some(s) = chain.seq {
        m.insert("seq".into(), json!(s));
    }
    if let Some(h) = &chain.hash {
        m.insert("hash".into(), json!(h));
    }
    m
}

/// Milliseconds since the epoch of an RFC 3339 UTC time.
fn epoch_ms(t: &str) -> Result<i64, humantime::TimestampError> {
    let st = humantime::parse_rfc3339(t)?;
    match st.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => Ok(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        Err(e) => Ok(-i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX)),
    }
}

/// OCSF's `hostname_t`: dot-separated labels of letters, digits and inner
/// hyphens.
fn is_hostname(h: &str) -> bool {
    !h.is_empty()
        && h.split('.').all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Value {
        json!({"type":"header","seq":0,"prev":"0","chain":"sha256","schema":1,
            "monitor_version":"0.1.0","host":"devbox","kernel":"6.1.0","backends":[],
            "policy_digest":"x","command":[],"workspace":"/w",
            "start_time":"2025-06-01T12:00:00.000000000Z","extra":{},"hash":"h0"})
    }

    fn line(a: &Action, seq: u64) -> Value {
        let mut v = serde_json::to_value(a).unwrap();
        v["type"] = json!("event");
        v["seq"] = json!(seq);
        v["hash"] = json!(format!("h{seq}"));
        v
    }

    fn mapper() -> Mapper {
        let mut m = Mapper::new(Context::default());
        assert!(m.map(&header()).unwrap().is_none());
        m
    }

    #[test]
    fn a_deletion_is_file_system_activity_delete() {
        let a = crate::trace::sample_action(0);
        let e = mapper().map(&line(&a, 5)).unwrap().unwrap();
        assert_eq!(e["class_uid"], 1001);
        assert_eq!(e["category_uid"], 1);
        assert_eq!(e["activity_id"], 4);
        assert_eq!(e["type_uid"], 100104);
        assert_eq!(e["time"], 1_748_779_200_123_i64);
        assert_eq!(e["time_dt"], "2025-06-01T12:00:00.123456789Z");
        assert_eq!(e["file"]["path"], "/home/dev/project/src/module_0/file.rs");
        assert_eq!(e["file"]["name"], "file.rs");
        assert_eq!(e["file"]["parent_folder"], "/home/dev/project/src/module_0");
        assert_eq!(e["actor"]["process"]["pid"], 4242);
        assert_eq!(e["actor"]["process"]["parent_process"]["pid"], 4200);
        assert_eq!(e["actor"]["user"]["uid"], "1000");
        assert_eq!(e["device"]["hostname"], "devbox");
        assert_eq!(e["device"]["os"]["version"], "6.1.0");
        assert_eq!(e["metadata"]["version"], OCSF_VERSION);
        assert_eq!(e["metadata"]["sequence"], 5);
        assert_eq!(e["metadata"]["uid"], "h5");
        assert_eq!(e["metadata"]["product"]["version"], "0.1.0");
        assert_eq!(e["severity_id"], 2, "audit is Low");
        assert_eq!(e["status_id"], 1);
        assert_eq!(e["unmapped"]["verdict"]["rule"], "workspace-delete");
        assert_eq!(e["unmapped"]["op"], "unlink");
        assert!(e["unmapped"].get("path").is_none(), "{e:#}");
        // No enforcement decided: no security control attributes.
        assert!(e.get("disposition_id").is_none());
        assert_eq!(e["metadata"]["profiles"], json!(["datetime"]));
    }

    #[test]
    fn ops_map_to_activities() {
        let cases = [
            (Op::Unlink, 1001, 4),
            (Op::Rmdir, 1001, 4),
            (Op::Rename, 1001, 5),
            (Op::Chmod, 1001, 7),
            (Op::Chown, 1001, 7),
            (Op::Truncate, 1001, 3),
            (Op::Write, 1001, 3),
            (Op::Link, 1001, 1),
            (Op::Symlink, 1001, 1),
            (Op::Utimes, 1001, 6),
            (Op::Xattr, 1001, 6),
            (Op::Setflags, 1001, 6),
            (Op::Read, 1001, 2),
            (Op::CompatSyscall, 1001, 99),
            (Op::IoUringSetup, 0, 99),
            (Op::Exec, 1007, 1),
            (Op::Fork, 1007, 99),
            (Op::Exit, 1007, 2),
        ];
        assert_eq!(cases.len(), Op::ALL.len(), "every op is mapped");
        for (op, class, activity) in cases {
            let mut a = crate::trace::sample_action(1);
            a.op = Some(op);
            a.path2 = Some("/home/dev/project/b".into());
            a.argv = Some(vec!["rm".into(), "-f".into(), "x".into()]);
            let e = mapper().map(&line(&a, 1)).unwrap().unwrap();
            assert_eq!(
                (e["class_uid"].clone(), e["activity_id"].clone()),
                (json!(class), json!(activity)),
                "{op}"
            );
            assert_eq!(e["type_uid"], class * 100 + activity, "{op}");
        }
    }

    #[test]
    fn rmdir_is_a_folder_and_rename_names_the_result() {
        let mut a = crate::trace::sample_action(0);
        a.op = Some(Op::Rmdir);
        let e = mapper().map(&line(&a, 1)).unwrap().unwrap();
        assert_eq!(e["file"]["type_id"], 2);
        a.op = Some(Op::Rename);
        a.path2 = Some("/w/new".into());
        a.dev = Some(8);
        a.ino = Some(42);
        let e = mapper().map(&line(&a, 2)).unwrap().unwrap();
        assert_eq!(e["file"]["uid"], "8:42");
        assert_eq!(e["file_result"]["path"], "/w/new");
        assert_eq!(e["file_result"]["uid"], "8:42");
        assert_eq!(e["unmapped"]["ino"], 42);
    }

    #[test]
    fn an_exec_launches_and_later_events_name_the_command_line() {
        let mut m = mapper();
        let mut x = crate::trace::sample_action(0);
        x.op = Some(Op::Exec);
        x.syscall = "execve".into();
        x.comm = "sh".into();
        x.path = Some("/usr/bin/rm".into());
        x.argv = Some(vec!["rm".into(), "-f".into(), "a b".into()]);
        x.verdict = None;
        let e = m.map(&line(&x, 1)).unwrap().unwrap();
        assert_eq!(e["class_uid"], 1007);
        assert_eq!(e["activity_name"], "Launch");
        assert_eq!(e["process"]["name"], "rm");
        assert_eq!(e["process"]["cmd_line"], "rm -f a b");
        assert_eq!(e["process"]["file"]["path"], "/usr/bin/rm");
        assert_eq!(e["actor"]["process"]["name"], "sh");
        assert!(e["actor"]["process"].get("cmd_line").is_none());
        assert!(e["actor"]["process"].get("file").is_none());
        assert_eq!(e["unmapped"]["argv"], json!(["rm", "-f", "a b"]));
        assert_eq!(e["severity_id"], 1);
        let u = crate::trace::sample_action(0);
        let e = m.map(&line(&u, 2)).unwrap().unwrap();
        assert_eq!(e["actor"]["process"]["cmd_line"], "rm -f a b");
        let mut exit = crate::trace::sample_action(0);
        exit.op = Some(Op::Exit);
        exit.result = Some(3 << 8);
        let e = m.map(&line(&exit, 3)).unwrap().unwrap();
        assert_eq!(e["activity_id"], 2);
        assert_eq!(e["exit_code"], 3);
        let e = m.map(&line(&u, 4)).unwrap().unwrap();
        assert!(
            e["actor"]["process"].get("cmd_line").is_none(),
            "forgotten at exit"
        );
        let mut fork = crate::trace::sample_action(0);
        fork.op = Some(Op::Fork);
        fork.result = Some(4300);
        let e = m.map(&line(&fork, 5)).unwrap().unwrap();
        assert_eq!(e["activity_name"], "fork");
        assert_eq!(e["type_name"], "Process Activity: Other");
        assert_eq!(e["process"]["pid"], 4300);
        assert_eq!(e["process"]["parent_process"]["pid"], 4242);
        assert_eq!(e["unmapped"]["result"], 4300, "the child pid stays");
        fork.result = Some(-11);
        let e = m.map(&line(&fork, 6)).unwrap().unwrap();
        assert_eq!(
            e["process"]["pid"], 4242,
            "no child: the process that tried"
        );
        assert_eq!(e["status_id"], 2);
    }

    #[test]
    fn a_refused_call_is_blocked_and_a_failure() {
        let mut a = crate::trace::sample_action(0);
        a.result = Some(-1);
        a.errno = Some("EPERM".into());
        a.result_note = Some(ResultNote::DeniedBySeccomp);
        a.verdict.as_mut().unwrap().treatment = Treatment::Deny;
        a.enforcement =
            serde_json::from_value(json!({"backend":"seccomp","decision":"denied","rule":"r"}))
                .unwrap();
        let e = mapper().map(&line(&a, 1)).unwrap().unwrap();
        assert_eq!(e["disposition_id"], 2);
        assert_eq!(e["disposition"], "Blocked");
        assert_eq!(e["action_id"], 2);
        assert_eq!(e["status_id"], 2);
        assert_eq!(e["status_code"], "EPERM");
        assert_eq!(e["status_detail"], "denied_by_seccomp");
        assert_eq!(e["severity_id"], 4);
        assert_eq!(
            e["metadata"]["profiles"],
            json!(["datetime", "security_control"])
        );
        assert_eq!(e["unmapped"]["enforcement"]["decision"], "denied");
        a.enforcement =
            serde_json::from_value(json!({"backend":"seccomp","decision":"approved"})).unwrap();
        a.result_note = None;
        a.result = Some(0);
        let e = mapper().map(&line(&a, 1)).unwrap().unwrap();
        assert_eq!(
            (e["action_id"].clone(), e["disposition_id"].clone()),
            (json!(1), json!(8))
        );
    }

    #[test]
    fn losses_and_notes_are_base_events_at_the_last_time_seen() {
        let mut m = mapper();
        m.map(&line(&crate::trace::sample_action(0), 1)).unwrap();
        let loss = json!({"type":"loss","seq":2,"prev":"h1","cause":"ringbuf_full","count":12,
            "cpu":1,"window_start_ns":1,"window_end_ns":2,"hash":"h2"});
        let e = m.map(&loss).unwrap().unwrap();
        assert_eq!(e["class_uid"], 0);
        assert_eq!(e["activity_id"], 99);
        assert_eq!(e["activity_name"], "loss");
        assert_eq!(e["time"], 1_748_779_200_123_i64);
        assert_eq!(e["unmapped"]["count"], 12);
        assert_eq!(e["unmapped"]["host"], "devbox");
        assert_eq!(e["metadata"]["uid"], "h2");
        assert_eq!(e["severity_id"], 3);
        let note = json!({"type":"note","seq":3,"kind":"warning","body":{"message":"full"}});
        let e = m.map(&note).unwrap().unwrap();
        assert_eq!(e["activity_name"], "note: warning");
        assert_eq!(e["message"], "note warning: full");
        let seal = json!({"type":"seal","seq":4});
        assert!(m.map(&seal).unwrap().is_none());
    }

    #[test]
    fn a_container_target_names_its_container() {
        let mut m = Mapper::new(Context::default());
        let mut h = header();
        h["extra"]["container_id"] = json!("0123456789abcdef");
        m.map(&h).unwrap();
        let e = m
            .map(&line(&crate::trace::sample_action(0), 1))
            .unwrap()
            .unwrap();
        assert_eq!(
            e["actor"]["process"]["container"]["uid"],
            "0123456789abcdef"
        );
        assert_eq!(e["metadata"]["profiles"], json!(["datetime", "container"]));
    }

    #[test]
    fn bad_records_are_errors_naming_the_record() {
        let mut m = mapper();
        let mut v = line(&crate::trace::sample_action(0), 9);
        v["time"] = json!("yesterday");
        let e = m.map(&v).unwrap_err().to_string();
        assert!(e.contains("record 9") && e.contains("yesterday"), "{e}");
        v["time"] = json!("2025-06-01T12:00:00Z");
        v["surprise"] = json!(1);
        let e = m.map(&v).unwrap_err().to_string();
        assert!(e.contains("record 9") && e.contains("surprise"), "{e}");
        assert!(m.map(&json!([1])).is_err());
    }

    #[test]
    fn names_and_folders() {
        assert_eq!(base_name("/a/b/c"), "c");
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(base_name("/"), "/");
        assert_eq!(base_name("rel"), "rel");
        assert_eq!(parent_folder("/a/b"), Some("/a"));
        assert_eq!(parent_folder("/a"), Some("/"));
        assert_eq!(parent_folder("rel"), None);
        assert!(is_hostname("vm") && is_hostname("a-b.example.com"));
        assert!(!is_hostname("under_score") && !is_hostname("-x") && !is_hostname(""));
    }
}
