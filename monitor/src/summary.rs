//! The human summary printed at the end of `abm run`.
use std::{collections::BTreeMap, fmt::Write as _, time::Duration};

use crate::{
    record::{Action, Op, Scope, Treatment},
    trace::SealSummary,
};

#[derive(Default)]
pub struct Summary {
    pub by_op: BTreeMap<Op, u64>,
    pub failed: u64,
    pub by_treatment: BTreeMap<Treatment, u64>,
    pub by_scope: BTreeMap<Scope, u64>,
    dirs: BTreeMap<String, u64>,
    flagged: Vec<String>,
    finish: Option<Finish>,
}

struct Finish {
    command: Vec<String>,
    code: i32,
    elapsed: Duration,
    trace: String,
    records: u64,
    digest: String,
    lost: BTreeMap<String, u64>,
    unpaired: u64,
}

/// One human line for an action (`abm run -v`).
pub fn one_line(seq: u64, a: &Action) -> String {
    let op = a.op.map(Op::name).unwrap_or("?");
    let what = match a.op {
        Some(Op::Exec) => a.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default(),
        Some(Op::Rename) => format!(
            "{} -> {}",
            a.path.as_deref().unwrap_or("?"),
            a.path2.as_deref().unwrap_or("?")
        ),
        Some(Op::Fork) => format!("child {}", a.result.unwrap_or(0)),
        _ => a.path.clone().unwrap_or_default(),
    };
    let result = match (a.result, &a.errno) {
        (_, Some(e)) => e.clone(),
        (Some(r), None) => r.to_string(),
        (None, None) => a.result_note.clone().unwrap_or_else(|| "?".into()),
    };
    let verdict = a
        .verdict
        .as_ref()
        .map(|v| format!(" [{:?}/{:?} {}]", v.treatment, v.scope, v.rule).to_lowercase())
        .unwrap_or_default();
    format!(
        "#{seq} {} {}[{}] {op} {what} = {result}{verdict}",
        a.time.get(11..23).unwrap_or(""),
        a.comm,
        a.pid
    )
}

impl Summary {
    pub fn add(&mut self, a: &Action) {
        let Some(op) = a.op else { return };
        if !op.is_action() {
            return;
        }
        *self.by_op.entry(op).or_default() += 1;
        if a.result.is_some_and(|r| r < 0) {
            self.failed += 1;
        }
        if let Some(v) = &a.verdict {
            *self.by_treatment.entry(v.treatment).or_default() += 1;
            *self.by_scope.entry(v.scope).or_default() += 1;
            if v.treatment >= Treatment::Audit && self.flagged.len() < 10 {
                let target = if op == Op::Exec {
                    a.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default()
                } else {
                    a.path.clone().unwrap_or_default()
                };
                self.flagged.push(
                    format!("{:?} {op} {target} ({}: {})", v.treatment, v.rule, v.reason)
                        .to_lowercase(),
                );
            }
        }
        if op != Op::Exec {
            if let Some(p) = &a.path {
                let dir = p
                    .rsplit_once('/')
                    .map(|(d, _)| if d.is_empty() { "/" } else { d })
                    .unwrap_or(p);
                *self.dirs.entry(dir.to_owned()).or_default() += 1;
            }
        }
    }

    pub fn finish(
        &mut self,
        command: &[String],
        code: i32,
        elapsed: Duration,
        seal: &SealSummary,
        unpaired: u64,
    ) {
        self.finish = Some(Finish {
            command: command.to_vec(),
            code,
            elapsed,
            trace: seal.path.display().to_string(),
            records: seal.records,
            digest: seal.final_digest.clone(),
            lost: seal.lost_by_cause.clone(),
            unpaired,
        });
    }

    fn top_dirs(&self, n: usize) -> Vec<(&String, &u64)> {
        let mut v: Vec<_> = self.dirs.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.finish {
            let _ = writeln!(
                s,
                "abm: `{}` exited {} after {:.2}s",
                f.command.join(" "),
                f.code,
                f.elapsed.as_secs_f64()
            );
        }
        let total: u64 = self.by_op.values().sum();
        let ops = self
            .by_op
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "abm: {total} actions ({}), {} failed",
            if ops.is_empty() { "none".into() } else { ops },
            self.failed
        );
        let tr = self
            .by_treatment
            .iter()
            .map(|(k, v)| format!("{k:?} {v}").to_lowercase())
            .collect::<Vec<_>>()
            .join(", ");
        let sc = self
            .by_scope
            .iter()
            .map(|(k, v)| format!("{k:?} {v}").to_lowercase())
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "abm: verdicts by treatment: {}",
            if tr.is_empty() { "none".into() } else { tr }
        );
        let _ = writeln!(
            s,
            "abm: verdicts by scope: {}",
            if sc.is_empty() { "none".into() } else { sc }
        );
        for (d, n) in self.top_dirs(5) {
            let _ = writeln!(s, "abm:   {n:>7}  {d}/");
        }
        for f in &self.flagged {
            let _ = writeln!(s, "abm: flagged: {f}");
        }
        if let Some(f) = &self.finish {
            let lost: u64 = f.lost.values().sum();
            let causes = f
                .lost
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                s,
                "abm: lost events: {lost}{}",
                if lost > 0 {
                    format!(" ({causes})")
                } else {
                    String::new()
                }
            );
            if f.unpaired > 0 {
                let _ = writeln!(
                    s,
                    "abm: results without their syscall entry: {}",
                    f.unpaired
                );
            }
            let _ = writeln!(
                s,
                "abm: trace {} ({} records, sealed, final digest {})",
                f.trace,
                f.records,
                &f.digest[..f.digest.len().min(16)]
            );
        }
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        let f = self.finish.as_ref();
        serde_json::json!({
            "command": f.map(|f| f.command.clone()),
            "exit_code": f.map(|f| f.code),
            "elapsed_s": f.map(|f| f.elapsed.as_secs_f64()),
            "actions_by_op": self.by_op.iter().map(|(k, v)| (k.name().to_owned(), *v)).collect::<BTreeMap<_, _>>(),
            "failed": self.failed,
            "by_treatment": self.by_treatment.iter().map(|(k, v)| (format!("{k:?}").to_lowercase(), *v)).collect::<BTreeMap<_, _>>(),
            "by_scope": self.by_scope.iter().map(|(k, v)| (format!("{k:?}").to_lowercase(), *v)).collect::<BTreeMap<_, _>>(),
            "top_dirs": self.top_dirs(10).into_iter().map(|(d, n)| serde_json::json!({"dir": d, "count": n})).collect::<Vec<_>>(),
            "lost": f.map(|f| f.lost.clone()),
            "unpaired_exits": f.map(|f| f.unpaired),
            "trace": f.map(|f| f.trace.clone()),
            "records": f.map(|f| f.records),
            "final_digest": f.map(|f| f.digest.clone()),
        })
    }
}
