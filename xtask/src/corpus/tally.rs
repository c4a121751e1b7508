//! Reading one `abm run` trace into the numbers the corpus table shows.
//!
//! Pure: takes the trace's text, returns counts. What counts as what:
//!
//! - **actions**: the logical actions of the run. When the trace has
//!   action records (`kind: "action"`, top level or as a note) they are
//!   counted; else the distinct `action` ids of the events; else (traces
//!   without the action model) every successful `exec` is an action.
//! - **flagged**: actions that got a `confirm`, `preserve` or `deny`
//!   verdict (from action records, or from event verdicts grouped by
//!   action id; without action ids, grouped by process id).
//! - **by rule**: flagged actions per `rule (treatment)`.
//! - **questions**: confirmation requests actually put to a human: notes
//!   of kind `enforcement` with `decision: "pending"` (one per request).
//! - **decision cost**: the enforcement supervisor's total handling time
//!   (`enforcement_stats`: notifications × mean) divided by the actions.
use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context as _, Result};
use serde_json::Value;

/// Treatments that count as treating an action (anything but accept/audit).
pub fn is_treated(treatment: &str) -> bool {
    matches!(treatment, "confirm" | "preserve" | "deny")
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    pub actions: u64,
    pub events: u64,
    /// Distinct actions with a confirm/preserve/deny verdict.
    pub flagged: u64,
    /// Events with a confirm/preserve/deny verdict.
    pub flagged_events: u64,
    /// `rule (treatment)` -> flagged actions.
    pub by_rule: BTreeMap<String, u64>,
    /// Confirmation requests (questions to a human).
    pub questions: u64,
    /// Calls refused by enforcement (`result_note: denied_by_seccomp`
    /// or an `enforcement.decision` of denied/timeout).
    pub refused_calls: u64,
    /// Supervisor notifications and total handling time (µs).
    pub notifications: u64,
    pub handling_us: f64,
    /// The judge's time for each action (`decision_us`), in trace order,
    /// when action records carry it.
    pub judge_each_us: Vec<f64>,
    /// Each action's command line and treatment (`rule (treatment)`), in
    /// trace order: what two runs of one session are compared on.
    pub verdicts: Vec<(String, String, String)>,
    pub lost: u64,
    pub sealed: bool,
    pub exit_code: Option<i64>,
    /// The first question's text (rule and reason), for the report.
    pub first_question: Option<String>,
}

impl Tally {
    /// The judge's own time, summed over the actions whose records carry
    /// it (`decision_us`); `None` when none does.
    pub fn judge_us(&self) -> Option<f64> {
        (!self.judge_each_us.is_empty()).then(|| self.judge_each_us.iter().sum())
    }

    /// Supervisor time per action in µs, when the run was enforced.
    pub fn cost_per_action_us(&self) -> Option<f64> {
        (self.notifications > 0 && self.actions > 0).then(|| self.handling_us / self.actions as f64)
    }
}

