//! The OCSF export (docs/ocsf.md) on real runs: `abm trace cat --format
//! ocsf` of traces that real commands wrote under `abm run` (observing,
//! and refused under `--enforce`), and `abm tail --format ocsf` of a real
//! daemon. Every event is validated against the OCSF 1.3.0 schema by the
//! `ocsf-json-schema` package from PyPI (with `jsonschema`), run by the
//! validation script of docs/ocsf.md; the validator is shown to reject
//! broken events first.
mod common;

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use common::{
    daemon::{config, wait_for, Daemon},
    TempDir, ABM,
};
use serde_json::{json, Value};

const DOC: &str = include_str!("../../docs/ocsf.md");

/// The PyPI packages the validator needs, pinned.
const VALIDATOR: [&str; 2] = ["ocsf-json-schema==1.2.0", "jsonschema==4.26.0"];

/// The first fenced block of `lang` after `heading` in docs/ocsf.md.
fn doc_block(heading: &str, lang: &str) -> String {
    let at = DOC
        .find(heading)
        .unwrap_or_else(|| panic!("docs/ocsf.md: no {heading:?}"));
    let fence = format!("```{lang}\n");
    let section = &DOC[at..];
    let start = section
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/ocsf.md: no {lang} block after {heading:?}"))
        + fence.len();
    let len = section[start..].find("```").expect("unterminated block");
    section[start..start + len].to_owned()
}

/// The validation script of docs/ocsf.md, in a venv with its packages.
struct Validator {
    python: PathBuf,
    script: PathBuf,
}

impl Validator {
    fn new(dir: &TempDir) -> Validator {
        let venv = common::pyvenv::venv("ocsf", &VALIDATOR);
        let script = dir.join("validate_ocsf.py");
        std::fs::write(&script, doc_block("### Validating", "python")).unwrap();
        Validator {
            python: venv.join("bin/python"),
            script,
        }
    }

    /// Validates the events (one per line) of `file`: (passed, output).
    fn check(&self, file: &Path) -> (bool, String) {
        let out = Command::new(&self.python)
            .arg(&self.script)
            .arg(file)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// Validates `events`, which must all pass.
    fn assert_valid(&self, dir: &TempDir, name: &str, events: &[Value]) {
        let f = dir.join(name);
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(&f, text).unwrap();
        let (ok, out) = self.check(&f);
        assert!(ok, "events of {name} fail the OCSF schema:\n{out}");
        assert!(
            out.contains(&format!("{} event(s), 0 error(s)", events.len())),
            "{out}"
        );
    }

    /// The validator rejects each of a valid event's broken copies.
    fn assert_rejects_broken(&self, dir: &TempDir, good: &Value) {
        let mut broken = Vec::new();
        let mut e = good.clone();
        e["file"]["type_id"] = json!("1");
        broken.push(("file.type_id as a string", e));
        let mut e = good.clone();
        e.as_object_mut().unwrap().remove("file");
        broken.push(("no file", e));
        let mut e = good.clone();
        e["metadata"]["product"]
            .as_object_mut()
            .unwrap()
            .remove("vendor_name");
        broken.push(("no metadata.product.vendor_name", e));
        let mut e = good.clone();
        e["activity_id"] = json!(42);
        broken.push(("activity_id 42", e));
        let mut e = good.clone();
        e["verdict"] = e["unmapped"]["verdict"].clone();
        broken.push(("verdict outside unmapped", e));
        let mut e = good.clone();
        e["time_dt"] = json!("yesterday");
        broken.push(("time_dt not RFC 3339", e));
        let f = dir.join("broken.ocsf.jsonl");
        let text: String = broken.iter().map(|(_, e)| format!("{e}\n")).collect();
        std::fs::write(&f, text).unwrap();
        let (ok, out) = self.check(&f);
        assert!(!ok, "the validator accepted broken events:\n{out}");
        for (n, (what, _)) in broken.iter().enumerate() {
            assert!(
                out.contains(&format!("line {} (file_activity)", n + 1)),
                "the validator did not reject the event with {what}:\n{out}"
            );
        }
        // And the event itself passes.
        self.assert_valid(dir, "good.ocsf.jsonl", std::slice::from_ref(good));
    }
}

/// `abm trace cat --format ocsf TRACE`, parsed.
fn ocsf_of(trace: &Path) -> Vec<Value> {
    let out = Command::new(ABM)
        .args(["trace", "cat", "--format", "ocsf"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "abm trace cat --format ocsf: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn show(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["class_uid"], e["activity_name"], e["file"]["path"], e["process"]["cmd_line"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one File System Activity event of `activity` on `path`.
fn file_event<'a>(events: &'a [Value], activity: &str, path: &str) -> &'a Value {
    let found: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["class_uid"] == 1001 && e["activity_name"] == activity && e["file"]["path"] == path
        })
        .collect();
    assert!(
        !found.is_empty(),
        "no {activity} of {path}; events:\n{}",
        show(events)
    );
    found[0]
}

