//! `abm daemon`: a long-running service that watches containers (by cgroup
//! v2 path or container id), Kubernetes pods and process trees, and writes
//! one trusted trace per target.
//!
//! - [`config`]: the TOML config file.
//! - [`attribute`]: which target a kernel record belongs to.
//! - [`target`]: one target's trace and pipeline; `lifecycle`: adding,
//!   activating, claiming and ending targets.
//! - `pods`: Kubernetes pods as targets; `retention`: pruning old traces;
//!   `requests`: the control socket's requests; [`runtime`]: container
//!   runtimes' metadata.
//! - [`control`]: the control socket (its clients, `abm status`, `abm watch`,
//!   `abm tail`, are in `crate::cmd::daemon`).
//! - [`metrics`]: the Prometheus endpoint and health checks.
//! - `enforce`: targets watched with `enforce`, guarded by the BPF LSM
//!   backend (deny, confirm answered on the control socket, preserve).
//!
//! The cgroup hierarchy ([`crate::kernel::cgroup`]) and the mount-namespace
//! views of paths ([`crate::pipeline::mounts`]) are shared with `abm run`.
//!
//! One kernel object is loaded with cgroup scoping on. Scope is decided in
//! the kernel (pid table, cgroup id, nearest watched ancestor cgroup);
//! userspace sorts records to targets, pairs, orders and judges them per
//! target, and writes each target's trace. Kernel loss counters are per
//! machine: a loss is written to the trace of every target live at the time.
//! Reference: docs/daemon.md.
use std::{
    collections::{BTreeMap, HashMap},
    io::Write as _,
    os::unix::fs::DirBuilderExt as _,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use anyhow::Context as _;
use monitor_common::EventKind;
use serde_json::{json, Value};
use tokio::{
    net::UnixListener,
    signal::unix::{Signal, SignalKind},
    sync::{broadcast, mpsc},
};

use crate::{
    core::{rfc3339, uname},
    kernel::{
        cgroup,
        ring::{self, Ring},
        LossTracker, ProbeOptions, Probes,
    },
    pipeline::{
        driver::{self, Driver, Flow},
        load_policy, Intake, Stage, Views,
    },
    policy::Policy,
    record::Action,
    trace::{
        note::{Note, TargetEnd},
        Cause, Header, Loss,
    },
};

mod approvals;
pub mod attribute;
pub mod config;
pub mod control;
mod enforce;
mod lifecycle;
pub mod metrics;
mod pods;
mod requests;
mod retention;
pub mod runtime;
pub mod target;

use lifecycle::{Pending, PENDING_RECORDS};
pub use pods::parse_pods;
use pods::{publish_selector, K8s};

use attribute::Attribution;
use cgroup::Hierarchy;
use config::{Config, TargetSpec};
use control::{Call, TailLine};
use target::{State, Target};

/// `abm daemon`.
#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// Config file (TOML; see docs/daemon.md).
    #[arg(long, short, value_name = "FILE", default_value = "/etc/abm/abm.toml")]
    pub config: PathBuf,
    /// Check the config and the policy files, print the config with its
    /// defaults filled in, and exit.
    #[arg(long)]
    pub check: bool,
    /// Format of the daemon's own diagnostics on stderr: `text`, or `json`
    /// (one object per line with `timestamp`, `level` and `fields`, for a
    /// log pipeline).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Format of the daemon's diagnostics on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Ended targets kept for `abm status`.
const KEEP_ENDED: usize = 64;
/// How often the trace directory is pruned besides after each seal.
const RETENTION_EVERY: Duration = Duration::from_secs(3600);

/// Runs `abm daemon`.
pub fn main(args: DaemonArgs) -> anyhow::Result<i32> {
    let cfg = Config::load(&args.config)?;
    let policy = load_policy(&cfg.policy)?;
    if args.check {
        if let Some(a) = &cfg.approvals {
            a.check()?;
        }
        crate::outln!("{}", toml::to_string_pretty(&cfg)?)?;
        crate::outln!("# policy digest {}", policy.digest())?;
        return Ok(0);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(cfg, args.config, policy))
}

struct Daemon {
    cfg: Config,
    config_path: PathBuf,
    hier: Option<Hierarchy>,
    probes: Probes,
    policy: Policy,
    policy_loaded: String,
    reload_error: Option<String>,
    /// A reloaded policy and when it was loaded: it takes over once the
    /// actions made before the reload have left the ordering window, so
    /// they are judged by the policy in force when they happened.
    next_policy: Option<(Policy, Instant)>,
    key: Option<Vec<u8>>,
    targets: BTreeMap<u32, Target>,
    next_id: u32,
    attr: Attribution,
    intake: Intake,
    losses: LossTracker,
    /// cgroup level -> number of watched cgroups there.
    levels: BTreeMap<u32, u32>,
    tail: broadcast::Sender<Arc<TailLine>>,
    stdout: bool,
    started: Instant,
    started_wall: String,
    host: String,
    kernel: String,
    k8s: Option<K8s>,
    last_retention: Instant,
    metrics: Option<metrics::Metrics>,
    /// Whether the kernel puts every new container cgroup in scope (armed
    /// while a container target waits for its container).
    following: bool,
    /// New container cgroups no target has claimed yet, with their records.
    pending: HashMap<u64, Pending>,
    /// The BPF LSM backend, once a target enforces.
    lsm: Option<enforce::Enforcing>,
    /// Kills the enforcing targets if the daemon dies without a clean stop.
    lifeline: Option<crate::lifeline::targets::TargetLifeline>,
    /// The remote approvals endpoint (`[approvals]`).
    remote: Option<approvals::Remote>,
}

async fn run(cfg: Config, config_path: PathBuf, policy: Policy) -> anyhow::Result<i32> {
    let key = match &cfg.sign_key {
        Some(k) => {
            Some(crate::trace::read_key(k).with_context(|| format!("sign_key {}", k.display()))?)
        }
        None => None,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&cfg.trace_dir)
        .with_context(|| format!("cannot create trace directory {}", cfg.trace_dir.display()))?;
    if !cfg.anchor_dir.as_os_str().is_empty() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&cfg.anchor_dir)
            .with_context(|| {
                format!(
                    "cannot create the anchor directory {} (anchor_dir; \"\" turns anchors off)",
                    cfg.anchor_dir.display()
                )
            })?;
    }
    let hier = match &cfg.cgroup_root {
        Some(p) => Some(Hierarchy::at(p).with_context(|| format!("cgroup_root {}", p.display()))?),
        None => match Hierarchy::detect() {
            Ok(h) => Some(h),
            Err(e) => {
                let needs = cfg.kubernetes.is_some() || cfg.targets.iter().any(|t| t.pid.is_none());
                if needs {
                    return Err(e).context("cannot watch containers");
                }
                tracing::warn!("{e}; only pid targets can be watched");
                None
            }
        },
    };
    let mut probes = Probes::load(&ProbeOptions {
        ringbuf_bytes: cfg.ringbuf_kib * 1024,
        watch_cgroups: true,
    })?;
    // Enforcing targets die with the daemon unless it stops cleanly
    // (crate::lifeline::targets). Forked while the daemon has one thread,
    // before the control socket exists.
    let lifeline = crate::lifeline::targets::TargetLifeline::start(probes.scope_fd())
        .context("starting the lifeline process")?;
    let listener = control::bind(&cfg.socket)?;
    let remote = match &cfg.approvals {
        Some(a) => Some(approvals::Remote::start(a, cfg.socket.clone())?),
        None => None,
    };
    let mut ring = ring::register(&mut probes)?;
    let (host, kernel) = uname();
    let (tail, _) = broadcast::channel(4096);
    let losses = LossTracker::new(&probes);
    let metrics = match &cfg.metrics {
        Some(addr) => {
            let m = metrics::Metrics::new(u64::from(cfg.ringbuf_kib) * 1024, policy.digest());
            metrics::spawn(metrics::bind(addr).await?, m.clone());
            tracing::info!("metrics on http://{addr}/metrics, health on /healthz and /readyz");
            Some(m)
        }
        None => None,
    };
    let mut d = Daemon {
        metrics,
        stdout: cfg.stdout,
        k8s: cfg.kubernetes.as_ref().map(|_| K8s {
            pods_mtime: None,
            pods: HashMap::new(),
        }),
        cfg,
        config_path,
        hier,
        probes,
        policy_loaded: rfc3339(SystemTime::now()),
        policy,
        reload_error: None,
        next_policy: None,
        key,
        targets: BTreeMap::new(),
        next_id: 1,
        attr: Attribution::default(),
        intake: Intake::new(Views::new()),
        losses,
        levels: BTreeMap::new(),
        tail,
        started: Instant::now(),
        started_wall: rfc3339(SystemTime::now()),
        host,
        kernel,
        last_retention: Instant::now(),
        following: false,
        pending: HashMap::new(),
        lsm: None,
        lifeline: Some(lifeline),
        remote,
    };
    if let Some(k) = &d.cfg.kubernetes {
        publish_selector(&k.selector_file, &k.pod_selector);
    }
    for spec in d.cfg.targets.clone() {
        if let Err(e) = d.add_target(spec.clone()) {
            // Never watched unenforced when enforcement was asked for.
            if spec.enforce {
                let _ = std::fs::remove_file(&d.cfg.socket);
                // The daemon does not start: the targets it found running
                // were running before it, and are left so.
                if let Some(l) = d.lifeline.take() {
                    let _ = l.stop();
                }
                return Err(e.context(format!(
                    "{}: target {:?} asks for enforcement",
                    d.config_path.display(),
                    spec.name
                )));
            }
            tracing::error!("target {}: {e:#}", spec.name);
        }
    }
    d.prune();
    tracing::info!(
        "abm daemon {} started: {} target(s), policy {}, traces in {}, control socket {}",
        env!("CARGO_PKG_VERSION"),
        d.targets.len(),
        short(&d.policy.digest()),
        d.cfg.trace_dir.display(),
        d.cfg.socket.display()
    );

    let (calls_tx, calls_rx) = mpsc::channel::<Call>(64);
    let mut l = Loop {
        d,
        listener,
        calls_tx,
        calls_rx,
        sigterm: tokio::signal::unix::signal(SignalKind::terminate())?,
        sigint: tokio::signal::unix::signal(SignalKind::interrupt())?,
        sighup: tokio::signal::unix::signal(SignalKind::hangup())?,
        last_flush: Instant::now(),
        last_poll: Instant::now(),
    };
    driver::drive(&mut ring, &mut l).await?;
    let mut d = l.d;

    // Shutdown: callers held for a question are refused and continued
    // while the LSM programs still decide; then everything the kernel
    // produced so far, then seal all.
    if let Some(e) = d.lsm.as_mut() {
        e.backend.release_held();
    }
    drain(&mut ring, &mut d);
    d.absorb_decisions()?;
    d.release(true)?;
    d.account_losses(&ring)?;
    let enforcing: Vec<String> = d
        .targets
        .values()
        .filter(|t| t.is_live() && t.spec.enforce)
        .map(|t| t.name().to_owned())
        .collect();
    let ids: Vec<u32> = d.targets.keys().copied().collect();
    let mut failed = false;
    for id in ids {
        if let Err(e) = d.end_target(id, State::Removed, Note::DaemonStopped, &mut None) {
            tracing::error!("sealing a trace: {e:#}");
            failed = true;
        }
    }
    let _ = std::fs::remove_file(&d.cfg.socket);
    if let Some(r) = d.remote.take() {
        r.stop();
    }
    // A clean stop: the enforcing targets are left running (unenforced),
    // not killed.
    if let Some(l) = d.lifeline.take() {
        if let Err(e) = l.stop() {
            tracing::error!("stopping the lifeline: {e}");
        }
    }
    if enforcing.is_empty() {
        tracing::info!("abm daemon stopped");
    } else {
        tracing::warn!(
            "abm daemon stopped cleanly: its enforcing target(s) {} keep running, no longer enforced, and are not killed \
             (only a daemon that dies without a clean stop has its enforcing targets killed)",
            enforcing.join(", ")
        );
    }
    Ok(if failed { 1 } else { 0 })
}

