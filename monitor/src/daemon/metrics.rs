//! The daemon's Prometheus endpoint (`/metrics`, text exposition format
//! 0.0.4) and its health endpoints (`/healthz`, `/readyz`), served on the
//! address of the config's `metrics` key. Reference: docs/daemon.md.
//!
//! The run loop updates one [`Metrics`] value at a few points (records
//! written, losses accounted, reloads, the periodic flush); the HTTP task
//! only reads it.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
};

use crate::record::Action;
use crate::trace::Loss;

/// Upper bounds (seconds) of the decision latency histogram.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];
/// `/healthz` fails when the run loop has not turned for this long.
pub const STALL_AFTER: Duration = Duration::from_secs(10);

/// Why `/healthz` fails.
#[derive(Debug, thiserror::Error)]
pub enum Unhealthy {
    /// Seconds since the run loop last turned (more than [`STALL_AFTER`]).
    #[error("the run loop has not turned for {0:.1} s")]
    Stalled(f64),
    #[error("the run loop has not started")]
    NotStarted,
}

#[derive(Default)]
struct Histogram {
    /// Per bucket (not cumulative), plus +Inf at the end.
    counts: [u64; LATENCY_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        let i = LATENCY_BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.counts[i] += 1;
        self.sum += secs;
        self.count += 1;
    }
}

/// One target's gauges, refreshed at each flush.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetGauge {
    pub state: String,
    pub trace_bytes: u64,
}

#[derive(Default)]
struct Registry {
    /// (op, treatment, target) -> events written.
    events: BTreeMap<(String, String, String), u64>,
    losses: BTreeMap<String, u64>,
    ring_records: u64,
    ring_bytes: u64,
    ring_capacity_bytes: u64,
    latency: Histogram,
    reloads_ok: u64,
    reloads_failed: u64,
    targets: BTreeMap<String, TargetGauge>,
    /// Bytes of traces sealed and no longer listed as targets.
    sealed_trace_bytes: u64,
    pending_confirmations: u64,
    policy_digest: String,
    started_unix: f64,
    ready: bool,
    last_turn: Option<Instant>,
}

/// The daemon's metrics, shared between the run loop and the HTTP task.
#[derive(Clone, Default)]
pub struct Metrics(Arc<Mutex<Registry>>);

