//! `abm replay`: re-judge a recorded trace with a (new) policy.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context as _;
use serde_json::{json, Value};

use std::path::PathBuf;

use super::{irreversibility_name, scope_name, subject, treatment_name, ReplayArgs};
use crate::policy::{absolute, home_dir, Context, Policy};
use crate::record::{Action, Op, Verdict};

// ---------------------------------------------------------------------------
// Replay

/// Keys of a trace event line that belong to the trace envelope, not to
/// the action.
pub(crate) const ENVELOPE: [&str; 6] = ["type", "seq", "prev", "hash", "v", "mac"];

pub(crate) struct Replayed {
    pub(crate) seq: Option<u64>,
    pub(crate) action: Action,
    pub(crate) old: Option<Verdict>,
    pub(crate) new: Verdict,
}

impl Replayed {
    pub(crate) fn changed(&self) -> bool {
        self.old
            .as_ref()
            .is_some_and(|o| o.treatment != self.new.treatment)
    }
}

/// A trace re-judged with a policy.
pub(crate) struct ReplayReport {
    pub(crate) ctx: Context,
    pub(crate) rows: Vec<Replayed>,
    /// Fork and exit events: counted, not judged.
    pub(crate) lifecycle: usize,
    /// Lines that could not be read, with the reason.
    pub(crate) bad_lines: Vec<String>,
    /// File effects recorded without a measurement (traces written before
    /// the action model): judged without recoverability.
    pub(crate) unmeasured: usize,
    pub(crate) recorded_digest: Option<String>,
    pub(crate) policy_digest: String,
}

impl ReplayReport {
    pub(crate) fn changed(&self) -> usize {
        self.rows.iter().filter(|r| r.changed()).count()
    }

    pub(crate) fn by_treatment(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for r in &self.rows {
            *m.entry(treatment_name(r.new.treatment)).or_default() += 1;
        }
        m
    }

    pub(crate) fn by_scope(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for r in &self.rows {
            *m.entry(scope_name(r.new.scope)).or_default() += 1;
        }
        m
    }
}

pub(crate) fn replay_report(a: &ReplayArgs, policy: &Policy) -> anyhow::Result<ReplayReport> {
    let mut reader = crate::trace::TraceReader::open(&a.trace)
        .with_context(|| format!("opening trace {}", a.trace.display()))?;
    let mut header: Option<serde_json::Map<String, Value>> = None;
    let mut events = Vec::new();
    let mut bad_lines = Vec::new();
    let mut lifecycle = 0usize;
    let mut buf = Vec::new();
    while let Some(next) = reader.next(&mut buf)? {
        let i = reader.lines_read().saturating_sub(1);
        match next {
            crate::trace::Next::Line => {}
            crate::trace::Next::Truncated(t) => {
                bad_lines.push(format!(
                    "line {}: incomplete ({} byte(s) cut short by a crash)",
                    t.line, t.bytes
                ));
                continue;
            }
            crate::trace::Next::Damaged(d) => {
                bad_lines.push(format!(
                    "line {}: the block at byte {} {}: {}",
                    d.line,
                    d.offset,
                    d.reason,
                    d.lost_records()
                ));
                continue;
            }
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        let mut obj = match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                bad_lines.push(format!("line {}: not a JSON object", i + 1));
                continue;
            }
            Err(e) => {
                bad_lines.push(format!("line {}: {e}", i + 1));
                continue;
            }
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("header") if header.is_none() => header = Some(obj),
            Some("event") => {
                let seq = obj.get("seq").and_then(Value::as_u64);
                for k in ENVELOPE {
                    obj.remove(k);
                }
                match serde_json::from_value::<Action>(Value::Object(obj)) {
                    Ok(action) => events.push((seq, action)),
                    Err(e) => bad_lines.push(format!("line {}: not an action: {e}", i + 1)),
                }
            }
            _ => {}
        }
    }
    if header.is_none() {
        anyhow::bail!(
            "{} is not an abm trace: it has no header record{}; give a trace written by `abm run` or the daemon",
            a.trace.display(),
            bad_lines
                .first()
                .map(|b| format!(" ({b})"))
                .unwrap_or_default()
        );
    }
    // Header fields: `workspace` at the top level; `home` and `trace_path`
    // at the top level or under `extra`.
    let header_str = |key: &str| -> Option<String> {
        let h = header.as_ref()?;
        h.get(key)
            .or_else(|| h.get("extra").and_then(|x| x.get(key)))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let header_path = |key: &str| header_str(key).map(PathBuf::from);
    let ctx = Context {
        workspace: a
            .workspace
            .as_deref()
            .map(absolute)
            .or_else(|| header_path("workspace"))
            .unwrap_or_default(),
        home: a
            .home
            .clone()
            .or_else(|| header_path("home"))
            .unwrap_or_else(home_dir),
        trace_path: header_path("trace_path")
            .or_else(|| header_path("trace"))
            .or_else(|| Some(absolute(&a.trace))),
    };
    // Re-judged with the action model: grouping from the recorded execs,
    // forks and exits; recoverability from the recorded measurements (the
    // file system has changed since, so it is not measured again).
    let mut judge = crate::action::Judge::new(&ctx);
    let mut unmeasured = 0usize;
    let mut rows = Vec::new();
    for (seq, mut action) in events {
        let old = action.verdict.take();
        let lifecycle_only = matches!(action.op, Some(Op::Fork | Op::Exit) | None);
        if !judge.rejudge(&mut action, policy, &ctx) {
            unmeasured += 1;
        }
        crate::pipeline::unvouched(&mut action, policy, &ctx);
        if lifecycle_only {
            lifecycle += 1;
            continue;
        }
        let Some(new) = action.verdict.clone() else {
            continue;
        };
        rows.push(Replayed {
            seq,
            action,
            old,
            new,
        });
    }
    Ok(ReplayReport {
        ctx,
        rows,
        lifecycle,
        bad_lines,
        unmeasured,
        recorded_digest: header_str("policy_digest"),
        policy_digest: policy.digest(),
    })
}