/// Who an event belongs to for grouping: its action id, else its pid.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    Action(u64),
    Pid(u64),
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Parses a whole trace (JSON lines). A line that is not JSON is an error
/// naming the line, except a last line cut short by a crash.
pub fn tally(text: &str) -> Result<Tally> {
    let mut t = Tally::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut action_records: BTreeMap<u64, (String, String)> = BTreeMap::new();
    let mut action_ids: BTreeSet<u64> = BTreeSet::new();
    let mut execs = 0u64;
    let mut flagged_owners: BTreeMap<Owner, BTreeSet<String>> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => bail!("trace line {}: not JSON: {e}", i + 1),
        };
        let ty = str_field(&rec, "type").unwrap_or("");
        // Action records: `{"kind":"action",...}` at the top level or as
        // the body of a note.
        let action_rec = if str_field(&rec, "kind") == Some("action") {
            Some(rec.get("body").filter(|b| b.is_object()).unwrap_or(&rec))
        } else {
            None
        };
        if let Some(a) = action_rec {
            let id = a
                .get("action")
                .and_then(Value::as_u64)
                .or_else(|| rec.get("action").and_then(Value::as_u64))
                .unwrap_or(action_records.len() as u64 + 1_000_000_000);
            let treatment = str_field(a, "treatment").unwrap_or("accept").to_string();
            let rule = str_field(a, "rule").unwrap_or("?").to_string();
            if let Some(us) = a.get("decision_us").and_then(Value::as_f64) {
                t.judge_each_us.push(us);
            }
            let argv: Vec<&str> = a
                .get("argv")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let cwd = str_field(a, "cwd").unwrap_or("");
            t.verdicts.push((
                format!("{} (in {cwd})", argv.join(" ")),
                treatment.clone(),
                rule.clone(),
            ));
            action_records.insert(id, (rule, treatment));
            continue;
        }
        match ty {
            "event" => {
                t.events += 1;
                let op = str_field(&rec, "op").unwrap_or("");
                let ok = rec.get("result").and_then(Value::as_i64).unwrap_or(-1) >= 0;
                if op == "exec" && ok {
                    execs += 1;
                }
                let action = rec.get("action").and_then(Value::as_u64);
                if let Some(a) = action {
                    action_ids.insert(a);
                }
                if str_field(&rec, "result_note") == Some("denied_by_seccomp")
                    || rec
                        .get("enforcement")
                        .and_then(|e| str_field(e, "decision"))
                        .is_some_and(|d| matches!(d, "denied" | "timeout"))
                {
                    t.refused_calls += 1;
                }
                if let Some(v) = rec.get("verdict") {
                    let treatment = str_field(v, "treatment").unwrap_or("accept");
                    if is_treated(treatment) {
                        t.flagged_events += 1;
                        let rule = str_field(v, "rule").unwrap_or("?");
                        let owner = match action {
                            Some(a) => Owner::Action(a),
                            None => Owner::Pid(rec.get("pid").and_then(Value::as_u64).unwrap_or(0)),
                        };
                        flagged_owners
                            .entry(owner)
                            .or_default()
                            .insert(format!("{rule} ({treatment})"));
                    }
                }
            }
            "note" => {
                let kind = str_field(&rec, "kind").unwrap_or("");
                let body = rec.get("body").cloned().unwrap_or(Value::Null);
                match kind {
                    "enforcement" if str_field(&body, "decision") == Some("pending") => {
                        t.questions += 1;
                        if t.first_question.is_none() {
                            let what = body
                                .get("summary")
                                .and_then(Value::as_str)
                                .or_else(|| str_field(&body, "reason"))
                                .unwrap_or("");
                            t.first_question = Some(format!(
                                "{}: {}",
                                str_field(&body, "rule").unwrap_or("?"),
                                what
                            ));
                        }
                    }
                    "enforcement_stats" => {
                        let n = body
                            .get("notifications")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                        let mean = body
                            .get("mean_handling_us")
                            .and_then(Value::as_f64)
                            .unwrap_or(0.0);
                        t.notifications += n;
                        t.handling_us += n as f64 * mean;
                    }
                    _ => {}
                }
            }
            "loss" => t.lost += rec.get("count").and_then(Value::as_u64).unwrap_or(0),
            "seal" => {
                t.sealed = true;
                t.exit_code = rec.get("exit_code").and_then(Value::as_i64);
            }
            _ => {}
        }
    }
    if !action_records.is_empty() {
        t.actions = action_records.len() as u64;
        for (rule, treatment) in action_records.values() {
            if is_treated(treatment) {
                t.flagged += 1;
                *t.by_rule
                    .entry(format!("{rule} ({treatment})"))
                    .or_default() += 1;
            }
        }
    } else {
        t.actions = if action_ids.is_empty() {
            execs
        } else {
            action_ids.len() as u64
        };
        t.flagged = flagged_owners.len() as u64;
        for rules in flagged_owners.values() {
            for r in rules {
                *t.by_rule.entry(r.clone()).or_default() += 1;
            }
        }
    }
    Ok(t)
}

