//! `abm trace`: tools for trace files in either form.

use std::io::Write as _;
use std::path::PathBuf;

use crate::trace::CatFormat;
use crate::trace::{compact, Next, TraceFormat, TraceReader};

/// Print or convert trace files.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Print a trace (either form) as its canonical JSON lines, exactly the
    /// bytes the hash chain covers, for jq and log pipelines; or, with
    /// `--format ocsf`, as OCSF events (docs/ocsf.md).
    ///
    /// Exit status: 0 every record was printed; 1 the trace ends in a
    /// damaged block (the records before it were printed; the damage is
    /// named on stderr); 2 the end was cut short by a crash (the complete
    /// records were printed). The records are not verified: use
    /// `abm verify` for that.
    Cat(CatArgs),
    /// Convert a trace to the other form (or the same), record for record:
    /// the canonical lines, and so every digest and the seal, stay the same.
    Convert(ConvertArgs),
    /// Write a large trace for benchmarks: the events of TRACE repeated
    /// (times shifted) up to --events, through the writer, chained and
    /// sealed.
    #[command(hide = true)]
    Synth(SynthArgs),
}

#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    #[arg(long, value_name = "N")]
    pub events: u64,
    #[arg(long, value_enum, default_value_t = TraceFormat::Compact)]
    pub format: TraceFormat,
}

#[derive(Debug, clap::Args)]
pub struct CatArgs {
    /// Trace file (compact or JSON lines).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// What to print: the canonical records, or one OCSF event per record
    /// (file and process activity; header and seal left out).
    #[arg(long, value_enum, default_value_t = CatFormat::Jsonl)]
    pub format: CatFormat,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Trace file to read (compact or JSON lines).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// New file to write; it must not exist.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Form of the new file.
    #[arg(long, value_enum, default_value_t = TraceFormat::Compact)]
    pub format: TraceFormat,
}

/// Runs `abm trace`; returns the exit code.
pub fn trace(a: TraceArgs) -> anyhow::Result<i32> {
    match a.command {
        TraceCommand::Cat(c) => cat(c),
        TraceCommand::Convert(c) => convert(c),
        TraceCommand::Synth(c) => synth(c),
    }
}

fn synth(a: SynthArgs) -> anyhow::Result<i32> {
    use crate::trace::{read_trace, SealInfo, TraceRecord, TraceWriter};
    let records = read_trace(&a.trace)?;
    let mut header = None;
    let mut events = Vec::new();
    for r in records {
        match r {
            TraceRecord::Header(h) => header = Some(h.header),
            TraceRecord::Event { action, .. } => events.push(action),
            _ => {}
        }
    }
    let (Some(header), false) = (header, events.is_empty()) else {
        anyhow::bail!("{}: no header or no events to repeat", a.trace.display());
    };
    let lo = events.iter().map(|e| e.ktime_ns).min().unwrap_or(0);
    let hi = events.iter().map(|e| e.ktime_ns).max().unwrap_or(0);
    let span = hi - lo + 1_000;
    let mut w = TraceWriter::create_as(&a.out, None, header, a.format)?;
    for i in 0..a.events {
        let n = events.len() as u64;
        let mut e = events[(i % n) as usize].clone();
        e.ktime_ns += (i / n) * span;
        w.append_event(&e)?;
    }
    let s = w.seal(SealInfo::default())?;
    println!("{} records, final digest {}", s.records, s.final_digest);
    Ok(0)
}

fn cat(a: CatArgs) -> anyhow::Result<i32> {
    let mut r = TraceReader::open(&a.trace)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, stdout.lock());
    let mut line = Vec::new();
    let mut code = 0;
    let mut ocsf = (a.format == CatFormat::Ocsf).then(|| {
        crate::trace::ocsf::Mapper::new(crate::trace::ocsf::Context {
            log_name: a
                .trace
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
            ..Default::default()
        })
    });
    while let Some(n) = r.next(&mut line)? {
        match n {
            Next::Line => {
                if let Some(m) = ocsf.as_mut() {
                    let rec: serde_json::Value = serde_json::from_slice(&line).map_err(|e| {
                        anyhow::anyhow!(
                            "{}: a record is not JSON ({e}); `abm verify` tells more",
                            a.trace.display()
                        )
                    })?;
                    let Some(ev) = m
                        .map(&rec)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", a.trace.display()))?
                    else {
                        continue;
                    };
                    line.clear();
                    serde_json::to_writer(&mut line, &ev)?;
                }
                line.push(b'\n');
                if out.write_all(&line).is_err() {
                    // A closed pipe (`abm trace cat T | head`).
                    return Ok(0);
                }
            }
            Next::Truncated(t) => {
                let _ = out.flush();
                eprintln!(
                    "abm trace cat: {}: the trace ends with an incomplete {} ({} byte(s)) from a \
                     write cut short by a crash; the {} complete record(s) were printed",
                    a.trace.display(),
                    if t.block_offset.is_some() {
                        "block"
                    } else {
                        "line"
                    },
                    t.bytes,
                    t.line - 1
                );
                code = 2;
            }
            Next::Damaged(d) => {
                let _ = out.flush();
                eprintln!(
                    "abm trace cat: {}: the block at byte {} {}: {}; `abm verify` tells more",
                    a.trace.display(),
                    d.offset,
                    d.reason,
                    d.lost_records()
                );
                return Ok(1);
            }
        }
    }
    let _ = out.flush();
    Ok(code)
}

fn convert(a: ConvertArgs) -> anyhow::Result<i32> {
    let mut r = TraceReader::open(&a.trace)?;
    let mut text = Vec::new();
    let mut line = Vec::new();
    while let Some(n) = r.next(&mut line)? {
        match n {
            Next::Line => {
                text.extend_from_slice(&line);
                text.push(b'\n');
            }
            Next::Truncated(_) => break,
            Next::Damaged(d) => anyhow::bail!(
                "{}: the block at byte {} {}: {}; only an intact trace can be converted",
                a.trace.display(),
                d.offset,
                d.reason,
                d.lost_records()
            ),
        }
    }
    let bytes = match a.format {
        TraceFormat::Jsonl => text,
        TraceFormat::Compact => {
            let mut z = compact::compressor()?;
            let mut out = Vec::new();
            compact::pack_lines(&text, 1, 1 << 20, &mut z, &mut out)
                .map_err(|e| anyhow::anyhow!("{}: {e}", a.trace.display()))?;
            out
        }
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&a.out)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", a.out.display()))?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    Ok(0)
}
