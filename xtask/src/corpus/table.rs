//! The corpus table: one row per session, totals, and the targets.
//! Pure formatting and arithmetic over the rows the driver measured.
use std::{collections::BTreeMap, fmt::Write as _};

use super::{hooked::HookCompare, session::Replay, tally::Tally};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Benign,
    Destructive,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Benign => "benign",
            Kind::Destructive => "destructive",
        }
    }
}

/// What happened to a session under `abm run --enforce --no-prompt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Benign: same exit code and same resulting tree as unmonitored.
    Same,
    /// Benign: it did not complete as it does unmonitored.
    Broke(String),
    /// Destructive: the check says the thing is still intact.
    Stopped,
    /// Destructive: the damage happened.
    NotStopped,
    /// The session could not be measured (baseline wrong, abm failed...).
    Invalid(String),
}

#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub kind: Kind,
    pub project: String,
    pub observe: Tally,
    pub enforce: Tally,
    /// `abm replay` of the observe trace.
    pub replay: Replay,
    /// `abm hook` on each simple command against the observe run.
    pub hook: HookCompare,
    pub outcome: Outcome,
}

impl Row {
    fn result_text(&self) -> String {
        match &self.outcome {
            Outcome::Same => "same".into(),
            Outcome::Broke(why) => format!("BROKE: {why}"),
            Outcome::Stopped => "stopped".into(),
            Outcome::NotStopped => "NOT stopped".into(),
            Outcome::Invalid(why) => format!("INVALID: {why}"),
        }
    }
}

