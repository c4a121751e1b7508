//! `abm verify`: checks a trace and prints what it establishes.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::trace::{read_key, render, VerifyReport, EXIT_BROKEN, EXIT_ERROR, EXIT_INTACT};

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
        let (sha, hmac) = crate::trace::hashing_throughput(n);
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
        Some(p) => match crate::trace::anchor::read_anchor(p) {
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
        None => crate::trace::verify(&trace, key.as_deref()),
        Some(an) => crate::trace::verify_anchored(&trace, key.as_deref(), an),
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
        if let Some(Ok(Some(c))) = report
            .header
            .as_ref()
            .map(crate::trace::sequence::Continues::of)
        {
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
        match crate::trace::verify(t, key) {
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
    let links = crate::trace::sequence::check(&files);
    let broken = links.iter().any(crate::trace::sequence::Link::is_broken);
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
            crate::trace::sequence::Link::Start => "starts the sequence".to_owned(),
            crate::trace::sequence::Link::StartsLater { continues } => {
                format!("continues {continues} (not given: checked from here on)")
            }
            crate::trace::sequence::Link::Linked => "continues the file before it".to_owned(),
            crate::trace::sequence::Link::Broken { detail } => format!("BROKEN: {detail}"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{sample_action, Header, SealInfo, TraceFormat, TraceWriter};

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    /// A sealed, keyed trace of three events.
    fn write_sample(dir: &Path, key: &[u8]) -> PathBuf {
        let path = dir.join("t.jsonl");
        let mut w = TraceWriter::create_as(
            &path,
            Some(key.to_vec()),
            Header::default(),
            TraceFormat::Jsonl,
        )
        .unwrap();
        for i in 0..3 {
            w.append_event(&sample_action(i)).unwrap();
        }
        w.seal(SealInfo {
            end_time: "2025-06-01T12:00:05Z".into(),
            ..SealInfo::default()
        })
        .unwrap();
        path
    }

    #[test]
    fn cli_parses_and_returns_exit_codes() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: VerifyArgs,
        }
        let dir = tempfile::tempdir().unwrap();
        let path = write_sample(dir.path(), KEY);
        let key = dir.path().join("key");
        std::fs::write(&key, KEY).unwrap();
        let run = |argv: &[&str]| {
            let cli =
                Cli::try_parse_from(std::iter::once("verify").chain(argv.iter().copied())).unwrap();
            verify(cli.args).unwrap()
        };
        let p = path.to_str().unwrap();
        let k = key.to_str().unwrap();
        assert_eq!(run(&[p, "--key", k, "--json"]), 0);
        assert_eq!(run(&[p, "--json"]), 3);
        let other = dir.path().join("other");
        std::fs::write(&other, b"other key").unwrap();
        assert_eq!(run(&[p, "--key", other.to_str().unwrap(), "--json"]), 1);
        assert_eq!(
            run(&[dir.path().join("none").to_str().unwrap(), "--json"]),
            4
        );
        assert!(
            Cli::try_parse_from(["verify"]).is_err(),
            "TRACE is required"
        );
        assert_eq!(run(&["--bench-hashing", "10"]), 0);
        assert!(Cli::try_parse_from(["verify", p, "--bench-hashing", "10"]).is_err());

        use clap::CommandFactory as _;
        let command = Cli::command();
        command.clone().debug_assert();
        for arg in command.get_arguments() {
            if arg.get_id() != "help" {
                assert!(arg.get_help().is_some(), "{} has no help", arg.get_id());
            }
        }
    }
}