fn drain(ring: &mut Ring, d: &mut Daemon) {
    ring::drain_all(ring, |b| d.push(b));
}

/// The daemon in the shared event loop, with its other sources of work.
struct Loop {
    d: Daemon,
    listener: UnixListener,
    calls_tx: mpsc::Sender<Call>,
    calls_rx: mpsc::Receiver<Call>,
    sigterm: Signal,
    sigint: Signal,
    sighup: Signal,
    last_flush: Instant,
    last_poll: Instant,
}

enum Wake {
    Connection(std::io::Result<tokio::net::UnixStream>),
    Call(Call),
    Reload,
    Stop(&'static str),
}

impl Driver for Loop {
    type Wake = Wake;

    fn push(&mut self, bytes: &[u8]) {
        if let Some(m) = &self.d.metrics {
            m.drained(bytes.len());
        }
        self.d.push(bytes);
    }

    async fn wake(&mut self) -> anyhow::Result<Wake> {
        Ok(tokio::select! {
            conn = self.listener.accept() => Wake::Connection(conn.map(|(s, _)| s)),
            Some(call) = self.calls_rx.recv() => Wake::Call(call),
            _ = self.sighup.recv() => Wake::Reload,
            _ = self.sigterm.recv() => Wake::Stop("SIGTERM"),
            _ = self.sigint.recv() => Wake::Stop("SIGINT"),
        })
    }

