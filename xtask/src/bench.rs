//! `cargo xtask bench`: what monitoring costs, against an unmonitored
//! baseline and against peer monitors (bpftrace, auditd, strace).
//!
//! Every workload runs under every configuration `--runs` times, the
//! configurations alternating within each round (A B C A B C ..., the
//! starting configuration rotating from round to round). The time compared
//! is the workload's own wall time, measured by `tests/bench/timeit.c`
//! around the workload inside the monitored scope; the monitor's own start
//! and stop are reported separately. docs/performance.md explains every
//! column.
use std::{
    ffi::OsString,
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

mod measure;
mod micro;
mod peers;
mod render;
mod report;
mod sys;
mod trace_size;

use measure::measure;
use micro::micro;
use render::{render, summarize, Report, Row};

/// Audit login uid that marks the measured tree for the auditd and
/// bpftrace peers (abm scopes by its own pid map instead).
pub const LOGINUID: &str = "4242";
const BURST_FILES: u32 = 20_000;
const BURST_DIRS: u32 = 100;
const GIT_FILES: u32 = 3_000;
const GIT_BRANCHES: u32 = 10;
const BUILD_UNITS: u32 = 50;
/// The published crate the session workload clones, builds and tests: a
/// dependency of the workspace (through clap), so its sources are in
/// cargo's registry cache wherever the workspace builds.
const SESSION_CRATE: &str = "strsim-0.11.1";
const LOOP_CALLS: u32 = 200_000;
const LOOP_REPS: u32 = 1;
const HASH_EVENTS: u32 = 200_000;
/// abm's ring buffer for the in-scope syscall loop: large enough that none
/// of the 220,000 back-to-back unlinkat records (warm-up included) is
/// dropped; a dropped record costs the kernel less than a delivered one and
/// would flatter the number.
const LOOP_RINGBUF_KIB: u32 = 256 * 1024;
const WORKLOADS: [&str; 7] = [
    "burst", "git", "build", "session", "outside", "report", "verify",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Config {
    None,
    Observe,
    Default,
    /// The default policy writing the plain JSON-lines trace (burst only):
    /// what the compact form's own thread costs, by comparison.
    DefaultJsonl,
    Bpftrace,
    Auditd,
    Strace,
}

impl Config {
    fn label(self) -> &'static str {
        match self {
            Config::None => "no monitor",
            Config::Observe => "abm observe-only",
            Config::Default => "abm default policy",
            Config::DefaultJsonl => "abm default, jsonl",
            Config::Bpftrace => "bpftrace",
            Config::Auditd => "auditd",
            Config::Strace => "strace",
        }
    }
    fn is_abm(self) -> bool {
        matches!(
            self,
            Config::Observe | Config::Default | Config::DefaultJsonl
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Burst,
    Git,
    Build,
    Session,
    Outside,
}

struct Workload {
    kind: Kind,
    name: &'static str,
    title: String,
    /// The `--workspace` of abm and the workload's working area.
    ws: PathBuf,
}

/// One measurement.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// The workload's wall time (timeit), seconds.
    wall: f64,
    /// The workload tree's CPU (user + sys), seconds.
    work_cpu: f64,
    /// From starting the monitor to its exit (abm, strace), seconds.
    e2e: Option<f64>,
    events: Option<u64>,
    lost: Option<u64>,
    mon_rss_kib: Option<u64>,
    /// Of `mon_rss_kib`, the ring buffer mapping (abm only).
    mon_ring_kib: Option<u64>,
    mon_cpu_s: Option<f64>,
    /// abm: size of the trace file.
    trace_bytes: Option<u64>,
    /// abm: the judge's CPU over the run, µs (the trace's `action_stats`
    /// note, `decision_us_total`).
    judge_us: Option<f64>,
}

/// Paths and settings shared by all measurements.
pub struct Env {
    abm: PathBuf,
    scripts: PathBuf,
    /// Where the workloads run (a private tmpfs unless ABM_BENCH_DIR).
    dir: PathBuf,
    /// Monitor output (traces, peer logs, stderr captures): on disk, as in
    /// real use.
    logs: PathBuf,
    timeit: PathBuf,
    sloop: PathBuf,
    /// tests/bench/notify_floor.c: one seccomp user notification answered
    /// at once, the mechanism's own cost.
    nfloor: PathBuf,
    observe_policy: PathBuf,
    seq: std::cell::Cell<u32>,
    /// A burst trace in the default form, kept for the verification
    /// benchmark.
    kept_burst: std::cell::RefCell<Option<PathBuf>>,
}

impl Env {
    fn next_trace(&self) -> PathBuf {
        let n = self.seq.get() + 1;
        self.seq.set(n);
        // No --format: the default (compact) form, as users get it.
        self.logs.join("traces").join(format!("run-{n}.abmt"))
    }

    /// Runs the workload under timeit, unmonitored by us (a peer may be
    /// watching system-wide). `loginuid` marks the tree for the peers.
    fn timeit(&self, workload: &[OsString], loginuid: Option<&str>) -> Result<Sample> {
        let err = self.logs.join("timeit.err");
        let mut c = Command::new(&self.timeit);
        if let Some(l) = loginuid {
            c.args(["-l", l]);
        }
        let status = c
            .arg("--")
            .args(workload)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err)?)
            .status()
            .context("cannot run timeit")?;
        let text = fs::read_to_string(&err).unwrap_or_default();
        if !status.success() {
            bail!("workload failed ({status}): {}", peers::tail(&text));
        }
        parse_timeit(&text)
    }

    /// `abm run` arguments up to and including `--`.
    fn abm_run(&self, config: Config, ws: &Path, trace: &Path) -> Command {
        let mut c = Command::new(&self.abm);
        c.arg("run")
            .arg("--trace")
            .arg(trace)
            .arg("--workspace")
            .arg(ws)
            .arg("--summary-json");
        if config == Config::Observe {
            c.arg("--policy").arg(&self.observe_policy);
        }
        if config == Config::DefaultJsonl {
            c.args(["--format", "jsonl"]);
        }
        c.current_dir(ws).stdin(Stdio::null()).stdout(Stdio::null());
        c
    }
}

