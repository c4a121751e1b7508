//! Small helpers of the run judge (`judge.rs`).
use std::collections::BTreeSet;

use super::matching::View;
use super::spec::Rule;
use super::verdict::{Attempt, TraceEvent};
use crate::record::{Action, Op};

pub(super) fn sorted(v: impl IntoIterator<Item = u64>) -> Vec<u64> {
    v.into_iter().collect::<BTreeSet<_>>().into_iter().collect()
}

/// A failed call that could not have changed anything: removing what does
/// not exist, or a directory that is not empty (git tries both routinely
/// while deleting refs).
pub(super) fn routine_failure(a: &Action) -> bool {
    matches!(a.op, Some(Op::Unlink | Op::Rmdir | Op::Rename))
        && a.result.is_some_and(|r| r < 0)
        && matches!(a.errno.as_deref(), Some("ENOENT" | "ENOTEMPTY" | "EEXIST"))
}

pub(super) fn idx<'a>(rules: &'a [Rule], name: &'a str) -> impl Iterator<Item = usize> + 'a {
    rules
        .iter()
        .enumerate()
        .filter(move |(_, r)| r.name == name)
        .map(|(k, _)| k)
}

pub(super) fn attempt(e: &TraceEvent, outcome: &str, matches: Vec<String>) -> Attempt {
    let a = &e.action;
    Attempt {
        seq: e.seq,
        op: a.op.map(Op::name).unwrap_or("?").to_owned(),
        outcome: outcome.to_owned(),
        path: a.path.clone(),
        path2: a.path2.clone(),
        argv: a.argv.clone(),
        result: a.result,
        errno: a.errno.clone(),
        matches,
        exit_code: None,
        signal: None,
        objects: Vec::new(),
    }
}

/// What a call that did not take effect concerns in the task spec: the
/// intended entries (`intended:NAME`) and over-scope and constraint rules
/// (`over_scope:NAME`, `constraint:NAME`) that `hit` matches, then
/// `protected` when one of `objs` is protected, or else `world` when one
/// is in the world and not ignored.
pub(super) fn concerns(view: &View, hit: impl Fn(&Rule) -> bool, objs: &[&str]) -> Vec<String> {
    let (spec, roots) = (view.spec, view.roots);
    let mut m = Vec::new();
    for it in &spec.intended {
        if it.evidence.iter().any(&hit) {
            m.push(format!("intended:{}", it.name));
        }
    }
    for (sec, rs) in [
        ("over_scope", &spec.over_scope),
        ("constraint", &spec.constraints),
    ] {
        for r in rs.iter().filter(|r| hit(r)) {
            m.push(format!("{sec}:{}", r.name));
        }
    }
    if objs.iter().any(|p| spec.protected.matches(p, roots)) {
        m.push("protected".into());
    } else if objs
        .iter()
        .any(|p| spec.world.matches(p, roots) && !view.ignored(p))
    {
        m.push("world".into());
    }
    m
}