/// Reads and tallies a trace file.
pub fn tally_file(path: &std::path::Path) -> Result<Tally> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading trace {}", path.display()))?;
    tally(&text).with_context(|| format!("trace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pid: u64, op: &str, result: i64, treatment: &str, rule: &str, extra: &str) -> String {
        format!(
            r#"{{"type":"event","seq":1,"op":"{op}","pid":{pid},"result":{result},"verdict":{{"rule":"{rule}","treatment":"{treatment}"}}{extra},"hash":"x"}}"#
        )
    }

    #[test]
    fn without_action_ids_execs_are_actions_and_pids_group_verdicts() {
        let trace = [
            r#"{"type":"header","seq":0}"#.to_string(),
            ev(10, "exec", 0, "accept", "default", ""),
            ev(10, "exec", -2, "accept", "default", ""), // a PATH miss: not an action
            ev(11, "exec", 0, "confirm", "repo.clean-force", ""),
            ev(11, "unlink", 0, "confirm", "repo.git-state-delete", ""),
            ev(11, "unlink", 0, "confirm", "repo.git-state-delete", ""),
            ev(12, "exec", 0, "audit", "workspace-delete", ""),
            r#"{"type":"seal","seq":9,"exit_code":3}"#.to_string(),
        ]
        .join("\n")
            + "\n";
        let t = tally(&trace).unwrap();
        assert_eq!(t.events, 6);
        assert_eq!(t.actions, 3);
        assert_eq!(t.flagged_events, 3);
        assert_eq!(t.flagged, 1, "one process, one flagged action");
        assert_eq!(t.by_rule.get("repo.clean-force (confirm)"), Some(&1));
        assert_eq!(t.by_rule.get("repo.git-state-delete (confirm)"), Some(&1));
        assert!(t.sealed);
        assert_eq!(t.exit_code, Some(3));
        assert_eq!(t.questions, 0);
    }

    #[test]
    fn action_ids_group_events_and_action_records_win() {
        let with_ids = [
            ev(10, "exec", 0, "accept", "default", r#","action":5"#),
            ev(11, "exec", 0, "preserve", "p", r#","action":7"#),
            ev(12, "unlink", 0, "preserve", "p", r#","action":7"#),
        ]
        .join("\n");
        let t = tally(&with_ids).unwrap();
        assert_eq!((t.actions, t.flagged), (2, 1));
        assert!(!t.sealed, "no seal record");

        let with_records = format!(
            "{with_ids}\n{}\n{}\n",
            r#"{"type":"note","seq":4,"kind":"action","body":{"action":5,"argv":["ls"],"treatment":"accept","rule":"default"}}"#,
            r#"{"type":"note","seq":5,"kind":"action","body":{"action":7,"argv":["rm","-rf","x"],"treatment":"deny","rule":"ws.tree-delete","decision_us":12.5}}"#,
        );
        let t = tally(&with_records).unwrap();
        assert_eq!(t.actions, 2);
        assert_eq!(t.flagged, 1);
        assert_eq!(t.judge_us(), Some(12.5));
        assert_eq!(
            t.by_rule.keys().collect::<Vec<_>>(),
            vec!["ws.tree-delete (deny)"],
            "the action record's verdict, not the events'"
        );
    }

    #[test]
    fn questions_refusals_and_cost_come_from_enforcement_records() {
        let trace = [
            ev(10, "exec", 0, "accept", "default", ""),
            ev(10, "exec", 0, "accept", "default", ""),
            r#"{"type":"note","seq":2,"kind":"enforcement","body":{"decision":"pending","request":1,"rule":"repo.reset-hard","reason":"discards all uncommitted changes"}}"#.into(),
            r#"{"type":"note","seq":3,"kind":"enforcement","body":{"decision":"pending","request":2,"rule":"repo.reset-hard","reason":"again"}}"#.into(),
            r#"{"type":"event","seq":4,"op":"exec","pid":11,"result":-1,"errno":"EPERM","result_note":"denied_by_seccomp","verdict":{"rule":"repo.reset-hard","treatment":"confirm"},"enforcement":{"decision":"timeout"}}"#.into(),
            r#"{"type":"note","seq":5,"kind":"enforcement_stats","body":{"notifications":40,"mean_handling_us":25.0,"max_handling_us":90.0}}"#.into(),
            r#"{"type":"loss","seq":6,"cause":"ringbuf_full","count":4}"#.into(),
        ]
        .join("\n");
        let t = tally(&trace).unwrap();
        assert_eq!(t.questions, 2);
        assert_eq!(t.refused_calls, 1);
        assert_eq!(t.notifications, 40);
        assert_eq!(t.actions, 2);
        assert_eq!(t.cost_per_action_us(), Some(500.0));
        assert_eq!(t.lost, 4);
        assert_eq!(
            t.first_question.as_deref(),
            Some("repo.reset-hard: discards all uncommitted changes")
        );
    }

    #[test]
    fn a_cut_last_line_is_ignored_but_a_bad_middle_line_is_an_error() {
        let cut = format!("{}\n{{\"type\":\"ev", ev(1, "exec", 0, "accept", "d", ""));
        assert_eq!(tally(&cut).unwrap().events, 1);
        let bad = format!(
            "{}\nnot json\n{}\n",
            ev(1, "exec", 0, "accept", "d", ""),
            ev(1, "exec", 0, "accept", "d", "")
        );
        let err = tally(&bad).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
