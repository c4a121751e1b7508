//! Trace size and verification speed: bytes per event on disk, the write
//! rate, the cost of the compact form's packing thread on the burst, and
//! `abm verify` of a large trace.
use std::{
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context as _, Result};

use super::{sys, Config};

/// Events in the synthetic trace that `abm verify` is timed on.
pub const VERIFY_EVENTS: u64 = 1_000_000;
/// Target: bytes per event on disk (default form, default pack).
const BYTES_PER_EVENT: f64 = 80.0;
/// Target: `abm verify` of VERIFY_EVENTS events, seconds.
const VERIFY_SECS: f64 = 2.0;

/// Timed `abm verify` runs per form; the median is reported.
const VERIFY_RUNS: usize = 3;
/// The forms `abm verify` is timed on: the default form first (the
/// target is stated for it; the other is held to the same limit).
const VERIFY_FORMS: [&str; 2] = ["compact", "jsonl"];

/// `abm verify` of a large trace, in each form.
#[derive(Clone, Debug)]
pub struct VerifyRun {
    pub forms: Vec<(&'static str, Result<Timed, String>)>,
}

/// The median of the timed `abm verify` runs of one form.
#[derive(Clone, Debug)]
pub struct Timed {
    pub wall_s: f64,
    pub cpu_s: Option<f64>,
    pub bytes: u64,
    pub records: u64,
}

/// Builds a trace of VERIFY_EVENTS events from the record shapes of `src`
/// (a real burst trace) with `abm trace synth` (through abm's own writer,
/// chained and sealed), in each form, then times `abm verify` on it.
pub fn verify_large(abm: &Path, src: &Path, dir: &Path) -> Result<VerifyRun> {
    let forms = VERIFY_FORMS
        .iter()
        .map(|&form| {
            let r = verify_form(abm, src, dir, form).map_err(|e| format!("{e:#}"));
            (form, r)
        })
        .collect();
    Ok(VerifyRun { forms })
}

fn verify_form(abm: &Path, src: &Path, dir: &Path, form: &str) -> Result<Timed> {
    let ext = if form == "jsonl" { "jsonl" } else { "abmt" };
    let big = dir.join(format!("verify-1m.{ext}"));
    let _ = std::fs::remove_file(&big);
    let out = Command::new(abm)
        .args(["trace", "synth", "--format", form, "--events"])
        .arg(VERIFY_EVENTS.to_string())
        .arg(src)
        .arg(&big)
        .output()
        .context("cannot run abm trace synth")?;
    if !out.status.success() {
        bail!(
            "abm trace synth failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let bytes = std::fs::metadata(&big)?.len();
    let mut runs = Vec::new();
    for _ in 0..VERIFY_RUNS {
        let r = time_verify(abm, &big);
        if r.is_err() {
            let _ = std::fs::remove_file(&big);
        }
        let (wall_s, cpu_s, records) = r?;
        runs.push(Timed {
            wall_s,
            cpu_s,
            bytes,
            records,
        });
    }
    let _ = std::fs::remove_file(&big);
    runs.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    Ok(runs.swap_remove(runs.len() / 2))
}

/// One `abm verify --json BIG`: wall time, CPU time (all threads, read at
/// its exit) and the records it checked.
fn time_verify(abm: &Path, big: &Path) -> Result<(f64, Option<f64>, u64)> {
    let start = Instant::now();
    let child = Command::new(abm)
        .args(["verify", "--json"])
        .arg(big)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot run abm verify")?;
    let pid = child.id() as i32;
    let mut stdout = child.stdout.expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let (code, cpu_s) = sys::wait_zombie(pid)?;
    let wall_s = start.elapsed().as_secs_f64();
    let text = reader.join().unwrap_or_default();
    if code != 0 {
        bail!("abm verify exited with {code}: {}", text.trim());
    }
    let records = super::json_number(&text, "records").unwrap_or(0.0) as u64;
    if records < VERIFY_EVENTS {
        bail!("abm verify checked {records} records, expected over {VERIFY_EVENTS}");
    }
    Ok((wall_s, cpu_s, records))
}

/// `cargo xtask bench --only verify`: records a burst of 20,000 files
/// under `abm run` (in `dir`) and times `abm verify` on 1,000,000 events of
/// its shapes, in both forms; prints the rows of the report's targets.
pub fn bench_alone(abm: &Path, scripts: &Path, dir: &Path) -> Result<()> {
    let src = dir.join("verify-src.abmt");
    let root = dir.join("verify-burst");
    let _ = std::fs::remove_file(&src);
    let out = Command::new(abm)
        .arg("run")
        .arg("--trace")
        .arg(&src)
        .arg("--")
        .arg("sh")
        .arg(scripts.join("burst.sh"))
        .arg(&root)
        .args(["20000", "100"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run abm run")?;
    if !out.status.success() {
        bail!(
            "abm run of the burst failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    eprintln!(
        "bench: verifying {}-event traces (compact and jsonl, {VERIFY_RUNS} runs each)",
        VERIFY_EVENTS
    );
    let r = verify_large(abm, &src, dir).map_err(|e| format!("{e:#}"));
    let _ = std::fs::remove_file(&src);
    let mut t = Vec::new();
    verify_rows(&mut t, Some(&r));
    println!("cores: {}, load average before: {}", cores(), load());
    for (what, value, ok) in &t {
        let v = match ok {
            None => "info",
            Some(true) => "met",
            Some(false) => "NOT met",
        };
        println!("{what:<70} {value:>16}  {v}");
    }
    Ok(())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

type Found = (Option<f64>, Option<f64>, Option<f64>);

/// Adds the trace targets. `find(workload, config)` gives a row's (ratio,
/// bytes per event, write MB/s).
pub fn targets(
    t: &mut Vec<(String, String, Option<bool>)>,
    find: impl Fn(&str, Config) -> Option<Found>,
    verify: Option<&Result<VerifyRun, String>>,
) {
    for w in ["burst", "git"] {
        let b = find(w, Config::Default).and_then(|x| x.1);
        t.push((
            format!("{w}, trace bytes per event on disk (default form and pack): <= 80"),
            b.map_or("-".into(), |b| format!("{b:.1} B")),
            b.map(|b| b <= BYTES_PER_EVENT),
        ));
    }
    let compact = find("burst", Config::Default).and_then(|x| x.0);
    let jsonl = find("burst", Config::DefaultJsonl).and_then(|x| x.0);
    t.push((
        "burst ratio, compact trace vs jsonl trace: no worse (5% noise)".into(),
        match (compact, jsonl) {
            (Some(c), Some(j)) => format!("{c:.3}x vs {j:.3}x"),
            _ => "-".into(),
        },
        compact.zip(jsonl).map(|(c, j)| c <= j * 1.05),
    ));
    let rate = |c| find("burst", c).and_then(|x| x.2);
    t.push((
        "burst, trace write rate (compact / jsonl), MB/s (information)".into(),
        match (rate(Config::Default), rate(Config::DefaultJsonl)) {
            (Some(a), Some(b)) => format!("{a:.2} / {b:.1}"),
            (Some(a), None) => format!("{a:.2} / -"),
            _ => "-".into(),
        },
        None,
    ));
    verify_rows(t, verify);
}

/// The rows of `abm verify` of the large traces.
fn verify_rows(
    t: &mut Vec<(String, String, Option<bool>)>,
    verify: Option<&Result<VerifyRun, String>>,
) {
    let millions = VERIFY_EVENTS / 1_000_000;
    let forms: Vec<(&str, Option<Result<&Timed, &str>>)> = match verify {
        None => VERIFY_FORMS.iter().map(|&f| (f, None)).collect(),
        Some(Err(e)) => VERIFY_FORMS
            .iter()
            .map(|&f| (f, Some(Err(e.as_str()))))
            .collect(),
        Some(Ok(v)) => v
            .forms
            .iter()
            .map(|(f, r)| (*f, Some(r.as_ref().map_err(String::as_str))))
            .collect(),
    };
    for (form, r) in &forms {
        let (value, ok) = match r {
            None => ("-".to_string(), None),
            Some(Err(e)) => {
                eprintln!("bench: verify of a large {form} trace failed: {e}");
                ("failed".to_string(), Some(false))
            }
            Some(Ok(v)) => (
                format!(
                    "{:.2} s{}",
                    v.wall_s,
                    v.cpu_s.map_or(String::new(), |c| format!(" ({c:.2} CPU)"))
                ),
                Some(v.wall_s < VERIFY_SECS),
            ),
        };
        let which = if *form == VERIFY_FORMS[0] {
            " (default form)"
        } else {
            ""
        };
        t.push((
            format!("abm verify, {millions}M-event {form} trace{which}: < {VERIFY_SECS:.0} s wall"),
            value,
            ok,
        ));
    }
    let sizes: Vec<String> = forms
        .iter()
        .filter_map(|(f, r)| match r {
            Some(Ok(v)) => Some(format!("{f} {:.0}", v.bytes as f64 / v.records as f64)),
            _ => None,
        })
        .collect();
    if !sizes.is_empty() {
        t.push((
            "  (their size on disk, bytes per record)".into(),
            sizes.join(" / "),
            None,
        ));
    }
}