    async fn handle(&mut self, wake: Wake, ring: &mut Ring) -> anyhow::Result<Flow> {
        match wake {
            Wake::Connection(Ok(s)) => {
                let (c, t) = (self.calls_tx.clone(), self.d.tail.clone());
                tokio::spawn(async move {
                    if let Err(e) = control::serve(s, c, t).await {
                        tracing::debug!("control socket: {e}");
                    }
                });
            }
            Wake::Connection(Err(e)) => tracing::warn!("control socket: accept: {e}"),
            Wake::Call(call) => {
                let resp = self.d.call(&call.req, call.uid, ring);
                let _ = call.reply.send(resp);
            }
            Wake::Reload => {
                self.d.reload();
            }
            Wake::Stop(signal) => {
                tracing::info!("{signal}: sealing every trace");
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }

    async fn turn(&mut self, ring: &mut Ring) -> anyhow::Result<Flow> {
        let d = &mut self.d;
        d.absorb_decisions()?;
        d.release(false)?;
        d.switch_policy();
        if self.last_flush.elapsed() >= Duration::from_millis(500) {
            d.account_losses(ring)?;
            d.flush();
            d.refresh_metrics();
            self.last_flush = Instant::now();
        }
        if self.last_poll.elapsed() >= d.cfg.poll_interval {
            drain(ring, d);
            d.poll();
            self.last_poll = Instant::now();
        }
        Ok(Flow::Continue)
    }
}

impl Daemon {
    /// One kernel record: find its target, then pair/order it there.
    fn push(&mut self, bytes: &[u8]) {
        let Some(ev) = self.intake.decode(bytes) else {
            return;
        };
        if ev.kind == EventKind::CgroupMkdir {
            self.new_cgroup(&ev);
            return;
        }
        if let Some(p) = self.pending.get_mut(&ev.hdr.cgroup_id) {
            if p.records.len() < PENDING_RECORDS {
                p.records.push(ev);
            } else {
                p.dropped += 1;
            }
            return;
        }
        self.accept(ev);
    }

    /// A decoded record of a known cgroup or process: to its target.
    fn accept(&mut self, ev: crate::kernel::KernelEvent) {
        let Some(id) = self.attr.attribute(&ev.hdr, ev.kind, &self.probes) else {
            return;
        };
        let Some(t) = self.targets.get_mut(&id) else {
            return;
        };
        if t.is_live() {
            t.pipeline.accept(ev, &mut self.intake.views, id);
        }
    }

    /// Releases ordered records of every target to its trace and to the
    /// live stream.
    fn release(&mut self, force: bool) -> anyhow::Result<()> {
        let ids: Vec<u32> = self.targets.keys().copied().collect();
        for id in ids {
            self.release_one(id, force)?;
        }
        Ok(())
    }

    fn release_one(&mut self, id: u32, force: bool) -> anyhow::Result<()> {
        let Some(t) = self.targets.get_mut(&id) else {
            return Ok(());
        };
        if t.recorder.is_none() || t.pipeline.orderer.is_empty() {
            return Ok(());
        }
        let mut decisions = match (self.lsm.as_mut(), t.spec.enforce) {
            (Some(lsm), true) => Some(enforce::TargetDecisions {
                lsm,
                attr: &self.attr,
                id,
            }),
            _ => None,
        };
        let stage = decisions.as_mut().map(|d| d as &mut dyn Stage);
        let want_lines = self.stdout || self.tail.receiver_count() > 0;
        let name = t.name().to_owned();
        let metrics = self.metrics.as_ref();
        let now = crate::core::monotonic_ns();
        let mut lines = Vec::new();
        t.release(force, stage, &mut |seq, a| {
            if let Some(m) = metrics {
                m.written(&name, a, now);
            }
            if want_lines {
                lines.push(event_line(seq, a));
            }
        })?;
        for line in lines {
            self.emit(Some(&name), line);
        }
        Ok(())
    }

    /// Sends one JSON line to the live stream and, with `stdout = true`,
    /// to stdout.
    fn emit(&mut self, target: Option<&str>, mut v: Value) {
        // Every line carries an RFC 3339 `time` (events: their syscall's).
        if let Some(o) = v.as_object_mut() {
            o.entry("time")
                .or_insert_with(|| json!(rfc3339(SystemTime::now())));
        }
        let line = v.to_string();
        if self.stdout {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                tracing::error!("stdout is closed: no longer writing events to it");
                self.stdout = false;
            }
        }
        if self.tail.receiver_count() > 0 {
            let _ = self.tail.send(Arc::new(TailLine {
                target: target.map(str::to_owned),
                line,
            }));
        }
    }

    fn live_ids(&self) -> Vec<u32> {
        self.targets
            .iter()
            .filter(|(_, t)| t.is_live())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Kernel loss counters, undecodable and unattributed records, records
    /// the ring's full queue dropped: written to every live trace (the
    /// kernel does not know whose they were).
    fn account_losses(&mut self, ring: &Ring) -> anyhow::Result<()> {
        let counted = [
            (Cause::DecodeError, self.intake.decode_errors),
            (Cause::Unattributed, self.attr.unattributed),
            (Cause::QueueFull, ring.dropped()),
        ];
        let all = self.losses.poll(&self.probes, &counted);
        if all.is_empty() {
            return Ok(());
        }
        for loss in &all {
            tracing::warn!("lost {} event(s): {}", loss.count, loss.cause);
        }
        if let Some(m) = &self.metrics {
            m.lost(&all);
        }
        for id in self.live_ids() {
            let t = self.targets.get_mut(&id).expect("live id");
            for loss in &all {
                t.append_loss(loss)?;
            }
        }
        for loss in all {
            self.emit(None, loss_line(&loss));
        }
        Ok(())
    }

    fn flush(&mut self) {
        let limit = self.cfg.rotate_bytes;
        for t in self.targets.values_mut() {
            if let Err(e) = t.flush() {
                tracing::error!("target {}: {e:#}", t.name());
                continue;
            }
            match t.rotate_if_over(limit) {
                Ok(Some(next)) => {
                    tracing::info!("target {}: trace rotated into {}", t.name(), next.display())
                }
                Ok(None) => {}
                Err(e) => tracing::error!("target {}: rotating the trace: {e:#}", t.name()),
            }
        }
    }

    fn header(&self) -> Header {
        Header {
            schema: 0,
            monitor_version: env!("CARGO_PKG_VERSION").to_owned(),
            host: self.host.clone(),
            kernel: self.kernel.clone(),
            backends: vec!["tracepoint".to_owned()],
            policy_digest: self.policy.digest(),
            command: Vec::new(),
            workspace: String::new(),
            start_time: rfc3339(SystemTime::now()),
            extra: Default::default(),
        }
    }

    /// Periodic checks: rates, waiting targets, removed cgroups, exited
    /// process trees, the pod list, retention.
    fn poll(&mut self) {
        let ids: Vec<u32> = self.targets.keys().copied().collect();
        let mut ended = false;
        for id in ids {
            let t = self.targets.get_mut(&id).expect("target");
            t.rate.sample(t.events);
            match t.state.clone() {
                State::Waiting => {
                    if let Err(e) = self.try_activate(id) {
                        tracing::warn!("target {}: {e:#}", self.targets[&id].name());
                    }
                }
                State::Active => {
                    let gone = match (&t.cgroup, t.spec.pid) {
                        (Some((p, _)), _) if !p.is_dir() => Some("cgroup removed".to_owned()),
                        (None, Some(_)) => {
                            let pids = self.attr.pids_of(id);
                            let alive = pids
                                .iter()
                                .any(|p| Path::new(&format!("/proc/{p}")).exists());
                            (!alive).then(|| "all processes exited".to_owned())
                        }
                        _ => None,
                    };
                    if let Some(why) = gone {
                        if let Err(e) =
                            self.end_target(id, State::Gone(why), Note::TargetGone, &mut None)
                        {
                            tracing::error!("sealing a trace: {e:#}");
                        }
                        ended = true;
                    }
                }
                _ => {}
            }
        }
        self.poll_pending();
        self.arm_following();
        self.poll_pods();
        if ended || self.last_retention.elapsed() >= RETENTION_EVERY {
            self.prune();
        }
    }

    fn id_of(&self, name: &str) -> Option<u32> {
        self.targets
            .iter()
            .find(|(_, t)| t.spec.name == name && matches!(t.state, State::Active | State::Waiting))
            .map(|(id, _)| *id)
    }
}

/// A JSON line of the live stream / stdout for one event.
pub fn event_line(seq: u64, a: &Action) -> Value {
    let mut v = serde_json::to_value(a).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("type".into(), json!("event"));
        o.insert("seq".into(), json!(seq));
    }
    v
}

fn loss_line(l: &Loss) -> Value {
    let mut v = serde_json::to_value(l).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("type".into(), json!("loss"));
    }
    v
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(16)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_list_lines() {
        let p = parse_pods(
            "# from the selector sidecar\n\
             0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 agents/agent-0\n\
             \n\
             bad line\n\
             11111111-2222-3333-4444-555555555555\n",
        );
        assert_eq!(p.len(), 2);
        assert_eq!(p["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"], "agents/agent-0");
        assert_eq!(
            p["11111111-2222-3333-4444-555555555555"],
            "11111111-2222-3333-4444-555555555555"
        );
    }

    #[test]
    fn event_lines_carry_type_seq_and_target() {
        let a = Action {
            op: Some(crate::record::Op::Unlink),
            target: Some("a".into()),
            path: Some("/x".into()),
            ..Default::default()
        };
        let v = event_line(7, &a);
        assert_eq!(v["type"], "event");
        assert_eq!(v["seq"], 7);
        assert_eq!(v["target"], "a");
        assert_eq!(v["op"], "unlink");
    }
}
