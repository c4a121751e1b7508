//! The text form of a [`VerifyReport`]: what `abm verify` prints.

use std::fmt::Write as _;
use std::path::Path;

use super::anchor::AnchorCheck;
use super::{Authentication, ProblemKind, VerifyReport, VerifyStatus};

/// The text report.
pub fn render(trace: &Path, r: &VerifyReport) -> String {
    let mut s = String::new();
    match r.format {
        Some(f) => {
            let _ = writeln!(s, "trace: {} ({f})", trace.display());
        }
        None => {
            let _ = writeln!(s, "trace: {}", trace.display());
        }
    }
    let auth = match &r.authentication {
        Authentication::Unknown => String::new(),
        Authentication::Unkeyed => {
            "sha256 chain (unkeyed: detects damage, not a rewrite of the whole file)".into()
        }
        Authentication::Authenticated { key_id } => {
            format!("hmac-sha256 chain, authenticated with key id {key_id}")
        }
        Authentication::KeyNotGiven { key_id } => format!(
            "hmac-sha256 chain (key id {key_id}) NOT AUTHENTICATED: no --key given, only \
             sequence, links and seal were checked"
        ),
    };
    if let Some(AnchorCheck::Rejected { detail }) = &r.anchor {
        let _ = writeln!(s, "status: REJECTED BY THE ANCHOR: {detail}");
        let _ = writeln!(
            s,
            "(without the anchor the trace itself would read as follows; it is not what abm wrote)"
        );
    }
    match (&r.status, &r.first_bad) {
        (VerifyStatus::Intact, _) => {
            if matches!(r.authentication, Authentication::KeyNotGiven { .. }) {
                let _ = writeln!(
                    s,
                    "status: NOT AUTHENTICATED: the trace is signed and no --key was given; \
                     sequence, links and seal are intact, record contents were not checked"
                );
            } else {
                let _ = writeln!(s, "status: INTACT (sealed)");
            }
        }
        (VerifyStatus::Unsealed { intact_records }, _) => {
            let _ = writeln!(
                s,
                "status: UNSEALED: no seal record; the run was stopped before sealing (or the \
                 end of the file was removed). The {intact_records} record(s) present check out."
            );
        }
        (VerifyStatus::Broken { intact_records }, p) => {
            let _ = writeln!(s, "status: BROKEN");
            if let Some(p) = p {
                let _ = writeln!(s, "first bad record: {p}");
                if p.kind == ProblemKind::WrongKey || p.kind == ProblemKind::NotKeyed {
                    let _ = writeln!(s, "no record could be authenticated");
                } else {
                    let lines = match intact_records {
                        0 => String::new(),
                        1 => " (line 1)".to_string(),
                        n => format!(" (lines 1-{n})"),
                    };
                    let _ = writeln!(
                        s,
                        "records before it that check out: {intact_records}{lines}"
                    );
                }
            }
        }
    }
    if !auth.is_empty() {
        let _ = writeln!(s, "chain: {auth}");
    }
    match &r.anchor {
        None => {}
        Some(AnchorCheck::Matches { seq, sealed: true }) => {
            let _ = writeln!(
                s,
                "anchor: matches: the seal (seq {seq}) is the one abm sent to the anchor"
            );
        }
        Some(AnchorCheck::Matches { seq, sealed: false }) => {
            let _ = writeln!(
                s,
                "anchor: matches: records up to seq {seq} are the ones abm sent to the anchor"
            );
        }
        Some(AnchorCheck::Unanchored { seq, records }) => {
            let _ = writeln!(
                s,
                "anchor: records up to seq {seq} match the anchor; the {records} record(s) after \
                 it are UNANCHORED (abm stopped before sending their head, or they were added \
                 by something else): do not rely on them"
            );
        }
        Some(AnchorCheck::Rejected { detail }) => {
            let _ = writeln!(s, "anchor: REJECTED: {detail}");
        }
    }
    if let Some(t) = &r.truncated_tail {
        match (t.block_offset, t.block_len) {
            (None, _) => {
                let _ = writeln!(
                    s,
                    "truncated: line {} is incomplete ({} byte(s), no newline): a write cut \
                     short by a crash; it is not counted",
                    t.line, t.bytes
                );
            }
            (Some(off), len) => {
                let of = len.map_or(String::new(), |l| format!(" of {l}"));
                let _ = writeln!(
                    s,
                    "truncated: the last block (at byte {off}, {} byte(s){of}) is incomplete: a \
                     write cut short by a crash; its records (from line {}) are not counted",
                    t.bytes, t.line
                );
            }
        }
    }
    if let Some(h) = &r.header {
        let cmd = if h.command.is_empty() {
            "(none)".to_string()
        } else {
            h.command.join(" ")
        };
        let _ = writeln!(s, "command: {cmd}");
        if !h.workspace.is_empty() {
            let _ = writeln!(s, "workspace: {}", h.workspace);
        }
        let _ = writeln!(
            s,
            "monitor: abm {} on {} (kernel {}), backends: {}",
            h.monitor_version,
            h.host,
            h.kernel,
            if h.backends.is_empty() {
                "(none)".to_string()
            } else {
                h.backends.join(", ")
            }
        );
        let _ = writeln!(s, "policy digest: {}", h.policy_digest);
        let end = match (&r.seal, &r.status) {
            (Some(seal), _) => seal.end_time.as_str(),
            (None, VerifyStatus::Broken { .. }) => "(end not verified)",
            (None, _) => "(not sealed)",
        };
        let _ = writeln!(s, "time: {} .. {}", h.start_time, end);
    }
    let label = if matches!(r.status, VerifyStatus::Broken { .. }) {
        "records before the problem"
    } else {
        "records"
    };
    let _ = writeln!(
        s,
        "{label}: {} ({} event(s), {} loss record(s), {} note(s))",
        r.records,
        r.events,
        r.loss_records,
        r.notes_by_kind.values().sum::<u64>()
    );
    if !r.events_by_op.is_empty() {
        let ops: Vec<String> = r
            .events_by_op
            .iter()
            .map(|(op, n)| format!("{op} {n}"))
            .collect();
        let _ = writeln!(s, "events by op: {}", ops.join(", "));
    }
    if let (Some(a), Some(b)) = (&r.first_event, &r.last_event) {
        let _ = write!(s, "events: {} .. {}", a.time, b.time);
        if let Some((lo, hi)) = r.ktime_span_ns {
            let _ = write!(s, " ({:.3} s by kernel clock)", (hi - lo) as f64 / 1e9);
        }
        let _ = writeln!(s);
    }
    if r.ktime_regressions > 0 {
        let _ = writeln!(
            s,
            "warning: {} event(s) are earlier (ktime) than the event before them",
            r.ktime_regressions
        );
    }
    if r.lost.is_empty() || r.lost.values().all(|&n| n == 0) {
        let _ = writeln!(s, "lost: none");
    } else {
        let lost: Vec<String> = r
            .lost
            .iter()
            .map(|(cause, n)| format!("{cause} {n}"))
            .collect();
        let _ = writeln!(s, "lost: {}", lost.join(", "));
    }
    if !r.notes_by_kind.is_empty() {
        let notes: Vec<String> = r
            .notes_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "notes: {}", notes.join(", "));
    }
    if let Some(seal) = &r.seal {
        if let Some(code) = seal.exit_code {
            let _ = writeln!(s, "command exit code: {code}");
        }
    }
    if let Some(d) = &r.final_digest {
        let label = if r.is_intact() {
            "final digest (seal)"
        } else {
            "digest of last good record"
        };
        let _ = writeln!(s, "{label}: {d}");
    }
    s
}