/// Parses timeit's `ABM_BENCH ...` line.
pub fn parse_timeit(stderr: &str) -> Result<Sample> {
    let Some(line) = stderr.lines().rev().find(|l| l.starts_with("ABM_BENCH ")) else {
        bail!("no timing line from timeit: {}", peers::tail(stderr));
    };
    let field = |k: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    Ok(Sample {
        wall: field("wall_ns") / 1e9,
        work_cpu: (field("user_us") + field("sys_us")) / 1e6,
        ..Sample::default()
    })
}

/// Sum of the integer values of the flat JSON object under `"key"`
/// (`None` when the key is missing or null).
fn json_object_sum(text: &str, key: &str) -> Option<u64> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let body = rest.strip_prefix('{')?;
    let body = &body[..body.find('}')?];
    Some(
        body.split(',')
            .filter_map(|kv| kv.rsplit(':').next()?.trim().parse::<u64>().ok())
            .sum(),
    )
}

/// The number after `"key":` in a JSON text.
fn json_number(text: &str, key: &str) -> Option<f64> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn run_quiet(cmd: &mut Command) -> Result<()> {
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !o.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            peers::tail(&String::from_utf8_lossy(&o.stderr))
        );
    }
    Ok(())
}

/// Removes a tree (as root, after lifting any append-only flag abm set).
fn remove_tree(p: &Path) {
    if p.exists() {
        let _ = Command::new("chattr")
            .arg("-R")
            .arg("-a")
            .arg(p)
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(p);
    }
}

impl Workload {
    fn command(&self, env: &Env) -> Vec<OsString> {
        let s = |p: &str| env.scripts.join(p).into_os_string();
        match self.kind {
            Kind::Burst | Kind::Outside => vec![
                "/bin/sh".into(),
                s("burst.sh"),
                self.ws.join("tree").into(),
                BURST_FILES.to_string().into(),
                BURST_DIRS.to_string().into(),
            ],
            Kind::Git => vec![
                "/bin/sh".into(),
                s("git.sh"),
                env.dir.join("git-src").into(),
                self.ws.join("clone").into(),
                GIT_BRANCHES.to_string().into(),
            ],
            Kind::Build => vec![
                "/bin/sh".into(),
                s("build.sh"),
                self.ws.join("project").into(),
            ],
            Kind::Session => vec![
                "/bin/sh".into(),
                s("session.sh"),
                env.dir.join("session-src").into(),
                self.ws.join("clone").into(),
            ],
        }
    }

