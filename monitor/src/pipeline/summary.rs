//! The human summary printed at the end of `abm run`.
//!
//! Flagged actions are grouped per logical action: the command a process
//! was running (its last exec, inherited at fork) and the deciding rule;
//! one line each, with a count, in the case they were recorded. Failed
//! execs of programs that are not there (a PATH search trying each entry)
//! are counted apart from failed actions. Exit records carry the wait
//! status: non-zero exits are listed per command.
use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    time::Duration,
};

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
    /// Failed execs with ENOENT/ENOTDIR/EACCES: PATH search attempts.
    pub path_search_misses: u64,
    flagged: Vec<Flagged>,
    /// (logical action, rule) -> index into `flagged`.
    flagged_index: HashMap<(String, String), usize>,
    /// Command line each process runs (its last exec, or its parent's).
    running: HashMap<u32, String>,
    /// Processes that exited, and those with a non-zero status:
    /// (command, status) -> count.
    pub exited: u64,
    nonzero: BTreeMap<(String, String), u64>,
    finish: Option<Finish>,
}

/// Flagged lines kept at most (then counted).
const MAX_FLAGGED: usize = 20;

struct Flagged {
    treatment: Treatment,
    rule: String,
    reason: String,
    /// The logical action: a command line.
    action: String,
    /// Operation -> count, and the first target.
    ops: BTreeMap<Op, u64>,
    first: String,
    count: u64,
}

