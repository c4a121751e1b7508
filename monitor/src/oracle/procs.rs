//! What each record did (an action, an attempt, or bookkeeping) and the
//! process tree of the run.

use std::collections::{HashMap, HashSet};

use super::verdict::TraceEvent;
use crate::record::{Action, Op};

/// Whether a guardrail refused the call, from the record's `enforcement`
/// field: the string `denied`/`deny`, or an object whose `outcome`,
/// `action`, `decision`, `treatment` or `result` is one of those.
pub fn enforcement_denied(v: &serde_json::Value) -> bool {
    fn is_deny(s: &str) -> bool {
        matches!(s, "denied" | "deny" | "blocked" | "refused")
    }
    match v {
        serde_json::Value::String(s) => is_deny(s),
        serde_json::Value::Object(m) => ["outcome", "action", "decision", "treatment", "result"]
            .iter()
            .filter_map(|k| m.get(*k).and_then(|x| x.as_str()))
            .any(is_deny),
        _ => false,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Lifecycle bookkeeping (fork, exit, io_uring_setup) or no op.
    NotAction,
    Done,
    Failed,
    Denied,
    Unobserved,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Failed => "failed",
            Outcome::Denied => "denied",
            Outcome::Unobserved => "unobserved",
            Outcome::NotAction | Outcome::Done => "done",
        }
    }
}

pub fn outcome(a: &Action) -> Outcome {
    match a.op {
        Some(op) if op.is_action() => {}
        _ => return Outcome::NotAction,
    }
    if a.enforcement
        .as_ref()
        .and_then(|e| serde_json::to_value(e).ok())
        .is_some_and(|e| enforcement_denied(&e))
    {
        return Outcome::Denied;
    }
    match a.result {
        None => Outcome::Unobserved,
        Some(r) if r >= 0 => Outcome::Done,
        Some(_) => Outcome::Failed,
    }
}

/// The process tree of a run, from fork records and each record's `ppid`.
pub struct Procs {
    pub parent: HashMap<u32, u32>,
    /// Sequence numbers of each process's successful execs, ascending.
    pub execs: HashMap<u32, Vec<u64>>,
}

impl Procs {
    pub fn build(events: &[TraceEvent], outcomes: &[Outcome]) -> Procs {
        let mut parent: HashMap<u32, u32> = HashMap::new();
        let mut execs: HashMap<u32, Vec<u64>> = HashMap::new();
        for (e, o) in events.iter().zip(outcomes) {
            let a = &e.action;
            if a.op == Some(Op::Fork) {
                if let Some(child) = a.result.filter(|r| *r > 0).map(|r| r as u32) {
                    // The record is either the parent's (pid = parent) or the
                    // child's (pid = child, ppid = parent).
                    let p = if a.pid != child { a.pid } else { a.ppid };
                    if p != child {
                        parent.insert(child, p);
                    }
                }
            } else if a.pid != 0 && a.ppid != a.pid {
                parent.entry(a.pid).or_insert(a.ppid);
            }
            if a.op == Some(Op::Exec) && *o == Outcome::Done {
                execs.entry(a.pid).or_default().push(e.seq);
            }
        }
        for v in execs.values_mut() {
            v.sort_unstable();
        }
        Procs { parent, execs }
    }

    /// Start of the program image that made the record `seq` of `pid`.
    pub fn image_start(&self, pid: u32, seq: u64) -> u64 {
        self.execs
            .get(&pid)
            .and_then(|v| v.iter().rev().find(|s| **s <= seq).copied())
            .unwrap_or(0)
    }

    /// True when `pid` is `ancestor` or one of its descendants.
    pub fn descends(&self, mut pid: u32, ancestor: u32) -> bool {
        for _ in 0..256 {
            if pid == ancestor {
                return true;
            }
            match self.parent.get(&pid) {
                Some(&p) if p != 0 && p != pid => pid = p,
                _ => return false,
            }
        }
        false
    }
}

/// Failed execs that are a shell or `execvp` searching `PATH`: the same
/// process execs the same argv again later.
pub fn path_search_failures(events: &[TraceEvent], outcomes: &[Outcome]) -> HashSet<usize> {
    let mut later: HashMap<u32, Option<&Vec<String>>> = HashMap::new();
    let mut out = HashSet::new();
    for (i, e) in events.iter().enumerate().rev() {
        if e.action.op != Some(Op::Exec) {
            continue;
        }
        if outcomes[i] == Outcome::Failed
            && later
                .get(&e.action.pid)
                .is_some_and(|argv| *argv == e.action.argv.as_ref())
        {
            out.insert(i);
        }
        later.insert(e.action.pid, e.action.argv.as_ref());
    }
    out
}
