//! The syscall-loop microbenchmark (kernel cost per traced and untraced
//! syscall), abm's fixed cost and the hashing throughput.
use super::measure::{ring_sampler, start_idle_abm};
use super::render::f;
use super::*;

/// Results of the syscall-loop microbenchmark: ns/call per op and setting.
#[derive(Default)]
pub(super) struct Micro {
    /// [op][setting] medians; op 0 unlinkat, 1 getppid; setting 0 none,
    /// 1 in scope, 2 out of scope, 3 in scope with `--enforce` (the
    /// guardrail backend this kernel offers: BPF LSM, else seccomp).
    pub(super) ns: [[Option<f64>; 4]; 2],
    pub(super) lost_in_scope: Option<u64>,
    /// ns added per unlinkat by a seccomp user notification that a bare
    /// supervisor answers at once (tests/bench/notify_floor.c), median.
    pub(super) notify_floor: Option<f64>,
    /// abm's fixed cost: `abm run -- true` (wall s, CPU s, RSS KiB, of it
    /// ring buffer mapping KiB).
    pub(super) fixed: Option<(f64, f64, u64, u64)>,
    pub(super) hashing: Option<(f64, f64)>,
}

pub(super) fn parse_loop(text: &str) -> [Option<f64>; 2] {
    let mut out = [None, None];
    for l in text.lines().filter(|l| l.starts_with("ABM_LOOP ")) {
        let op = if l.contains("op=unlinkat") { 0 } else { 1 };
        out[op] = l
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("median_ns="))
            .and_then(|v| v.parse().ok());
    }
    out
}

pub(super) fn loop_args(env: &Env) -> Vec<OsString> {
    vec![
        env.sloop.clone().into_os_string(),
        LOOP_CALLS.to_string().into(),
        LOOP_REPS.to_string().into(),
        // getppid first: after the unlinkat loop, abm is still busy
        // writing its records and would compete for the CPU.
        "getppid".into(),
        "unlinkat".into(),
    ]
}

/// The seccomp user-notification round trip alone: filtered minus plain
/// unlinkat in tests/bench/notify_floor.c, median over `rounds`.
fn notify_floor(env: &Env, dir: &Path, rounds: usize) -> Result<Option<f64>> {
    let mut added = Vec::new();
    for _ in 0..rounds {
        let o = Command::new(&env.nfloor)
            .args([LOOP_CALLS.to_string(), LOOP_REPS.to_string()])
            .current_dir(dir)
            .output()?;
        let text = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() {
            // The rest of the bench does not need it: say so and go on.
            eprintln!(
                "bench: tests/bench/notify_floor.c failed, no notification floor: {}",
                peers::tail(&text)
            );
            return Ok(None);
        }
        let line = text.lines().find(|l| l.starts_with("ABM_NOTIFY_FLOOR "));
        let get = |k: &str| {
            line?
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix(k))
                .and_then(|v| v.parse::<f64>().ok())
        };
        if let (Some(n), Some(p)) = (get("median_ns="), get("plain_ns=")) {
            added.push(n - p);
        }
    }
    Ok(median(added))
}

