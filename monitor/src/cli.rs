//! The `abm` command line.
use clap::{Parser, Subcommand};
use tracing_subscriber::{
    filter::{LevelFilter, Targets},
    layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

use crate::{cmd, run};

/// Action boundary monitor: records, judges and (optionally) blocks what AI
/// coding agents do to a system, from the kernel.
///
/// `abm run -- CMD` watches CMD and all its descendants with eBPF, writes a
/// hash-chained trace (compact zstd form, or JSON lines) of every destructive syscall (unlink,
/// rmdir, rename, chmod, chown, truncate, write opens, exec) with resolved
/// paths, results and policy verdicts, and prints a summary.
#[derive(Debug, Parser)]
#[command(name = "abm", version, propagate_version = true)]
pub struct Cli {
    /// Log level for diagnostics on stderr (error, warn, info, debug, trace,
    /// off), or comma-separated `target=level` pairs such as
    /// `monitor=debug,warn`. Also read from ABM_LOG.
    #[arg(long, global = true, value_name = "FILTER", value_parser = parse_log_filter)]
    pub log: Option<Targets>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command under the monitor and record what its process tree does.
    Run(run::RunArgs),
    /// Report which kernel backends this machine supports, and why.
    Doctor(cmd::doctor::DoctorArgs),
    /// Validate and explain policy files.
    Policy(cmd::policy::PolicyArgs),
    /// Re-judge a recorded trace with a (new) policy.
    Replay(cmd::policy::ReplayArgs),
    /// Check a trace's hash chain and seal.
    Verify(cmd::verify::VerifyArgs),
    /// Print a trace as canonical JSON lines, or convert it between forms.
    Trace(cmd::trace::TraceArgs),
    /// Score one run against a task specification (benchmark oracle).
    Oracle(cmd::oracle::OracleArgs),
    /// Aggregate oracle verdicts into rates.
    Score(cmd::oracle::ScoreArgs),
    /// Write a self-contained HTML report of one or more traces.
    Report(crate::report::ReportArgs),
    /// Run the long-running monitor: watch containers, pods and process
    /// trees from a config file, one trace per target (docs/daemon.md).
    Daemon(crate::daemon::DaemonArgs),
    /// Show the daemon's targets, event rates, losses and policy.
    Status(cmd::daemon::StatusArgs),
    /// Add or remove a target of the running daemon.
    Watch(cmd::daemon::WatchArgs),
    /// Stream the daemon's events as JSON lines.
    Tail(cmd::daemon::TailArgs),
    /// Let a call waiting for confirmation (`abm run --enforce`) through.
    Approve(cmd::approve::DecideArgs),
    /// Refuse a call waiting for confirmation (it fails with EPERM).
    Deny(cmd::approve::DecideArgs),
    /// List calls waiting for confirmation in enforcing runs.
    Pending(cmd::approve::PendingArgs),
    /// Restore what `preserve` kept during an enforcing run.
    Undo(cmd::undo::UndoArgs),
    /// Agent-harness hook: judge a shell command before it runs, report
    /// what abm decided after (docs/agents.md).
    Hook(crate::hook::HookArgs),
    /// Write man pages and shell completions (packaging, see cli_gen).
    #[command(hide = true)]
    Generate(crate::cli_gen::GenerateArgs),
}

/// Parses a `--log` / `ABM_LOG` filter: a level, or `target=level` pairs.
fn parse_log_filter(s: &str) -> anyhow::Result<Targets> {
    s.parse::<Targets>().map_err(|e| {
        anyhow::anyhow!("{e}: write a level (error, warn, info, debug, trace, off) or `target=level` pairs separated by commas, e.g. `monitor=debug,warn`")
    })
}

/// The filter from `--log`, else from ABM_LOG, else `default`. A bad
/// ABM_LOG is reported on stderr and the default is used.
fn log_filter(flag: Option<Targets>, default: LevelFilter) -> Targets {
    if let Some(f) = flag {
        return f;
    }
    match std::env::var("ABM_LOG") {
        Ok(s) if !s.trim().is_empty() => match parse_log_filter(&s) {
            Ok(f) => return f,
            Err(e) => eprintln!("abm: ignoring ABM_LOG={s:?}: {e}"),
        },
        _ => {}
    }
    Targets::new().with_default(default)
}

pub fn init_logging(flag: Option<Targets>) {
    let filter = log_filter(flag, LevelFilter::WARN);
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_target(false)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .without_time(),
        )
        .with(filter)
        .init();
}

