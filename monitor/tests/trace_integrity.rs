//! The trusted trace on real runs: tamper detection, crash behaviour, loss
//! accounting under ring-buffer overflow, and protection of the trace file
//! from the watched tree.
mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

fn verify(trace: &std::path::Path, key: Option<&std::path::Path>) -> (i32, String, Value) {
    let mut c = Command::new(ABM);
    c.arg("verify").arg("--json").arg(trace);
    if let Some(k) = key {
        c.arg("--key").arg(k);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), text, json)
}

fn lines(p: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(p: &std::path::Path, l: &[String]) {
    std::fs::write(p, l.join("\n") + "\n").unwrap();
}

/// A real trace of a small destructive run.
fn real_trace(t: &TempDir, extra: &[&str]) -> std::path::PathBuf {
    let ws = TempDir::new("ti-ws");
    sh(
        "mkdir -p d && for i in 1 2 3 4 5; do echo $i > d/f$i; done",
        ws.path(),
    );
    let run = abm_run(
        t,
        ws.path(),
        extra,
        &["sh", "-c", "rm -r d; echo x > new; mv new renamed"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(run.records.len() > 10);
    run.trace
}

#[test]
fn tampering_with_a_real_trace_is_detected_and_named() {
    require_kernel!();
    let t = TempDir::new("tamper");
    let trace = real_trace(&t, &[]);
    let (code, text, _) = verify(&trace, None);
    assert_eq!(code, 0, "intact trace verifies: {text}");
    let orig = lines(&trace);
    let copy = t.join("copy.jsonl");

    // Flip one byte inside an event's path.
    let mut l = orig.clone();
    l[5] = l[5].replacen("\"path\":\"/", "\"path\":\"X", 1);
    assert_ne!(l[5], orig[5]);
    write_lines(&copy, &l);
    let (code, text, _) = verify(&copy, None);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("modified"), "{text}");

    // Delete a line.
    let mut l = orig.clone();
    l.remove(4);
    write_lines(&copy, &l);
    let (code, text, _) = verify(&copy, None);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("missing"), "{text}");

    // Swap two lines.
    let mut l = orig.clone();
    l.swap(3, 4);
    write_lines(&copy, &l);
    let (code, text, _) = verify(&copy, None);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("reordered") || text.contains("missing"),
        "{text}"
    );

    // Cut the file mid-record: unsealed with an intact prefix, not corrupt.
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&copy, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (code, text, _) = verify(&copy, None);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("unsealed"), "{text}");

    // Append a forged line after the seal.
    let mut l = orig.clone();
    l.push(orig[3].clone());
    write_lines(&copy, &l);
    let (code, text, _) = verify(&copy, None);
    assert_eq!(code, 1, "{text}");
}

#[test]
fn keyed_trace_needs_the_right_key() {
    require_kernel!();
    let t = TempDir::new("keyed");
    let key = t.join("key");
    std::fs::write(&key, b"0123456789abcdef0123456789abcdef").unwrap();
    let wrong = t.join("wrong");
    std::fs::write(&wrong, b"fedcba9876543210fedcba9876543210").unwrap();
    let key_arg = key.to_string_lossy().into_owned();
    let trace = real_trace(&t, &["--sign-key", &key_arg]);
    assert_eq!(verify(&trace, Some(&key)).0, 0);
    let (code, text, _) = verify(&trace, Some(&wrong));
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("wrong_key") || text.contains("wrong key"),
        "{text}"
    );
    assert_eq!(
        verify(&trace, None).0,
        3,
        "keyed trace without key is not authenticated"
    );
}

#[test]
fn killed_monitor_leaves_an_unsealed_but_verifiable_trace() {
    require_kernel!();
    let t = TempDir::new("kill9");
    let ws = TempDir::new("kill9-ws");
    let trace = t.join("k.jsonl");
    let mut abm = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args([
            "--",
            "sh",
            "-c",
            "for i in $(seq 1 400); do touch f$i; rm f$i; sleep 0.05; done",
        ])
        .current_dir(ws.path())
        .spawn()
        .unwrap();
    // Records are flushed at least every second: wait until some unlinks
    // are on disk (a loaded machine starts abm slowly), then kill.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        if text.matches("\"op\":\"unlink\"").count() >= 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(abm.id() as i32, libc::SIGKILL) };
    abm.wait().unwrap();
    let (code, text, json) = verify(&trace, None);
    assert_eq!(code, 2, "{text}");
    let recs = read_records(&trace);
    assert!(
        recs.iter()
            .filter(|r| r["type"] == "event" && r["op"] == "unlink")
            .count()
            >= 5,
        "flushed within a second"
    );
    assert!(recs.iter().all(|r| r["type"] != "seal"));
    assert!(
        json["records"].as_u64().unwrap() >= recs.len() as u64 - 1,
        "{text}"
    );
    let _ = Command::new("pkill").args(["-f", "seq 1 400"]).status();
}