fn epoch_ms(t: &str) -> i64 {
    humantime::parse_rfc3339(t)
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_real_run_exports_as_valid_ocsf() {
    require_kernel!();
    let dir = TempDir::new("ocsf");
    let v = Validator::new(&dir);
    let ws = TempDir::new("ocsf-ws");
    common::sh(
        "echo x > victim && echo y > old && mkdir gone && echo z > kept",
        ws.path(),
    );
    let run = common::abm_run(
        &dir,
        ws.path(),
        &[],
        &[
            "sh",
            "-c",
            "rm victim; mv old new; chmod 600 new; rmdir gone; ln -s new link; \
             echo more > kept; sh -c 'exit 3'",
        ],
    );
    assert!(run.trace.exists(), "no trace: {}", run.stderr());
    let events = ocsf_of(&run.trace);
    // Every record but the header and the seal is one event.
    assert_eq!(events.len(), run.records.len() - 2, "{}", show(&events));
    v.assert_valid(&dir, "run.ocsf.jsonl", &events);

    // The deletion, and its record in the trace.
    let victim = ws.s("victim");
    let e = file_event(&events, "Delete", &victim);
    let rec = run.one("unlink", &victim);
    assert_eq!(e["activity_id"], 4);
    assert_eq!(e["type_uid"], 100104);
    assert_eq!(e["category_uid"], 1);
    assert_eq!(e["file"]["name"], "victim");
    assert_eq!(
        e["file"]["parent_folder"],
        ws.path().to_string_lossy().as_ref()
    );
    assert_eq!(e["metadata"]["version"], "1.3.0");
    assert_eq!(e["metadata"]["sequence"], rec["seq"]);
    assert_eq!(e["metadata"]["uid"], rec["hash"]);
    assert_eq!(e["time"], epoch_ms(rec["time"].as_str().unwrap()));
    assert_eq!(e["time_dt"], rec["time"]);
    assert_eq!(e["status_id"], 1);
    assert_eq!(e["actor"]["process"]["pid"], rec["pid"]);
    assert_eq!(e["actor"]["process"]["name"], "rm");
    assert_eq!(e["actor"]["process"]["cmd_line"], "rm victim");
    assert_eq!(e["actor"]["process"]["parent_process"]["pid"], rec["ppid"]);
    assert_eq!(e["actor"]["user"]["uid"], "0");
    if let (Some(dev), Some(ino)) = (rec["dev"].as_u64(), rec["ino"].as_u64()) {
        assert_eq!(e["file"]["uid"], format!("{dev}:{ino}"));
        assert_eq!(e["unmapped"]["ino"], ino);
    }
    // The verdict, whole, in unmapped; its treatment as the severity.
    assert_eq!(e["unmapped"]["verdict"], rec["verdict"], "{e:#}");
    let severity = match rec["verdict"]["treatment"].as_str().unwrap() {
        "accept" => 1,
        "audit" => 2,
        "confirm" | "preserve" => 3,
        _ => 4,
    };
    assert_eq!(e["severity_id"], severity);
    assert_eq!(e["unmapped"]["op"], "unlink");
    assert!(
        e.get("disposition_id").is_none(),
        "an observing run decides nothing"
    );
    let hostname = rec_header(&run)["host"].clone();
    assert_eq!(e["device"]["name"], hostname);

    // The other operations.
    let r = file_event(&events, "Rename", &ws.s("old"));
    assert_eq!(r["file_result"]["path"], ws.s("new"));
    assert_eq!(
        file_event(&events, "Set Security", &ws.s("new"))["activity_id"],
        7
    );
    assert_eq!(
        file_event(&events, "Delete", &ws.s("gone"))["file"]["type_id"],
        2
    );
    let l = file_event(&events, "Create", &ws.s("new"));
    assert_eq!(l["file_result"]["path"], ws.s("link"));
    assert_eq!(l["file_result"]["type_id"], 7);
    assert_eq!(
        file_event(&events, "Update", &ws.s("kept"))["activity_id"],
        3
    );

    // Execs launch processes; the shell's exit code.
    let exec = events
        .iter()
        .find(|e| e["class_uid"] == 1007 && e["process"]["cmd_line"] == "rm victim")
        .unwrap_or_else(|| panic!("no launch of rm:\n{}", show(&events)));
    assert_eq!(exec["activity_id"], 1);
    assert_eq!(exec["process"]["name"], "rm");
    assert_eq!(
        exec["process"]["file"]["path"],
        run.one("exec", "/usr/bin/rm")["path"]
    );
    assert_eq!(exec["unmapped"]["argv"], json!(["rm", "victim"]));
    assert!(
        events
            .iter()
            .any(|e| e["activity_name"] == "Terminate" && e["exit_code"] == 3),
        "no exit with code 3:\n{}",
        show(&events)
    );
    // Notes are Base Events with the record in unmapped.
    let note = events
        .iter()
        .find(|e| e["class_uid"] == 0)
        .unwrap_or_else(|| panic!("no note exported:\n{}", show(&events)));
    assert_eq!(note["activity_id"], 99);
    assert!(note["unmapped"]["kind"].is_string(), "{note:#}");

    v.assert_rejects_broken(&dir, e);
    println!(
        "an OCSF event of this run:\n{}",
        serde_json::to_string_pretty(e).unwrap()
    );
}

fn rec_header(run: &common::Run) -> &Value {
    let h = &run.records[0];
    assert_eq!(h["type"], "header");
    h
}

const DENY_KEEP: &str = r#"
version = 1

[[rule]]
id = "test.deny-keep"
reason = "keep/ must not change"
paths = ["${workspace}/keep/**"]
treatment = "deny"
"#;

#[test]
fn a_refused_call_is_blocked() {
    common::require_seccomp_enforce();
    let dir = TempDir::new("ocsf-enf");
    let v = Validator::new(&dir);
    let ws = TempDir::new("ocsf-enf-ws");
    common::sh("mkdir keep && echo k > keep/f", ws.path());
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, DENY_KEEP).unwrap();
    let run = common::abm_run(
        &dir,
        ws.path(),
        &[
            "--enforce",
            "--enforce-backend",
            "seccomp",
            "--policy",
            policy.to_str().unwrap(),
            "--quarantine",
            &dir.s("quarantine"),
            "--control-socket",
            &dir.s("ctl.sock"),
            "--no-prompt",
        ],
        &["rm", "-f", "keep/f"],
    );
    assert!(
        ws.join("keep/f").exists(),
        "the denied unlink removed the file"
    );
    let events = ocsf_of(&run.trace);
    v.assert_valid(&dir, "enforced.ocsf.jsonl", &events);
    let e = file_event(&events, "Delete", &ws.s("keep/f"));
    assert_eq!(e["disposition_id"], 2, "{e:#}");
    assert_eq!(e["disposition"], "Blocked");
    assert_eq!(e["action_id"], 2);
    assert_eq!(e["status_id"], 2);
    assert_eq!(e["status_code"], "EPERM");
    assert_eq!(e["status_detail"], "denied_by_seccomp");
    assert_eq!(e["severity_id"], 4);
    assert_eq!(e["unmapped"]["verdict"]["rule"], "test.deny-keep");
    assert_eq!(e["unmapped"]["enforcement"]["decision"], "denied");
    assert!(
        e["metadata"]["profiles"]
            .as_array()
            .unwrap()
            .contains(&json!("security_control")),
        "{e:#}"
    );
    println!("the refused deletion:\n{e}");
}