pub fn replay(a: ReplayArgs) -> anyhow::Result<i32> {
    let policy = a.select.load()?;
    let report = replay_report(&a, &policy)?;
    for b in &report.bad_lines {
        eprintln!("abm replay: {}: skipped {b}", a.trace.display());
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&replay_json(&a, &report))?
        );
    } else {
        print!("{}", replay_text(&a, &report));
    }
    Ok(0)
}

pub(crate) fn replay_json(a: &ReplayArgs, r: &ReplayReport) -> Value {
    json!({
        "trace": a.trace,
        "workspace": r.ctx.workspace,
        "policy_digest": r.policy_digest,
        "recorded_policy_digest": r.recorded_digest,
        "events": r.rows.iter().filter(|row| !a.changed || row.changed()).map(|row| json!({
            "seq": row.seq,
            "op": row.action.op,
            "subject": subject(&row.action).unwrap_or_default(),
            "old": row.old.as_ref().map(|o| json!({"rule": o.rule, "treatment": o.treatment})),
            "new": row.new,
            "changed": row.changed(),
        })).collect::<Vec<_>>(),
        "counts": { "treatment": r.by_treatment(), "scope": r.by_scope() },
        "total": r.rows.len(),
        "changed": r.changed(),
        "lifecycle_events": r.lifecycle,
        "skipped_lines": r.bad_lines.len(),
        "unmeasured_effects": r.unmeasured,
    })
}

pub(crate) fn replay_text(a: &ReplayArgs, r: &ReplayReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7}  {:<8} {:<50} {:<10} {:<36} {:<9} {:<10} IRREVERSIBILITY",
        "SEQ", "OP", "PATH / ARGV", "OLD", "NEW RULE", "TREATMENT", "SCOPE"
    );
    for row in r.rows.iter().filter(|row| !a.changed || row.changed()) {
        let old = match &row.old {
            Some(o) if row.changed() => format!("*{}", treatment_name(o.treatment)),
            Some(o) => treatment_name(o.treatment).to_owned(),
            None => "-".to_owned(),
        };
        let _ = writeln!(
            s,
            "{:>7}  {:<8} {:<50} {:<10} {:<36} {:<9} {:<10} {}",
            row.seq.map_or("-".to_owned(), |n| n.to_string()),
            row.action.op.map_or("-", Op::name),
            clip(&subject(&row.action).unwrap_or_default(), 50),
            old,
            row.new.rule,
            treatment_name(row.new.treatment),
            scope_name(row.new.scope),
            irreversibility_name(row.new.irreversibility),
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{} actions, {} with a changed treatment (*); {} fork/exit events not listed; workspace {}",
        r.rows.len(),
        r.changed(),
        r.lifecycle,
        if r.ctx.workspace.as_os_str().is_empty() {
            "unknown".to_owned()
        } else {
            r.ctx.workspace.display().to_string()
        }
    );
    if r.unmeasured > 0 {
        let _ = writeln!(
            s,
            "{} file effects carry no measurement (recorded before the action model): judged without recoverability, location or blast radius",
            r.unmeasured
        );
    }
    let _ = writeln!(s, "by treatment: {}", counts(&r.by_treatment()));
    let _ = writeln!(s, "by scope:     {}", counts(&r.by_scope()));
    let _ = match &r.recorded_digest {
        Some(d) if *d == r.policy_digest => writeln!(
            s,
            "policy digest {d} (the policy the trace was recorded with)"
        ),
        Some(d) => writeln!(s, "policy digest {} (recorded with {d})", r.policy_digest),
        None => writeln!(s, "policy digest {}", r.policy_digest),
    };
    s
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let head: String = s.chars().take(n - 1).collect();
    format!("{head}\u{2026}")
}

fn counts(m: &BTreeMap<&'static str, usize>) -> String {
    if m.is_empty() {
        return "-".to_owned();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
