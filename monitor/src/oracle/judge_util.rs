//! Small helpers of the run judge (`judge.rs`).
use std::collections::BTreeSet;

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
