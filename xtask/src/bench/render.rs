//! The report: per-workload tables, the microbenchmark, the legend, the
//! summary and the targets.
use super::micro::Micro;
use super::*;

/// Medians (and worst cases) of one workload x configuration.
#[derive(Clone, Debug, Default)]
pub(super) struct Row {
    pub(super) workload: &'static str,
    pub(super) config: Option<Config>,
    pub(super) runs: Vec<f64>,
    pub(super) wall: Option<f64>,
    pub(super) ratio: Option<f64>,
    pub(super) e2e: Option<f64>,
    pub(super) work_cpu: Option<f64>,
    pub(super) events: Option<f64>,
    pub(super) lost_max: Option<u64>,
    pub(super) rss_max_kib: Option<u64>,
    pub(super) ring_max_kib: Option<u64>,
    pub(super) cpu: Option<f64>,
    /// Trace bytes on disk per event (median).
    pub(super) bytes_per_event: Option<f64>,
    /// Trace bytes written per second of the workload (median), MB/s.
    pub(super) write_mb_s: Option<f64>,
    /// The judge's CPU per event, µs (median over the runs).
    pub(super) judge_us_per_event: Option<f64>,
    pub(super) failed: Option<String>,
}

pub(super) fn summarize(
    workload: &'static str,
    config: Config,
    samples: &[Sample],
    base: Option<f64>,
) -> Row {
    let wall = median(samples.iter().map(|s| s.wall).collect());
    let opt = |f: &dyn Fn(&Sample) -> Option<f64>| median(samples.iter().filter_map(f).collect());
    Row {
        workload,
        config: Some(config),
        runs: samples.iter().map(|s| s.wall).collect(),
        wall,
        ratio: match (wall, base) {
            (Some(w), Some(b)) if b > 0.0 => Some(w / b),
            _ => None,
        },
        e2e: opt(&|s| s.e2e),
        work_cpu: opt(&|s| Some(s.work_cpu)),
        events: opt(&|s| s.events.map(|e| e as f64)),
        lost_max: samples.iter().filter_map(|s| s.lost).max(),
        rss_max_kib: samples.iter().filter_map(|s| s.mon_rss_kib).max(),
        ring_max_kib: samples.iter().filter_map(|s| s.mon_ring_kib).max(),
        cpu: opt(&|s| s.mon_cpu_s),
        bytes_per_event: opt(&|s| {
            Some(s.trace_bytes? as f64 / s.events.filter(|&e| e > 0)? as f64)
        }),
        write_mb_s: opt(&|s| Some(s.trace_bytes? as f64 / s.wall.max(1e-9) / 1e6)),
        judge_us_per_event: opt(&|s| Some(s.judge_us? / s.events.filter(|&e| e > 0)? as f64)),
        failed: None,
    }
}

pub(super) fn f(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

pub(super) struct Report<'a> {
    pub(super) runs: usize,
    pub(super) workloads: &'a [Workload],
    pub(super) rows: &'a [Row],
    pub(super) micro: &'a Micro,
    pub(super) notes: Vec<String>,
    pub(super) failures: &'a [String],
    pub(super) load: (String, String),
    pub(super) others: Vec<(i32, String, usize)>,
    pub(super) elapsed: Duration,
    pub(super) observe: bool,
    /// `abm verify` of a large synthetic trace: (wall s, CPU s, bytes).
    pub(super) verify_1m: Option<Result<trace_size::VerifyRun, String>>,
    pub(super) location: String,
}

