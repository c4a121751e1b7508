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

/// One timed `abm verify`.
#[derive(Clone, Debug)]
pub struct VerifyRun {
    pub wall_s: f64,
    pub cpu_s: Option<f64>,
    pub bytes: u64,
    pub records: u64,
}

/// Builds a trace of VERIFY_EVENTS events from the record shapes of `src`
/// (a real burst trace) with `abm trace synth` (through abm's own writer,
/// chained and sealed), then times `abm verify` on it.
pub fn verify_large(abm: &Path, src: &Path, dir: &Path) -> Result<VerifyRun> {
    let big = dir.join("verify-1m.abmt");
    let _ = std::fs::remove_file(&big);
    let out = Command::new(abm)
        .args(["trace", "synth", "--events", &VERIFY_EVENTS.to_string()])
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
    let start = Instant::now();
    let child = Command::new(abm)
        .args(["verify", "--json"])
        .arg(&big)
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
    let _ = std::fs::remove_file(&big);
    if code != 0 {
        bail!("abm verify exited with {code}: {}", text.trim());
    }
    let records = super::json_number(&text, "records").unwrap_or(0.0) as u64;
    if records < VERIFY_EVENTS {
        bail!("abm verify checked {records} records, expected over {VERIFY_EVENTS}");
    }
    Ok(VerifyRun {
        wall_s,
        cpu_s,
        bytes,
        records,
    })
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
    let (value, ok) = match verify {
        None => ("-".to_string(), None),
        Some(Err(e)) => {
            eprintln!("bench: verify of a large trace failed: {e}");
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
    t.push((
        format!(
            "abm verify, {}M-event compact trace: < {VERIFY_SECS:.0} s",
            VERIFY_EVENTS / 1_000_000
        ),
        value,
        ok,
    ));
    if let Some(Ok(v)) = verify {
        t.push((
            "  (its size on disk, bytes per record)".into(),
            format!("{:.1} B", v.bytes as f64 / v.records as f64),
            None,
        ));
    }
}