    /// Brings the working area to its start state (outside timing).
    fn reset(&self) -> Result<()> {
        match self.kind {
            Kind::Burst | Kind::Outside => remove_tree(&self.ws.join("tree")),
            Kind::Git | Kind::Session => remove_tree(&self.ws.join("clone")),
            Kind::Build => {
                run_quiet(
                    Command::new("make")
                        .args(["-s", "-C"])
                        .arg(self.ws.join("project"))
                        .arg("clean"),
                )?;
            }
        }
        Ok(())
    }

    fn configs(&self, observe: bool, peers: &peers::Peers) -> Vec<Config> {
        let mut v = vec![Config::None];
        if observe {
            v.push(Config::Observe);
        }
        v.push(Config::Default);
        if self.kind == Kind::Burst {
            v.push(Config::DefaultJsonl);
        }
        if peers.bpftrace.is_some() {
            v.push(Config::Bpftrace);
        }
        if peers.auditd.is_some() {
            v.push(Config::Auditd);
        }
        // ptrace only ever slows its own tracees: no outside-scope cost.
        if peers.strace.is_some() && self.kind != Kind::Outside {
            v.push(Config::Strace);
        }
        v
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The sources of [`SESSION_CRATE`] in cargo's registry cache
/// (`$CARGO_HOME/registry/src/<index>/`).
fn session_crate() -> Result<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("session workload: neither CARGO_HOME nor HOME is set")?;
    let src = home.join("registry/src");
    if let Ok(indexes) = fs::read_dir(&src) {
        for index in indexes.flatten() {
            let p = index.path().join(SESSION_CRATE);
            if p.join("Cargo.toml").is_file() {
                return Ok(p);
            }
        }
    }
    bail!(
        "session workload: the sources of {SESSION_CRATE} are not in {} \
         (run `cargo fetch` in the workspace, which depends on it, then retry)",
        src.display()
    )
}

/// Compiles timeit, the syscall loop and the notification floor with the
/// system C compiler.
fn compile_helpers(scripts: &Path, dir: &Path) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for name in ["timeit", "syscall_loop", "notify_floor"] {
        let bin = dir.join(name);
        run_quiet(
            Command::new("cc")
                .args(["-O2", "-Wall", "-pthread", "-o"])
                .arg(&bin)
                .arg(scripts.join(format!("{name}.c"))),
        )
        .with_context(|| format!("compiling tests/bench/{name}.c (is a C compiler installed?)"))?;
        out.push(bin);
    }
    let nfloor = out.pop().unwrap();
    let sloop = out.pop().unwrap();
    let timeit = out.pop().unwrap();
    Ok((timeit, sloop, nfloor))
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

pub fn bench(abm: &Path, runs: usize, only: &[String]) -> Result<()> {
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    // `--only burst,git` and `--only burst --only git` both work.
    let only: Vec<&str> = only
        .iter()
        .flat_map(|o| o.split(','))
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    for o in &only {
        if !WORKLOADS.contains(o) {
            bail!(
                "--only {o}: unknown workload (one of: {})",
                WORKLOADS.join(", ")
            );
        }
    }
    if !sys::is_root() {
        bail!("cargo xtask bench loads eBPF programs and audit rules: run it as root");
    }
    let abm = fs::canonicalize(abm).with_context(|| format!("{} not built", abm.display()))?;
    let selected: Vec<&'static str> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| only.is_empty() || only.contains(w))
        .collect();
    let bench_start = Instant::now();
    sys::catch_sigint();

    let root = crate::root();
    let scripts = root.join("tests/bench");
    let pid = std::process::id();
    let logs = std::env::temp_dir().join(format!("abm-bench-{pid}-logs"));
    remove_tree(&logs);
    fs::create_dir_all(logs.join("traces"))?;
    let (dir, mounted) = match std::env::var_os("ABM_BENCH_DIR") {
        Some(base) => (PathBuf::from(base).join(format!("abm-bench-{pid}")), false),
        None => (std::env::temp_dir().join(format!("abm-bench-{pid}")), true),
    };
    remove_tree(&dir);
    fs::create_dir_all(&dir)?;
    // A private tmpfs: see docs/performance.md ("Where the workloads run").
    let mounted = mounted
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4g,mode=0755", "abm-bench"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
    // `report` measures abm report's page, not a monitored workload.
    let report = selected.contains(&"report");
    // `verify` alone records its own burst; with `burst` the report has it.
    let verify = selected.contains(&"verify") && !selected.contains(&"burst");
    let selected: Vec<&'static str> = selected
        .into_iter()
        .filter(|w| *w != "report" && *w != "verify")
        .collect();
    let mut result = Ok(());
    if !selected.is_empty() {
        result = bench_in(&abm, &scripts, &dir, &logs, runs, &selected, bench_start);
    }
    if report && result.is_ok() {
        // The render time is taken in headless Chromium (Debian's package;
        // nothing happens when it is installed).
        result =
            crate::setup::ensure_packages(&["chromium"]).and_then(|()| report::bench(&abm, &dir));
    }
    if verify && result.is_ok() {
        result = trace_size::bench_alone(&abm, &scripts, &dir);
    }
    remove_tree(&dir);
    if mounted {
        let _ = Command::new("umount").arg(&dir).status();
        let _ = fs::remove_dir(&dir);
    }
    remove_tree(&logs);
    result
}

/// The file system type of `p` (`stat -f`).
fn fs_type(p: &Path) -> String {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(p)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

fn bench_in(
    abm: &Path,
    scripts: &Path,
    dir: &Path,
    logs: &Path,
    runs: usize,
    selected: &[&'static str],
    bench_start: Instant,
) -> Result<()> {
    let load_before = load_average();
    let (timeit, sloop, nfloor) = compile_helpers(scripts, dir)?;
    let env = Env {
        abm: abm.to_path_buf(),
        scripts: scripts.to_path_buf(),
        dir: dir.to_path_buf(),
        logs: logs.to_path_buf(),
        timeit,
        sloop,
        nfloor,
        observe_policy: scripts.join("observe-only.toml"),
        seq: Default::default(),
        kept_burst: Default::default(),
    };
    // tracefs for bpftrace's tracepoint formats (idempotent).
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "tracefs", "/sys/kernel/tracing"])
            .status();
    }
    // ABM_BENCH_PEERS=bpftrace,strace (or `none`) picks the peers; all by
    // default (see docs/performance.md).
    let all_peers = ["bpftrace", "auditd", "strace"];
    let wanted: Vec<&str> = match std::env::var("ABM_BENCH_PEERS") {
        Ok(v) => all_peers
            .into_iter()
            .filter(|p| v.split(',').any(|w| w.trim() == *p))
            .collect(),
        Err(_) => all_peers.to_vec(),
    };
    let peers = peers::prepare(&wanted);
    if let Some((_, ctl)) = &peers.auditd {
        // A previous interrupted run may have left audit on.
        peers::audit_restore(ctl);
    }

