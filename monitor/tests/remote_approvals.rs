//! Remote approvals (docs/agents.md, "Remote approvals"): a real
//! `abm run --enforce --approvals-listen` and real HTTP clients, the
//! `abm pending|approve|deny --remote` CLI and raw requests, on loopback
//! (plain HTTP) and from another network namespace over a veth pair
//! (TLS with a certificate made for the test): approve (the file goes),
//! deny (the file stays, the caller is told why), timeout (no answer:
//! denied at --confirm-timeout), a bad signature and a stale timestamp
//! (401, the question still open), a replayed request (401).
mod common;

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    os::unix::fs::PermissionsExt as _,
    path::PathBuf,
    process::{Command, Output},
    time::{Duration, Instant},
};

use common::*;
use monitor::enforce::remote::{
    client::{ClientArgs, Remote},
    sign, wire, H_NONCE, H_SIGNATURE, H_TIMESTAMP,
};
use serde_json::{json, Value};

const SECRET: &str = "test-secret-0123456789abcdef";

/// A free TCP port on `ip` (bound, then released for abm to take).
fn free_port(ip: &str) -> u16 {
    TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The policy and the secret (mode 0600) in `t`.
fn setup(t: &TempDir) -> (String, String) {
    let policy = t.join("policy.toml");
    std::fs::write(&policy, CONFIRM).unwrap();
    let secret = t.join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    (
        policy.to_string_lossy().into_owned(),
        secret.to_string_lossy().into_owned(),
    )
}

/// The flags of `abm run --enforce` (seccomp) with the approvals endpoint
/// on `addr` (requests signed with `secret`), questions unanswered after
/// `timeout` seconds denied, and `more`.
fn listening<'a>(
    timeout: &'a str,
    addr: &'a str,
    secret: &'a str,
    more: &[&'a str],
) -> Vec<&'a str> {
    let mut flags = vec![
        "--enforce-backend",
        "seccomp",
        "--confirm-timeout",
        timeout,
        "--approvals-listen",
        addr,
        "--approvals-secret",
        secret,
    ];
    flags.extend_from_slice(more);
    flags
}

/// `abm ARGS` (optionally inside network namespace `netns`).
fn abm(netns: Option<&str>, args: &[&str]) -> Output {
    let mut c = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, ABM]);
            c
        }
        None => Command::new(ABM),
    };
    c.args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Polls `abm pending --json --remote` until request `id` is open.