impl Metrics {
    pub fn new(ring_capacity_bytes: u64, policy_digest: String) -> Metrics {
        let m = Metrics::default();
        {
            let mut r = m.lock();
            r.ring_capacity_bytes = ring_capacity_bytes;
            r.policy_digest = policy_digest;
            r.started_unix = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
        }
        m
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves counters that are still
        // meaningful; keep serving them.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records written to a target's trace. `now_ns` is CLOCK_MONOTONIC,
    /// the clock of `ktime_ns`.
    pub fn written(&self, target: &str, a: &Action, now_ns: u64) {
        let mut r = self.lock();
        let op = a.op.map_or("other", |o| o.name()).to_owned();
        let treatment = a.verdict.as_ref().map_or_else(
            || "none".to_owned(),
            |v| format!("{:?}", v.treatment).to_lowercase(),
        );
        *r.events
            .entry((op, treatment, target.to_owned()))
            .or_default() += 1;
        if a.ktime_ns > 0 && now_ns >= a.ktime_ns {
            r.latency.observe((now_ns - a.ktime_ns) as f64 / 1e9);
        }
    }

    pub fn lost(&self, losses: &[Loss]) {
        let mut r = self.lock();
        for l in losses {
            *r.losses.entry(l.cause.clone()).or_default() += l.count;
        }
    }

    /// One kernel record read from the ring buffer.
    pub fn drained(&self, bytes: usize) {
        let mut r = self.lock();
        r.ring_records += 1;
        r.ring_bytes += bytes as u64;
    }

    pub fn reloaded(&self, ok: bool, policy_digest: &str) {
        let mut r = self.lock();
        if ok {
            r.reloads_ok += 1;
        } else {
            r.reloads_failed += 1;
        }
        r.policy_digest = policy_digest.to_owned();
    }

    /// The periodic refresh: target states and trace sizes, pending
    /// confirmations, and the run loop's heartbeat.
    pub fn refresh(&self, targets: BTreeMap<String, TargetGauge>, pending: u64) {
        let mut r = self.lock();
        // A target that is gone, or whose name now has a new (smaller)
        // trace: its last size counts as written.
        let done: u64 = r
            .targets
            .iter()
            .filter(|(name, old)| {
                targets
                    .get(*name)
                    .is_none_or(|new: &TargetGauge| new.trace_bytes < old.trace_bytes)
            })
            .map(|(_, old)| old.trace_bytes)
            .sum();
        r.sealed_trace_bytes += done;
        r.targets = targets;
        r.pending_confirmations = pending;
        r.last_turn = Some(Instant::now());
        r.ready = true;
    }

    /// The run loop turned (it is not stuck).
    pub fn heartbeat(&self) {
        self.lock().last_turn = Some(Instant::now());
    }

    /// `/healthz`: the run loop turned recently.
    pub fn healthy(&self) -> Result<(), Unhealthy> {
        match self.lock().last_turn {
            Some(t) if t.elapsed() <= STALL_AFTER => Ok(()),
            Some(t) => Err(Unhealthy::Stalled(t.elapsed().as_secs_f64())),
            None => Err(Unhealthy::NotStarted),
        }
    }

    /// `/readyz`: the kernel programs are loaded and the configured
    /// targets were set up.
    pub fn ready(&self) -> bool {
        self.lock().ready
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let r = self.lock();
        let mut o = String::with_capacity(4096);
        let head = |o: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut o,
            "abm_events_total",
            "counter",
            "Event records written to traces, by operation, policy treatment and target.",
        );
        for ((op, t, target), n) in &r.events {
            let _ = writeln!(
                o,
                "abm_events_total{{op=\"{}\",treatment=\"{}\",target=\"{}\"}} {n}",
                label(op),
                label(t),
                label(target)
            );
        }
        head(
            &mut o,
            "abm_lost_events_total",
            "counter",
            "Events the daemon knows it did not record, by cause (each also written as a loss record).",
        );
        for (cause, n) in &r.losses {
            let _ = writeln!(o, "abm_lost_events_total{{cause=\"{}\"}} {n}", label(cause));
        }
        head(
            &mut o,
            "abm_ring_buffer_capacity_bytes",
            "gauge",
            "Size of the kernel ring buffer.",
        );
        let _ = writeln!(
            o,
            "abm_ring_buffer_capacity_bytes {}",
            r.ring_capacity_bytes
        );
        head(
            &mut o,
            "abm_ring_buffer_records_total",
            "counter",
            "Kernel records read from the ring buffer.",
        );
        let _ = writeln!(o, "abm_ring_buffer_records_total {}", r.ring_records);
        head(
            &mut o,
            "abm_ring_buffer_bytes_total",
            "counter",
            "Bytes of kernel records read from the ring buffer.",
        );
        let _ = writeln!(o, "abm_ring_buffer_bytes_total {}", r.ring_bytes);
        head(
            &mut o,
            "abm_decision_latency_seconds",
            "histogram",
            "Time from syscall entry to its judged record being written to the trace (includes the ordering window).",
        );
        let mut cum = 0;
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            cum += r.latency.counts[i];
            let _ = writeln!(o, "abm_decision_latency_seconds_bucket{{le=\"{b}\"}} {cum}");
        }
        let _ = writeln!(
            o,
            "abm_decision_latency_seconds_bucket{{le=\"+Inf\"}} {}\nabm_decision_latency_seconds_sum {}\nabm_decision_latency_seconds_count {}",
            r.latency.count, r.latency.sum, r.latency.count
        );
        head(
            &mut o,
            "abm_pending_confirmations",
            "gauge",
            "Confirm requests of enforcing targets waiting for a human decision.",
        );
        let _ = writeln!(o, "abm_pending_confirmations {}", r.pending_confirmations);
        head(
            &mut o,
            "abm_policy_reloads_total",
            "counter",
            "Policy reloads (SIGHUP or `abm` reload requests), by result.",
        );
        let _ = writeln!(
            o,
            "abm_policy_reloads_total{{result=\"ok\"}} {}\nabm_policy_reloads_total{{result=\"failed\"}} {}",
            r.reloads_ok, r.reloads_failed
        );
        head(
            &mut o,
            "abm_policy_info",
            "gauge",
            "The policy in force (value 1; the digest is a label).",
        );
        let _ = writeln!(
            o,
            "abm_policy_info{{digest=\"{}\"}} 1",
            label(&r.policy_digest)
        );
        head(&mut o, "abm_targets", "gauge", "Watched targets by state.");
        let mut states: BTreeMap<&str, u64> = ["active", "waiting", "gone", "removed"]
            .into_iter()
            .map(|s| (s, 0))
            .collect();
        for t in r.targets.values() {
            *states.entry(t.state.as_str()).or_default() += 1;
        }
        for (s, n) in states {
            let _ = writeln!(o, "abm_targets{{state=\"{}\"}} {n}", label(s));
        }
        head(
            &mut o,
            "abm_trace_bytes",
            "gauge",
            "Size of each target's trace file.",
        );
        for (name, t) in &r.targets {
            let _ = writeln!(
                o,
                "abm_trace_bytes{{target=\"{}\"}} {}",
                label(name),
                t.trace_bytes
            );
        }
        head(
            &mut o,
            "abm_trace_bytes_total",
            "counter",
            "Bytes of every trace written since the daemon started.",
        );
        let total = r.sealed_trace_bytes + r.targets.values().map(|t| t.trace_bytes).sum::<u64>();
        let _ = writeln!(o, "abm_trace_bytes_total {total}");
        head(
            &mut o,
            "abm_start_time_seconds",
            "gauge",
            "When the daemon started (Unix time).",
        );
        let _ = writeln!(o, "abm_start_time_seconds {:.3}", r.started_unix);
        o
    }
}