    // Observe-only: abm with a policy that has no rules, if this abm build
    // accepts policy files.
    let observe_note = {
        let trace = env.next_trace();
        let o = env
            .abm_run(Config::Observe, dir, &trace)
            .args(["--quiet", "--", "true"])
            .stderr(Stdio::piped())
            .output()?;
        let _ = fs::remove_file(&trace);
        if o.status.success() {
            None
        } else {
            Some(format!(
                "abm observe-only: skipped: `abm run --policy tests/bench/observe-only.toml` \
                 failed: {}",
                peers::tail(&String::from_utf8_lossy(&o.stderr))
            ))
        }
    };
    let observe = observe_note.is_none();
    for n in peers.notes.iter().chain(observe_note.iter()) {
        eprintln!("bench: {n}");
    }

    let others = sys::bpf_program_holders(&[std::process::id() as i32]);
    let mut workloads = Vec::new();
    for &name in selected {
        let ws = dir.join(name);
        fs::create_dir_all(&ws)?;
        let (kind, title) = match name {
            "burst" => (
                Kind::Burst,
                format!(
                    "destructive burst: python3 creates {BURST_FILES} files in {BURST_DIRS} \
                     directories, then rm -rf (~{}k traced calls)",
                    2 * BURST_FILES / 1000
                ),
            ),
            "git" => {
                eprintln!("bench: creating the git source repository ({GIT_FILES} files)");
                run_quiet(
                    Command::new("/bin/sh")
                        .arg(scripts.join("git_repo.sh"))
                        .arg(dir.join("git-src"))
                        .arg(GIT_FILES.to_string()),
                )?;
                (
                    Kind::Git,
                    format!(
                        "git: clone a local {GIT_FILES}-file repository, {GIT_BRANCHES} x \
                         (branch, commit, checkout, branch -D), 200 untracked files, gc, clean -fdx"
                    ),
                )
            }
            "build" => {
                run_quiet(
                    Command::new("/usr/bin/python3")
                        .arg(scripts.join("c_project.py"))
                        .arg(ws.join("project"))
                        .arg(BUILD_UNITS.to_string()),
                )?;
                (
                    Kind::Build,
                    format!(
                        "build: make -j2 a {BUILD_UNITS}-file C project (cc -O2), run it, make clean"
                    ),
                )
            }
            "session" => {
                let crate_dir = session_crate()?;
                run_quiet(
                    Command::new("/bin/sh")
                        .arg(scripts.join("session_repo.sh"))
                        .arg(&crate_dir)
                        .arg(dir.join("session-src")),
                )?;
                (
                    Kind::Session,
                    format!(
                        "session: clone {SESSION_CRATE} (a Rust library) from a local repository, \
                         cargo build, cargo test, two edits, build and test again, commit, clean -fdx"
                    ),
                )
            }
            _ => (
                Kind::Outside,
                "outside scope: the burst run by a process NOT in the monitored scope while \
                 the monitor watches another tree (`abm run -- sleep`; peers scoped to \
                 another login uid)"
                    .to_string(),
            ),
        };
        workloads.push(Workload {
            kind,
            name,
            title,
            ws,
        });
    }

