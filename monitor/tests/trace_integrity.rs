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

/// `abm trace cat`: the canonical lines of a trace in either form.
fn cat(p: &std::path::Path) -> Vec<u8> {
    let out = Command::new(ABM)
        .args(["trace", "cat"])
        .arg(p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "abm trace cat {}: {}",
        p.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn lines(p: &std::path::Path) -> Vec<String> {
    String::from_utf8(cat(p))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes canonical lines as a trace in `form` (compact: through
/// `abm trace convert`, as someone who edits a compact trace would).
fn write_lines(p: &std::path::Path, l: &[String], form: &str) {
    let text = l.join("\n") + "\n";
    let _ = std::fs::remove_file(p);
    if form == "jsonl" {
        std::fs::write(p, text).unwrap();
        return;
    }
    let tmp = p.with_extension("edit.jsonl");
    std::fs::write(&tmp, text).unwrap();
    let out = Command::new(ABM)
        .args(["trace", "convert", "--format", form])
        .arg(&tmp)
        .arg(p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&tmp).unwrap();
}

/// A real trace of a small destructive run, in `form`.
fn real_trace(t: &TempDir, extra: &[&str], form: &str) -> std::path::PathBuf {
    let ws = TempDir::new("ti-ws");
    sh(
        "mkdir -p d && for i in 1 2 3 4 5; do echo $i > d/f$i; done",
        ws.path(),
    );
    let mut args = extra.to_vec();
    args.extend(["--format", form]);
    let run = abm_run(
        t,
        ws.path(),
        &args,
        &["sh", "-c", "rm -r d; echo x > new; mv new renamed"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let head = std::fs::read(&run.trace).unwrap();
    assert_eq!(head.starts_with(b"{\"type\":\"header\""), form == "jsonl");
    assert!(lines(&run.trace).len() > 10);
    run.trace
}

#[test]
fn tampering_with_a_real_trace_is_detected_and_named() {
    tampering_is_detected_and_named("jsonl");
}

#[test]
fn tampering_with_a_real_compact_trace_is_detected_and_named() {
    tampering_is_detected_and_named("compact");
}

fn tampering_is_detected_and_named(form: &str) {
    require_kernel!();
    let t = TempDir::new("tamper");
    let trace = real_trace(&t, &[], form);
    let (code, text, _) = verify(&trace, None);
    assert_eq!(code, 0, "intact trace verifies: {text}");
    let orig = lines(&trace);
    let copy = t.join("copy.trace");
    let write_lines = |p: &std::path::Path, l: &[String]| write_lines(p, l, form);

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
    let trace = real_trace(&t, &["--sign-key", &key_arg], "compact");
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
    killed_monitor_leaves_a_verifiable_prefix("k.jsonl");
}

#[test]
fn killed_monitor_leaves_a_verifiable_compact_prefix() {
    killed_monitor_leaves_a_verifiable_prefix("k.abmt");
}

fn killed_monitor_leaves_a_verifiable_prefix(name: &str) {
    require_kernel!();
    let t = TempDir::new("kill9");
    let ws = TempDir::new("kill9-ws");
    let trace = t.join(name);
    let mut abm = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args([
            "--",
            "sh",
            "-c",
            "echo $$ > loop.pid; for i in $(seq 1 400); do touch f$i; rm f$i; sleep 0.05; done",
        ])
        .current_dir(ws.path())
        .spawn()
        .unwrap();
    // Records are flushed at least every second: wait until some unlinks
    // are on disk (a loaded machine starts abm slowly), then kill.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        // `trace cat` prints the complete records of either form; a line
        // being written at this moment is left out.
        let out = Command::new(ABM)
            .args(["trace", "cat"])
            .arg(&trace)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if text.matches("\"op\":\"unlink\"").count() >= 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(abm.id() as i32, libc::SIGKILL) };
    abm.wait().unwrap();
    let (code, text, json) = verify(&trace, None);
    assert_eq!(code, 2, "{text}");
    let recs: Vec<Value> = lines(&trace)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
    // Stop the orphaned loop (its pid, not a name pattern: other runs of
    // this test may be going on).
    if let Some(pid) = std::fs::read_to_string(ws.path().join("loop.pid"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
    {
        // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
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

/// Runs a burst of 3000 failed unlinks under `abm run`, gated by two FIFOs
/// in `ws`: the command waits on `go` before the burst and opens `done`
/// after it. With `stop_monitor`, abm is stopped (SIGSTOP) from just before
/// the burst until it has ended, so nothing drains the ring buffer while the
/// kernel fills it; whatever the speed of the machine, a small buffer then
/// overflows. The command's own calls are the same in both modes.
fn gated_burst(t: &TempDir, ws: &TempDir, extra: &[&str], stop_monitor: bool) -> Run {
    use std::io::{Read, Write};
    let go = ws.join("go");
    let done = ws.join("done");
    for f in [&go, &done] {
        let _ = std::fs::remove_file(f);
        let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
            0,
            "mkfifo {f:?}"
        );
    }
    let script = "import os\n\
                  open('go').read()\n\
                  for i in range(3000):\n    \
                  try: os.unlink('missing-%d' % i)\n    \
                  except FileNotFoundError: pass\n\
                  open('done', 'w').close()\n";
    let trace = t.join(&format!("gated-{}.jsonl", u8::from(stop_monitor)));
    let child = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args(extra)
        .args(["--", "python3", "-B", "-c", script])
        .current_dir(ws.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run abm");
    let pid = child.id() as libc::pid_t;
    // Opening `go` for writing returns once the command has opened it for
    // reading: it is then waiting for the word, before the burst.
    let mut w = std::fs::OpenOptions::new().write(true).open(&go).unwrap();
    if stop_monitor {
        // SAFETY: kill(2) on the abm process this test spawned.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    }
    w.write_all(b"go").unwrap();
    drop(w);
    // `done` is opened for writing after the last unlink.
    let mut r = std::fs::File::open(&done).unwrap();
    let mut sink = Vec::new();
    r.read_to_end(&mut sink).unwrap();
    if stop_monitor {
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records = read_records(&trace);
    Run {
        output,
        trace,
        records,
    }
}

#[test]
fn ring_buffer_overflow_is_recorded_as_loss_with_the_right_count() {
    require_kernel!();
    let t = TempDir::new("overflow");
    let ws = TempDir::new("overflow-ws");
    // Reference run with the default buffer: the exact number of kernel
    // records.
    let big = gated_burst(&t, &ws, &[], false);
    let (reference, lost) = kernel_records(&big.records);
    assert_eq!(lost, 0, "no loss with the default buffer");
    assert!(
        reference >= 6000,
        "3000 unlinks give 6000 records, got {reference}"
    );
    // The same run with a 4 KiB ring buffer, not drained during the burst.
    let small = gated_burst(&t, &ws, &["--ringbuf-kib", "4"], true);
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

/// A real run in the default (compact) form: `abm trace cat` gives back
/// exactly the lines the chain was computed over, the same bytes as the
/// JSON-lines form of the same trace, with the same final digest.
#[test]
fn compact_trace_of_a_real_run_round_trips_to_the_plain_form() {
    require_kernel!();
    let t = TempDir::new("roundtrip");
    let ws = TempDir::new("roundtrip-ws");
    sh(
        "mkdir -p d && for i in $(seq 1 50); do echo $i > d/f$i; done",
        ws.path(),
    );
    let trace = t.join("run.abmt");
    let out = Command::new(ABM)
        .args(["run", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args([
            "--",
            "sh",
            "-c",
            "rm -r d; git init -q g; echo x > new; mv new renamed",
        ])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let compact = std::fs::read(&trace).unwrap();
    assert_eq!(&compact[8..12], b"ABMT", "the default form is compact");

    let canonical = cat(&trace);
    let plain = t.join("run.jsonl");
    let conv = Command::new(ABM)
        .args(["trace", "convert", "--format", "jsonl"])
        .arg(&trace)
        .arg(&plain)
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    assert_eq!(std::fs::read(&plain).unwrap(), canonical, "byte-identical");
    assert!(compact.len() * 4 < canonical.len(), "compact is smaller");

    let (c1, t1, j1) = verify(&trace, None);
    let (c2, t2, j2) = verify(&plain, None);
    assert_eq!((c1, c2), (0, 0), "{t1}\n{t2}");
    assert_eq!(j1["final_digest"], j2["final_digest"]);
    assert_eq!(j1["records"], j2["records"]);
    assert_eq!(j1["format"], "compact");
    assert_eq!(j2["format"], "jsonl");
    let digest = j1["final_digest"].as_str().unwrap();
    assert!(
        stderr.contains(&digest[..16]),
        "abm run printed the same digest: {stderr}"
    );
    let text = String::from_utf8(canonical).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recs
        .iter()
        .any(|r| r["op"] == "unlink" && r["path"].as_str().is_some_and(|p| p.ends_with("/d/f7"))));

    // Back to compact: the same canonical lines again.
    let again = t.join("again.abmt");
    let conv = Command::new(ABM)
        .args(["trace", "convert"])
        .arg(&plain)
        .arg(&again)
        .output()
        .unwrap();
    assert!(conv.status.success());
    assert_eq!(cat(&again), text.as_bytes());
}

/// The Python reference verifier of docs/trace.md, run as written there,
/// on real traces in both forms.
#[test]
fn documented_python_verifier_reads_both_forms() {
    require_kernel!();
    let python = "/usr/bin/python3";
    let probe = Command::new(python)
        .args(["-c", "import zstandard"])
        .output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "the reference verifier needs Python's zstandard package: run `cargo xtask test` (it \
         installs it) or `{python} -m pip install zstandard`"
    );
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/trace.md")).unwrap();
    let script = doc
        .split("```python\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains("def canonical_lines") && b.contains("def verify"))
        .expect("docs/trace.md has the reference verifier");
    let t = TempDir::new("pyverify");
    let py = t.join("verify.py");
    std::fs::write(&py, script).unwrap();
    let run = |trace: &std::path::Path| {
        let o = Command::new(python).arg(&py).arg(trace).output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).trim().to_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    for form in ["compact", "jsonl"] {
        let trace = real_trace(&t, &[], form);
        assert_eq!(
            run(&trace),
            (true, "intact".into(), String::new()),
            "{form}"
        );

        // An edited record, written back in the same form.
        let mut l = lines(&trace);
        l[3] = l[3].replacen("\"pid\":", "\"pid\":1", 1);
        let copy = t.join(&format!("edited.{form}"));
        write_lines(&copy, &l, form);
        let (ok, _, err) = run(&copy);
        assert!(!ok && err.contains("line 4: modified"), "{form}: {err}");

        // Cut short: the records before the cut verify, unsealed.
        let bytes = std::fs::read(&trace).unwrap();
        let cut = t.join(&format!("cut.{form}"));
        std::fs::write(&cut, &bytes[..bytes.len() - 20]).unwrap();
        assert_eq!(run(&cut).1, "unsealed", "{form}");
    }
}

/// `abm run --trace TRACE EXTRA -- sh -c SCRIPT` through a shell, so that
/// descriptors and stdin can be given as a caller would (`3>anchor`,
/// `3<key`, `<key`). `redirs` is appended to the shell's `exec` line.
fn run_with_redirections(ws: &std::path::Path, trace: &std::path::Path, extra: &str, redirs: &str) {
    let script = format!(
        "exec \"$0\" run --quiet --trace \"$1\" --workspace \"$2\" {extra} -- \
         sh -c 'echo 1 > a; rm a; echo 2 > secret; rm secret' {redirs}"
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(ABM)
        .arg(trace)
        .arg(ws)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "abm run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn verify_anchor(trace: &std::path::Path, anchor: &std::path::Path) -> (i32, String) {
    let out = Command::new(ABM)
        .arg("verify")
        .arg(trace)
        .arg("--anchor")
        .arg(anchor)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// What a root tree does to an unkeyed trace after killing abm before the
/// records of its last deletion were written: keep the records before that
/// deletion and append a well-formed seal, chained with SHA-256 as abm
/// would.
fn forge_seal_before(lines: &[String], path_part: &str) -> Vec<String> {
    use sha2::Digest as _;
    let recs: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cut = recs
        .iter()
        .position(|r| r["op"] == "unlink" && r["path"].as_str().unwrap_or("").contains(path_part))
        .expect("the deletion to hide is in the trace");
    let kept = &recs[..cut];
    let events: Vec<&Value> = kept.iter().filter(|r| r["type"] == "event").collect();
    let regressions = events
        .windows(2)
        .filter(|w| w[1]["ktime_ns"].as_u64() < w[0]["ktime_ns"].as_u64())
        .count();
    let prev = kept.last().unwrap()["hash"].as_str().unwrap().to_owned();
    let prefix = format!(
        "{{\"type\":\"seal\",\"seq\":{cut},\"prev\":\"{prev}\",\"records\":{cut},\"events\":{},\
         \"lost\":{{}},\"ktime_regressions\":{regressions},\"end_time\":\"2026-01-01T00:00:00Z\",\
         \"exit_code\":0,\"final_digest\":\"{prev}\"",
        events.len()
    );
    let mut h = sha2::Sha256::new();
    h.update(hex::decode(&prev).unwrap());
    h.update(prefix.as_bytes());
    let hash = hex::encode(h.finalize());
    let mut out = lines[..cut].to_vec();
    out.push(format!("{prefix},\"hash\":\"{hash}\"}}"));
    out
}

#[test]
fn a_forged_seal_verifies_alone_and_is_rejected_by_the_anchor() {
    require_kernel!();
    for form in ["jsonl", "compact"] {
        let t = TempDir::new("anchor");
        let ws = TempDir::new("anchor-ws");
        let trace = t.join(if form == "jsonl" { "t.jsonl" } else { "t.abmt" });
        let anchor = t.join("anchor");
        let redir = format!("3>{}", anchor.display());
        run_with_redirections(ws.path(), &trace, "--anchor-fd 3", &redir);
        // The genuine trace matches the anchor abm wrote.
        let anchor_text = std::fs::read_to_string(&anchor).unwrap();
        let last: Value = serde_json::from_str(anchor_text.lines().last().unwrap()).unwrap();
        assert_eq!(last["seal"], true, "{anchor_text}");
        let (code, text, json) = verify(&trace, None);
        assert_eq!(code, 0, "{text}");
        assert_eq!(last["hash"], json["final_digest"], "{anchor_text}");
        assert_eq!(
            last["seq"].as_u64().unwrap() + 1,
            json["records"].as_u64().unwrap()
        );
        let (code, text) = verify_anchor(&trace, &anchor);
        assert_eq!(code, 0, "{form}: {text}");
        assert!(text.contains("anchor: matches: the seal"), "{text}");

        // The forgery: the deletion of `secret` is gone, the seal is new.
        let forged = t.join(if form == "jsonl" { "f.jsonl" } else { "f.abmt" });
        write_lines(&forged, &forge_seal_before(&lines(&trace), "/secret"), form);
        let hidden = |p: &std::path::Path| {
            lines(p).iter().any(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                r["op"] == "unlink" && r["path"].as_str().unwrap_or("").ends_with("/secret")
            })
        };
        assert!(hidden(&trace) && !hidden(&forged));
        let (code, text, _) = verify(&forged, None);
        assert_eq!(
            code, 0,
            "{form}: without an anchor the forgery reads as intact: {text}"
        );
        let (code, text) = verify_anchor(&forged, &anchor);
        assert_eq!(code, 1, "{form}: {text}");
        assert!(text.contains("REJECTED BY THE ANCHOR"), "{text}");

        // The same forgery against the anchor as it stood before abm sent
        // its seal (abm killed first): the forged seal is not anchored.
        let early = t.join("anchor-early");
        let heads: Vec<&str> = anchor_text
            .lines()
            .filter(|l| !l.contains("seal"))
            .collect();
        std::fs::write(&early, heads[..1].join("\n") + "\n").unwrap();
        let (code, text) = verify_anchor(&forged, &early);
        assert_eq!(code, 1, "{form}: {text}");
        assert!(text.contains("is not in the anchor"), "{text}");
    }
}

#[test]
fn signing_key_from_a_descriptor_or_stdin() {
    require_kernel!();
    let t = TempDir::new("keyfd");
    let ws = TempDir::new("keyfd-ws");
    let key = t.join("key");
    std::fs::write(&key, b"0123456789abcdef0123456789abcdef").unwrap();
    let redir = format!("3<{}", key.display());
    let by_fd = t.join("fd.abmt");
    run_with_redirections(ws.path(), &by_fd, "--sign-key-fd 3", &redir);
    let (code, text, json) = verify(&by_fd, Some(&key));
    assert_eq!(code, 0, "{text}");
    assert_eq!(json["authentication"]["mode"], "authenticated", "{text}");
    let by_stdin = t.join("stdin.abmt");
    let redir = format!("<{}", key.display());
    run_with_redirections(ws.path(), &by_stdin, "--sign-key -", &redir);
    let (code, text, _) = verify(&by_stdin, Some(&key));
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        verify(&by_stdin, None).0,
        3,
        "keyed: not authenticated without the key"
    );
    // A descriptor that is not open is refused before anything runs.
    let out = Command::new(ABM)
        .args(["run", "--quiet", "--sign-key-fd", "9", "--trace"])
        .arg(t.join("never.abmt"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("descriptor 9 is not open"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!t.join("never.abmt").exists());
}
