//! `abm run`: watch one launched command's process tree, judge every action
//! and write the trusted trace.
//!
//! A leaf: it loads the kernel programs ([`crate::kernel`]), starts the
//! guard of `--enforce` ([`crate::enforce`]), spawns the command into scope
//! and drives the shared event loop ([`crate::pipeline::driver`]) until the
//! command's tree has ended.
use std::{
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime},
};

use std::io::Write as _;

use anyhow::{bail, Context as _};
use monitor_common::EventKind;
use tokio::signal::unix::SignalKind;

mod args;

use args::trace_path;
pub use args::{default_trace_dir, FollowContainers, RunArgs};

use crate::{
    core::{absolute, rfc3339, uname},
    enforce::Enforcer,
    kernel::{
        cgroup::{self, RunCgroup},
        probes,
        ring::{self, Ring},
        LossTracker, ProbeOptions, Probes,
    },
    pipeline::{
        driver::{self, Driver, Flow},
        load_policy,
        summary::one_line,
        Intake, Pipeline, Recorder, Stage, Views,
    },
    policy::Context,
    record::Treatment,
    trace::{note::Note, Cause, Header, TraceWriter},
};

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
    // Descriptors first, before anything is started that could inherit them.
    let anchor = args
        .anchor_fd
        .map(crate::trace::anchor::AnchorWriter::from_fd)
        .transpose()?;
    let key = match (&args.sign_key, args.sign_key_fd) {
        (Some(k), _) if k.as_os_str() == "-" => Some(
            crate::trace::read_key_from(std::io::stdin().lock(), "stdin")
                .context("--sign-key -")?,
        ),
        (Some(k), _) => {
            Some(crate::trace::read_key(k).with_context(|| format!("--sign-key {}", k.display()))?)
        }
        (None, Some(fd)) => {
            let f = crate::trace::anchor::take_fd(fd, "--sign-key-fd")?;
            Some(
                crate::trace::read_key_from(f, &format!("descriptor {fd}"))
                    .with_context(|| format!("--sign-key-fd {fd}"))?,
            )
        }
        (None, None) => None,
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
        Some(RunCgroup::create()?)
    } else {
        None
    };
    let following = args.follow_containers != FollowContainers::Off;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    // Sensitive files, by inode, before anything is loaded (a bad
    // --sensitive pattern stops the run here).
    let mut sensitive_patterns = policy.sensitive_patterns().to_vec();
    sensitive_patterns.extend(args.sensitive.iter().cloned());
    let sensitive = crate::kernel::sensitive::resolve(
        &workspace,
        &home,
        &sensitive_patterns,
        !args.no_default_sensitive,
    )?;
    let mut probes = Probes::load(&ProbeOptions {
        ringbuf_bytes: args.ringbuf_kib * 1024,
        watch_cgroups: run_cgroup.is_some() || following,
    })?;
    let program = args.command[0].to_string_lossy().into_owned();
    if following {
        cgroup::arm_follow(&mut probes, CONTAINERS)
            .context("arming the following of containers (--follow-containers=off runs without)")?;
    } else if cgroup::is_container_client(&program) {
        tracing::warn!(
            "{program} asks a container runtime for containers, whose processes are not its children: with --follow-containers=off they are not recorded"
        );
    }
    if args.enforce.enforce && cgroup::is_container_client(&program) {
        tracing::warn!(
            "--enforce guards {program} and the processes it starts itself; the containers it asks the runtime for are not its children (the runtime starts them), so their processes are followed and recorded but NOT enforced, with either backend. To enforce inside a container, watch it with `abm daemon` and `abm watch add NAME --container NAME-OR-ID --enforce` (BPF LSM; docs/daemon.md#enforcement)"
        );
    }
    if let Some(cg) = &run_cgroup {
        probes.add_cgroup(cg.id, TARGET)?;
        cgroup::set_watched_levels(&mut probes, [cg.level]);
    }
    // If abm dies, the tree dies too (crate::lifeline). Forked before the
    // trace, the control socket and the seccomp listener exist.
    let lifeline = crate::lifeline::Lifeline::start(
        probes.scope_fd(),
        run_cgroup.as_ref().map(|c| c.path.as_path()),
        &trace_abs,
    )
    .context("starting the lifeline process")?;
    let ctx = Context {
        workspace: workspace.clone(),
        home,
        trace_path: Some(trace_abs.clone()),
    };
    // Recording sensitive reads is optional unless asked for by name
    // (--sensitive): without it the run goes on, says so once, and the
    // trace's header says reads were not recorded.
    let (sensitive_watch, sensitive_off) =
        match crate::kernel::sensitive::watch(&mut probes, &sensitive)
        {
            Ok(w) => (w, None),
            Err(e) if args.sensitive.is_empty() => {
                tracing::warn!(
                    "reads of sensitive files are not recorded: {e} (see `abm doctor`, line sensitive_reads)"
                );
                (crate::kernel::sensitive::Watcher::off(&sensitive), Some(e.to_string()))
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(
                    "--sensitive was given, but reads of sensitive files cannot be recorded here (see `abm doctor`, line sensitive_reads)",
                ))
            }
        };
    // The guard starts before the command: the BPF LSM backend fills its
    // maps and attaches; seccomp gets ready for the child's listener.
    let mut enforcer = match enforce_backend {
        Some(b) => Some(crate::enforce::Enforcer::start(
            &args.enforce,
            b,
            crate::enforce::RunInfo {
                trace: &trace_abs,
                policy: &policy,
                ctx: &ctx,
                quiet: args.quiet,
                target: args
                    .command
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                sensitive: Some(sensitive_watch.views()),
            },
            &mut probes,
        )?),
        None => None,
    };
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
    header
        .extra
        .insert("sensitive_files".into(), sensitive.files.len().into());
    if sensitive.partial {
        header.extra.insert("sensitive_partial".into(), true.into());
    }
    // The self guard (a seccomp filter in the command, every mode) where
    // seccomp(2) is refused: the run goes on without it and says so.
    let self_guard_off = crate::self_guard::SelfGuard::for_self(args.allow_kernel_admin)
        .probe()
        .err();
    if let Some(e) = &self_guard_off {
        tracing::warn!(
            "self guard off: {e}; the command can signal, trace or read abm (see `abm doctor`, line self_guard)"
        );
        header
            .extra
            .insert("self_guard_off".into(), e.to_string().into());
    }
    if let Some(why) = sensitive_off {
        header
            .extra
            .insert("sensitive_reads_off".into(), why.into());
    }
    if let Some(cg) = &run_cgroup {
        header
            .extra
            .insert("cgroup".into(), cg.path.to_string_lossy().into());
        header.extra.insert("cgroup_id".into(), cg.id.into());
    }
    let form = crate::trace::TraceFormat::for_path(args.format, &trace);
    let mut writer = TraceWriter::create_as(&trace, key, header, form)
        .with_context(|| format!("cannot create trace {}", trace.display()))?;
    if let Some(a) = anchor {
        writer.set_anchor(a);
    }
    let mut trace = Recorder::new(writer).summing().watching(sensitive_watch);
    lifeline.trace_created();
    let protection = crate::protect::protect_trace(&trace_abs);
    if let Err(e) = &protection {
        tracing::warn!("trace file left unprotected: {e}");
    }

    let pipeline = Pipeline::new(policy, ctx);
    let losses = LossTracker::new(&probes);
    let started = Instant::now();

    // Spawn the command; the child adds itself to the scope map before exec
    // so its very first syscall is already traced.
    let scope_fd = probes.scope_fd();
    let cgroup_fd = run_cgroup.as_ref().map(|c| c.procs_fd());
    // abm searches PATH itself, so the child execs the program directly:
    // its failed execs of the other PATH entries would be recorded as the
    // command's own failed actions.
    let mut cmd = tokio::process::Command::new(search_path(&args.command[0]));
    cmd.arg0(&args.command[0]);
    cmd.args(&args.command[1..])
        .current_dir(std::env::current_dir()?);
    // With --enforce the child also sets up its guard (the seccomp backend
    // installs its filter and sends the listener fd to the supervisor).
    let child_setup = enforcer.as_ref().and_then(|e| e.child_setup());
    // In every mode the command may not signal, trace or read abm. Where
    // no seccomp filter can be installed (a container profile refusing
    // seccomp(2)) the run goes on without this guard and says so; with
    // --enforce the backend's own check has refused to start already.
    let self_guard = self_guard_off
        .is_none()
        .then(|| crate::self_guard::SelfGuard::for_self(args.allow_kernel_admin));
    let drop_ptrace = !args.allow_ptrace;
    // SAFETY: the closure only makes raw syscalls (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = cgroup_fd {
                cgroup::join_cgroup(fd)?;
            }
            probes::self_into_scope(scope_fd, TARGET)?;
            crate::lifeline::child_setup()?;
            if drop_ptrace {
                crate::self_guard::drop_ptrace_capability()?;
            }
            if let Some(g) = &self_guard {
                g.install()?;
            }
            if let Some(s) = &child_setup {
                s.install()?;
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    if let Some(e) = enforcer.as_mut() {
        e.spawned();
    }
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            let _ = trace.note(&Note::SpawnFailed {
                error: e.to_string(),
            });
            let _ = trace.seal(Some(code));
            crate::protect::release_trace(&trace_abs);
            bail!("cannot run {}: {e}", args.command[0].to_string_lossy());
        }
    };

    let mut ring = ring::register(&mut probes)?;
    let mut s = Session {
        args: &args,
        probes,
        run_cgroup,
        intake: Intake::new(Views::own()),
        pipeline,
        enforcer,
        trace,
        losses,
        child,
        sigint: tokio::signal::unix::signal(SignalKind::interrupt())?,
        sigterm: tokio::signal::unix::signal(SignalKind::terminate())?,
        sighup: tokio::signal::unix::signal(SignalKind::hangup())?,
        signal_name: "",
        exit_code: None,
        deadline: None,
        interrupted: false,
        last_flush: Instant::now(),
        clients: std::collections::HashSet::new(),
        discarded: std::collections::HashSet::new(),
    };
    if let Err(e) = driver::drive(&mut ring, &mut s).await {
        // A failed write (or any error) in the loop: stop the command and
        // seal what can be sealed, instead of leaving it running.
        return Err(s.abort(e, &trace_abs, lifeline));
    }
    let code = s.end(&mut ring, &command, started, &trace_abs)?;
    lifeline.disarm();
    Ok(code)
}

