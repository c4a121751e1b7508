//! `abm status`, `abm watch add|remove`, `abm tail`: clients of the
//! daemon's control socket (what a target is: `crate::target_spec`).
use std::{
    io::{BufRead as _, BufReader, Write as _},
    os::unix::net::UnixStream,
    path::PathBuf,
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::target_spec::{TargetSpec, DEFAULT_SOCKET};

#[derive(Debug, clap::Args)]
pub struct SocketArg {
    /// The daemon's control socket.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub socket: SocketArg,
    /// Print the daemon's JSON answer.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    #[command(subcommand)]
    pub command: WatchCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum WatchCommand {
    /// Start watching a cgroup, a container or a process tree (new trace).
    Add(WatchAddArgs),
    /// Stop watching a target and seal its trace.
    Remove(WatchRemoveArgs),
}

#[derive(Debug, clap::Args)]
pub struct WatchAddArgs {
    /// Target name (in the trace header, each event and the file name).
    pub name: String,
    /// cgroup v2 directory (absolute, or relative to the cgroup root).
    #[arg(long, value_name = "PATH", group = "what")]
    pub cgroup: Option<PathBuf>,
    /// Container id (or a unique prefix of at least 12 hex digits),
    /// name, or label `KEY=VALUE`; it need not exist yet: it is watched
    /// from its first process.
    #[arg(long, value_name = "NAME-OR-ID", group = "what")]
    pub container: Option<String>,
    /// A process and what it forks from now on.
    #[arg(long, value_name = "PID", group = "what")]
    pub pid: Option<u32>,
    /// `${workspace}` for policies.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// `${home}` for policies (default /root).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Block what the policy denies in this target, with the BPF LSM
    /// backend (confirm: `abm approve|deny ID --socket` of the daemon;
    /// preserve: a copy first). Refused where BPF LSM programs cannot
    /// load (see `abm doctor`).
    #[arg(long)]
    pub enforce: bool,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, clap::Args)]
pub struct WatchRemoveArgs {
    pub name: String,
    #[command(flatten)]
    pub socket: SocketArg,
}

#[derive(Debug, clap::Args)]
pub struct TailArgs {
    /// Only events of this target (repeatable). Default: all.
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// What to print: the stream's JSON lines, or one OCSF event per line
    /// (docs/ocsf.md).
    #[arg(long, value_enum, default_value_t = crate::trace::CatFormat::Jsonl)]
    pub format: crate::trace::CatFormat,
    #[command(flatten)]
    pub socket: SocketArg,
}

/// How long `abm watch add` waits for its answer: the first enforcing
/// target loads and attaches the BPF LSM programs first.
const WATCH_ADD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// One request, one answer; an error answer becomes an error.
pub fn request(sock: &std::path::Path, req: &Value) -> anyhow::Result<Value> {
    let v = crate::enforce::control::request(sock, req)
        .map_err(|e| anyhow::anyhow!("{e:#} (is `abm daemon` running? see docs/daemon.md)"))?;
    answer(v)
}

/// [`request`] waiting up to `timeout` for the answer.
fn request_waiting(
    sock: &std::path::Path,
    req: &Value,
    timeout: std::time::Duration,
) -> anyhow::Result<Value> {
    let mut s = UnixStream::connect(sock).with_context(|| {
        format!(
            "cannot connect to {} (is `abm daemon` running? see docs/daemon.md)",
            sock.display()
        )
    })?;
    s.set_read_timeout(Some(timeout))?;
    writeln!(s, "{req}")?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .with_context(|| format!("no answer from {} within {timeout:?}", sock.display()))?;
    let v = serde_json::from_str(&line)
        .with_context(|| format!("bad answer from {}: {line:?}", sock.display()))?;
    answer(v)
}

fn answer(v: Value) -> anyhow::Result<Value> {
    if v["ok"] != true {
        bail!(
            "{}",
            v["error"]
                .as_str()
                .unwrap_or("the daemon refused the request")
        );
    }
    Ok(v)
}

/// `abm status`.
pub fn status(a: StatusArgs) -> anyhow::Result<i32> {
    let v = request(&a.socket.socket, &json!({ "op": "status" }))?;
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    crate::core::out::text(format_args!("{}", render_status(&v)))?;
    Ok(0)
}

pub fn render_status(v: &Value) -> String {
    let d = &v["daemon"];
    let p = &d["policy"];
    let mut out =
        format!(
        "abm daemon {} (pid {}), up {:.0}s, backends {}\npolicy {}{}\nlosses {}  unattributed {}\n",
        d["version"].as_str().unwrap_or("?"),
        d["pid"],
        d["uptime_secs"].as_f64().unwrap_or(0.0),
        d["backends"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
            .unwrap_or_default(),
        p["digest"].as_str().map(|s| &s[..s.len().min(16)]).unwrap_or("?"),
        p["last_reload_error"]
            .as_str()
            .map(|e| format!(" (last reload failed: {e})"))
            .unwrap_or_default(),
        if d["losses"].as_object().is_some_and(|o| !o.is_empty()) {
            d["losses"].to_string()
        } else {
            "none".into()
        },
        d["unattributed"],
    );
    out.push_str(&format!(
        "{:<20} {:<9} {:<8} {:>8} {:>8}  {}\n",
        "TARGET", "KIND", "STATE", "EVENTS", "EV/S", "TRACE"
    ));
    for t in v["targets"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:<20} {:<9} {:<8} {:>8} {:>8.2}  {}\n",
            t["name"].as_str().unwrap_or("?"),
            t["kind"].as_str().unwrap_or("?"),
            t["state"].as_str().unwrap_or("?"),
            t["events"],
            t["events_per_sec_10s"].as_f64().unwrap_or(0.0),
            t["trace"].as_str().unwrap_or("-"),
        ));
    }
    out
}

