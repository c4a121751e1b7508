//! Verdicts and records of calls the supervisor refuses or cannot judge
//! exactly.
use std::time::SystemTime;

use super::supervisor::RULE_UNKNOWN_PATH;
use crate::{
    core::rfc3339,
    policy::{Context, Policy},
    record::{
        enforcement::{Backend, CallDecision, DecisionKind, Enforcement},
        Action, PathIssue, ResultNote, Treatment, Verdict,
    },
};

/// The `enforcement` object of a call the supervisor decided
/// (docs/enforcement.md): the decision, the deciding rule and its
/// treatment, who decided and now; the caller adds what its decision has
/// besides (a request, a quarantine).
pub(crate) fn decided(decision: DecisionKind, v: &Verdict, by: &str) -> Enforcement {
    Enforcement {
        rule: Some(v.rule.clone()),
        treatment: Some(Some(v.treatment)),
        decided_by: Some(by.to_owned()),
        decided_at: Some(rfc3339(SystemTime::now())),
        ..Enforcement::new(Backend::Seccomp, decision)
    }
}

/// The note of a call let through after a confirm or preserve answer:
/// `enforcement` beside the call (made at `ktime`).
pub(crate) fn let_through(a: &Action, ktime: u64, enforcement: Enforcement) -> CallDecision {
    CallDecision {
        op: Some(a.op),
        syscall: Some(a.syscall.to_string()),
        path: Some(a.path.clone()),
        path2: Some(a.path2.clone()),
        tid: Some(a.tid),
        comm: Some(a.comm.clone()),
        ktime_ns: Some(ktime),
        ..CallDecision::of(enforcement)
    }
}

/// The `enforcement` of a call the supervisor refused.
pub(crate) fn denied_enforcement(v: &Verdict, by: &str) -> Enforcement {
    decided(DecisionKind::Denied, v, by)
}

/// Under `--enforce` a path that is not known exactly (`path_issues`: cut,
/// unreadable, disconnected, a bad fd) is not judged as if it were: when a
/// rule stricter than accept could match the call on some path, the call
/// is refused.
pub(crate) fn fail_closed(v: Verdict, a: &Action, policy: &Policy, ctx: &Context) -> Verdict {
    // `disconnected` alone is a file already deleted (an fd's target): it
    // has no name left for a path rule to match.
    let inexact = a.path_issues.iter().any(|&i| i != PathIssue::Disconnected);
    if !inexact || !matches!(v.treatment, Treatment::Accept | Treatment::Audit) {
        return v;
    }
    match policy.could_match_any_path(a, ctx) {
        Some(r) => Verdict {
            rule: RULE_UNKNOWN_PATH.into(),
            treatment: Treatment::Deny,
            irreversibility: v.irreversibility,
            scope: v.scope,
            reason: format!(
                "the path is not known exactly ({}) and rule {} could match it",
                PathIssue::list(&a.path_issues),
                r.id
            ),
        },
        None => v,
    }
}

/// `p` with its directories (and with `follow`, a final symlink) resolved
/// in the calling thread's root; as it is when they do not exist.
pub(crate) fn canonical_in_view(p: &str, follow: bool) -> String {
    let path = std::path::Path::new(p);
    if follow {
        if let Ok(c) = std::fs::canonicalize(path) {
            return c.to_string_lossy().into_owned();
        }
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name).to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.to_owned()),
        _ => p.to_owned(),
    }
}

/// Turns an action into the event record of a refused call.
pub(crate) fn denied_record(a: &mut Action, v: Verdict, ktime: u64, enforcement: Enforcement) {
    a.ktime_ns = ktime;
    a.result = Some(-i64::from(libc::EPERM));
    a.errno = Some("EPERM".into());
    a.result_note = Some(ResultNote::DeniedBySeccomp);
    a.verdict = Some(v);
    a.enforcement = Some(Box::new(enforcement));
}
