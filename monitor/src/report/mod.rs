//! `abm report`: one self-contained HTML page that shows what runs did.
//!
//! - [`model`]: aggregates a trace's records into what the page shows
//!   (bounded: lanes of time bins, capped tree and tables).
//! - [`html`]: the page itself (inline CSS and JavaScript, the data as one
//!   embedded JSON blob, rendered in the browser).
//!
//! Reference: docs/report.md.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::trace::{self, TraceRecord, VerifyReport};

pub mod html;
pub mod model;

/// Exit code when a trace is refused because it does not verify.
pub const EXIT_REFUSED: i32 = 3;

/// Write an HTML report of one or more traces: run header and
/// verification, a zoomable timeline of actions, the touched paths by
/// verdict, the process tree, every confirm/deny/preserve decision, and for
/// several traces a comparison table.
///
/// Traces must verify intact (and, when keyed, be authenticated with
/// `--key`); otherwise `abm report` refuses them with exit code 3 unless
/// `--unverified` is given, and the page then shows what is wrong.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Trace files (as written by `abm run --trace` or the daemon).
    #[arg(value_name = "TRACE", required = true)]
    pub traces: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Key file of signed (hmac-sha256) traces, to authenticate them.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Report traces that are unsealed, broken or not authenticated; the
    /// page says which.
    #[arg(long)]
    pub unverified: bool,
    /// Directory of `abm oracle` verdicts (`*.json`, `*.jsonl`), shown next
    /// to the runs they judged.
    #[arg(long, value_name = "DIR")]
    pub verdicts: Option<PathBuf>,
    /// Title of the page [default: the first trace's command].
    #[arg(long)]
    pub title: Option<String>,
}