/// Logging of `abm daemon`, journald-friendly: level `info` by default, no
/// ANSI colours unless stderr is a terminal, no timestamps under systemd
/// (JOURNAL_STREAM set: the journal stamps each line itself). With
/// `LogFormat::Json`, one JSON object per line with an RFC 3339 timestamp.
pub fn init_daemon_logging(flag: Option<Targets>, format: crate::daemon::LogFormat) {
    use std::io::IsTerminal as _;
    let filter = log_filter(flag, LevelFilter::INFO);
    let registry = tracing_subscriber::registry().with(filter);
    if format == crate::daemon::LogFormat::Json {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr)
                    .with_target(false),
            )
            .init();
        return;
    }
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal());
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        registry.with(layer.without_time()).init();
    } else {
        registry.with(layer).init();
    }
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    // The commands that print a listing end quietly when their reader
    // stops early (`abm trace cat T | head`), as Unix tools do: the default
    // SIGPIPE action. The monitor, the daemon, the hook, the daemon's
    // clients (a write to its socket after it closed must be an error, not
    // a silent death) and the commands that change state keep it ignored.
    if matches!(
        cli.command,
        Command::Doctor(_)
            | Command::Policy(_)
            | Command::Replay(_)
            | Command::Verify(_)
            | Command::Trace(_)
            | Command::Oracle(_)
            | Command::Score(_)
            | Command::Report(_)
            | Command::Generate(_)
    ) {
        // SAFETY: signal() with a constant signal and disposition, before
        // this process starts any thread.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    if let Command::Daemon(d) = &cli.command {
        init_daemon_logging(cli.log.clone(), d.log_format);
    } else {
        init_logging(cli.log.clone());
    }
    let result = match cli.command {
        Command::Run(a) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(run::run(a))),
        Command::Doctor(a) => cmd::doctor::doctor(a),
        Command::Policy(a) => cmd::policy::policy(a),
        Command::Replay(a) => cmd::policy::replay::replay(a),
        Command::Verify(a) => cmd::verify::verify(a),
        Command::Trace(a) => cmd::trace::trace(a),
        Command::Oracle(a) => cmd::oracle::oracle(a),
        Command::Score(a) => cmd::oracle::score(a),
        Command::Report(a) => crate::report::report(a),
        Command::Daemon(a) => crate::daemon::main(a),
        Command::Status(a) => cmd::daemon::status(a),
        Command::Watch(a) => cmd::daemon::watch(a),
        Command::Tail(a) => cmd::daemon::tail(a),
        Command::Approve(a) => cmd::approve::decide(a, true),
        Command::Deny(a) => cmd::approve::decide(a, false),
        Command::Pending(a) => cmd::approve::pending(a),
        Command::Undo(a) => cmd::undo::undo(a),
        Command::Hook(a) => crate::hook::hook(a),
        Command::Generate(a) => {
            crate::cli_gen::generate(a, <Cli as clap::CommandFactory>::command())
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("abm: error: {e:#}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_filters_parse_levels_and_targets_and_name_the_fix() {
        use tracing::Level;
        let f = parse_log_filter("monitor=debug,warn").unwrap();
        assert!(f.would_enable("monitor::run", &Level::DEBUG));
        assert!(!f.would_enable("aya", &Level::INFO));
        assert!(f.would_enable("aya", &Level::WARN));
        let f = parse_log_filter("info").unwrap();
        assert!(f.would_enable("monitor", &Level::INFO));
        assert!(!f.would_enable("monitor", &Level::DEBUG));
        let e = parse_log_filter("monitor=loud").unwrap_err().to_string();
        assert!(e.contains("`target=level`"), "{e}");
        // The flag takes precedence over ABM_LOG and the default.
        let f = log_filter(Some(parse_log_filter("trace").unwrap()), LevelFilter::WARN);
        assert!(f.would_enable("x", &Level::TRACE));
    }
}
