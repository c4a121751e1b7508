//! Peer monitors measured side by side with abm: bpftrace, auditd and
//! strace, each configured to record the same syscalls for the same process
//! tree. Installed with apt-get when missing; a peer that cannot be
//! installed or started is skipped with a note.
use std::{
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

use super::{sys, Env, Sample, LOGINUID};

/// What each peer records, printed in the legend.
pub const LEGEND: &[(&str, &str)] = &[
    (
        "bpftrace",
        "bpftrace 0.17, tests/bench/peers/bpftrace.bt: tracepoints syscalls:sys_enter_X/sys_exit_X \
         for the same 22 syscalls as abm (opens only with O_WRONLY|O_RDWR|O_TRUNC), scoped to the \
         process tree by its audit login uid; prints one line per entry (pid, tid, comm, syscall, \
         dirfd, path strings as passed, up to 128 bytes, flags/mode/owner, argv for exec) and one \
         per exit (tid, return value) to a file, fully buffered; 8 MiB perf buffer per CPU (abm: \
         one 4 MiB ring by default). No path resolution (relative paths and fds stay as passed), no policy, \
         no hash chain.",
    ),
    (
        "auditd",
        "kernel audit + auditd 3.0.9: `-a always,exit -F arch=b64 -S <same syscalls> -F auid=<tree> \
         -k abm-bench` (opens filtered with -F a1/a2&0x203), backlog 8192; auditd writes SYSCALL, \
         CWD, PATH (resolved names, inode, mode, owner), EXECVE (argv) and PROCTITLE records in \
         ENRICHED format to its log, flush INCREMENTAL_ASYNC. Events = SYSCALL records with the \
         key; lost = the kernel's audit lost counter.",
    ),
    (
        "strace",
        "strace 6.1 `-f -qq --seccomp-bpf -e trace=<same syscalls but fchmodat2> -o FILE`: one \
         decoded line per call (pid, arguments, return value) for the whole tree. --seccomp-bpf \
         (strace's fastest mode: untraced syscalls do not stop) because plain `strace -f` takes \
         ~40x on the burst and would not fit the time budget. strace stops on every open (it \
         cannot filter by flags); events counts only the opens that may write, like the others. \
         ptrace is synchronous: nothing is lost.",
    ),
];

pub struct Peers {
    pub bpftrace: Option<PathBuf>,
    pub auditd: Option<(PathBuf, PathBuf)>,
    pub strace: Option<PathBuf>,
    /// Why a peer is missing.
    pub notes: Vec<String>,
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn which(name: &str, dirs: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Installs the missing peers (idempotent: nothing happens when all are
/// present) and finds their binaries.
pub fn prepare(wanted: &[&str]) -> Peers {
    let missing: Vec<&str> = wanted.iter().copied().filter(|p| !installed(p)).collect();
    let mut notes = Vec::new();
    if !missing.is_empty() {
        eprintln!("bench: installing peers: {}", missing.join(" "));
        let updated = Command::new("apt-get")
            .args(["update", "-qq"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !updated {
            eprintln!("bench: apt-get update failed; trying the install anyway");
        }
        for p in &missing {
            let ok = Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-qq", p])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                notes.push(format!("{p}: apt-get install {p} failed; skipped"));
            }
        }
    }
    let bins = ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"];
    let bpftrace = if wanted.contains(&"bpftrace") {
        let b = which("bpftrace", &bins);
        if b.is_none() && !notes.iter().any(|n| n.starts_with("bpftrace")) {
            notes.push("bpftrace: not installed; skipped".into());
        }
        b
    } else {
        None
    };
    let auditd = if wanted.contains(&"auditd") {
        match (which("auditd", &bins), which("auditctl", &bins)) {
            (Some(d), Some(c)) => {
                if let Some(pid) = sys::pid_by_comm("auditd") {
                    notes.push(format!(
                        "auditd: a system audit daemon is already running (pid {pid}); skipped to \
                         leave its rules and log alone"
                    ));
                    None
                } else {
                    Some((d, c))
                }
            }
            _ => {
                if !notes.iter().any(|n| n.starts_with("auditd")) {
                    notes.push("auditd: not installed; skipped".into());
                }
                None
            }
        }
    } else {
        None
    };
    let strace = if wanted.contains(&"strace") {
        let s = which("strace", &bins);
        if s.is_none() && !notes.iter().any(|n| n.starts_with("strace")) {
            notes.push("strace: not installed; skipped".into());
        }
        s
    } else {
        None
    };
    Peers {
        bpftrace,
        auditd,
        strace,
        notes,
    }
}

/// How many lines of `text` satisfy `pred`.
fn count_lines(text: &str, pred: impl Fn(&str) -> bool) -> u64 {
    text.lines().filter(|l| pred(l)).count() as u64
}

/// Waits until `len()` stops changing for `quiet`, at most `limit`.
fn wait_quiet(len: impl Fn() -> u64, quiet: Duration, limit: Duration) {
    let start = Instant::now();
    let mut last = len();
    let mut since = Instant::now();
    while start.elapsed() < limit {
        thread::sleep(Duration::from_millis(50));
        let now = len();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return;
        }
    }
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Kills and reaps a daemon child if it is still running.
struct Daemon {
    child: std::process::Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One workload run while bpftrace watches the tree with login uid
/// [`LOGINUID`]; with `in_scope == false` the workload runs without that
/// uid (what an unrelated process pays while bpftrace is attached).
pub fn bpftrace(env: &Env, bin: &Path, workload: &[OsString], in_scope: bool) -> Result<Sample> {
    let script = env.scripts.join("peers/bpftrace.bt");
    let probes = fs::read_to_string(&script)?
        .lines()
        .flat_map(|l| l.split(','))
        .filter(|l| l.trim_start().starts_with("tracepoint:"))
        .count();
    let out = env.logs.join("bpftrace.out");
    let err = env.logs.join("bpftrace.err");
    let _ = fs::remove_file(&out);
    let child = Command::new(bin)
        .env("BPFTRACE_STRLEN", "128")
        .env("BPFTRACE_PERF_RB_PAGES", "2048")
        .arg("-B")
        .arg("full")
        .arg("-o")
        .arg(&out)
        .arg(&script)
        .arg(LOGINUID)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&err)?)
        .spawn()
        .context("cannot start bpftrace")?;
    let mut d = Daemon { child };
    let pid = d.child.id() as i32;
    // Ready when every probe's program is loaded and the output poller
    // exists, and that has stayed so for 300 ms (BEGIN fires before the
    // other probes attach, so a BEGIN message would not prove it).
    let start = Instant::now();
    let mut stable_since: Option<Instant> = None;
    loop {
        if let Some(s) = d.child.try_wait()? {
            bail!(
                "bpftrace exited with {s} before attaching: {}",
                tail(&fs::read_to_string(&err).unwrap_or_default())
            );
        }
        let ready = sys::fd_kinds(pid, "anon_inode:bpf-prog") >= probes
            && sys::fd_kinds(pid, "anon_inode:[eventpoll]") >= 1;
        match (ready, stable_since) {
            (true, None) => stable_since = Some(Instant::now()),
            (true, Some(t)) if t.elapsed() >= Duration::from_millis(300) => break,
            (false, _) => stable_since = None,
            _ => {}
        }
        if start.elapsed() > Duration::from_secs(90) {
            bail!("bpftrace did not attach its {probes} probes within 90 s");
        }
        thread::sleep(Duration::from_millis(50));
    }
    let before = sys::proc_stats(pid).unwrap_or_default();
    let mut s = env.timeit(workload, if in_scope { Some(LOGINUID) } else { None })?;
    // Let bpftrace drain its perf buffers (its CPU keeps counting).
    let cpu_now = || {
        sys::proc_stats(pid)
            .map(|s| (s.cpu_s * 100.0) as u64)
            .unwrap_or(0)
    };
    wait_quiet(cpu_now, Duration::from_millis(300), Duration::from_secs(60));
    let after = sys::proc_stats(pid).unwrap_or_default();
    sys::send_signal(pid, sys::SIGINT);
    let t = Instant::now();
    while d.child.try_wait()?.is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    drop(d);
    let text = fs::read_to_string(&out).unwrap_or_default();
    s.events = Some(count_lines(&text, |l| l.starts_with("E ")));
    s.lost = Some(
        text.lines()
            .filter_map(|l| {
                l.strip_prefix("Lost ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .sum(),
    );
    s.mon_cpu_s = Some(after.cpu_s - before.cpu_s);
    s.mon_rss_kib = after.hwm_kib;
    let _ = fs::remove_file(&out);
    Ok(s)
}

const AUDITD_CONF: &str = "\
local_events = yes
write_logs = yes
log_file = @DIR@/audit.log
log_group = root
log_format = ENRICHED
flush = INCREMENTAL_ASYNC
freq = 50
max_log_file = 4096
num_logs = 2
priority_boost = 4
name_format = NONE
max_log_file_action = IGNORE
space_left = 2
space_left_action = IGNORE
verify_email = no
action_mail_acct = root
admin_space_left = 1
admin_space_left_action = IGNORE
disk_full_action = IGNORE
disk_error_action = IGNORE
use_libwrap = no
tcp_listen_queue = 5
tcp_max_per_addr = 1
tcp_client_max_idle = 0
transport = TCP
krb5_principal = auditd
distribute_network = no
q_depth = 2000
overflow_action = IGNORE
max_restarts = 10
plugin_dir = @DIR@/plugins.d
end_of_event_timeout = 2
";

/// The audit rules (auditctl arguments after `-a`/`-d`): abm's syscalls,
/// opens only when they may write, for the tree with login uid LOGINUID.
fn audit_rules() -> Vec<Vec<String>> {
    let common = "unlink,unlinkat,rmdir,rename,renameat,renameat2,chmod,fchmod,fchmodat,chown,\
                  fchown,lchown,fchownat,truncate,ftruncate,creat,openat2,execve,execveat";
    let auid = format!("auid={LOGINUID}");
    let rule = |syscalls: &str, extra: Option<&str>| {
        let mut r: Vec<String> = vec![
            "always,exit".into(),
            "-F".into(),
            "arch=b64".into(),
            "-S".into(),
            syscalls.into(),
        ];
        if let Some(e) = extra {
            r.push("-F".into());
            r.push(e.into());
        }
        r.extend(["-F".into(), auid.clone(), "-k".into(), "abm-bench".into()]);
        r
    };
    vec![
        rule(common, None),
        // fchmodat2 is newer than this auditctl's syscall table.
        rule("452", None),
        rule("open", Some("a1&0x203")),
        rule("openat", Some("a2&0x203")),
    ]
}

fn auditctl(ctl: &Path, args: &[&str]) -> Result<String> {
    let o = Command::new(ctl)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run auditctl {}", args.join(" ")))?;
    if !o.status.success() {
        bail!(
            "auditctl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn audit_status(ctl: &Path, key: &str) -> Option<u64> {
    auditctl(ctl, &["-s"]).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")).map(str::to_owned))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// Puts the kernel's audit state back: our rules gone, auditing off, and
/// `-a never,task` so new tasks get no audit context. Once audit has been
/// enabled, the kernel otherwise gives every new task an audit context and
/// puts all its syscalls on the slow path (until reboot) — which would slow
/// every later measurement and every other process on the machine.
pub fn audit_restore(ctl: &Path) {
    let _ = auditctl(ctl, &["-D", "-k", "abm-bench"]);
    let listed = auditctl(ctl, &["-l"]).unwrap_or_default();
    if !listed.lines().any(|l| l.trim() == "-a never,task") {
        let _ = auditctl(ctl, &["-a", "never,task"]);
    }
    let _ = auditctl(ctl, &["-e", "0"]);
}

struct AuditSession<'a> {
    ctl: &'a Path,
    daemon: Daemon,
}

impl Drop for AuditSession<'_> {
    fn drop(&mut self) {
        // No new records, then let the kernel hand the backlog to auditd,
        // then stop auditd (it flushes its log), then restore.
        let _ = auditctl(self.ctl, &["-D", "-k", "abm-bench"]);
        let t = Instant::now();
        while audit_status(self.ctl, "backlog").unwrap_or(0) > 0
            && t.elapsed() < Duration::from_secs(10)
        {
            thread::sleep(Duration::from_millis(20));
        }
        let pid = self.daemon.child.id() as i32;
        sys::send_signal(pid, sys::SIGTERM);
        let t = Instant::now();
        while let Ok(None) = self.daemon.child.try_wait() {
            if t.elapsed() > Duration::from_secs(10) {
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        audit_restore(self.ctl);
    }
}

/// One workload run while auditd records the tree with login uid
/// [`LOGINUID`] (or, with `in_scope == false`, while the rules are loaded
/// but the workload does not match them).
pub fn auditd(
    env: &Env,
    daemon: &Path,
    ctl: &Path,
    workload: &[OsString],
    in_scope: bool,
) -> Result<Sample> {
    let dir = env.logs.join("audit");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("plugins.d"))?;
    let conf = dir.join("auditd.conf");
    fs::write(&conf, AUDITD_CONF.replace("@DIR@", &dir.to_string_lossy()))?;
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o600))?;
    let log = dir.join("audit.log");
    let child = Command::new(daemon)
        .args(["-n", "-s", "nochange", "-c"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.join("auditd.err"))?)
        .spawn()
        .context("cannot start auditd")?;
    let pid = child.id() as i32;
    let mut session = AuditSession {
        ctl,
        daemon: Daemon { child },
    };
    let start = Instant::now();
    while audit_status(ctl, "pid") != Some(pid as u64) {
        if let Some(s) = session.daemon.child.try_wait()? {
            bail!(
                "auditd exited with {s}: {}",
                tail(&fs::read_to_string(dir.join("auditd.err")).unwrap_or_default())
            );
        }
        if start.elapsed() > Duration::from_secs(20) {
            bail!("auditd did not register with the kernel within 20 s");
        }
        thread::sleep(Duration::from_millis(50));
    }
    // Our rules, and no `never,task` (it would keep the workload's new
    // tasks from being audited at all).
    let _ = auditctl(ctl, &["-D", "-k", "abm-bench"]);
    let _ = auditctl(ctl, &["-d", "never,task"]);
    for r in audit_rules() {
        let mut args = vec!["-a"];
        args.extend(r.iter().map(String::as_str));
        auditctl(ctl, &args)?;
    }
    auditctl(ctl, &["-b", "8192"])?;
    auditctl(ctl, &["-e", "1"])?;
    let lost0 = audit_status(ctl, "lost").unwrap_or(0);
    let kauditd = sys::pid_by_comm("kauditd");
    let cpu = || {
        sys::proc_stats(pid).map(|s| s.cpu_s).unwrap_or(0.0)
            + kauditd
                .and_then(sys::proc_stats)
                .map(|s| s.cpu_s)
                .unwrap_or(0.0)
    };
    let before = cpu();
    let mut s = env.timeit(workload, if in_scope { Some(LOGINUID) } else { None })?;
    // Drain: the kernel backlog empty and the log no longer growing.
    wait_quiet(
        || file_len(&log) + audit_status(ctl, "backlog").unwrap_or(0),
        Duration::from_millis(1000),
        Duration::from_secs(120),
    );
    let after = cpu();
    let hwm = sys::proc_stats(pid).and_then(|s| s.hwm_kib);
    let lost = audit_status(ctl, "lost")
        .unwrap_or(lost0)
        .saturating_sub(lost0);
    drop(session);
    let text = fs::read_to_string(&log).unwrap_or_default();
    s.events = Some(count_lines(&text, |l| {
        l.starts_with("type=SYSCALL") && l.contains("key=\"abm-bench\"")
    }));
    s.lost = Some(lost);
    s.mon_cpu_s = Some(after - before);
    s.mon_rss_kib = hwm;
    let _ = fs::remove_dir_all(&dir);
    Ok(s)
}

/// The syscalls strace traces (fchmodat2 is unknown to strace 6.1).
const STRACE_SET: &str = "unlink,unlinkat,rmdir,rename,renameat,renameat2,chmod,fchmod,fchmodat,\
                          chown,fchown,lchown,fchownat,truncate,ftruncate,open,openat,openat2,\
                          creat,execve,execveat";

/// One workload run under `strace -f`.
pub fn strace(env: &Env, bin: &Path, workload: &[OsString]) -> Result<Sample> {
    let out = env.logs.join("strace.out");
    let err = env.logs.join("strace.err");
    let child = Command::new(bin)
        .args(["-f", "-qq", "--seccomp-bpf", "-e"])
        .arg(format!("trace={STRACE_SET}"))
        .arg("-o")
        .arg(&out)
        .arg(&env.timeit)
        .arg("--")
        .args(workload)
        .current_dir(&env.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&err)?)
        .spawn()
        .context("cannot start strace")?;
    let pid = child.id() as i32;
    let started = Instant::now();
    let sampler = sys::MaxSampler::start(pid, Duration::from_millis(50), false, sys::hwm_kib);
    let (code, cpu) = sys::wait_zombie(pid)?;
    let e2e = started.elapsed().as_secs_f64();
    let hwm = sampler.stop();
    drop(child);
    let stderr = fs::read_to_string(&err).unwrap_or_default();
    if code != 0 {
        bail!("strace run failed with exit code {code}: {}", tail(&stderr));
    }
    let mut s = super::parse_timeit(&stderr)?;
    let text = fs::read_to_string(&out).unwrap_or_default();
    s.events = Some(count_lines(&text, strace_event));
    s.lost = Some(0);
    s.mon_cpu_s = cpu;
    s.mon_rss_kib = hwm;
    s.e2e = Some(e2e);
    let _ = fs::remove_file(&out);
    Ok(s)
}

/// Whether a line of `strace -f -o` output is a call abm would record: a
/// call line (not a signal, exit or `<... resumed>` line) and, for opens,
/// one that may write. strace stops on every open (it cannot filter by
/// flags) but only these are counted, as for the other monitors.
fn strace_event(line: &str) -> bool {
    let Some((_, rest)) = line.split_once(' ') else {
        return false;
    };
    let rest = rest.trim_start();
    if rest.starts_with("+++") || rest.starts_with("---") || rest.starts_with("<...") {
        return false;
    }
    let name = rest.split('(').next().unwrap_or("");
    if name == "open" || name == "openat" {
        return ["O_WRONLY", "O_RDWR", "O_TRUNC"]
            .iter()
            .any(|f| rest.contains(f));
    }
    true
}

/// The last few lines of a process's stderr, for error messages.
pub fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}
