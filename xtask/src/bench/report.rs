//! `cargo xtask bench --only report`: the size of `abm report`'s page and
//! its render time in headless Chromium, for a trace of about 100,000
//! events made by a real burst (python3 creates and deletes 50,000 files
//! under `abm run`).

use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, Context as _, Result};

/// Files the burst creates and then deletes (one write-open and one unlink
/// each).
const FILES: u32 = 50_000;
/// Chromium loads of the page; the median is reported.
const LOADS: usize = 5;
/// What the report must stay under.
const MAX_RENDER_MS: f64 = 2000.0;
const MAX_BYTES: u64 = 5 * 1024 * 1024;

const BURST: &str = r#"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
dirs = 100
for d in range(dirs):
    os.mkdir(os.path.join(root, "d%03d" % d))
for i in range(n):
    p = os.path.join(root, "d%03d" % (i % dirs), "f%06d" % i)
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
for i in range(n):
    os.unlink(os.path.join(root, "d%03d" % (i % dirs), "f%06d" % i))
"#;

const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--dump-dom",
    "--virtual-time-budget=10000",
];

/// The page's own measurement: `performance.now()` when its script has put
/// everything into the DOM (navigation start to rendered).
fn render_ms(dir: &Path, page: &Path, i: usize) -> Result<f64> {
    let profile = dir.join(format!("chromium-profile-{i}"));
    let o = Command::new("chromium")
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running chromium (install Debian's `chromium`)")?;
    let dom = String::from_utf8_lossy(&o.stdout);
    let key = "data-render-ms=\"";
    let Some(at) = dom.find(key) else {
        bail!("the page did not finish rendering in Chromium");
    };
    let rest = &dom[at + key.len()..];
    let v = &rest[..rest.find('"').unwrap_or(0)];
    v.parse()
        .with_context(|| format!("data-render-ms {v:?} is not a number"))
}

pub fn bench(abm: &Path, dir: &Path) -> Result<()> {
    let ws = dir.join("report-ws");
    fs::create_dir_all(&ws)?;
    let trace = dir.join("report-burst.jsonl");
    eprintln!("bench report: python3 creates and deletes {FILES} files under abm run");
    let st = Command::new(abm)
        .args(["run", "--quiet", "--ringbuf-kib", "65536", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(&ws)
        .args(["--", "python3", "-c", BURST])
        .arg(&ws)
        .arg(FILES.to_string())
        .status()?;
    if !st.success() {
        bail!("abm run of the burst failed ({st})");
    }
    let page = dir.join("report.html");
    let t = Instant::now();
    let o = Command::new(abm)
        .arg("report")
        .arg(&trace)
        .arg("--output")
        .arg(&page)
        .output()?;
    let build_s = t.elapsed().as_secs_f64();
    if !o.status.success() {
        bail!("abm report failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let text = fs::read_to_string(&trace)?;
    let events = text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"event\""))
        .count();
    let lost: u64 = text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"loss\""))
        .filter_map(|l| {
            let c = &l[l.find("\"count\":")? + 8..];
            c[..c.find(|ch: char| !ch.is_ascii_digit())?]
                .parse::<u64>()
                .ok()
        })
        .sum();
    let trace_bytes = fs::metadata(&trace)?.len();
    let page_bytes = fs::metadata(&page)?.len();
    let mut ms = Vec::new();
    for i in 0..LOADS {
        ms.push(render_ms(dir, &page, i)?);
    }
    ms.sort_by(f64::total_cmp);
    let median = ms[ms.len() / 2];
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!("## abm report of a {events}-event trace\n");
    println!("| measure | value | limit |");
    println!("| --- | --- | --- |");
    println!("| events in the trace (lost) | {events} ({lost}) | |");
    println!("| trace size | {:.1} MiB | |", mib(trace_bytes));
    println!("| `abm report` wall time | {build_s:.2} s | |");
    println!(
        "| page size | {:.2} MiB | {:.0} MiB |",
        mib(page_bytes),
        mib(MAX_BYTES)
    );
    println!(
        "| Chromium render (navigation start to rendered DOM), median of {LOADS} | {median:.0} ms (min {:.0}, max {:.0}) | {MAX_RENDER_MS:.0} ms |",
        ms[0],
        ms[ms.len() - 1]
    );
    println!(
        "| page size / trace size | {:.3} | |",
        page_bytes as f64 / trace_bytes as f64
    );
    let ok = median <= MAX_RENDER_MS && page_bytes <= MAX_BYTES;
    println!(
        "\nreport: {}",
        if ok { "within limits" } else { "OVER LIMIT" }
    );
    Ok(())
}