#[test]
fn the_documented_example_runs_and_validates() {
    require_kernel!();
    let dir = TempDir::new("ocsf-doc");
    let v = Validator::new(&dir);
    let bin = Path::new(ABM).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(doc_block("## Example", "sh"))
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the example failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let count: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(count >= 1, "no File System Activity");
    let f = dir.join("events.ocsf.jsonl");
    let (ok, report) = v.check(&f);
    assert!(ok, "{report}");
    let events: Vec<Value> = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let e = file_event(&events, "Delete", &dir.s("demo/notes.txt"));
    assert_eq!(e["file"]["name"], "notes.txt");
    assert!(e["unmapped"]["verdict"]["rule"].is_string(), "{e:#}");
}

#[test]
fn the_daemon_stream_exports_as_valid_ocsf() {
    require_kernel!();
    let dir = TempDir::new("ocsf-tail");
    let v = Validator::new(&dir);
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("victim"), "x").unwrap();
    let d = Daemon::start(&dir, &config(&dir, ""));
    let mut child = Command::new("sh")
        .args(["-c", "while [ ! -e go ]; do sleep 0.05; done; rm victim"])
        .current_dir(&ws)
        .spawn()
        .unwrap();
    let add = d.abm(&["watch", "add", "agent", "--pid", &child.id().to_string()]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let mut tail = Command::new(ABM)
        .args(["tail", "--format", "ocsf", "--socket"])
        .arg(&d.socket)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(tail.stdout.take().unwrap());
    wait_for("the tail subscriber", Duration::from_secs(10), || {
        d.status()["daemon"]["subscribers"] == 1
    });
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(child.wait().unwrap().success());
    let victim = ws.join("victim").to_string_lossy().into_owned();
    let mut lines = out.lines();
    let mut seen = Vec::new();
    wait_for(
        "the deletion on the OCSF stream",
        Duration::from_secs(15),
        || {
            if let Some(Ok(l)) = lines.next() {
                seen.push(serde_json::from_str::<Value>(&l).unwrap());
            }
            seen.iter().any(|e| e["file"]["path"] == victim.as_str())
        },
    );
    let _ = tail.kill();
    let _ = tail.wait();
    v.assert_valid(&dir, "tail.ocsf.jsonl", &seen);
    let e = file_event(&seen, "Delete", &victim);
    assert_eq!(e["unmapped"]["target"], "agent");
    assert_eq!(e["actor"]["process"]["name"], "rm");
    assert!(e["metadata"]["sequence"].is_u64(), "{e:#}");
    assert!(e["unmapped"]["verdict"]["rule"].is_string(), "{e:#}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(e["device"]["name"], host.trim());
}