pub(super) fn micro(env: &Env, rounds: usize) -> Result<Micro> {
    let mut m = Micro::default();
    let mut ns: [[Vec<f64>; 4]; 2] = Default::default();
    let loop_dir = env.dir.join("loop");
    fs::create_dir_all(&loop_dir)?;
    let mut lost = 0u64;
    for r in 0..rounds {
        if sys::interrupted() {
            bail!("interrupted");
        }
        for setting in 0..4 {
            let text = match setting {
                0 => {
                    let o = Command::new(&env.sloop)
                        .args(&loop_args(env)[1..])
                        .current_dir(&loop_dir)
                        .output()?;
                    String::from_utf8_lossy(&o.stderr).into_owned()
                }
                1 | 3 => {
                    let trace = env.next_trace();
                    let err = env.logs.join("loop.err");
                    let mut cmd = env.abm_run(Config::Default, &loop_dir, &trace);
                    if setting == 3 {
                        cmd.arg("--enforce");
                    }
                    cmd.arg("--ringbuf-kib")
                        .arg(LOOP_RINGBUF_KIB.to_string())
                        .arg("--")
                        .args(loop_args(env))
                        .stderr(fs::File::create(&err)?);
                    let status = cmd.status()?;
                    let text = fs::read_to_string(&err).unwrap_or_default();
                    let _ = fs::remove_file(&trace);
                    if !status.success() {
                        bail!("abm run (syscall loop) failed: {}", peers::tail(&text));
                    }
                    lost += json_object_sum(&text, "lost").unwrap_or(0);
                    text
                }
                _ => {
                    let (mut t, _, trace) = start_idle_abm(env, Config::Default)?;
                    let o = Command::new(&env.sloop)
                        .args(&loop_args(env)[1..])
                        .current_dir(&loop_dir)
                        .output()?;
                    sys::send_signal(t.pid, sys::SIGTERM);
                    t.wait()?;
                    let _ = fs::remove_file(&trace);
                    String::from_utf8_lossy(&o.stderr).into_owned()
                }
            };
            for (per_op, x) in ns.iter_mut().zip(parse_loop(&text)) {
                if let Some(x) = x {
                    per_op[setting].push(x);
                }
            }
        }
        eprintln!(
            "bench: syscall loop round {}/{rounds}: unlinkat {} / {} / {} / {} ns, getppid {} / {} / {} ns \
             (none / in scope / out of scope / enforcing)",
            r + 1,
            f(ns[0][0].last().copied(), 0),
            f(ns[0][1].last().copied(), 0),
            f(ns[0][2].last().copied(), 0),
            f(ns[0][3].last().copied(), 0),
            f(ns[1][0].last().copied(), 0),
            f(ns[1][1].last().copied(), 0),
            f(ns[1][2].last().copied(), 0),
        );
    }
    for (out, per_op) in m.ns.iter_mut().zip(&ns) {
        for (o, v) in out.iter_mut().zip(per_op) {
            *o = median(v.clone());
        }
    }
    m.lost_in_scope = Some(lost);
    m.notify_floor = notify_floor(env, &loop_dir, rounds)?;

    // Fixed cost of one `abm run`: load and attach, spawn, seal, exit.
    let mut fixed = Vec::new();
    for _ in 0..rounds {
        let trace = env.next_trace();
        let mut cmd = env.abm_run(Config::Default, &loop_dir, &trace);
        cmd.args(["--", "true"]).stderr(Stdio::null());
        let mut t = sys::Traced::spawn(&mut cmd)?;
        let ring = ring_sampler(t.pid);
        let e = t.wait()?;
        let ring = ring.stop();
        let _ = fs::remove_file(&trace);
        if let Some(o) = e.own {
            fixed.push((
                e.elapsed.as_secs_f64(),
                o.cpu_s,
                o.hwm_kib.unwrap_or(0),
                ring.unwrap_or(0),
            ));
        }
    }
    if !fixed.is_empty() {
        m.fixed = Some((
            median(fixed.iter().map(|x| x.0).collect()).unwrap_or(0.0),
            median(fixed.iter().map(|x| x.1).collect()).unwrap_or(0.0),
            fixed.iter().map(|x| x.2).max().unwrap_or(0),
            fixed.iter().map(|x| x.3).max().unwrap_or(0),
        ));
    }

    let o = Command::new(&env.abm)
        .args(["verify", "--bench-hashing", &HASH_EVENTS.to_string()])
        .output()?;
    let text = String::from_utf8_lossy(&o.stdout);
    if o.status.success() {
        if let (Some(a), Some(b)) = (
            json_number(&text, "sha256_events_per_sec"),
            json_number(&text, "hmac_sha256_events_per_sec"),
        ) {
            m.hashing = Some((a, b));
        }
    }
    Ok(m)
}