/// The data blob embedded in the page.
#[derive(Debug, Serialize)]
pub struct Report {
    pub title: String,
    pub generated: String,
    pub monitor_version: String,
    pub categories: [&'static str; 6],
    pub traces: Vec<model::TraceView>,
    /// Verdicts that matched none of the traces.
    pub unmatched_verdicts: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error(
        "{}: the trace does not verify ({status}: {detail}); check it with `abm verify {}`, \
         pass --key if it was signed, or pass --unverified to report it anyway",
        .path.display(), .path.display()
    )]
    Unverified {
        path: PathBuf,
        status: String,
        detail: String,
    },
    #[error("{}: not a trace: {reason}", .path.display())]
    NotATrace { path: PathBuf, reason: String },
    #[error("--verdicts {}: {reason}", .path.display())]
    Verdicts { path: PathBuf, reason: String },
    #[error("--verdicts {}: {error}", .path.display())]
    ReadVerdicts {
        path: PathBuf,
        error: crate::oracle::score::VerdictsError,
    },
    #[error("{}: cannot write the report: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads a trace's records. The only place the report reads trace files.
fn read_records(path: &Path) -> Result<Vec<TraceRecord>, trace::TraceError> {
    trace::read_trace(path)
}

/// Verifies and aggregates one trace.
pub fn load(
    path: &Path,
    key: Option<&[u8]>,
    unverified: bool,
) -> Result<model::TraceView, ReportError> {
    let report: VerifyReport = trace::verify(path, key)?;
    let view = model::VerifyView::from_report(&report);
    if report.header.is_none() {
        let reason = report
            .first_bad
            .as_ref()
            .map_or_else(|| "no header record".to_owned(), ToString::to_string);
        return Err(ReportError::NotATrace {
            path: path.to_owned(),
            reason,
        });
    }
    if !view.ok && !unverified {
        return Err(ReportError::Unverified {
            path: path.to_owned(),
            status: view.status.clone(),
            detail: if view.status == "intact" {
                view.authentication.clone()
            } else {
                view.detail.clone()
            },
        });
    }
    let records = match read_records(path) {
        Ok(r) => r,
        Err(trace::TraceError::Parse { line, reason, .. }) => {
            return Err(ReportError::NotATrace {
                path: path.to_owned(),
                reason: format!("line {line}: {reason}"),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    Ok(model::build(
        name,
        path.display().to_string(),
        &records,
        Some(&report),
    ))
}

/// Attaches each verdict to the trace it judged (same canonical path, else
/// same file name); returns how many matched nothing.
fn attach_verdicts(traces: &mut [model::TraceView], verdicts: Vec<Value>) -> usize {
    let canon = |p: &str| std::fs::canonicalize(p).ok();
    let keys: Vec<(Option<PathBuf>, String)> = traces
        .iter()
        .map(|t| (canon(&t.path), t.name.clone()))
        .collect();
    let mut unmatched = 0;
    for v in verdicts {
        let vp = v["trace"]["path"].as_str().unwrap_or("").to_owned();
        let vc = canon(&vp);
        let vname = Path::new(&vp)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let hit = keys
            .iter()
            .position(|(c, _)| c.is_some() && *c == vc)
            .or_else(|| keys.iter().position(|(_, n)| Some(n) == vname.as_ref()));
        match hit {
            Some(i) if traces[i].verdict.is_none() => traces[i].verdict = Some(v),
            _ => unmatched += 1,
        }
    }
    unmatched
}

/// Builds the report of several traces (the data the page embeds).
pub fn build(a: &ReportArgs) -> Result<Report, ReportError> {
    let key = a.key.as_deref().map(trace::read_key).transpose()?;
    let mut traces = Vec::with_capacity(a.traces.len());
    for p in &a.traces {
        traces.push(load(p, key.as_deref(), a.unverified)?);
    }
    let mut unmatched = 0;
    if let Some(dir) = &a.verdicts {
        if !dir.is_dir() {
            return Err(ReportError::Verdicts {
                path: dir.clone(),
                reason: "not a directory (give the directory of `abm oracle -o` outputs)".into(),
            });
        }
        let verdicts = crate::oracle::score::read_verdict_path(dir).map_err(|error| {
            ReportError::ReadVerdicts {
                path: dir.clone(),
                error,
            }
        })?;
        let verdicts = verdicts
            .into_iter()
            .map(|v| serde_json::to_value(v).unwrap_or(Value::Null))
            .collect();
        unmatched = attach_verdicts(&mut traces, verdicts);
    }
    let title = a.title.clone().unwrap_or_else(|| {
        let cmd = traces
            .first()
            .and_then(|t| t.header["command"].as_array())
            .map(|c| {
                c.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|c| !c.is_empty());
        match (cmd, traces.len()) {
            (Some(c), 1) => format!("abm report: {c}"),
            (_, n) if n > 1 => format!("abm report: {n} runs"),
            _ => format!("abm report: {}", traces[0].name),
        }
    });
    Ok(Report {
        title,
        generated: crate::core::rfc3339(std::time::SystemTime::now()),
        monitor_version: env!("CARGO_PKG_VERSION").to_owned(),
        categories: model::CATEGORIES,
        traces,
        unmatched_verdicts: unmatched,
    })
}

/// `abm report`.
pub fn report(a: ReportArgs) -> anyhow::Result<i32> {
    let r = match build(&a) {
        Ok(r) => r,
        Err(e @ (ReportError::Unverified { .. } | ReportError::NotATrace { .. })) => {
            eprintln!("abm report: {e}");
            return Ok(EXIT_REFUSED);
        }
        Err(e) => return Err(e.into()),
    };
    let page = html::render(&r);
    std::fs::write(&a.output, &page).map_err(|source| ReportError::Write {
        path: a.output.clone(),
        source,
    })?;
    let events: u64 = r.traces.iter().map(|t| t.events).sum();
    eprintln!(
        "abm report: wrote {} ({} trace(s), {} event(s), {} KiB)",
        a.output.display(),
        r.traces.len(),
        events,
        page.len().div_ceil(1024)
    );
    Ok(0)
}
