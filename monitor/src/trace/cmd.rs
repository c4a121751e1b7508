//! `abm verify`: checks a trace and prints what it establishes.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use super::anchor::AnchorCheck;
use super::{read_key, Authentication, ProblemKind, VerifyReport, VerifyStatus};

/// Every record checks out and the trace is sealed.
pub const EXIT_INTACT: i32 = 0;
/// A record was modified, deleted, inserted, reordered, the seal is forged,
/// or the key does not fit.
pub const EXIT_BROKEN: i32 = 1;
/// No seal (the run was killed, or the end was cut off); the records present
/// check out.
pub const EXIT_UNSEALED: i32 = 2;
/// The trace is keyed and no `--key` was given: contents not authenticated.
pub const EXIT_UNAUTHENTICATED: i32 = 3;
/// The trace or key file could not be read.
pub const EXIT_ERROR: i32 = 4;

/// Check a trace's hash chain and seal, and summarise it.
///
/// Exit status: 0 intact (sealed, every record checks out); 1 broken (the
/// first bad record is named) or rejected by `--anchor`; 2 unsealed (the run stopped before sealing,
/// the records present check out); 3 keyed trace verified without --key
/// (structure checked, contents not authenticated); 4 the trace or key could
/// not be read.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Trace file to verify (compact or JSON lines, as written by `abm run
    /// --trace`). Several files are checked one by one and then as a
    /// sequence, in the order given: the files the daemon rotated a
    /// target's trace into (`rotate_bytes`), each of which names the seal
    /// of the one before it.
    #[arg(value_name = "TRACE", required_unless_present = "bench_hashing")]
    pub traces: Vec<PathBuf>,

    /// Key file the trace was signed with (`--sign-key` when recording); every
    /// record is then authenticated with HMAC-SHA256.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,

    /// Anchor file: the chain heads `abm run --anchor-fd` sent while the
    /// trace was written. The trace is rejected (exit 1) when it does not
    /// hold the anchor's last head, or is sealed with a seal the anchor does
    /// not name; records after the last anchored head are reported as
    /// unanchored.
    #[arg(long, value_name = "FILE")]
    pub anchor: Option<PathBuf>,

    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,

    /// Measure serialization and chaining throughput over N synthetic events
    /// and print it as JSON, instead of verifying a trace.
    #[arg(long, value_name = "N", hide = true, conflicts_with_all = ["traces", "key", "anchor"])]
    pub bench_hashing: Option<usize>,
}

/// Runs `abm verify`; returns the process exit code.
pub fn verify(a: VerifyArgs) -> anyhow::Result<i32> {
    if let Some(n) = a.bench_hashing {
        let (sha, hmac) = super::hashing_throughput(n);
        println!(
            "{}",
            serde_json::json!({
                "events": n,
                "sha256_events_per_sec": sha.round(),
                "hmac_sha256_events_per_sec": hmac.round(),
            })
        );
        return Ok(EXIT_INTACT);
    }
    if a.traces.is_empty() {
        anyhow::bail!("abm verify: give the trace file to verify");
    }
    if a.traces.len() > 1 && a.anchor.is_some() {
        anyhow::bail!(
            "abm verify: --anchor checks one trace; give only the file the anchor was written for"
        );
    }
    let key = match &a.key {
        None => None,
        Some(p) => match read_key(p) {
            Ok(k) => {
                warn_if_exposed(p);
                Some(k)
            }
            Err(e) => {
                eprintln!("abm verify: {e}");
                return Ok(EXIT_ERROR);
            }
        },
    };
    let anchor = match &a.anchor {
        None => None,
        Some(p) => match super::anchor::read_anchor(p) {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("abm verify: {e}");
                return Ok(EXIT_ERROR);
            }
        },
    };
    if a.traces.len() > 1 {
        return verify_sequence(&a.traces, key.as_deref(), a.json);
    }
    let trace = a.traces[0].clone();
    let verified = match &anchor {
        None => super::verify(&trace, key.as_deref()),
        Some(an) => super::verify_anchored(&trace, key.as_deref(), an),
    };
    let report = match verified {
        Ok(r) => r,
        Err(e) => {
            eprintln!("abm verify: {e}");
            return Ok(EXIT_ERROR);
        }
    };
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("trace".into(), trace.display().to_string().into());
            o.insert("exit_code".into(), report.exit_code().into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&trace, &report));
        if let Some(Ok(Some(c))) = report.header.as_ref().map(super::sequence::Continues::of) {
            println!(
                "sequence: part {} of a rotated trace, continuing {}; give every file, in order, \
                 to check the links",
                c.part, c.trace
            );
        }
    }
    Ok(report.exit_code())
}

/// `abm verify A B C`: each file, then the links between them.
fn verify_sequence(traces: &[PathBuf], key: Option<&[u8]>, json: bool) -> anyhow::Result<i32> {
    let mut reports = Vec::with_capacity(traces.len());
    for t in traces {
        match super::verify(t, key) {
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!("abm verify: {e}");
                return Ok(EXIT_ERROR);
            }
        }
    }
    let files: Vec<(&Path, &VerifyReport)> = traces
        .iter()
        .map(PathBuf::as_path)
        .zip(reports.iter())
        .collect();
    let links = super::sequence::check(&files);
    let broken = links.iter().any(super::sequence::Link::is_broken);
    let codes: Vec<i32> = reports.iter().map(VerifyReport::exit_code).collect();
    // Any break decides; then the least assured file.
    let code = if broken || codes.contains(&EXIT_BROKEN) {
        EXIT_BROKEN
    } else {
        codes.iter().copied().max().unwrap_or(EXIT_INTACT)
    };
    if json {
        let mut out = Vec::new();
        for ((t, r), l) in files.iter().zip(&links) {
            let mut v = serde_json::to_value(r)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("trace".into(), t.display().to_string().into());
                o.insert("exit_code".into(), r.exit_code().into());
                o.insert("sequence".into(), serde_json::to_value(l)?);
            }
            out.push(v);
        }
        let v = serde_json::json!({
            "traces": out,
            "sequence_intact": !broken,
            "exit_code": code,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(code);
    }
    for ((t, r), l) in files.iter().zip(&links) {
        print!("{}", render(t, r));
        let line = match l {
            super::sequence::Link::Start => "starts the sequence".to_owned(),
            super::sequence::Link::StartsLater { continues } => {
                format!("continues {continues} (not given: checked from here on)")
            }
            super::sequence::Link::Linked => "continues the file before it".to_owned(),
            super::sequence::Link::Broken { detail } => format!("BROKEN: {detail}"),
        };
        println!("sequence: {line}\n");
    }
    println!(
        "sequence of {} files: {}",
        traces.len(),
        if broken { "BROKEN" } else { "every link holds" }
    );
    Ok(code)
}

fn warn_if_exposed(p: &Path) {
    if let Ok(m) = std::fs::metadata(p) {
        let mode = m.permissions().mode();
        if mode & 0o077 != 0 {
            eprintln!(
                "abm verify: warning: key file {} has mode {:o}: other users may read it and \
                 forge traces; run `chmod 600 {}`",
                p.display(),
                mode & 0o777,
                p.display()
            );
        }
    }
}

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
