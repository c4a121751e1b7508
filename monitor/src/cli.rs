//! The `abm` command line.
use clap::{Parser, Subcommand};

use crate::{oracle, policy, probes, session, trace};

/// Action boundary monitor: records, judges and (optionally) blocks what AI
/// coding agents do to a system, from the kernel.
///
/// `abm run -- CMD` watches CMD and all its descendants with eBPF, writes a
/// hash-chained JSON-lines trace of every destructive syscall (unlink,
/// rmdir, rename, chmod, chown, truncate, write opens, exec) with resolved
/// paths, results and policy verdicts, and prints a summary.
#[derive(Debug, Parser)]
#[command(name = "abm", version, propagate_version = true)]
pub struct Cli {
    /// Log level for diagnostics on stderr (error, warn, info, debug, trace),
    /// or a tracing filter such as `monitor=debug`. Also read from ABM_LOG.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command under the monitor and record what its process tree does.
    Run(session::RunArgs),
    /// Report which kernel backends this machine supports, and why.
    Doctor(DoctorArgs),
    /// Validate and explain policy files.
    Policy(policy::cmd::PolicyArgs),
    /// Re-judge a recorded trace with a (new) policy.
    Replay(policy::cmd::ReplayArgs),
    /// Check a trace's hash chain and seal.
    Verify(trace::cmd::VerifyArgs),
    /// Score one run against a task specification (benchmark oracle).
    Oracle(oracle::cmd::OracleArgs),
    /// Aggregate oracle verdicts into rates.
    Score(oracle::cmd::ScoreArgs),
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn doctor(a: DoctorArgs) -> anyhow::Result<i32> {
    let caps = probes::capabilities();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&caps)?);
    } else {
        for c in &caps {
            println!(
                "{:<20} {:<4} {}",
                c.name,
                if c.available { "yes" } else { "no" },
                c.detail
            );
        }
    }
    let tp = caps
        .iter()
        .any(|c| c.name == "tracepoint_backend" && c.available);
    Ok(if tp { 0 } else { 1 })
}

pub fn init_logging(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = filter
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_env("ABM_LOG").ok())
        .unwrap_or_else(|| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .init();
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    init_logging(cli.log.as_deref());
    let result = match cli.command {
        Command::Run(a) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(session::run(a))),
        Command::Doctor(a) => doctor(a),
        Command::Policy(a) => policy::cmd::policy(a),
        Command::Replay(a) => policy::cmd::replay(a),
        Command::Verify(a) => trace::cmd::verify(a),
        Command::Oracle(a) => oracle::cmd::oracle(a),
        Command::Score(a) => oracle::cmd::score(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("abm: error: {e:#}");
            2
        }
    }
}
