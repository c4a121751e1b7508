//! The daemon's operations surface on the real kernel: a real Prometheus
//! server scrapes `/metrics` on loopback and its HTTP API returns the
//! unlink count of a watched `rm`; `/healthz` answers; stream lines carry an
//! RFC 3339 `time`; `--log-format json` diagnostics are JSON lines.
mod common;

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{daemon::wait_for, TempDir, ABM};
use serde_json::Value;

fn need_kernel() {
    if let Some(why) = common::kernel_unavailable() {
        panic!("cannot run on this machine: {why}");
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.0 GET on loopback: (status, body).
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    Some((code, body.to_owned()))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Kills and reaps the child on drop.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One instant-vector query through Prometheus's HTTP API: the value of
/// the single result, if there is one.
fn prom_query(port: u16, q: &str) -> Option<f64> {
    let (code, body) = get(port, &format!("/api/v1/query?query={}", urlencode(q)))?;
    if code != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    let r = v["data"]["result"].as_array()?;
    r.first()?["value"][1].as_str()?.parse().ok()
}

#[test]
fn prometheus_scrapes_the_unlink_count_of_a_watched_rm() {
    need_kernel();
    let dir = TempDir::new("metrics");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    for i in 1..=3 {
        std::fs::write(ws.join(format!("f{i}")), "x").unwrap();
    }
    // The watched process waits for GO, removes three files, then idles.
    let agent = Reaped(
        Command::new("sh")
            .arg("-c")
            .arg(
                "while [ ! -e GO ]; do sleep 0.1; done; rm f1 f2 f3; \
                 while [ ! -e STOP ]; do sleep 0.1; done",
            )
            .current_dir(&ws)
            .spawn()
            .unwrap(),
    );
    let metrics_port = free_port();
    let cfg = dir.join("abm.toml");
    std::fs::write(
        &cfg,
        format!(
            "trace_dir = \"{}\"\nsocket = \"{}\"\nringbuf_kib = 4096\npoll_interval = \"200ms\"\n\
             stdout = true\nmetrics = \"127.0.0.1:{metrics_port}\"\n\
             [[target]]\nname = \"agent\"\npid = {}\n",
            dir.s("traces"),
            dir.s("run/daemon.sock"),
            agent.0.id()
        ),
    )
    .unwrap();
    let (out, err) = (dir.join("daemon.out"), dir.join("daemon.err"));
    let mut daemon = Reaped(
        Command::new(ABM)
            .args(["daemon", "--log-format", "json", "--config"])
            .arg(&cfg)
            .env("ABM_LOG", "info")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_for("the daemon's /healthz", Duration::from_secs(30), || {
        get(metrics_port, "/healthz").is_some_and(|(c, b)| c == 200 && b == "ok\n")
    });
    assert_eq!(get(metrics_port, "/readyz").unwrap().0, 200);

    std::fs::write(ws.join("GO"), "").unwrap();
    let unlinks = "sum(abm_events_total{op=\"unlink\",target=\"agent\"})";
    wait_for("the unlinks in /metrics", Duration::from_secs(20), || {
        get(metrics_port, "/metrics").is_some_and(|(_, b)| {
            b.lines()
                .filter(|l| l.starts_with("abm_events_total{op=\"unlink\""))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                .sum::<u64>()
                == 3
        })
    });

    // A real Prometheus scraping the daemon every second.
    let prom_port = free_port();
    let prom_cfg = dir.join("prometheus.yml");
    std::fs::write(
        &prom_cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: abm\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let prom = Command::new("prometheus")
        .arg(format!("--config.file={}", prom_cfg.display()))
        .arg(format!("--storage.tsdb.path={}", dir.s("prom-data")))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start prometheus ({e}): install Debian's `prometheus` (cargo xtask test does)")
        });
    let _prom = Reaped(prom);
    let prom_log = || std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    wait_for("Prometheus to be ready", Duration::from_secs(30), || {
        get(prom_port, "/-/ready").is_some_and(|(c, _)| c == 200)
    });
    let mut last = None;
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        last = prom_query(prom_port, unlinks);
        if last == Some(3.0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        last,
        Some(3.0),
        "Prometheus's value of {unlinks}; prometheus log:\n{}\ndaemon log:\n{}",
        prom_log(),
        log()
    );
    assert_eq!(prom_query(prom_port, "up{job=\"abm\"}"), Some(1.0));
    assert_eq!(
        prom_query(prom_port, "abm_targets{state=\"active\"}"),
        Some(1.0)
    );
    assert!(prom_query(prom_port, "abm_trace_bytes{target=\"agent\"}").is_some_and(|b| b > 0.0));
    assert!(prom_query(prom_port, "abm_decision_latency_seconds_count").is_some_and(|n| n >= 3.0));

    // Stop: SIGTERM seals the trace.
    std::fs::write(ws.join("STOP"), "").unwrap();
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(daemon.0.id() as i32, libc::SIGTERM) };
    let st = daemon.0.wait().unwrap();
    assert_eq!(st.code(), Some(0), "{}", log());

    // Every stream line carries an RFC 3339 time.
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert!(
        kinds.contains(&"target") && kinds.contains(&"event"),
        "{kinds:?}"
    );
    for l in &lines {
        let t = l["time"].as_str().unwrap_or_else(|| panic!("no time: {l}"));
        assert!(
            humantime::parse_rfc3339(t).is_ok(),
            "time {t:?} is not RFC 3339: {l}"
        );
    }
    let rm: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "event" && l["op"] == "unlink")
        .collect();
    assert_eq!(rm.len(), 3, "{lines:?}");

    // The daemon's own diagnostics are JSON lines.
    let diag = log();
    let diag: Vec<Value> = diag
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    assert!(diag
        .iter()
        .all(|d| d["timestamp"].is_string() && d["level"].is_string()));
    assert!(
        diag.iter().any(|d| d["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("metrics on http://127.0.0.1"))),
        "{diag:?}"
    );
    assert!(Path::new(&dir.s("traces")).exists());
}

#[test]
fn daemonset_probes_and_scrape_annotations_use_the_metrics_port() {
    use yaml_rust2::{Yaml, YamlLoader};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("deploy/kubernetes/daemonset.yaml")).unwrap();
    let docs = YamlLoader::load_from_str(&text).expect("the manifest parses as YAML");
    let kind = |d: &Yaml| d["kind"].as_str().unwrap_or("").to_owned();
    let cm = docs.iter().find(|d| kind(d) == "ConfigMap").unwrap();
    let cfg = monitor::daemon::config::Config::parse(
        cm["data"]["abm.toml"].as_str().unwrap(),
        "configmap",
    )
    .unwrap();
    let addr: std::net::SocketAddr = cfg
        .metrics
        .expect("metrics in the ConfigMap")
        .parse()
        .unwrap();
    assert!(
        addr.ip().is_unspecified(),
        "Prometheus scrapes the pod IP: {addr}"
    );
    let ds = docs.iter().find(|d| kind(d) == "DaemonSet").unwrap();
    let tmpl = &ds["spec"]["template"];
    let ann = &tmpl["metadata"]["annotations"];
    assert_eq!(ann["prometheus.io/scrape"].as_str(), Some("true"));
    assert_eq!(
        ann["prometheus.io/port"].as_str(),
        Some(addr.port().to_string().as_str())
    );
    assert_eq!(ann["prometheus.io/path"].as_str(), Some("/metrics"));
    let abm = tmpl["spec"]["containers"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str() == Some("abm"))
        .unwrap();
    let ports = abm["ports"].as_vec().expect("container ports");
    let named = ports
        .iter()
        .find(|p| p["name"].as_str() == Some("metrics"))
        .expect("a port named metrics");
    assert_eq!(
        named["containerPort"].as_i64(),
        Some(i64::from(addr.port()))
    );
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let g = &abm[probe]["httpGet"];
        assert_eq!(g["path"].as_str(), Some(path), "{probe}");
        assert_eq!(g["port"].as_str(), Some("metrics"), "{probe}");
    }
    let cmd: Vec<&str> = abm["command"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert!(
        cmd.windows(2).any(|w| w == ["--log-format", "json"]),
        "{cmd:?}"
    );
}