pub(super) fn mib(kib: Option<u64>) -> String {
    kib.map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

pub(super) fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "abm benchmark ({} runs per configuration, alternated)",
        r.runs
    );
    let _ = writeln!(
        o,
        "machine: {} CPUs, kernel {}, load average {} before / {} after",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
        r.load.0,
        r.load.1
    );
    let _ = writeln!(o, "{}", r.location);
    let mut seen = std::collections::BTreeSet::new();
    let others: Vec<String> = r
        .others
        .iter()
        .filter(|(p, _, _)| seen.insert(*p))
        .map(|(p, c, n)| format!("{c}[{p}] ({n} programs)"))
        .collect();
    if !others.is_empty() {
        let _ = writeln!(
            o,
            "WARNING: other processes held BPF programs during the run ({}): if attached to \
             syscall tracepoints they slow every configuration, the baseline included",
            others.join(", ")
        );
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    for f in r.failures {
        let _ = writeln!(o, "FAILED: {f}");
    }

    for wl in r.workloads {
        let _ = writeln!(o, "\n== {} ==", wl.title);
        let _ = writeln!(
            o,
            "{:<19} {:>8} {:>7} {:>8} {:>8} {:>7} {:>6} {:>7} {:>7} {:>7}  runs (s)",
            "config",
            "median s",
            "ratio",
            "e2e s",
            "work CPU",
            "events",
            "lost",
            "mon CPU",
            "mon RSS",
            "ring"
        );
        for row in r.rows.iter().filter(|x| x.workload == wl.name) {
            let c = row.config.unwrap();
            if let Some(e) = &row.failed {
                if row.runs.is_empty() {
                    let _ = writeln!(o, "{:<19} FAILED: {e}", c.label());
                    continue;
                }
            }
            let runs: Vec<String> = row.runs.iter().map(|w| format!("{w:.3}")).collect();
            let _ = writeln!(
                o,
                "{:<19} {:>8} {:>7} {:>8} {:>8} {:>7} {:>6} {:>7} {:>7} {:>7}  {}",
                c.label(),
                f(row.wall, 3),
                row.ratio.map_or("-".into(), |x| format!("{x:.3}x")),
                f(row.e2e, 3),
                f(row.work_cpu, 2),
                f(row.events, 0),
                row.lost_max.map_or("-".into(), |l| l.to_string()),
                f(row.cpu, 3),
                mib(row.rss_max_kib),
                mib(row.ring_max_kib),
                runs.join(" ")
            );
        }
    }

    let m = r.micro;
    let _ = writeln!(
        o,
        "\n== kernel cost per syscall (tests/bench/syscall_loop.c: {LOOP_CALLS} calls x \
         {LOOP_REPS}, median ns/call, median of {} rounds) ==",
        r.runs.min(3)
    );
    let _ = writeln!(
        o,
        "{:<22} {:>9} {:>19} {:>19} {:>19}",
        "syscall", "no abm", "abm, in scope", "abm, out of scope", "abm --enforce"
    );
    for (op, name) in ["unlinkat ENOENT (traced)", "getppid (untraced)"]
        .iter()
        .enumerate()
    {
        let base = m.ns[op][0];
        let cell = |v: Option<f64>| match (v, base) {
            (Some(v), Some(b)) => format!("{v:.0} ({:+.0})", v - b),
            (Some(v), None) => format!("{v:.0}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            o,
            "{:<22} {:>9} {:>19} {:>19} {:>19}",
            name,
            f(base, 0),
            cell(m.ns[op][1]),
            cell(m.ns[op][2]),
            cell(m.ns[op][3])
        );
    }
    let _ = writeln!(
        o,
        "in scope: full cost (raw tracepoints, scope lookup, record building, path walk, ring \
         buffer; abm --ringbuf-kib {LOOP_RINGBUF_KIB}); records lost: {}. Out of scope: the \
         scope-map lookup that rejects the call. --enforce: in scope with the guardrail backend \
         this kernel offers (BPF LSM, else seccomp user notification: a round trip to the \
         supervisor per filtered call). getppid: what the attached sys_enter/sys_exit programs \
         add to every syscall.",
        m.lost_in_scope.map_or("-".into(), |l| l.to_string())
    );
    if let Some(n) = m.notify_floor {
        let _ = writeln!(
            o,
            "seccomp user notification alone (tests/bench/notify_floor.c: a filter that sends \
             unlinkat to a supervisor thread which answers CONTINUE at once): {n:+.0} ns per call. \
             No supervisor that reads and judges the call can answer faster than this."
        );
    }
    if let Some((w, c, k, ring)) = m.fixed {
        let _ = writeln!(
            o,
            "abm fixed cost (`abm run -- true`: load and attach, spawn, seal, exit): {w:.3} s \
             wall, {c:.3} s CPU, {:.1} MiB peak RSS ({:.1} MiB of it the ring buffer mapping)",
            k as f64 / 1024.0,
            ring as f64 / 1024.0
        );
    }
    match m.hashing {
        Some((sha, hmac)) => {
            let _ = writeln!(
                o,
                "hashing throughput (`abm verify --bench-hashing {HASH_EVENTS}`: serialize + \
                 chain, no I/O): {:.0} events/s SHA-256, {:.0} events/s HMAC-SHA256",
                sha, hmac
            );
        }
        None => {
            let _ = writeln!(o, "hashing throughput: not available from this abm build");
        }
    }

    let _ = writeln!(
        o,
        "\n== abm userspace CPU per event ((mon CPU - fixed CPU of `abm run -- true`) / events) =="
    );
    for row in r
        .rows
        .iter()
        .filter(|x| x.config.is_some_and(Config::is_abm))
    {
        if row.workload == "outside" {
            continue;
        }
        let _ = writeln!(
            o,
            "{:<8} {:<19} {:>9}",
            row.workload,
            row.config.map_or("", Config::label),
            cpu_per_event(Some(row), m).map_or("-".into(), |c| format!("{c:.2} us"))
        );
    }
    let _ = writeln!(
        o,
        "\n== abm judge CPU per event (the trace's action_stats decision_us_total / events) =="
    );
    for row in r
        .rows
        .iter()
        .filter(|x| x.config.is_some_and(Config::is_abm) && x.workload != "outside")
    {
        let _ = writeln!(
            o,
            "{:<8} {:<19} {:>9}",
            row.workload,
            row.config.map_or("", Config::label),
            row.judge_us_per_event
                .map_or("-".into(), |c| format!("{c:.2} us"))
        );
    }
    let _ = writeln!(o, "\n== legend ==");
    let _ = writeln!(
        o,
        "median s: the workload's own wall time, measured by tests/bench/timeit.c around the \
         workload inside the monitored scope (the monitor's start-up and shut-down excluded; \
         see e2e). ratio: median / median of `no monitor` for the same workload. e2e s: from \
         starting `abm run` (or strace) to its exit. work CPU: user+sys seconds of the \
         workload tree (its rusage; in-kernel tracing runs in the workload's syscalls and is \
         counted here). events: records of traced syscalls the monitor wrote (median). lost: \
         records the monitor reported lost (worst run). mon RSS: the monitor's own peak \
         resident memory (VmHWM), largest over the runs. ring: the part of abm's RSS that is \
         its BPF ring buffer mapping (the kernel maps the ring's data pages twice, so the \
         default 4 MiB ring shows as 8 MiB, resident from the start). mon CPU: the \
         monitor's own user+sys seconds."
    );
    let _ = writeln!(
        o,
        "abm: `abm run --trace FILE --workspace DIR --summary-json -- timeit -- WORKLOAD`, run \
         under ptrace with only PTRACE_O_TRACEEXIT (no syscall stops; the workload is not \
         traced): at abm's exit stop, /proc/PID/status VmHWM and /proc/PID/stat utime+stime \
         are abm's own (all threads, whole life including loading the programs; the workload's \
         CPU is in cutime and not counted). events = actions in the summary (actions_by_op), \
         lost = its lost counts. Traces go to the logs directory on disk and are deleted after each run."
    );
    let _ =
        writeln!(
        o,
        "abm observe-only: abm with tests/bench/observe-only.toml, a policy without rules (abm \
         still applies its built-in trace-protection rule and derives scope and \
         irreversibility for every action; there is no switch that turns evaluation off). \
         abm default policy: the built-in default pack.{}",
        if r.observe { "" } else { " (observe-only was not available, see note)" }
    );
    let _ = writeln!(
        o,
        "outside scope: abm runs `abm run -- sleep 3600` and is stopped with SIGTERM after the \
         burst; mon CPU/RSS cover its whole life. bpftrace/auditd keep their rules for login \
         uid {LOGINUID} while the burst runs without it. no monitor = nothing attached."
    );
    for (name, what) in peers::LEGEND {
        let _ = writeln!(o, "{name}: {what}");
    }
    let _ = writeln!(
        o,
        "peer mon CPU: bpftrace/auditd from the workload's start until their output stopped \
         growing (auditd: the auditd daemon plus the kauditd kernel thread); strace: its whole \
         life (read from /proc while it is a zombie). Peer mon RSS: VmHWM of bpftrace/auditd \
         before they are stopped; strace's sampled every 50 ms."
    );

    let _ = writeln!(o, "\n== summary ==");
    let _ = writeln!(
        o,
        "{:<8} {:<19} {:>8} {:>7} {:>7} {:>7} {:>11} {:>9}",
        "workload", "config", "median s", "ratio", "events", "lost", "mon RSS MiB", "mon CPU s"
    );
    for row in r.rows {
        let c = row.config.unwrap();
        let _ = writeln!(
            o,
            "{:<8} {:<19} {:>8} {:>7} {:>7} {:>7} {:>11} {:>9}",
            row.workload,
            c.label(),
            f(row.wall, 3),
            row.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
            f(row.events, 0),
            row.lost_max.map_or("-".into(), |l| l.to_string()),
            mib(row.rss_max_kib),
            f(row.cpu, 3)
        );
    }

    let _ = writeln!(o, "\n== targets ==");
    let find = |w: &str, c: Config| {
        r.rows
            .iter()
            .find(|x| x.workload == w && x.config == Some(c) && x.wall.is_some())
    };
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "not measured",
    };
    let mut targets: Vec<(String, String, Option<bool>)> = Vec::new();
    let ratio = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}x"));
    // The real session against the peers: at most 1.05x, and no worse
    // than the best peer measured in the same run.
    let session = find("session", Config::Default).and_then(|x| x.ratio);
    let best_peer = [Config::Bpftrace, Config::Auditd, Config::Strace]
        .iter()
        .filter_map(|c| find("session", *c).and_then(|x| Some((x.ratio?, c.label()))))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    targets.push((
        "real session, abm default policy: <= 1.05x and <= the best peer".into(),
        match best_peer {
            Some((p, name)) => format!("{} ({name} {p:.3}x)", ratio(session)),
            None => ratio(session),
        },
        session.map(|v| v <= 1.05 && best_peer.is_none_or(|(p, _)| v <= p)),
    ));
    for (w, limit) in [("git", 1.10), ("burst", 1.25)] {
        let row = find(w, Config::Default);
        targets.push((
            format!("{w}, abm default policy: <= {limit:.2}x"),
            ratio(row.and_then(|x| x.ratio)),
            row.and_then(|x| x.ratio).map(|v| v <= limit),
        ));
    }
    let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
    let per_call = diff(m.ns[0][1], m.ns[0][0]);
    targets.push((
        "kernel cost per traced call (unlinkat; raw tracepoints, this host's limit): <= 2 us"
            .into(),
        per_call.map_or("-".into(), |d| format!("{d:.0} ns")),
        per_call.map(|d| d <= 2000.0),
    ));
    // What every syscall of the host pays: the worse of a process in scope
    // and one outside it.
    let untraced = [diff(m.ns[1][1], m.ns[1][0]), diff(m.ns[1][2], m.ns[1][0])]
        .into_iter()
        .flatten()
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    targets.push((
        "kernel cost per untraced syscall (getppid; a tracepoint alone: ~70 ns here)".into(),
        untraced.map_or("-".into(), |d| format!("{d:.0} ns")),
        None,
    ));
    for w in ["session", "build"] {
        let judge = find(w, Config::Default).and_then(|x| x.judge_us_per_event);
        targets.push((
            format!("{w}, abm judge CPU per event, default pack: <= 15 us"),
            judge.map_or("-".into(), |c| format!("{c:.2} us")),
            judge.map(|c| c <= 15.0),
        ));
    }
    let cpu = cpu_per_event(find("burst", Config::Default), m);
    targets.push((
        "burst, abm userspace CPU per event, default pack: <= 5 us".into(),
        cpu.map_or("-".into(), |c| format!("{c:.2} us")),
        cpu.map(|c| c <= 5.0),
    ));
    let enforce = diff(m.ns[0][3], m.ns[0][1]);
    targets.push((
        "--enforce, added per filtered call (unlinkat, enforcing - in scope): <= 3x the \
         notification alone"
            .into(),
        enforce.map_or("-".into(), |d| match m.notify_floor {
            Some(n) => format!("{d:.0} ns (notification alone: {n:.0} ns)"),
            None => format!("{d:.0} ns"),
        }),
        enforce.zip(m.notify_floor).map(|(d, n)| d <= 3.0 * n),
    ));
    let lost = r
        .rows
        .iter()
        .filter(|x| x.config.is_some_and(Config::is_abm))
        .filter_map(|x| x.lost_max)
        .max();
    targets.push((
        "abm records lost (any run): 0".into(),
        lost.map_or("-".into(), |l| l.to_string()),
        lost.map(|l| l == 0),
    ));
    let rss = r
        .rows
        .iter()
        .filter(|x| x.config.is_some_and(Config::is_abm))
        .filter_map(|x| x.rss_max_kib)
        .chain(m.fixed.map(|x| x.2))
        .max();
    targets.push((
        "abm peak RSS (any run): < 48 MiB".into(),
        mib(rss) + if rss.is_some() { " MiB" } else { "" },
        rss.map(|k| k < 48 * 1024),
    ));
    trace_size::targets(
        &mut targets,
        |w, c| find(w, c).map(|x| (x.ratio, x.bytes_per_event, x.write_mb_s)),
        r.verify_1m.as_ref(),
    );
    for (what, value, ok) in &targets {
        let v = if ok.is_none() && value != "-" {
            "info"
        } else {
            verdict(*ok)
        };
        let _ = writeln!(o, "{:<70} {:>16}  {}", what, value, v);
    }
    let _ = writeln!(
        o,
        "\nbench finished in {:.0} s. Timings from a busy machine are noisy: compare ratios \
         from quiet runs.",
        r.elapsed.as_secs_f64()
    );
    o
}

/// abm's userspace CPU per event of a row, in µs: its median CPU less the
/// fixed cost of `abm run -- true` (loading the programs, start, seal),
/// over its median event count.
pub(super) fn cpu_per_event(row: Option<&Row>, m: &Micro) -> Option<f64> {
    let row = row?;
    let (cpu, events) = (row.cpu?, row.events.filter(|&e| e > 0.0)?);
    let fixed = m.fixed.map_or(0.0, |x| x.1);
    Some((cpu - fixed).max(0.0) / events * 1e6)
}