/// Counts every kernel record a run produced: entries (events), results
/// (paired or not) and losses.
fn kernel_records(recs: &[Value]) -> (u64, u64) {
    let events = recs.iter().filter(|r| r["type"] == "event").count() as u64;
    let results = recs
        .iter()
        .filter(|r| {
            r["type"] == "event"
                && !["fork", "exit", "io_uring_setup"].contains(&r["op"].as_str().unwrap_or(""))
        })
        .filter(|r| !r["result"].is_null())
        .count() as u64;
    let unpaired: u64 = recs
        .iter()
        .filter(|r| r["type"] == "note" && r["kind"] == "unpaired_results")
        .map(|r| {
            r["count"]
                .as_u64()
                .or(r["body"]["count"].as_u64())
                .unwrap_or(0)
        })
        .sum();
    let lost: u64 = recs
        .iter()
        .filter(|r| r["type"] == "loss")
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    (events + results + unpaired, lost)
}

#[test]
fn ring_buffer_overflow_is_recorded_as_loss_with_the_right_count() {
    require_kernel!();
    let t = TempDir::new("overflow");
    let script = "import os\nfor i in range(3000):\n    try: os.unlink('missing-%d' % i)\n    except FileNotFoundError: pass\n";
    let ws = TempDir::new("overflow-ws");
    // Reference run with a large buffer: the exact number of kernel records.
    let big = abm_run(&t, ws.path(), &[], &["python3", "-B", "-c", script]);
    let (reference, lost) = kernel_records(&big.records);
    assert_eq!(lost, 0, "no loss with the default buffer");
    assert!(
        reference >= 6000,
        "3000 unlinks give 6000 records, got {reference}"
    );
    // The same run with a 4 KiB ring buffer must overflow.
    let small = abm_run(
        &t,
        ws.path(),
        &["--ringbuf-kib", "4"],
        &["python3", "-B", "-c", script],
    );
    let (received, lost) = kernel_records(&small.records);
    assert!(lost > 0, "a 4 KiB buffer overflows");
    assert_eq!(
        received + lost,
        reference,
        "every kernel record is either in the trace or counted as lost"
    );
    let loss = small.records.iter().find(|r| r["type"] == "loss").unwrap();
    assert_eq!(loss["cause"], "ringbuf_full");
    assert!(loss["cpu"].is_u64());
    assert!(loss["window_end_ns"].as_u64() >= loss["window_start_ns"].as_u64());
    let seal = small.records.last().unwrap();
    assert_eq!(seal["type"], "seal");
    assert_eq!(seal["lost"]["ringbuf_full"].as_u64(), Some(lost));
    assert_eq!(verify(&small.trace, None).0, 0);
}

#[test]
fn the_watched_tree_cannot_delete_truncate_or_rename_the_trace() {
    require_kernel!();
    let t = TempDir::new("protect");
    let ws = TempDir::new("protect-ws");
    let trace = t.join("p.jsonl");
    let tr = trace.to_string_lossy().into_owned();
    // (`true >`, not `: >`: a failed redirection of a special builtin exits sh.)
    let script = format!("rm -f {tr}; true > {tr}; mv {tr} {tr}.moved; truncate -s0 {tr}; exit 0");
    let out = Command::new(ABM)
        .args(["run", "--quiet", "--trace", &tr, "--workspace"])
        .arg(ws.path())
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(verify(&trace, None).0, 0, "trace intact after the attempts");
    let recs = read_records(&trace);
    let attempts: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "event" && r["path"] == tr.as_str() && r["op"] != "exec")
        .collect();
    for op in ["unlink", "truncate", "rename"] {
        let a = attempts
            .iter()
            .find(|r| r["op"] == op)
            .unwrap_or_else(|| panic!("{op} attempt recorded: {attempts:?}"));
        assert_eq!(a["errno"], "EPERM", "{a}");
        assert_eq!(a["verdict"]["scope"], "protected", "{a}");
    }
    assert!(!std::path::Path::new(&format!("{tr}.moved")).exists());
}