    let mut rows: Vec<Row> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for wl in &workloads {
        let configs = wl.configs(observe, &peers);
        eprintln!(
            "bench: {} — {} configurations x {runs} runs ({:.0} s elapsed)",
            wl.name,
            configs.len(),
            bench_start.elapsed().as_secs_f64()
        );
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); configs.len()];
        let mut broken: Vec<Option<String>> = vec![None; configs.len()];
        for r in 0..runs {
            for k in 0..configs.len() {
                let i = (k + r) % configs.len();
                let c = configs[i];
                if broken[i].is_some() {
                    continue;
                }
                if sys::interrupted() {
                    bail!("interrupted");
                }
                wl.reset()?;
                match measure(&env, &peers, wl, c) {
                    Ok(s) => {
                        eprintln!(
                            "bench: {} [{}/{runs}] {:<19} {:>8.3} s{}{}",
                            wl.name,
                            r + 1,
                            c.label(),
                            s.wall,
                            s.events.map_or(String::new(), |e| format!("  events {e}")),
                            s.lost.map_or(String::new(), |l| format!("  lost {l}")),
                        );
                        samples[i].push(s);
                    }
                    Err(e) => {
                        let msg = format!("{} / {}: {e:#}", wl.name, c.label());
                        eprintln!("bench: FAILED {msg}; not measured further");
                        failures.push(msg);
                        broken[i] = Some(format!("{e:#}"));
                    }
                }
            }
        }
        wl.reset()?;
        let base = median(samples[0].iter().map(|s| s.wall).collect());
        for (i, c) in configs.iter().enumerate() {
            let mut row = summarize(wl.name, *c, &samples[i], base);
            row.failed = broken[i].clone();
            rows.push(row);
        }
    }

    eprintln!(
        "bench: syscall-loop microbenchmark and hashing throughput ({:.0} s elapsed)",
        bench_start.elapsed().as_secs_f64()
    );
    let micro = micro(&env, runs.min(3))?;
    let kept = env.kept_burst.borrow_mut().take();
    let verify_1m = match kept {
        // ABM_BENCH_VERIFY=0: the 1M-event verify rows are left out.
        Some(src) if std::env::var("ABM_BENCH_VERIFY").is_ok_and(|v| v == "0") => {
            let _ = fs::remove_file(&src);
            None
        }
        Some(src) => {
            eprintln!(
                "bench: verifying a {}-event trace ({:.0} s elapsed)",
                trace_size::VERIFY_EVENTS,
                bench_start.elapsed().as_secs_f64()
            );
            let r = trace_size::verify_large(&env.abm, &src, &env.logs);
            let _ = fs::remove_file(&src);
            Some(r.map_err(|e| format!("{e:#}")))
        }
        None => None,
    };
    let others_after = sys::bpf_program_holders(&[std::process::id() as i32]);

    let report = render(&Report {
        runs,
        workloads: &workloads,
        rows: &rows,
        micro: &micro,
        notes: peers
            .notes
            .iter()
            .chain(observe_note.iter())
            .cloned()
            .collect(),
        failures: &failures,
        load: (load_before, load_average()),
        others: others.into_iter().chain(others_after).collect(),
        elapsed: bench_start.elapsed(),
        observe,
        verify_1m,
        location: format!(
            "workloads in {} ({}); traces and peer logs in {} ({})",
            dir.display(),
            fs_type(dir),
            logs.display(),
            fs_type(logs)
        ),
    });
    print!("{report}");
    Ok(())
}