/// The file `execvp` would run for `prog`: the first executable regular
/// file named `prog` in PATH; `prog` itself when it has a `/` or nothing
/// is found (the spawn then reports the error).
fn search_path(prog: &std::ffi::OsStr) -> PathBuf {
    use std::os::unix::{ffi::OsStrExt as _, fs::PermissionsExt as _};
    if prog.as_bytes().contains(&b'/') || prog.is_empty() {
        return PathBuf::from(prog);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let cand = dir.join(prog);
        if let Ok(m) = std::fs::metadata(&cand) {
            if m.is_file() && m.permissions().mode() & 0o111 != 0 {
                return cand;
            }
        }
    }
    PathBuf::from(prog)
}

/// The target id of the launched command's tree in the kernel's scope maps.
const TARGET: u32 = crate::enforce::lsm::RUN_TARGET;
/// The target id of followed containers' processes: recorded like the
/// tree's, never terminated by the run (their runtime owns them).
const CONTAINERS: u32 = 2;

/// One `abm run` while its command runs.
struct Session<'a> {
    args: &'a RunArgs,
    probes: Probes,
    run_cgroup: Option<RunCgroup>,
    intake: Intake,
    pipeline: Pipeline,
    enforcer: Option<Enforcer>,
    trace: Recorder,
    losses: LossTracker,
    child: tokio::process::Child,
    sigint: tokio::signal::unix::Signal,
    sigterm: tokio::signal::unix::Signal,
    /// A closed terminal or SSH session: handled like SIGTERM.
    sighup: tokio::signal::unix::Signal,
    /// The signal that interrupted the run.
    signal_name: &'static str,
    exit_code: Option<i32>,
    /// When descendants left after the command exited are terminated.
    deadline: Option<Instant>,
    interrupted: bool,
    last_flush: Instant,
    /// Processes of the watched tree running a container client.
    clients: std::collections::HashSet<u32>,
    /// New container cgroups that are not the run's.
    discarded: std::collections::HashSet<u64>,
}

