//! One measurement of a workload under a configuration: abm in scope or
//! outside it, the peers, or nothing.
use super::*;

/// `abm run ... -- timeit -- WORKLOAD` under ptrace (exit stop only).
pub(super) fn run_abm_in_scope(env: &Env, wl: &Workload, config: Config) -> Result<Sample> {
    let trace = env.next_trace();
    let err = env.logs.join("abm.err");
    let mut cmd = env.abm_run(config, &wl.ws, &trace);
    cmd.arg("--")
        .arg(&env.timeit)
        .arg("--")
        .args(wl.command(env))
        .stderr(fs::File::create(&err)?);
    let mut t = sys::Traced::spawn(&mut cmd)?;
    let ring = ring_sampler(t.pid);
    let end = t.wait()?;
    let ring = ring.stop();
    let text = fs::read_to_string(&err).unwrap_or_default();
    if end.code != 0 {
        bail!("abm run exited with {}: {}", end.code, peers::tail(&text));
    }
    let mut s = parse_timeit(&text)?;
    s.e2e = Some(end.elapsed.as_secs_f64());
    s.events = json_object_sum(&text, "actions_by_op");
    s.lost = json_object_sum(&text, "lost");
    s.mon_cpu_s = end.own.map(|o| o.cpu_s);
    s.mon_rss_kib = end.own.and_then(|o| o.hwm_kib);
    s.mon_ring_kib = ring;
    s.trace_bytes = fs::metadata(&trace).ok().map(|m| m.len());
    s.judge_us = judge_us(env, &trace);
    if wl.kind == Kind::Burst && config == Config::Default && env.kept_burst.borrow().is_none() {
        *env.kept_burst.borrow_mut() = Some(trace);
        return Ok(s);
    }
    remove_tree(&trace);
    let _ = fs::remove_file(&trace);
    Ok(s)
}

/// Reads abm's ring-buffer mapping once it exists (it does not change).
pub(super) fn ring_sampler(pid: i32) -> sys::MaxSampler {
    sys::MaxSampler::start(pid, Duration::from_millis(5), true, sys::bpf_map_rss)
}

/// Starts `abm run -- sleep 3600` (under ptrace) and waits until its
/// programs are attached: the sleep child exists only after that.
/// Returns the traced abm, its stderr file and its trace file.
pub(super) fn start_idle_abm(env: &Env, config: Config) -> Result<(sys::Traced, PathBuf, PathBuf)> {
    let trace = env.next_trace();
    let idle = env.dir.join("idle");
    fs::create_dir_all(&idle)?;
    let err = env.logs.join("abm-idle.err");
    let mut cmd = env.abm_run(config, &idle, &trace);
    cmd.args(["--", "sleep", "3600"])
        .stderr(fs::File::create(&err)?);
    let mut t = sys::Traced::spawn(&mut cmd)?;
    let start = Instant::now();
    loop {
        if let Some(e) = t.poll(false)? {
            bail!(
                "abm run -- sleep exited early ({}): {}",
                e.code,
                peers::tail(&fs::read_to_string(&err).unwrap_or_default())
            );
        }
        if sys::children_of(t.pid).iter().any(|(_, c)| c == "sleep") {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!("abm run -- sleep did not start its command within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((t, err, trace))
}

/// The burst run outside abm's scope while abm watches `sleep`.
pub(super) fn run_abm_outside(env: &Env, wl: &Workload, config: Config) -> Result<Sample> {
    let (mut t, err, trace) = start_idle_abm(env, config)?;
    let ring = sys::bpf_map_rss(t.pid);
    let mut s = env.timeit(&wl.command(env), None)?;
    sys::send_signal(t.pid, sys::SIGTERM);
    let end = t.wait()?;
    let _ = fs::remove_file(&trace);
    let text = fs::read_to_string(&err).unwrap_or_default();
    s.e2e = Some(end.elapsed.as_secs_f64());
    s.events = json_object_sum(&text, "actions_by_op");
    s.lost = json_object_sum(&text, "lost");
    s.mon_cpu_s = end.own.map(|o| o.cpu_s);
    s.mon_rss_kib = end.own.and_then(|o| o.hwm_kib);
    s.mon_ring_kib = ring;
    Ok(s)
}

pub(super) fn measure(
    env: &Env,
    peers: &peers::Peers,
    wl: &Workload,
    config: Config,
) -> Result<Sample> {
    let outside = wl.kind == Kind::Outside;
    match config {
        Config::None => env.timeit(&wl.command(env), None),
        Config::Observe | Config::Default | Config::DefaultJsonl if outside => {
            run_abm_outside(env, wl, config)
        }
        Config::Observe | Config::Default | Config::DefaultJsonl => {
            run_abm_in_scope(env, wl, config)
        }
        Config::Bpftrace => peers::bpftrace(
            env,
            peers.bpftrace.as_ref().unwrap(),
            &wl.command(env),
            !outside,
        ),
        Config::Auditd => {
            let (d, c) = peers.auditd.as_ref().unwrap();
            peers::auditd(env, d, c, &wl.command(env), !outside)
        }
        Config::Strace => peers::strace(env, peers.strace.as_ref().unwrap(), &wl.command(env)),
    }
}

/// The judge's CPU over a run, µs: `decision_us_total` of the trace's
/// `action_stats` note (docs/trace.md), read with `abm trace cat`.
fn judge_us(env: &Env, trace: &Path) -> Option<f64> {
    let out = Command::new(&env.abm)
        .args(["trace", "cat"])
        .arg(trace)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .rev()
        .filter(|l| l.contains("\"action_stats\""))
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["kind"] == "action_stats").then(|| v["body"]["decision_us_total"].as_f64())?
        })
}