/// `abm watch add|remove`.
pub fn watch(a: WatchArgs) -> anyhow::Result<i32> {
    match a.command {
        WatchCommand::Add(a) => {
            let spec = TargetSpec {
                name: a.name,
                cgroup: a.cgroup,
                container: a.container,
                pid: a.pid,
                pod_uid: None,
                workspace: a.workspace,
                home: a.home,
                enforce: a.enforce,
            };
            spec.validate()?;
            let v = request_waiting(
                &a.socket.socket,
                &json!({ "op": "watch_add", "target": spec }),
                WATCH_ADD_TIMEOUT,
            )?;
            let t = &v["target"];
            crate::outln!(
                "{} {}{}{}",
                t["name"].as_str().unwrap_or("?"),
                t["state"].as_str().unwrap_or("?"),
                if t["enforce"] == true {
                    ", enforcing (BPF LSM)"
                } else {
                    ""
                },
                t["trace"]
                    .as_str()
                    .map(|p| format!(", trace {p}"))
                    .unwrap_or_else(|| ", waiting for its cgroup".into())
            )?;
        }
        WatchCommand::Remove(a) => {
            let v = request(
                &a.socket.socket,
                &json!({ "op": "watch_remove", "name": a.name }),
            )?;
            let t = &v["target"];
            crate::outln!(
                "{} removed, trace {} sealed ({} events)",
                t["name"].as_str().unwrap_or("?"),
                t["trace"].as_str().unwrap_or("-"),
                t["events"]
            )?;
        }
    }
    Ok(0)
}

/// `abm tail`: prints the daemon's live stream (JSON lines, or OCSF events)
/// until it ends.
pub fn tail(a: TailArgs) -> anyhow::Result<i32> {
    let sock = &a.socket.socket;
    let mut ocsf = match a.format {
        crate::trace::CatFormat::Jsonl => None,
        crate::trace::CatFormat::Ocsf => Some(ocsf_mapper(sock)?),
    };
    let mut s = UnixStream::connect(sock).with_context(|| {
        format!(
            "cannot connect to {} (is `abm daemon` running?)",
            sock.display()
        )
    })?;
    let mut req = json!({ "op": "tail" });
    if !a.targets.is_empty() {
        req["targets"] = json!(a.targets);
    }
    writeln!(s, "{req}")?;
    let mut r = BufReader::new(s);
    let mut first = String::new();
    r.read_line(&mut first)?;
    let v: Value = serde_json::from_str(&first)
        .with_context(|| format!("bad answer from {}: {first:?}", sock.display()))?;
    if v["ok"] != true {
        bail!("{}", v["error"].as_str().unwrap_or("refused"));
    }
    let stdout = std::io::stdout();
    for line in r.lines() {
        let mut line = line?;
        if let Some(m) = ocsf.as_mut() {
            let v: Value = serde_json::from_str(&line)
                .with_context(|| format!("bad line from {}: {line:?}", sock.display()))?;
            match m.map(&v) {
                Ok(Some(ev)) => line = ev.to_string(),
                Ok(None) => continue,
                Err(e) => bail!("{}: {e}", sock.display()),
            }
        }
        let mut out = stdout.lock();
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    Ok(0)
}

/// The OCSF mapper for the daemon's stream: the daemon's version, and this
/// host's name and kernel (the socket is local, so the daemon's host).
fn ocsf_mapper(sock: &std::path::Path) -> anyhow::Result<crate::trace::ocsf::Mapper> {
    let v = request(sock, &json!({ "op": "status" }))?;
    let (host, kernel) = crate::core::sys::uname();
    Ok(crate::trace::ocsf::Mapper::new(
        crate::trace::ocsf::Context {
            host,
            kernel,
            product_version: v["daemon"]["version"]
                .as_str()
                .unwrap_or(env!("CARGO_PKG_VERSION"))
                .to_owned(),
            container: None,
            log_name: None,
        },
    ))
}