enum Wake {
    Exited(std::process::ExitStatus),
    Interrupted(&'static str),
}

fn exit_code_of(s: std::process::ExitStatus) -> i32 {
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

impl Driver for Session<'_> {
    type Wake = Wake;

    fn push(&mut self, bytes: &[u8]) {
        let Some(ev) = self.intake.decode(bytes) else {
            return;
        };
        match ev.kind {
            EventKind::CgroupMkdir => {
                self.new_cgroup(&ev);
                return;
            }
            EventKind::Exec => {
                let program = ev
                    .field(monitor_common::field_tag::RAW_PATH)
                    .map(|f| String::from_utf8_lossy(&f.data).into_owned())
                    .unwrap_or_default();
                if cgroup::is_container_client(&program) {
                    self.clients.insert(ev.hdr.pid);
                } else {
                    self.clients.remove(&ev.hdr.pid);
                }
            }
            EventKind::Exit => {
                self.clients.remove(&ev.hdr.pid);
            }
            _ => {}
        }
        if self.discarded.contains(&ev.hdr.cgroup_id) {
            return;
        }
        self.pipeline.accept(ev, &mut self.intake.views, TARGET);
    }

    async fn wake(&mut self) -> anyhow::Result<Wake> {
        let running = self.exit_code.is_none();
        tokio::select! {
            status = self.child.wait(), if running => Ok(Wake::Exited(status?)),
            _ = self.sigint.recv() => Ok(Wake::Interrupted("SIGINT")),
            _ = self.sigterm.recv() => Ok(Wake::Interrupted("SIGTERM")),
            _ = self.sighup.recv() => Ok(Wake::Interrupted("SIGHUP")),
        }
    }

    async fn handle(&mut self, wake: Wake, _ring: &mut Ring) -> anyhow::Result<Flow> {
        match wake {
            Wake::Exited(status) => {
                self.exit_code = Some(exit_code_of(status));
                self.deadline =
                    Some(Instant::now() + Duration::from_secs_f64(self.args.linger.max(0.0)));
            }
            Wake::Interrupted(sig) => {
                self.interrupted = true;
                self.signal_name = sig;
            }
        }
        Ok(Flow::Continue)
    }

    async fn turn(&mut self, ring: &mut Ring) -> anyhow::Result<Flow> {
        self.release(false)?;
        if self.last_flush.elapsed() >= Duration::from_millis(500) {
            self.account_losses(ring)?;
            self.trace.flush()?;
            self.last_flush = Instant::now();
        }
        if self.interrupted {
            let pids = self.scoped_pids();
            self.trace.note(&Note::Interrupted {
                terminated_pids: pids,
                signal: self.signal_name,
            })?;
            self.terminate(libc::SIGTERM);
            if self.exit_code.is_none() {
                if let Ok(Ok(s)) =
                    tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await
                {
                    self.exit_code = Some(exit_code_of(s));
                }
            }
            self.terminate(libc::SIGKILL);
            if self.exit_code.is_none() {
                let _ = self.child.kill().await;
                self.exit_code = Some(130);
            }
            return Ok(Flow::Stop);
        }
        if let Some(d) = self.deadline {
            let remaining = self.scoped_pids();
            if remaining.is_empty() {
                return Ok(Flow::Stop);
            }
            if Instant::now() >= d {
                if self.args.keep_orphans {
                    self.trace
                        .note(&Note::OrphansLeftRunning { pids: remaining })?;
                } else {
                    self.trace
                        .note(&Note::OrphansTerminated { pids: remaining })?;
                    self.terminate(libc::SIGTERM);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    self.terminate(libc::SIGKILL);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }
}

impl Session<'_> {
    /// A container cgroup created while following was armed: the run's
    /// (in `tree` mode, when a container client of the tree was running at
    /// that point of the event order) or taken out of scope.
    fn new_cgroup(&mut self, ev: &crate::kernel::KernelEvent) {
        let cg = cgroup::NewCgroup::from_event(ev);
        let reason = match self.args.follow_containers {
            FollowContainers::All => Some("all"),
            FollowContainers::Tree if !self.clients.is_empty() => Some("client_running"),
            _ => None,
        };
        match (reason, cg.container.clone()) {
            (Some(reason), Some(container)) => {
                if !cg.in_scope {
                    tracing::warn!(
                        "container {container}: the scope table is full, it is not recorded"
                    );
                }
                let note = Note::ContainerFollowed(crate::trace::note::ContainerFollowed {
                    container,
                    cgroup: cg.path.clone(),
                    cgroup_id: cg.id,
                    reason,
                });
                if let Err(e) = self.trace.note(&note) {
                    tracing::warn!("trace note: {e}");
                }
            }
            _ => {
                self.probes.remove_cgroup(cg.id);
                self.discarded.insert(cg.id);
            }
        }
    }

    /// Released records (with the guard's records merged in) to the trace.
    fn release(&mut self, force: bool) -> anyhow::Result<()> {
        let stage = self.enforcer.as_mut().map(|e| e as &mut dyn Stage);
        let verbose = self.args.verbose;
        self.trace
            .release(&mut self.pipeline, force, stage, &mut |seq, a| {
                if verbose {
                    // A closed terminal must not stop the run: errors ignored.
                    let _ = writeln!(std::io::stderr(), "abm: {}", one_line(seq, a));
                }
            })?;
        Ok(())
    }

    /// Kernel losses, records the full userspace queue dropped and
    /// undecodable records since the last call.
    fn account_losses(&mut self, ring: &Ring) -> anyhow::Result<()> {
        let counted = [
            (Cause::QueueFull, ring.dropped()),
            (Cause::DecodeError, self.intake.decode_errors),
        ];
        for loss in self.losses.poll(&self.probes, &counted) {
            self.trace.loss(&loss)?;
        }
        Ok(())
    }

    /// After the loop: the guard stops, the last records, the seal, the
    /// summary.
    fn end(
        mut self,
        ring: &mut Ring,
        command: &[String],
        started: Instant,
        trace_abs: &Path,
    ) -> anyhow::Result<i32> {
        if let Some(e) = self.enforcer.as_mut() {
            e.stop(&mut self.pipeline, &mut self.trace)?;
        }
        // Final drain: everything the kernel produced before the tree ended.
        ring::drain_all(ring, |b| self.push(b));
        self.release(true)?;
        self.trace.close_actions(&mut self.pipeline)?;
        self.account_losses(ring)?;
        let exit_code = self.exit_code;
        let mut summary = self.trace.summary().map(std::mem::take).unwrap_or_default();
        let seal = self.trace.finish(&self.pipeline, exit_code)?;
        crate::protect::release_trace(trace_abs);
        let code = exit_code.unwrap_or(1);
        let args = self.args;
        if !args.quiet {
            summary.finish(
                command,
                code,
                started.elapsed(),
                &seal,
                self.pipeline.unpaired_exits,
            );
            // After SIGHUP stderr may be a closed terminal: write errors
            // are ignored (the trace is sealed already).
            let mut err = std::io::stderr();
            if args.summary_json {
                let _ = writeln!(err, "{}", serde_json::to_string_pretty(&summary.to_json())?);
            } else {
                let _ = write!(err, "{}", summary.render());
            }
            if let Some(e) = &self.enforcer {
                let _ = write!(err, "{}", e.summary());
            }
        }
        if self.enforcer.is_none() && summary.by_treatment.contains_key(&Treatment::Deny) {
            tracing::info!("deny verdicts were recorded; without --enforce they were not blocked");
        }
        Ok(code)
    }

    /// The loop failed: kill the tree, record the error if the trace still
    /// takes writes, seal what can be sealed.
    fn abort(
        mut self,
        e: anyhow::Error,
        trace_abs: &Path,
        lifeline: crate::lifeline::Lifeline,
    ) -> anyhow::Error {
        self.terminate(libc::SIGKILL);
        let _ = self.child.start_kill();
        let _ = self.trace.note(&Note::RunError {
            error: format!("{e:#}"),
        });
        if let Some(enf) = self.enforcer.as_mut() {
            let _ = enf.stop(&mut self.pipeline, &mut self.trace);
        }
        let sealed = self.trace.seal(None);
        crate::protect::release_trace(trace_abs);
        // Whatever is still in scope is killed by the lifeline.
        drop(lifeline);
        e.context(match sealed {
            Ok(_) => "the run stopped the command; the trace is sealed".to_owned(),
            Err(s) => format!("the run stopped the command; the trace could not be sealed ({s})"),
        })
    }

    fn terminate(&self, sig: i32) {
        let me = std::process::id();
        for pid in self.scoped_pids() {
            if pid != me {
                // SAFETY: kill(2) has no memory effects; a pid that exited
                // meanwhile gives ESRCH, which is ignored.
                unsafe { libc::kill(pid as i32, sig) };
            }
        }
    }

    /// Processes in scope: the pid table, plus the run's cgroup with --cgroup.
    fn scoped_pids(&self) -> Vec<u32> {
        // The command's tree: not the processes of followed containers,
        // which their runtime owns (and which `tree` mode cannot always
        // tell from other clients' containers).
        let mut pids: Vec<u32> = self
            .probes
            .scope
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, e)| e.target == TARGET)
            .map(|(p, _)| p)
            .collect();
        if let Some(cg) = &self.run_cgroup {
            pids.extend(cg.pids());
            pids.sort_unstable();
            pids.dedup();
        }
        pids
    }
}