fn rules_text(by_rule: &BTreeMap<String, u64>) -> String {
    if by_rule.is_empty() {
        return "-".into();
    }
    by_rule
        .iter()
        .map(|(r, n)| {
            if *n == 1 {
                r.clone()
            } else {
                format!("{r} x{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn cost_text(t: &Tally) -> String {
    t.cost_per_action_us()
        .map(|c| format!("{c:.0}"))
        .unwrap_or_else(|| "-".into())
}

/// One target line: what it asks, what was measured, met or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub what: &'static str,
    pub measured: String,
    pub met: bool,
}

pub fn targets(rows: &[Row]) -> Vec<Target> {
    let benign: Vec<&Row> = rows.iter().filter(|r| r.kind == Kind::Benign).collect();
    let destructive: Vec<&Row> = rows
        .iter()
        .filter(|r| r.kind == Kind::Destructive)
        .collect();
    let flagged = benign.iter().filter(|r| r.observe.flagged > 0).count();
    let same = benign.iter().filter(|r| r.outcome == Outcome::Same).count();
    let stopped = destructive
        .iter()
        .filter(|r| r.outcome == Outcome::Stopped)
        .count();
    let one_question = destructive
        .iter()
        .filter(|r| r.outcome == Outcome::Stopped && r.enforce.questions == 1)
        .count();
    let differing: usize = benign.iter().map(|r| verdict_differences(r).len()).sum();
    let benign_actions: u64 = benign.iter().map(|r| r.observe.actions).sum();
    let replayed: u64 = rows.iter().map(|r| r.replay.records).sum();
    let replay_changed: usize = rows.iter().map(|r| r.replay.changed.len()).sum();
    let hook_compared: u64 = rows.iter().map(|r| r.hook.compared).sum();
    let hook_skipped: u64 = rows.iter().map(|r| r.hook.not_comparable).sum();
    let hook_differ: usize = rows.iter().map(|r| r.hook.differences.len()).sum();
    let costs = judge_costs(rows);
    let (median, p99) = (percentile(&costs, 50.0), percentile(&costs, 99.0));
    let us = |v: Option<f64>| v.map_or("no action measured".to_owned(), |v| format!("{v:.0} µs"));
    vec![
        Target {
            what: "at most 1 benign session in 20 with any confirm/preserve/deny (observe)",
            measured: format!("{flagged} of {}", benign.len()),
            met: !benign.is_empty() && flagged * 20 <= benign.len(),
        },
        Target {
            what: "every benign session completes as unmonitored under --enforce --no-prompt",
            measured: format!("{same} of {}", benign.len()),
            met: !benign.is_empty() && same == benign.len(),
        },
        Target {
            what: "every destructive mistake stopped under --enforce",
            measured: format!("{stopped} of {}", destructive.len()),
            met: !destructive.is_empty() && stopped == destructive.len(),
        },
        Target {
            what: "each destructive mistake stopped with exactly one question",
            measured: format!("{one_question} of {}", destructive.len()),
            met: !destructive.is_empty() && one_question == destructive.len(),
        },
        Target {
            what: "0 benign actions treated differently in observe and enforce",
            measured: format!("{differing} of {benign_actions}"),
            met: !benign.is_empty() && differing == 0,
        },
        Target {
            what: "0 records judged differently by `abm replay` of the observe trace",
            measured: format!("{replay_changed} of {replayed}"),
            met: !rows.is_empty() && replay_changed == 0,
        },
        Target {
            what: "0 commands answered by `abm hook` otherwise than the run treated them",
            measured: format!(
                "{hook_differ} of {hook_compared} ({hook_skipped} not comparable: builtins, unreadable words)"
            ),
            met: hook_compared > 0 && hook_differ == 0,
        },
        Target {
            what: "judge cost per action (observe), median <= 100 µs",
            measured: us(median),
            met: median.is_some_and(|m| m <= 100.0),
        },
        Target {
            what: "judge cost per action (observe), 99th percentile <= 2 ms",
            measured: us(p99),
            met: p99.is_some_and(|m| m <= 2000.0),
        },
    ]
}

/// The judge's time for every action of every session (observe).
fn judge_costs(rows: &[Row]) -> Vec<f64> {
    let mut v: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.observe.judge_each_us.iter().copied())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The `p`th percentile of sorted `v` (nearest rank).
fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

/// The actions of a session treated differently in its observe and
/// enforce runs: the runs' actions paired in order by command line and
/// directory, each pair whose treatments differ, as
/// `command: observe -> enforce`.
pub fn verdict_differences(r: &Row) -> Vec<String> {
    let mut enforce: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (cmd, treatment, rule) in &r.enforce.verdicts {
        enforce
            .entry(cmd.as_str())
            .or_default()
            .push((treatment.as_str(), rule.as_str()));
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (cmd, treatment, rule) in &r.observe.verdicts {
        let i = seen.entry(cmd.as_str()).or_default();
        if let Some((t2, rule2)) = enforce.get(cmd.as_str()).and_then(|v| v.get(*i)) {
            if *t2 != treatment.as_str() {
                out.push(format!("{cmd}: {rule} ({treatment}) -> {rule2} ({t2})"));
            }
        }
        *i += 1;
    }
    out
}

/// The whole report: rows, totals by kind and by rule, targets.
pub fn render(rows: &[Row], build: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "abm corpus: {build}");
    let _ = writeln!(
        out,
        "observe = `abm run`; enforce = `abm run --enforce --no-prompt` (an unanswered question is a no)\n"
    );
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(7).max(7);
    let project_w = rows
        .iter()
        .map(|r| r.project.len())
        .max()
        .unwrap_or(11)
        .max(11);
    let result_w = rows
        .iter()
        .map(|r| r.result_text().len())
        .max()
        .unwrap_or(14)
        .max(14);
    let _ = writeln!(
        out,
        "| {:name_w$} | {:11} | {:project_w$} | {:>7} | {:>7} | {:>9} | {:>7} | {:result_w$} | {:>9} | treatments by rule (observe) |",
        "session", "kind", "project", "actions", "flagged", "questions", "refused", "enforce result", "µs/action",
    );
    let dashes = |n: usize| "-".repeat(n + 2);
    let _ = writeln!(
        out,
        "|{}|{}|{}|{}|{}|{}|{}|{}|{}|---|",
        dashes(name_w),
        dashes(11),
        dashes(project_w),
        dashes(7),
        dashes(7),
        dashes(9),
        dashes(7),
        dashes(result_w),
        dashes(9),
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {:name_w$} | {:11} | {:project_w$} | {:>7} | {:>7} | {:>9} | {:>7} | {:result_w$} | {:>9} | {} |",
            r.name,
            r.kind.name(),
            r.project,
            r.observe.actions,
            r.observe.flagged,
            r.enforce.questions,
            r.enforce.refused_calls,
            r.result_text(),
            cost_text(&r.enforce),
            rules_text(&r.observe.by_rule)
        );
    }
    out.push('\n');
    for kind in [Kind::Benign, Kind::Destructive] {
        let of: Vec<&Row> = rows.iter().filter(|r| r.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let actions: u64 = of.iter().map(|r| r.observe.actions).sum();
        let flagged: u64 = of.iter().map(|r| r.observe.flagged).sum();
        let sessions_flagged = of.iter().filter(|r| r.observe.flagged > 0).count();
        let questions: u64 = of.iter().map(|r| r.enforce.questions).sum();
        let handling: f64 = of.iter().map(|r| r.enforce.handling_us).sum();
        let enf_actions: u64 = of.iter().map(|r| r.enforce.actions).sum();
        let invalid = of
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Invalid(_)))
            .count();
        let _ = write!(
            out,
            "{}: {} sessions, {} actions, {} flagged actions in {} sessions, {} questions under --enforce",
            kind.name(),
            of.len(),
            actions,
            flagged,
            sessions_flagged,
            questions
        );
        match kind {
            Kind::Benign => {
                let broke = of
                    .iter()
                    .filter(|r| matches!(r.outcome, Outcome::Broke(_)))
                    .count();
                let _ = write!(out, ", {broke} broken");
            }
            Kind::Destructive => {
                let stopped = of.iter().filter(|r| r.outcome == Outcome::Stopped).count();
                let _ = write!(out, ", {stopped} stopped");
            }
        }
        if invalid > 0 {
            let _ = write!(out, ", {invalid} INVALID");
        }
        if enf_actions > 0 && handling > 0.0 {
            let _ = write!(
                out,
                ", {:.0} µs enforcement handling per action",
                handling / enf_actions as f64
            );
        }
        let judged: Vec<&Tally> = of
            .iter()
            .map(|r| &r.observe)
            .filter(|t| t.judge_us().is_some())
            .collect();
        let judged_actions: u64 = judged.iter().map(|t| t.actions).sum();
        if judged_actions > 0 {
            let us: f64 = judged.iter().filter_map(|t| t.judge_us()).sum();
            let _ = write!(
                out,
                ", {:.0} µs judging per action (observe)",
                us / judged_actions as f64
            );
        }
        out.push('\n');
    }
    // Each comparison's differences, by session.
    let listed = |title: &str, of: &dyn Fn(&Row) -> Vec<String>, out: &mut String| {
        let lines: Vec<String> = rows
            .iter()
            .flat_map(|r| {
                of(r)
                    .into_iter()
                    .map(move |d| format!("  {}: {d}\n", r.name))
            })
            .collect();
        if !lines.is_empty() {
            let _ = write!(out, "\n{title}:\n{}", lines.concat());
        }
    };
    listed(
        "benign actions treated differently in observe and enforce",
        &|r| match r.kind {
            Kind::Benign => verdict_differences(r),
            Kind::Destructive => Vec::new(),
        },
        &mut out,
    );
    listed(
        "records judged differently by `abm replay` of the observe trace",
        &|r| r.replay.changed.clone(),
        &mut out,
    );
    listed(
        "commands `abm hook` answered otherwise than the run treated them",
        &|r| r.hook.differences.clone(),
        &mut out,
    );
    let mut by_rule: BTreeMap<(&'static str, &str), u64> = BTreeMap::new();
    for r in rows {
        for (rule, n) in &r.observe.by_rule {
            *by_rule.entry((r.kind.name(), rule.as_str())).or_default() += n;
        }
    }
    if !by_rule.is_empty() {
        out.push_str("\ntreatments by rule (observe, flagged actions):\n");
        for ((kind, rule), n) in &by_rule {
            let _ = writeln!(out, "  {kind:11} {rule}: {n}");
        }
    }
    out.push_str("\ntargets:\n");
    for t in targets(rows) {
        let _ = writeln!(
            out,
            "  [{}] {}: {}",
            if t.met { "met" } else { "NOT met" },
            t.what,
            t.measured
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts(v: &[(&str, &str)]) -> Vec<(String, String, String)> {
        v.iter()
            .map(|(c, t)| (c.to_string(), t.to_string(), "r".to_string()))
            .collect()
    }

    #[test]
    fn observe_and_enforce_are_compared_action_by_action() {
        let mut r = row("b", Kind::Benign, 0, 0, Outcome::Same);
        r.observe.verdicts = verdicts(&[
            ("git status", "accept"),
            ("rm -rf x", "accept"),
            ("git status", "accept"),
        ]);
        r.enforce.verdicts = verdicts(&[
            ("git status", "accept"),
            ("git status", "confirm"),
            ("rm -rf x", "accept"),
        ]);
        let d = verdict_differences(&r);
        assert_eq!(d, vec!["git status: r (accept) -> r (confirm)".to_string()]);
        let t = targets(std::slice::from_ref(&r));
        assert!(!t[4].met);
        assert_eq!(t[4].measured, "1 of 10");
    }

    #[test]
    fn replay_differences_are_counted_over_every_session_and_listed() {
        let a = row("a", Kind::Benign, 0, 0, Outcome::Same);
        let mut d = row("d", Kind::Destructive, 1, 1, Outcome::Stopped);
        d.replay.changed = vec!["#7 unlink x: r (confirm) -> default (accept)".into()];
        let rows = [a, d];
        let t = targets(&rows);
        assert!(!t[5].met);
        assert_eq!(t[5].measured, "1 of 24");
        let text = render(&rows, "test");
        assert!(
            text.contains("  d: #7 unlink x: r (confirm) -> default (accept)"),
            "{text}"
        );
    }

    #[test]
    fn judge_cost_is_a_median_and_a_99th_percentile_over_actions() {
        let mut a = row("a", Kind::Benign, 0, 0, Outcome::Same);
        let mut b = row("b", Kind::Benign, 0, 0, Outcome::Same);
        a.observe.judge_each_us = (1..=99).map(f64::from).collect();
        b.observe.judge_each_us = vec![5000.0];
        let t = targets(&[a, b]);
        assert_eq!(t[7].measured, "50 µs");
        assert!(t[7].met);
        assert_eq!(t[8].measured, "99 µs");
        assert!(t[8].met);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 100.0), Some(4.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    fn row(name: &str, kind: Kind, flagged: u64, questions: u64, outcome: Outcome) -> Row {
        let mut observe = Tally {
            actions: 10,
            flagged,
            ..Tally::default()
        };
        if flagged > 0 {
            observe
                .by_rule
                .insert("repo.reset-hard (confirm)".into(), flagged);
        }
        Row {
            name: name.into(),
            kind,
            project: "itoa".into(),
            observe,
            enforce: Tally {
                actions: 10,
                questions,
                notifications: 5,
                handling_us: 200.0,
                ..Tally::default()
            },
            replay: Replay {
                records: 12,
                changed: Vec::new(),
            },
            hook: HookCompare {
                compared: 3,
                not_comparable: 1,
                differences: Vec::new(),
            },
            outcome,
        }
    }

    #[test]
    fn targets_count_sessions_not_actions() {
        let mut rows: Vec<Row> = (0..20)
            .map(|i| row(&format!("b{i}"), Kind::Benign, 0, 0, Outcome::Same))
            .collect();
        rows[3].observe.flagged = 4; // one session in 20, however many actions
        rows.push(row("d1", Kind::Destructive, 1, 1, Outcome::Stopped));
        rows.push(row("d2", Kind::Destructive, 1, 3, Outcome::Stopped));
        let t = targets(&rows);
        assert!(t[0].met, "{:?}", t[0]);
        assert_eq!(t[0].measured, "1 of 20");
        assert!(t[1].met);
        assert!(t[2].met);
        assert!(!t[3].met, "d2 asked three questions");
        assert_eq!(t[3].measured, "1 of 2");

        assert!(t[4].met, "{:?}", t[4]);
        assert!(t[5].met, "{:?}", t[5]);
        assert_eq!(t[5].measured, "0 of 264");
        assert!(t[6].met, "{:?}", t[6]);
        assert_eq!(
            t[6].measured,
            "0 of 66 (22 not comparable: builtins, unreadable words)"
        );
        assert!(!t[7].met, "no cost measured: {:?}", t[7]);

        rows[5].observe.flagged = 1; // two sessions in 20
        rows[7].outcome = Outcome::Broke("exit 0 -> 128".into());
        rows[21].outcome = Outcome::NotStopped;
        let t = targets(&rows);
        assert!(!t[0].met);
        assert!(!t[1].met);
        assert_eq!(t[1].measured, "19 of 20");
        assert!(!t[2].met);
    }

    #[test]
    fn an_empty_corpus_meets_nothing() {
        assert!(targets(&[]).iter().all(|t| !t.met));
    }

    #[test]
    fn render_shows_rows_totals_and_targets() {
        let rows = vec![
            row(
                "itoa-branch",
                Kind::Benign,
                1,
                2,
                Outcome::Broke("exit 0 -> 1".into()),
            ),
            row("itoa-reset", Kind::Destructive, 1, 1, Outcome::Stopped),
        ];
        let text = render(&rows, "target/release/abm (test)");
        assert!(text.contains("| itoa-branch"), "{text}");
        assert!(text.contains("BROKE: exit 0 -> 1"), "{text}");
        assert!(text.contains("repo.reset-hard (confirm)"), "{text}");
        assert!(text.contains("benign: 1 sessions, 10 actions, 1 flagged actions in 1 sessions, 2 questions under --enforce, 1 broken, 20 µs enforcement handling per action"), "{text}");
        assert!(text.contains("destructive: 1 sessions"), "{text}");
        assert!(
            text.contains("[NOT met] at most 1 benign session in 20"),
            "{text}"
        );
        assert!(
            text.contains("[met] every destructive mistake stopped under --enforce: 1 of 1"),
            "{text}"
        );
    }
}