impl super::Daemon {
    /// Refreshes the gauges the run loop owns: targets, trace sizes.
    pub(super) fn refresh_metrics(&self) {
        let Some(m) = &self.metrics else { return };
        let targets = self
            .targets
            .values()
            .map(|t| {
                let bytes = t
                    .trace
                    .as_ref()
                    .and_then(|p| std::fs::metadata(p).ok())
                    .map_or(0, |md| md.len());
                (
                    t.name().to_owned(),
                    TargetGauge {
                        state: t.state.name().to_owned(),
                        trace_bytes: bytes,
                    },
                )
            })
            .collect();
        // Enforcing targets' confirm requests waiting for `abm approve|deny`.
        let pending = self
            .lsm
            .as_ref()
            .map_or(0, |e| e.backend.approvals().pending_list().len() as u64);
        m.refresh(targets, pending);
    }
}

/// Escapes a label value (backslash, quote, newline).
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Binds the metrics address; an error names the config key.
pub async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    let sa: SocketAddr = addr.parse().map_err(|e| {
        anyhow::anyhow!("metrics = {addr:?}: not an address such as \"127.0.0.1:9464\": {e}")
    })?;
    TcpListener::bind(sa)
        .await
        .map_err(|e| anyhow::anyhow!("metrics = {addr:?}: cannot listen: {e}"))
}

/// Serves `/metrics`, `/healthz` and `/readyz` until the runtime stops.
pub fn spawn(listener: TcpListener, metrics: Metrics) {
    tokio::spawn(async move {
        loop {
            let (s, _) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!("metrics: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let m = metrics.clone();
            tokio::spawn(async move {
                let r = tokio::time::timeout(Duration::from_secs(10), serve(s, m)).await;
                if let Ok(Err(e)) = r {
                    tracing::debug!("metrics: {e}");
                }
            });
        }
    });
}

/// The response to one request line's method and path.
pub fn respond(metrics: &Metrics, method: &str, path: &str) -> (u16, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    if method != "GET" && method != "HEAD" {
        return (405, TEXT, "only GET\n".into());
    }
    match path.split('?').next().unwrap_or("") {
        "/metrics" => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics.render(),
        ),
        "/healthz" => match metrics.healthy() {
            Ok(()) => (200, TEXT, "ok\n".into()),
            Err(e) => (503, TEXT, format!("{e}\n")),
        },
        "/readyz" => {
            if metrics.ready() {
                (200, TEXT, "ready\n".into())
            } else {
                (503, TEXT, "starting\n".into())
            }
        }
        _ => (404, TEXT, "not found: /metrics, /healthz, /readyz\n".into()),
    }
}

