//! `abm run`: watch one launched command's process tree, judge every action
//! and write the trusted trace.
use std::{
    collections::{BTreeMap, HashMap},
    ffi::OsString,
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{bail, Context as _};
use monitor_common::{EventKind, LossCause};
use tokio::{io::unix::AsyncFd, signal::unix::SignalKind};

use crate::{
    events::KernelEvent,
    order::Orderer,
    policy::{Context, Policy},
    probes::{self, ProbeOptions, Probes},
    record::{Action, Op, Treatment},
    resolve,
    summary::Summary,
    trace::{Header, Loss, SealInfo, TraceWriter},
};

/// Options of `abm run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Trace file to write (hash-chained). It must not exist yet.
    /// Default: /var/lib/abm/traces/run-<UTC time>-<pid>.abmt, outside any
    /// workspace so the watched command cannot reach it by accident.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Form of the trace file: `compact` (zstd frames, about 10x smaller)
    /// or `jsonl` (plain JSON lines). Default: jsonl when the --trace path
    /// ends in `.jsonl`, compact otherwise. Every abm command reads both;
    /// `abm trace cat` prints either as JSON lines.
    #[arg(long, value_enum, value_name = "FORM")]
    pub format: Option<crate::trace::TraceFormat>,
    /// The task's own directory: the `${workspace}` root of policies and the
    /// `workspace` scope. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Policy file(s) to judge actions with, merged in order. Default: the
    /// built-in default pack (see `abm policy show`).
    #[arg(long = "policy", value_name = "FILE")]
    pub policy: Vec<PathBuf>,
    /// Key file: chain the trace with HMAC-SHA256 under this key instead of
    /// plain SHA-256, so only key holders can produce a valid trace.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// Print each action as it is recorded (to stderr).
    #[arg(long, short)]
    pub verbose: bool,
    /// Print no summary at the end.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the end-of-run summary as JSON (to stderr) instead of text.
    #[arg(long)]
    pub summary_json: bool,
    /// Kernel ring buffer size in KiB (power of two, at least 4). Smaller
    /// buffers lose events under bursts; losses are recorded in the trace.
    #[arg(long, default_value_t = 16384, value_name = "KIB")]
    pub ringbuf_kib: u32,
    /// After the command exits, keep watching its remaining descendants
    /// (e.g. daemons) for this many seconds, then terminate them.
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub linger: f64,
    /// Leave descendants still running after --linger alive (untraced from
    /// then on) instead of terminating them.
    #[arg(long)]
    pub keep_orphans: bool,
    /// Also put CMD in a fresh cgroup v2 child (under the hierarchy found in
    /// /proc/self/mountinfo) and watch it by cgroup id, so a process that
    /// joins the cgroup from outside the tree is in scope too; everything
    /// in the cgroup is the command's (waited for, terminated). The cgroup
    /// is removed at the end.
    #[arg(long)]
    pub cgroup: bool,
    /// Enforcement: --enforce and its options (docs/enforcement.md).
    #[command(flatten)]
    pub enforce: crate::enforce::EnforceArgs,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Records read from the ring buffer per turn of the event loop.
pub const DRAIN_BATCH: usize = 8192;
/// Period of the timer that drains the ring buffer when the kernel did not
/// wake the loop (it wakes it only once the ring is 1/8 full).
pub const DRAIN_INTERVAL_MS: u64 = 25;

/// Reads at most `max` records from the ring buffer into `push`; returns how
/// many were read (fewer than `max` means the ring is empty).
pub fn drain_ring(
    rb: &mut aya::maps::RingBuf<aya::maps::MapData>,
    max: usize,
    mut push: impl FnMut(&[u8]),
) -> usize {
    let mut n = 0;
    while n < max {
        let Some(item) = rb.next() else { break };
        push(&item);
        n += 1;
    }
    n
}

pub fn default_trace_dir() -> PathBuf {
    PathBuf::from("/var/lib/abm/traces")
}

pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}

/// Offset between CLOCK_REALTIME and CLOCK_MONOTONIC (kernel ktime).
pub struct Clock {
    offset_ns: i128,
}