fn wait_pending(netns: Option<&str>, remote: &[&str], id: u64) -> Value {
    let start = Instant::now();
    loop {
        let mut args = vec!["pending", "--json"];
        args.extend_from_slice(remote);
        let out = abm(netns, &args);
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(p) = v.as_array().unwrap().iter().find(|p| p["id"] == id) {
                return p.clone();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "request {id} never became pending; last: {} {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A client of the endpoint made by the library's own code (raw requests).
fn client(url: &str, secret: &str, cacert: Option<&str>) -> Remote {
    Remote::new(&ClientArgs {
        remote: Some(url.into()),
        secret: Some(secret.into()),
        cacert: cacert.map(Into::into),
    })
    .unwrap()
    .unwrap()
}

/// The bytes of a request, sent on a fresh plain connection; the status
/// line and body of the answer.
fn raw(addr: &str, req: &wire::Request) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    wire::write_request(&mut s, req, addr).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let (code, body) = wire::read_response(&buf[..]).unwrap();
    (code, serde_json::from_slice(&body).unwrap())
}

#[test]
fn approve_deny_bad_signature_and_replay_over_loopback_http() {
    require_seccomp_enforce();
    let t = TempDir::new("remote");
    let ws = TempDir::new("remote-ws");
    for f in ["victim1", "victim2", "victim3"] {
        std::fs::write(ws.join(f), f).unwrap();
    }
    let (policy, secret) = setup(&t);
    let port = free_port("127.0.0.1");
    let addr = format!("127.0.0.1:{port}");
    let url = format!("http://{addr}");
    let (child, trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &listening("60", &addr, &secret, &[]),
        &[
            "sh",
            "-c",
            "rm victim1; echo rc1=$?; rm victim2 2>&1; echo rc2=$?; rm victim3 2>&1; echo rc3=$?",
        ],
    );
    let remote = ["--remote", url.as_str(), "--secret", secret.as_str()];

    // 1: the question's full content over HTTP, then approved: the file goes.
    let p = wait_pending(None, &remote, 1);
    assert_eq!(p["op"], "unlink", "{p}");
    assert_eq!(p["path"], ws.s("victim1"), "{p}");
    assert_eq!(p["rule"], "test.ask", "{p}");
    assert!(
        p["reason"]
            .as_str()
            .unwrap()
            .starts_with("a human decides about victim files"),
        "{p}"
    );
    assert_eq!(p["argv"], json!(["rm", "victim1"]), "{p}");
    assert_eq!(p["cwd"], ws.path().to_str().unwrap(), "{p}");
    assert!(
        p["target"]
            .as_str()
            .unwrap()
            .starts_with("sh -c rm victim1"),
        "{p}"
    );
    assert!(p["run"].as_str().unwrap().starts_with("trace-"), "{p}");
    assert!(ws.join("victim1").exists(), "the call waits");
    let mut args = vec!["approve", "1"];
    args.extend_from_slice(&remote);
    let out = abm(None, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("approved request 1 of run trace-"),
        "{}",
        text(&out.stdout)
    );

    // 2: a wrong secret and a stale timestamp are refused (401) and answer
    // nothing; the question stays open.
    wait_pending(None, &remote, 2);
    let body = br#"{"id":2,"answer":"approve"}"#;
    let forged = Remote::new(&ClientArgs {
        remote: Some(url.clone()),
        secret: Some(write_secret(&t, "wrong", "not-the-secret-0123456789")),
        cacert: None,
    })
    .unwrap()
    .unwrap();
    let (code, v) = raw(&addr, &forged.signed("POST", "/answer", body).unwrap());
    assert_eq!(code, 401, "{v}");
    assert_eq!(v["rejected"], "bad_signature", "{v}");
    let mut unsigned = client(&url, &secret, None)
        .signed("POST", "/answer", body)
        .unwrap();
    unsigned.headers.retain(|(k, _)| k != H_SIGNATURE);
    assert_eq!(raw(&addr, &unsigned).0, 401);
    let old = monitor::enforce::remote::now_secs() - 600;
    let stale = wire::Request {
        method: "POST".into(),
        path: "/answer".into(),
        headers: vec![
            (H_TIMESTAMP.into(), old.to_string()),
            (H_NONCE.into(), "stale-1".into()),
            (
                H_SIGNATURE.into(),
                sign(SECRET.as_bytes(), "POST", "/answer", old, "stale-1", body),
            ),
        ],
        body: body.to_vec(),
    };
    let (code, v) = raw(&addr, &stale);
    assert_eq!((code, v["rejected"].as_str()), (401, Some("stale")), "{v}");
    let p = wait_pending(None, &remote, 2);
    assert_eq!(
        p["path"],
        ws.s("victim2"),
        "still pending after the refusals"
    );
    assert!(ws.join("victim2").exists());
    // An answer to a question nobody waits on is 409. A valid signed
    // answer is taken once; the same bytes again are a replay (401). The
    // run is still alive then: the command's next call waits.
    let c = client(&url, &secret, None);
    let (code, v) = c
        .send(
            &c.signed("POST", "/answer", br#"{"id":99,"answer":"approve"}"#)
                .unwrap(),
        )
        .unwrap();
    assert_eq!(code, 409, "{v}");
    let deny2 = c
        .signed("POST", "/answer", br#"{"id":2,"answer":"deny"}"#)
        .unwrap();
    let (code, v) = raw(&addr, &deny2);
    assert_eq!(code, 200, "{v}");
    let (code, v) = raw(&addr, &deny2);
    assert_eq!(
        (code, v["rejected"].as_str()),
        (401, Some("replayed")),
        "{v}"
    );

    // 3: denied through the CLI.
    wait_pending(None, &remote, 3);
    let mut args = vec!["deny", "3"];
    args.extend_from_slice(&remote);
    let out = abm(None, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(stdout.contains("rc1=0\n"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("rc2=1\n") && stdout.contains("rc3=1\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("abm: refused unlink ") && stdout.contains("victim2"),
        "the denied caller is told why: {stdout}"
    );
    assert!(!ws.join("victim1").exists());
    assert!(ws.join("victim2").exists() && ws.join("victim3").exists());
    assert!(
        stderr.contains(&format!("abm: remote approvals at http://{addr}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("remote approvals: 4 request(s) refused"),
        "bad signature, unsigned, stale, replay: {stderr}"
    );
    let records = read_records(&trace);
    let decided: Vec<(String, String)> = records
        .iter()
        .filter_map(|r| {
            let e = if r["type"] == "note" {
                &r["body"]["enforcement"]
            } else {
                &r["enforcement"]
            };
            e["decided_by"].as_str().map(|by| {
                (
                    e["decision"].as_str().unwrap_or("").to_owned(),
                    by.to_owned(),
                )
            })
        })
        .collect();
    for d in ["approved", "denied"] {
        assert!(
            decided
                .iter()
                .any(|(k, by)| k == d && by == "remote:127.0.0.1"),
            "{d} by remote:127.0.0.1 in {decided:?}"
        );
    }
    let header = &records[0];
    assert_eq!(
        header["extra"]["enforcement"]["approvals_url"],
        format!("http://{addr}"),
        "{header}"
    );
}

fn write_secret(t: &TempDir, name: &str, s: &str) -> PathBuf {
    let p = t.join(name);
    std::fs::write(&p, s).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

#[test]
fn an_unanswered_remote_question_is_denied_at_the_timeout() {
    require_seccomp_enforce();
    let t = TempDir::new("remote-timeout");
    let ws = TempDir::new("remote-timeout-ws");
    std::fs::write(ws.join("victim"), "v").unwrap();
    let (policy, secret) = setup(&t);
    let addr = format!("127.0.0.1:{}", free_port("127.0.0.1"));
    let url = format!("http://{addr}");
    let start = Instant::now();
    let (child, _trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &listening("3", &addr, &secret, &[]),
        &["sh", "-c", "rm victim 2>&1; echo rc=$?"],
    );
    let remote = ["--remote", url.as_str(), "--secret", secret.as_str()];
    let p = wait_pending(None, &remote, 1);
    assert!(p["deny_in_secs"].as_f64().unwrap() <= 3.0, "{p}");
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    let stdout = text(&out.stdout);
    assert!(stdout.contains("rc=1"), "{stdout}");
    assert!(stdout.contains("abm: "), "the caller is told: {stdout}");
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert!(ws.join("victim").exists());
    // Answering after the timeout is too late for that call.
    let out = abm(None, &["pending", "--remote", &url, "--secret", &secret]);
    assert!(!out.status.success(), "the run is over, nothing listens");
}

#[test]
fn bad_settings_are_refused_before_the_command_runs() {
    let t = TempDir::new("remote-bad");
    let (policy, secret) = setup(&t);
    let run = |extra: &[&str]| {
        let out = Command::new(ABM)
            .args([
                "run",
                "--quiet",
                "--enforce",
                "--no-prompt",
                "--policy",
                &policy,
            ])
            .args(["--trace", &t.s("t.jsonl")])
            .args(extra)
            .args(["--", "touch", &t.s("ran")])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(!t.join("ran").exists(), "the command must not run");
        text(&out.stderr)
    };
    let e = run(&[
        "--approvals-listen",
        "192.0.2.1:8470",
        "--approvals-secret",
        &secret,
    ]);
    assert!(
        e.contains("--approvals-listen 192.0.2.1:8470: not a loopback address")
            && e.contains("--approvals-cert"),
        "{e}"
    );
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = run(&[
        "--approvals-listen",
        "127.0.0.1:0",
        "--approvals-secret",
        &secret,
    ]);
    assert!(
        e.contains(&format!("--approvals-secret {secret}: mode 0644"))
            && e.contains(&format!("chmod 600 {secret}")),
        "{e}"
    );
}

/// A network namespace joined to this one by a veth pair, removed on drop.
struct Netns {
    name: String,
    host_if: String,
}

impl Netns {
    fn new(host_ip: &str, ns_ip: &str) -> Netns {
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().unwrap_or_else(|e| {
                panic!("cannot run: `ip` (iproute2) is needed for this test: {e}")
            });
            assert!(out.status.success(), "ip {args:?}: {}", text(&out.stderr));
        };
        let id = std::process::id() % 100_000;
        let n = Netns {
            name: format!("abm-remote-{id}"),
            host_if: format!("abmh{id}"),
        };
        let peer = format!("abmn{id}");
        ip(&["netns", "add", &n.name]);
        ip(&[
            "link", "add", &n.host_if, "type", "veth", "peer", "name", &peer,
        ]);
        ip(&["link", "set", &peer, "netns", &n.name]);
        ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &n.host_if]);
        ip(&["link", "set", &n.host_if, "up"]);
        let inside = |args: &[&str]| {
            let mut a = vec!["netns", "exec", &n.name, "ip"];
            a.extend_from_slice(args);
            ip(&a);
        };
        inside(&["addr", "add", &format!("{ns_ip}/30"), "dev", &peer]);
        inside(&["link", "set", &peer, "up"]);
        inside(&["link", "set", "lo", "up"]);
        n
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

#[test]
fn approve_and_deny_over_tls_from_another_network_namespace() {
    require_seccomp_enforce();
    assert!(
        Command::new("ip").arg("-V").output().is_ok(),
        "cannot run: `ip` (iproute2) is needed to make the network namespace"
    );
    let (host_ip, ns_ip) = ("10.213.77.1", "10.213.77.2");
    let ns = Netns::new(host_ip, ns_ip);
    let t = TempDir::new("remote-tls");
    let ws = TempDir::new("remote-tls-ws");
    std::fs::write(ws.join("victim1"), "1").unwrap();
    std::fs::write(ws.join("victim2"), "2").unwrap();
    let (policy, secret) = setup(&t);
    // A self-signed certificate for the veth address.
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.subject_alt_names = vec![rcgen::SanType::IpAddress(host_ip.parse().unwrap())];
    let cert = params.self_signed(&key).unwrap();
    let (cert_pem, key_pem) = (t.join("cert.pem"), t.join("key.pem"));
    std::fs::write(&cert_pem, cert.pem()).unwrap();
    std::fs::write(&key_pem, key.serialize_pem()).unwrap();
    std::fs::set_permissions(&key_pem, std::fs::Permissions::from_mode(0o600)).unwrap();
    let addr = format!("{host_ip}:{}", free_port(host_ip));
    let url = format!("https://{addr}");
    let (child, trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &listening(
            "60",
            &addr,
            &secret,
            &[
                "--approvals-cert",
                cert_pem.to_str().unwrap(),
                "--approvals-key",
                key_pem.to_str().unwrap(),
            ],
        ),
        &[
            "sh",
            "-c",
            "rm victim1; echo rc1=$?; rm victim2 2>&1; echo rc2=$?",
        ],
    );
    let cacert = cert_pem.to_string_lossy().into_owned();
    let remote = [
        "--remote",
        url.as_str(),
        "--secret",
        secret.as_str(),
        "--cacert",
        cacert.as_str(),
    ];
    let inside = Some(ns.name.as_str());
    let p = wait_pending(inside, &remote, 1);
    assert_eq!(p["path"], ws.s("victim1"), "{p}");
    // Without the certificate to trust, the client refuses the endpoint.
    let plain = abm(inside, &["pending", "--remote", &url, "--secret", &secret]);
    assert!(!plain.status.success());
    assert!(
        text(&plain.stderr).contains("--cacert"),
        "{}",
        text(&plain.stderr)
    );
    // Clear text to the TLS port gets no answer.
    let out = abm(
        inside,
        &[
            "pending",
            "--remote",
            &format!("http://{addr}"),
            "--secret",
            &secret,
        ],
    );
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let mut args = vec!["approve", "1"];
    args.extend_from_slice(&remote);
    let out = abm(inside, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    wait_pending(inside, &remote, 2);
    let mut args = vec!["deny", "2"];
    args.extend_from_slice(&remote);
    let out = abm(inside, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("rc1=0") && stdout.contains("rc2=1"),
        "{stdout}"
    );
    assert!(!ws.join("victim1").exists());
    assert!(ws.join("victim2").exists());
    assert!(
        text(&out.stderr).contains(&format!("abm: remote approvals at https://{addr}")),
        "{}",
        text(&out.stderr)
    );
    let by_ns = format!("remote:{ns_ip}");
    let records = read_records(&trace);
    assert!(
        records
            .iter()
            .any(|r| r["enforcement"]["decided_by"] == by_ns.as_str()
                || r["body"]["enforcement"]["decided_by"] == by_ns.as_str()),
        "decisions made from {ns_ip}"
    );
    drop(ns);
    let _ = std::io::stdout().flush();
}

#[test]
fn a_webhook_gets_the_signed_question_and_answers_through_the_endpoint() {
    require_seccomp_enforce();
    let t = TempDir::new("remote-hook");
    let ws = TempDir::new("remote-hook-ws");
    std::fs::write(ws.join("victim"), "v").unwrap();
    let (policy, secret) = setup(&t);
    // The service: a real HTTP server on loopback.
    let service = TcpListener::bind("127.0.0.1:0").unwrap();
    let hook_url = format!("http://{}/abm/questions", service.local_addr().unwrap());
    let addr = format!("127.0.0.1:{}", free_port("127.0.0.1"));
    let (child, trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &listening("60", &addr, &secret, &["--approvals-webhook", &hook_url]),
        &["sh", "-c", "rm victim; echo rc=$?"],
    );
    service.set_nonblocking(false).unwrap();
    let (mut conn, _) = service.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let req = wire::read_request(&mut conn).unwrap();
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/abm/questions")
    );
    let ts: u64 = req.header(H_TIMESTAMP).unwrap().parse().unwrap();
    let nonce = req.header(H_NONCE).unwrap();
    assert_eq!(
        req.header(H_SIGNATURE).unwrap(),
        sign(
            SECRET.as_bytes(),
            "POST",
            "/abm/questions",
            ts,
            nonce,
            &req.body
        ),
        "the question is signed with the shared secret"
    );
    wire::write_response(&mut conn, 200, b"{}").unwrap();
    drop(conn);
    let v: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(v["event"], "question", "{v}");
    assert_eq!(v["answer_url"], format!("http://{addr}"), "{v}");
    let q = &v["question"];
    assert_eq!(q["path"], ws.s("victim"), "{v}");
    assert_eq!(q["rule"], "test.ask", "{v}");
    assert_eq!(q["argv"], json!(["rm", "victim"]), "{v}");
    let c = client(v["answer_url"].as_str().unwrap(), &secret, None);
    let body = json!({ "id": q["id"], "answer": "approve" }).to_string();
    c.call("POST", "/answer", body.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(text(&out.stdout).contains("rc=0"), "{}", text(&out.stdout));
    assert!(!ws.join("victim").exists());
    let records = read_records(&trace);
    assert!(records
        .iter()
        .any(|r| r["body"]["enforcement"]["decided_by"] == "remote:127.0.0.1"));
}