async fn serve(mut s: TcpStream, m: Metrics) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 16 * 1024 {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (code, ctype, body) = respond(&m, method, path);
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        out.push_str(&body);
    }
    s.write_all(out.as_bytes()).await?;
    s.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Irreversibility, Op, Scope, Treatment, Verdict};

    fn act(op: Op, treatment: Treatment, ktime_ns: u64) -> (u64, Action) {
        (
            1,
            Action {
                op: Some(op),
                ktime_ns,
                verdict: Some(Verdict {
                    rule: "r".into(),
                    treatment,
                    irreversibility: Irreversibility::Recoverable,
                    scope: Scope::Workspace,
                    reason: "x".into(),
                }),
                ..Action::default()
            },
        )
    }

    #[test]
    fn exposition_counts_events_losses_and_latency() {
        let m = Metrics::new(4 << 20, "sha256:abc".into());
        for (_, a) in [
            act(Op::Unlink, Treatment::Audit, 1_000_000_000),
            act(Op::Unlink, Treatment::Audit, 1_000_000_000),
            act(Op::Chmod, Treatment::Deny, 1_040_000_000),
        ] {
            m.written("agent \"a\"", &a, 1_050_000_000);
        }
        m.lost(&[Loss {
            cause: "ringbuf_full".into(),
            count: 7,
            ..Loss::default()
        }]);
        m.reloaded(false, "sha256:abc");
        let mut t = BTreeMap::new();
        t.insert(
            "a".to_owned(),
            TargetGauge {
                state: "active".into(),
                trace_bytes: 1234,
            },
        );
        m.refresh(t, 0);
        let text = m.render();
        assert!(
            text.contains(
                "abm_events_total{op=\"unlink\",treatment=\"audit\",target=\"agent \\\"a\\\"\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains(
            "abm_events_total{op=\"chmod\",treatment=\"deny\",target=\"agent \\\"a\\\"\"} 1"
        ));
        assert!(text.contains("abm_lost_events_total{cause=\"ringbuf_full\"} 7"));
        // 50 ms twice, 10 ms once.
        assert!(
            text.contains("abm_decision_latency_seconds_bucket{le=\"0.01\"} 1"),
            "{text}"
        );
        assert!(text.contains("abm_decision_latency_seconds_bucket{le=\"0.05\"} 3"));
        assert!(text.contains("abm_decision_latency_seconds_count 3"));
        assert!(text.contains("abm_policy_reloads_total{result=\"failed\"} 1"));
        assert!(text.contains("abm_trace_bytes{target=\"a\"} 1234"));
        assert!(text.contains("abm_targets{state=\"active\"} 1"));
        // Every sample line belongs to a declared metric family.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            let family = name
                .trim_end_matches("_bucket")
                .trim_end_matches("_sum")
                .trim_end_matches("_count");
            assert!(
                text.contains(&format!("# TYPE {name} "))
                    || text.contains(&format!("# TYPE {family} histogram")),
                "{l}"
            );
        }
    }

    #[test]
    fn health_follows_the_run_loop() {
        let m = Metrics::new(0, String::new());
        assert_eq!(respond(&m, "GET", "/healthz").0, 503);
        assert_eq!(respond(&m, "GET", "/readyz").0, 503);
        m.refresh(BTreeMap::new(), 0);
        assert_eq!(respond(&m, "GET", "/healthz").0, 200);
        assert_eq!(respond(&m, "GET", "/readyz").0, 200);
        assert_eq!(respond(&m, "GET", "/nope").0, 404);
        assert_eq!(respond(&m, "POST", "/metrics").0, 405);
        m.lock().last_turn = Some(Instant::now() - STALL_AFTER - Duration::from_secs(1));
        let (code, _, body) = respond(&m, "GET", "/healthz");
        assert_eq!(code, 503);
        assert!(body.contains("has not turned"), "{body}");
    }
}