impl Clock {
    pub fn new() -> Clock {
        let mono = monotonic_ns() as i128;
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as i128;
        Clock {
            offset_ns: real - mono,
        }
    }
    pub fn wall(&self, ktime_ns: u64) -> String {
        let ns = (ktime_ns as i128 + self.offset_ns).max(0) as u64;
        rfc3339(UNIX_EPOCH + Duration::from_nanos(ns))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn uname() -> (String, String) {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (s(&u.nodename), s(&u.release))
}

/// Turns kernel records into ordered, judged action records.
pub struct Pipeline {
    pub orderer: Orderer,
    pub clock: Clock,
    /// Executable per process, from exec events (inherited at fork).
    exes: HashMap<u32, String>,
    pub policy: Policy,
    pub ctx: Context,
    pub decode_errors: u64,
    pub unpaired_exits: u64,
}

impl Pipeline {
    pub fn new(policy: Policy, ctx: Context) -> Pipeline {
        Pipeline {
            orderer: Orderer::default(),
            clock: Clock::new(),
            exes: HashMap::new(),
            policy,
            ctx,
            decode_errors: 0,
            unpaired_exits: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let ev = match KernelEvent::decode(bytes) {
            Ok(ev) => ev,
            Err(e) => {
                tracing::warn!("undecodable kernel record: {e}");
                self.decode_errors += 1;
                return;
            }
        };
        match ev.kind {
            EventKind::SyscallExit => {
                if !self.orderer.exit(ev.hdr.tid, ev.hdr.result, &ev.fields) {
                    self.unpaired_exits += 1;
                }
            }
            EventKind::Fork | EventKind::Exit | EventKind::IoUringSetup => {
                self.orderer.ready(resolve::action_from_event(&ev))
            }
            _ => {
                let action = resolve::action_from_event(&ev);
                // Keep the entry record when an argument must be re-read at exit.
                let reread = action.path_issues.iter().any(|i| i == "read_failed");
                self.orderer.enter(action, reread.then_some(ev));
            }
        }
    }

    /// Finishes released records: process details, wall time, verdict.
    pub fn release(&mut self, force: bool) -> Vec<Action> {
        let mut out = Vec::new();
        self.orderer.release(monotonic_ns(), force, &mut out);
        for a in &mut out {
            a.time = self.clock.wall(a.ktime_ns);
            match a.op {
                Some(Op::Fork) => {
                    if let (Some(child), Some(exe)) = (a.result, self.exe_of(a.pid)) {
                        self.exes.insert(child as u32, exe);
                    }
                }
                Some(Op::Exec) if a.succeeded() => {
                    if let Some(p) = &a.path {
                        self.exes.insert(a.pid, p.clone());
                    }
                }
                _ => {}
            }
            a.exe = self.exe_of(a.pid);
            if a.op == Some(Op::Exit) {
                self.exes.remove(&a.pid);
            }
            if a.op.is_some_and(Op::is_action) {
                a.verdict = Some(self.policy.evaluate(a, &self.ctx));
            }
        }
        out
    }

    fn exe_of(&mut self, pid: u32) -> Option<String> {
        if let Some(e) = self.exes.get(&pid) {
            return Some(e.clone());
        }
        let e = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let e = e.to_string_lossy().into_owned();
        self.exes.insert(pid, e.clone());
        Some(e)
    }
}

/// Tracks per-CPU loss counters and turns increases into loss records.
pub struct LossTracker {
    last: Vec<Vec<u64>>,
    last_poll_ns: u64,
    pub total: BTreeMap<String, u64>,
}

impl LossTracker {
    pub fn new(probes: &Probes) -> LossTracker {
        LossTracker {
            last: probes.loss_counters(),
            last_poll_ns: monotonic_ns(),
            total: BTreeMap::new(),
        }
    }

    pub fn poll(&mut self, probes: &Probes) -> Vec<Loss> {
        let now = monotonic_ns();
        let cur = probes.loss_counters();
        let mut out = Vec::new();
        for (ci, cause) in LossCause::ALL.iter().enumerate() {
            let (Some(c), Some(l)) = (cur.get(ci), self.last.get(ci)) else {
                continue;
            };
            for (cpu, v) in c.iter().enumerate() {
                let d = v - l.get(cpu).copied().unwrap_or(0);
                if d > 0 {
                    *self.total.entry(cause.name().to_owned()).or_default() += d;
                    out.push(Loss {
                        cause: cause.name().to_owned(),
                        count: d,
                        cpu: Some(cpu as u32),
                        window_start_ns: self.last_poll_ns,
                        window_end_ns: now,
                    });
                }
            }
        }
        self.last = cur;
        self.last_poll_ns = now;
        out
    }

    /// A userspace-side loss (decode errors).
    pub fn userspace(&mut self, cause: &str, count: u64) -> Loss {
        *self.total.entry(cause.to_owned()).or_default() += count;
        Loss {
            cause: cause.to_owned(),
            count,
            cpu: None,
            window_start_ns: self.last_poll_ns,
            window_end_ns: monotonic_ns(),
        }
    }
}

fn load_policy(files: &[PathBuf]) -> anyhow::Result<Policy> {
    if files.is_empty() {
        Ok(Policy::default_pack())
    } else {
        Policy::load(files).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

fn trace_path(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    let dir = default_trace_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create trace directory {}", dir.display()))?;
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    Ok(dir.join(format!(
        "run-{stamp}-{}.{}",
        std::process::id(),
        crate::trace::TraceFormat::Compact.extension()
    )))
}

fn write_actions(
    writer: &mut TraceWriter,
    actions: Vec<Action>,
    summary: &mut Summary,
    verbose: bool,
) -> anyhow::Result<()> {
    for a in actions {
        let seq = writer.append_event(&a)?;
        if verbose {
            eprintln!("abm: {}", crate::summary::one_line(seq, &a));
        }
        summary.add(&a);
    }
    Ok(())
}

/// Runs `abm run`. Returns the command's exit code.
pub async fn run(args: RunArgs) -> anyhow::Result<i32> {
    if !(4..=1 << 20).contains(&args.ringbuf_kib) || !args.ringbuf_kib.is_power_of_two() {
        bail!(
            "--ringbuf-kib {}: must be a power of two between 4 and 1048576",
            args.ringbuf_kib
        );
    }
    let workspace = match &args.workspace {
        Some(w) => std::fs::canonicalize(w)
            .with_context(|| format!("--workspace {}: no such directory", w.display()))?,
        None => std::env::current_dir()?,
    };
    let policy = load_policy(&args.policy)?;
    // --enforce never degrades to observe-only: no backend, no run.
    let enforce_backend = crate::enforce::preflight(&args.enforce)?;
    let key = match &args.sign_key {
        Some(k) => {
            Some(crate::trace::read_key(k).with_context(|| format!("--sign-key {}", k.display()))?)
        }
        None => None,
    };
    let trace = trace_path(args.trace.clone())?;
    let trace_abs = absolute(&trace);
    if trace_abs.starts_with(&workspace) {
        tracing::warn!(
            "the trace {} is inside the workspace {}: the watched command can reach it",
            trace_abs.display(),
            workspace.display()
        );
    }
    let run_cgroup = if args.cgroup {
        Some(crate::daemon::cgroup::RunCgroup::create()?)
    } else {
        None
    };
    let mut probes = Probes::load(&ProbeOptions {
        ringbuf_bytes: args.ringbuf_kib * 1024,
        watch_cgroups: run_cgroup.is_some(),
    })?;
    if let Some(cg) = &run_cgroup {
        probes.add_cgroup(cg.id, 1)?;
        crate::daemon::cgroup::set_watched_levels(&mut probes, [cg.level]);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    let ctx = Context {
        workspace: workspace.clone(),
        home,
        trace_path: Some(trace_abs.clone()),
    };
    let mut enforcer = match enforce_backend {
        Some(b) => Some(crate::enforce::Enforcer::start(
            &args.enforce,
            b,
            crate::enforce::RunInfo {
                trace: &trace_abs,
                policy: &policy,
                ctx: &ctx,
                quiet: args.quiet,
            },
        )?),
        None => None,
    };
    // BPF LSM backend: its programs load into the tracepoint object (crate::lsm).
    crate::lsm::attach(&mut enforcer, &mut probes, &policy, &ctx, args.quiet)?;
    let (host, kernel) = uname();
    let command: Vec<String> = args
        .command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let mut header = Header {
        schema: 0,
        monitor_version: env!("CARGO_PKG_VERSION").to_owned(),
        host,
        kernel,
        backends: std::iter::once("tracepoint".to_owned())
            .chain(enforcer.as_ref().map(|e| e.backend_name().to_owned()))
            .collect(),
        policy_digest: policy.digest(),
        command: command.clone(),
        workspace: workspace.to_string_lossy().into_owned(),
        start_time: rfc3339(SystemTime::now()),
        extra: enforcer
            .as_ref()
            .map(|e| e.header_extra())
            .unwrap_or_default(),
    };
    // The other named roots of the policy context, so `abm replay` judges
    // with the same roots as the live run.
    header
        .extra
        .insert("home".into(), ctx.home.to_string_lossy().into());
    header
        .extra
        .insert("trace".into(), trace_abs.to_string_lossy().into());
    if let Some(cg) = &run_cgroup {
        header
            .extra
            .insert("cgroup".into(), cg.path.to_string_lossy().into());
        header.extra.insert("cgroup_id".into(), cg.id.into());
    }
    let form = crate::trace::TraceFormat::for_path(args.format, &trace);
    let mut writer = TraceWriter::create_as(&trace, key, header, form)
        .with_context(|| format!("cannot create trace {}", trace.display()))?;
    let protection = crate::protect::protect_trace(&trace_abs);
    if let Err(e) = &protection {
        tracing::warn!("trace file left unprotected: {e}");
    }

    let mut pipeline = Pipeline::new(policy, ctx);
    let mut losses = LossTracker::new(&probes);
    let mut summary = Summary::default();
    let started = Instant::now();

    // Spawn the command; the child adds itself to the scope map before exec
    // so its very first syscall is already traced.
    let scope_fd = probes.scope_fd();
    let cgroup_fd = run_cgroup.as_ref().map(|c| c.procs_fd());
    let mut cmd = tokio::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..])
        .current_dir(std::env::current_dir()?);
    // With --enforce the child also installs the seccomp filter and sends
    // its listener fd to the supervisor (enforce::seccomp::ChildSetup).
    let seccomp_setup = enforcer
        .as_ref()
        .filter(|e| e.backend() == crate::enforce::Backend::Seccomp)
        .map(|e| e.child_setup());
    // SAFETY: the closure only makes raw syscalls (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = cgroup_fd {
                crate::daemon::cgroup::join_cgroup(fd)?;
            }
            probes::self_into_scope(scope_fd, 1)?;
            if let Some(s) = &seccomp_setup {
                s.install()?;
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    crate::enforce::after_spawn(&mut enforcer);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            let _ = writer.append_note(
                "spawn_failed",
                serde_json::json!({ "error": e.to_string() }),
            );
            let _ = writer.seal(SealInfo {
                end_time: rfc3339(SystemTime::now()),
                lost_by_cause: BTreeMap::new(),
                exit_code: Some(code),
            });
            crate::protect::release_trace(&trace_abs);
            bail!("cannot run {}: {e}", args.command[0].to_string_lossy());
        }
    };

    let ring = probes.events.take().context("ring buffer already taken")?;
    // SAFETY: the ring buffer owns its fd for as long as it is registered.
    let mut ring = unsafe { AsyncFd::register(ring) }
        .map_err(|e| anyhow::anyhow!("registering the ring buffer: {e}"))?;
    let mut tick = tokio::time::interval(Duration::from_millis(crate::session::DRAIN_INTERVAL_MS));
    let mut sigint = tokio::signal::unix::signal(SignalKind::interrupt())?;
    let mut sigterm = tokio::signal::unix::signal(SignalKind::terminate())?;
    let mut exit_code: Option<i32> = None;
    let mut deadline: Option<Instant> = None;
    let mut interrupted = false;
    let mut last_flush = Instant::now();
    let mut reported_decode = 0;

    loop {
        tokio::select! {
            guard = ring.readable_mut() => {
                let mut guard = guard?;
                // A bounded batch keeps memory flat under bursts; the rest
                // is read on the next turn of the loop.
                let n = crate::session::drain_ring(guard.get_inner_mut(), crate::session::DRAIN_BATCH, |b| pipeline.push(b));
                if n < crate::session::DRAIN_BATCH {
                    guard.clear_ready();
                }
            }
            // The kernel wakes this loop only once the ring is 1/8 full; the
            // timer drains what a quiet ring holds.
            _ = tick.tick() => {
                crate::session::drain_ring(ring.get_mut(), crate::session::DRAIN_BATCH, |b| pipeline.push(b));
            }
            status = child.wait(), if exit_code.is_none() => {
                let status = status?;
                exit_code = Some(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)));
                deadline = Some(Instant::now() + Duration::from_secs_f64(args.linger.max(0.0)));
            }
            _ = sigint.recv() => { interrupted = true; }
            _ = sigterm.recv() => { interrupted = true; }
        }
        let acts = crate::enforce::release(&mut enforcer, &mut pipeline, &mut writer, false)?;
        write_actions(&mut writer, acts, &mut summary, args.verbose)?;
        if last_flush.elapsed() >= Duration::from_millis(500) {
            for loss in losses.poll(&probes) {
                writer.append_loss(&loss)?;
            }
            if pipeline.decode_errors > reported_decode {
                let l = losses.userspace("decode_error", pipeline.decode_errors - reported_decode);
                reported_decode = pipeline.decode_errors;
                writer.append_loss(&l)?;
            }
            writer.flush()?;
            last_flush = Instant::now();
        }
        if interrupted {
            let pids = scoped_pids(&probes, run_cgroup.as_ref());
            writer.append_note(
                "interrupted",
                serde_json::json!({ "terminated_pids": pids }),
            )?;
            terminate(&probes, run_cgroup.as_ref(), libc::SIGTERM);
            if exit_code.is_none() {
                if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), child.wait()).await
                {
                    exit_code = Some(s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)));
                }
            }
            terminate(&probes, run_cgroup.as_ref(), libc::SIGKILL);
            if exit_code.is_none() {
                let _ = child.kill().await;
                exit_code = Some(130);
            }
            break;
        }
        if let Some(d) = deadline {
            let remaining = scoped_pids(&probes, run_cgroup.as_ref());
            if remaining.is_empty() {
                break;
            }
            if Instant::now() >= d {
                if args.keep_orphans {
                    writer.append_note(
                        "orphans_left_running",
                        serde_json::json!({ "pids": remaining }),
                    )?;
                } else {
                    writer.append_note(
                        "orphans_terminated",
                        serde_json::json!({ "pids": remaining }),
                    )?;
                    terminate(&probes, run_cgroup.as_ref(), libc::SIGTERM);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    terminate(&probes, run_cgroup.as_ref(), libc::SIGKILL);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                break;
            }
        }
    }

    crate::enforce::finish(&mut enforcer, &mut pipeline, &mut writer)?;
    // Final drain: everything the kernel produced before the tree ended.
    drain_ring(ring.get_mut(), usize::MAX, |b| pipeline.push(b));
    let acts = crate::enforce::release(&mut enforcer, &mut pipeline, &mut writer, true)?;
    write_actions(&mut writer, acts, &mut summary, args.verbose)?;
    for loss in losses.poll(&probes) {
        writer.append_loss(&loss)?;
    }
    if pipeline.decode_errors > reported_decode {
        let l = losses.userspace("decode_error", pipeline.decode_errors - reported_decode);
        writer.append_loss(&l)?;
    }
    if pipeline.unpaired_exits > 0 {
        // Results whose syscall entry record was lost (counted as a loss
        // already): kept so a reader can reconcile kernel record counts.
        writer.append_note(
            "unpaired_results",
            serde_json::json!({ "count": pipeline.unpaired_exits }),
        )?;
    }
    let seal = writer.seal(SealInfo {
        end_time: rfc3339(SystemTime::now()),
        lost_by_cause: losses.total.clone(),
        exit_code,
    })?;
    crate::protect::release_trace(&trace_abs);
    let code = exit_code.unwrap_or(1);
    if !args.quiet {
        summary.finish(
            &command,
            code,
            started.elapsed(),
            &seal,
            pipeline.unpaired_exits,
        );
        if args.summary_json {
            eprintln!("{}", serde_json::to_string_pretty(&summary.to_json())?);
        } else {
            eprint!("{}", summary.render());
        }
        if let Some(e) = &enforcer {
            eprint!("{}", e.summary());
        }
    }
    if enforcer.is_none() && summary.by_treatment.contains_key(&Treatment::Deny) {
        tracing::info!("deny verdicts were recorded; without --enforce they were not blocked");
    }
    Ok(code)
}

fn terminate(probes: &Probes, cg: Option<&crate::daemon::cgroup::RunCgroup>, sig: i32) {
    let me = std::process::id();
    for pid in scoped_pids(probes, cg) {
        if pid != me {
            unsafe { libc::kill(pid as i32, sig) };
        }
    }
}

/// Processes in scope: the pid table, plus the run's cgroup with --cgroup.
fn scoped_pids(probes: &Probes, cg: Option<&crate::daemon::cgroup::RunCgroup>) -> Vec<u32> {
    let mut pids = probes.scoped_pids();
    if let Some(cg) = cg {
        pids.extend(cg.pids());
        pids.sort_unstable();
        pids.dedup();
    }
    pids
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}