impl Flagged {
    fn line(&self) -> String {
        let t = format!("{:?}", self.treatment).to_lowercase();
        let ops = self
            .ops
            .iter()
            .map(|(o, n)| format!("{o} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        if self.ops.len() == 1 && self.ops.contains_key(&Op::Exec) && self.count == 1 {
            format!("{t} {} ({}: {})", self.action, self.rule, self.reason)
        } else if self.count == 1 {
            format!(
                "{t} {} {} by `{}` ({}: {})",
                self.ops.keys().next().map(|o| o.name()).unwrap_or("?"),
                self.first,
                self.action,
                self.rule,
                self.reason
            )
        } else {
            format!(
                "{t} `{}`: {} calls ({ops}), first {} ({}: {})",
                self.action, self.count, self.first, self.rule, self.reason
            )
        }
    }
}

/// Describes a wait status: `exit 3`, `killed by signal 9`.
pub fn wait_status(status: i64) -> String {
    let (code, sig) = ((status >> 8) & 0xff, status & 0x7f);
    if sig == 0 {
        format!("exit {code}")
    } else {
        format!("killed by signal {sig}")
    }
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
        Some(Op::Fork) => format!("child {}", a.result.unwrap_or(0)),
        _ => a.object_text(),
    };
    let result = match (a.result, &a.errno) {
        (_, Some(e)) => e.clone(),
        (Some(r), None) => r.to_string(),
        (None, None) => a.result_note.map_or("?", |n| n.name()).to_owned(),
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
        match op {
            Op::Fork => {
                if let (Some(child), Some(cmd)) = (a.result, self.running.get(&a.pid).cloned()) {
                    self.running.insert(child as u32, cmd);
                }
                return;
            }
            Op::Exit => {
                self.exited += 1;
                let cmd = self
                    .running
                    .remove(&a.pid)
                    .unwrap_or_else(|| a.comm.clone());
                if let Some(st) = a.result.filter(|r| *r != 0) {
                    *self.nonzero.entry((cmd, wait_status(st))).or_default() += 1;
                }
                return;
            }
            Op::Exec if a.succeeded() => {
                if let Some(argv) = &a.argv {
                    self.running.insert(a.pid, argv.join(" "));
                }
            }
            _ => {}
        }
        if !op.is_action() {
            return;
        }
        *self.by_op.entry(op).or_default() += 1;
        if a.result.is_some_and(|r| r < 0) {
            let miss = op == Op::Exec
                && matches!(a.errno.as_deref(), Some("ENOENT" | "ENOTDIR" | "EACCES"));
            if miss {
                self.path_search_misses += 1;
            } else {
                self.failed += 1;
            }
        }
        if let Some(v) = &a.verdict {
            *self.by_treatment.entry(v.treatment).or_default() += 1;
            *self.by_scope.entry(v.scope).or_default() += 1;
            if v.treatment >= Treatment::Audit {
                self.flag(a, op, v);
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

    fn flag(&mut self, a: &Action, op: Op, v: &crate::record::Verdict) {
        let target = if op == Op::Exec {
            a.argv.as_ref().map(|v| v.join(" ")).unwrap_or_default()
        } else {
            a.path.clone().unwrap_or_default()
        };
        let action = if op == Op::Exec {
            target.clone()
        } else {
            self.running
                .get(&a.pid)
                .cloned()
                .unwrap_or_else(|| a.comm.clone())
        };
        let key = (action.clone(), v.rule.clone());
        if let Some(&i) = self.flagged_index.get(&key) {
            let f = &mut self.flagged[i];
            f.count += 1;
            *f.ops.entry(op).or_default() += 1;
            return;
        }
        if self.flagged.len() >= MAX_FLAGGED {
            return;
        }
        self.flagged_index.insert(key, self.flagged.len());
        self.flagged.push(Flagged {
            treatment: v.treatment,
            rule: v.rule.clone(),
            reason: v.reason.clone(),
            action,
            ops: BTreeMap::from([(op, 1)]),
            first: target,
            count: 1,
        });
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
            "abm: {total} actions ({}), {} failed{}",
            if ops.is_empty() { "none".into() } else { ops },
            self.failed,
            if self.path_search_misses > 0 {
                format!(
                    " (and {} execs of absent programs: PATH search)",
                    self.path_search_misses
                )
            } else {
                String::new()
            }
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
            let _ = writeln!(s, "abm: flagged: {}", f.line());
        }
        if self.exited > 0 {
            let bad: u64 = self.nonzero.values().sum();
            let _ = writeln!(
                s,
                "abm: processes: {} exited, {bad} not with 0",
                self.exited
            );
            for ((cmd, st), n) in self.nonzero.iter().take(10) {
                let cmd: String = cmd.chars().take(120).collect();
                let _ = writeln!(
                    s,
                    "abm:   {st}: {cmd}{}",
                    if *n > 1 {
                        format!(" ({n}x)")
                    } else {
                        String::new()
                    }
                );
            }
        }
        if let Some(f) = &self.finish {
            // Failed kernel reads are loss records too, but count reads
            // whose value was taken as 0, not events missing.
            let is_read = |k: &str| {
                monitor_common::ReadFailure::ALL
                    .iter()
                    .any(|r| r.name() == k)
            };
            let (reads, events): (Vec<_>, Vec<_>) =
                f.lost.iter().partition(|(k, _)| is_read(k.as_str()));
            let lost: u64 = events.iter().map(|(_, v)| **v).sum();
            let causes = events
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
            if reads.iter().any(|(_, v)| **v > 0) {
                let list = reads
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    s,
                    "abm: kernel reads that failed (recorded as 0 or empty): {list}"
                );
            }
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
            "path_search_misses": self.path_search_misses,
            "flagged": self.flagged.iter().map(|f| serde_json::json!({
                "treatment": f.treatment, "rule": f.rule, "reason": f.reason, "action": f.action,
                "count": f.count, "ops": f.ops.iter().map(|(k, v)| (k.name().to_owned(), *v)).collect::<BTreeMap<_, _>>(),
                "first": f.first,
            })).collect::<Vec<_>>(),
            "processes_exited": self.exited,
            "nonzero_exits": self.nonzero.iter().map(|((c, st), n)| serde_json::json!({"command": c, "status": st, "count": n})).collect::<Vec<_>>(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ChainAlg, SealSummary};

    #[test]
    fn failed_kernel_reads_are_listed_apart_from_lost_events() {
        let mut s = Summary::default();
        let seal = SealSummary {
            path: "/tmp/t.jsonl".into(),
            chain: ChainAlg::Sha256,
            records: 3,
            events: 1,
            lost_by_cause: BTreeMap::from([
                ("ringbuf_full".to_owned(), 2),
                ("user_read_failed".to_owned(), 5),
            ]),
            final_digest: "d".into(),
        };
        s.finish(&["true".into()], 0, Duration::from_millis(1), &seal, 0);
        let text = s.render();
        assert!(
            text.contains("abm: lost events: 2 (ringbuf_full 2)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "abm: kernel reads that failed (recorded as 0 or empty): user_read_failed 5\n"
            ),
            "{text}"
        );
    }
}
