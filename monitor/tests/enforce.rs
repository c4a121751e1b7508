//! `abm run --enforce` with the seccomp user-notification backend, on the
//! real kernel with real commands: each hook family is denied (EPERM, the
//! file untouched, the deciding rule in the trace) and allowed; confirm
//! through the control socket and by timeout; preserve and `abm undo`; a
//! benign workload under the default policy; and the no-backend failure.
//!
//! Each test writes its own policy file so it controls the rules.
mod common;

use std::{
    collections::BTreeMap,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use common::*;
use serde_json::Value;

const EPERM: &str = "1";

/// Why the seccomp tests cannot run here, if they cannot.
fn seccomp_unavailable() -> Option<String> {
    if let Some(why) = kernel_unavailable() {
        return Some(why);
    }
    if !seccomp_user_notif() {
        return Some("no seccomp user notification in this kernel".into());
    }
    None
}

macro_rules! require_seccomp {
    () => {
        if let Some(why) = seccomp_unavailable() {
            common::skip_or_fail("seccomp", &why);
            return;
        }
    };
}

fn write_policy(dir: &TempDir, text: &str) -> String {
    let p = dir.join("policy.toml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// `abm run --enforce --policy P` with the quarantine and control socket in
/// the test's directory.
fn enforced(t: &TempDir, ws: &Path, policy: &str, extra: &[&str], cmd: &[&str]) -> Run {
    let q = t.s("quarantine");
    let sock = t.s("ctl.sock");
    let mut args = vec![
        "--enforce",
        "--policy",
        policy,
        "--quarantine",
        &q,
        "--control-socket",
        &sock,
        "--no-prompt",
    ];
    args.extend_from_slice(extra);
    abm_run(t, ws, &args, cmd)
}

/// Runs perl statements, each printing `label=ok` or `label=<errno>`.
fn perl(steps: &[(&str, &str)]) -> Vec<String> {
    let mut script = String::from("use Fcntl; $| = 1; ");
    for (label, expr) in steps {
        script.push_str(&format!(
            "print \"{label}=\", (({expr}) ? \"ok\" : 0 + $!), \"\\n\"; "
        ));
    }
    vec!["perl".into(), "-e".into(), script]
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `label=result` lines the command printed.
fn outcomes(run: &Run) -> BTreeMap<String, String> {
    String::from_utf8_lossy(&run.output.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The denial record of `op` on `path`.
fn denial<'a>(run: &'a Run, op: &str, path: &str) -> &'a Value {
    let found: Vec<&Value> = run
        .events()
        .filter(|e| e["op"] == op && e["path"] == path && e["result_note"] == "denied_by_seccomp")
        .collect();
    assert!(
        !found.is_empty(),
        "no denial of {op} {path}; events:\n{}\nstderr:\n{}",
        run.events()
            .map(|e| format!(
                "{} {} {} {}",
                e["op"], e["path"], e["result"], e["result_note"]
            ))
            .collect::<Vec<_>>()
            .join("\n"),
        run.stderr()
    );
    found[0]
}

fn assert_denied_by(e: &Value, rule: &str) {
    assert_eq!(e["result"], -1, "{e}");
    assert_eq!(e["errno"], "EPERM", "{e}");
    assert_eq!(e["verdict"]["rule"], rule, "{e}");
    assert_eq!(e["verdict"]["treatment"], "deny", "{e}");
    let enf = &e["enforcement"];
    assert_eq!(enf["backend"], "seccomp", "{e}");
    assert_eq!(enf["decision"], "denied", "{e}");
    assert_eq!(enf["rule"], rule, "{e}");
    assert_eq!(enf["decided_by"], "policy", "{e}");
    assert!(
        enf["decided_at"].as_str().is_some_and(|s| s.ends_with('Z')),
        "{e}"
    );
}

/// A successful tracepoint record of `op` on `path`, decided by `rule`.
fn assert_allowed_by(run: &Run, op: &str, path: &str, rule: &str) {
    let e = run.one(op, path);
    assert!(e["result"].as_i64().is_some_and(|r| r >= 0), "{e}");
    assert!(e["result_note"].is_null(), "{e}");
    assert_eq!(e["verdict"]["rule"], rule, "{e}");
}

fn denials(run: &Run) -> Vec<&Value> {
    run.events()
        .filter(|e| e["result_note"] == "denied_by_seccomp")
        .collect()
}

fn notes<'a>(run: &'a Run, kind: &str) -> Vec<&'a Value> {
    run.records
        .iter()
        .filter(|r| r["type"] == "note" && r["kind"] == kind)
        .collect()
}

/// The trace is intact and its events are in ktime order.
fn assert_trace_sound(run: &Run) {
    let out = Command::new(ABM)
        .arg("verify")
        .arg(&run.trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "abm verify: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seal = run.records.last().unwrap();
    assert_eq!(seal["type"], "seal");
    assert_eq!(seal["ktime_regressions"], 0, "{seal}");
}

const KEEP_FREE: &str = r#"
version = 1

[[rule]]
id = "test.deny-keep"
reason = "keep/ must not change"
paths = ["${workspace}/keep/**"]
treatment = "deny"

[[rule]]
id = "test.allow-free"
reason = "free/ is scratch space"
paths = ["${workspace}/free/**"]
treatment = "accept"
"#;

fn keep_free_ws(tag: &str) -> TempDir {
    let ws = TempDir::new(tag);
    sh("mkdir -p keep/d free/d && echo keep > keep/f && echo free > free/f && chmod 644 keep/f free/f", ws.path());
    ws
}

#[test]
fn unlink_denied_in_nested_children_and_allowed_elsewhere() {
    require_seccomp!();
    let t = TempDir::new("enf-unlink");
    let ws = keep_free_ws("enf-unlink-ws");
    let policy = write_policy(&t, KEEP_FREE);
    // The filter is inherited: a grandchild through two shells is judged too.
    let p = perl(&[("keep", "unlink 'keep/f'"), ("free", "unlink 'free/f'")]);
    let inner = format!("perl -e '{}'", p[2].replace('\'', "'\\''"));
    let run = enforced(
        &t,
        ws.path(),
        &policy,
        &[],
        &["sh", "-c", "sh -c \"$0\"; rm keep/f", &inner],
    );
    let o = outcomes(&run);
    assert_eq!(o["keep"], EPERM, "{}", run.stderr());
    assert_eq!(o["free"], "ok");
    assert!(ws.join("keep/f").exists(), "denied unlink removed the file");
    assert!(!ws.join("free/f").exists());
    let ds: Vec<_> = run
        .events()
        .filter(|e| e["op"] == "unlink" && e["path"] == ws.s("keep/f"))
        .collect();
    assert_eq!(ds.len(), 2, "perl and rm were both denied");
    for d in ds {
        assert_denied_by(d, "test.deny-keep");
        assert!(
            d["syscall"] == "unlinkat" || d["syscall"] == "unlink",
            "{d}"
        );
    }
    assert!(denials(&run).iter().any(|d| d["comm"] == "rm"));
    assert_allowed_by(&run, "unlink", &ws.s("free/f"), "test.allow-free");
    assert!(
        run.stderr().contains("Operation not permitted"),
        "{}",
        run.stderr()
    );
    assert_trace_sound(&run);
    let h = &run.records[0];
    assert!(
        h["backends"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b == "seccomp"),
        "{h}"
    );
    assert_eq!(h["extra"]["enforcement"]["backend"], "seccomp", "{h}");
}

#[test]
fn rmdir_denied_and_allowed() {
    require_seccomp!();
    let t = TempDir::new("enf-rmdir");
    let ws = keep_free_ws("enf-rmdir-ws");
    let policy = write_policy(&t, KEEP_FREE);
    let p = perl(&[("keep", "rmdir 'keep/d'"), ("free", "rmdir 'free/d'")]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["keep"], EPERM, "{}", run.stderr());
    assert_eq!(o["free"], "ok");
    assert!(ws.join("keep/d").is_dir());
    assert!(!ws.join("free/d").exists());
    assert_denied_by(denial(&run, "rmdir", &ws.s("keep/d")), "test.deny-keep");
    assert_allowed_by(&run, "rmdir", &ws.s("free/d"), "test.allow-free");
}

#[test]
fn rename_denied_for_source_or_destination_and_allowed() {
    require_seccomp!();
    let t = TempDir::new("enf-rename");
    let ws = keep_free_ws("enf-rename-ws");
    sh("echo other > free/g", ws.path());
    let policy = write_policy(&t, KEEP_FREE);
    let p = perl(&[
        ("out", "rename 'keep/f', 'free/stolen'"),
        ("in", "rename 'free/g', 'keep/f'"),
        ("free", "rename 'free/f', 'free/h'"),
    ]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["out"], EPERM, "{}", run.stderr());
    assert_eq!(o["in"], EPERM);
    assert_eq!(o["free"], "ok");
    assert_eq!(
        std::fs::read_to_string(ws.join("keep/f")).unwrap(),
        "keep\n"
    );
    assert!(ws.join("free/g").exists() && !ws.join("free/stolen").exists());
    let d = denial(&run, "rename", &ws.s("keep/f"));
    assert_denied_by(d, "test.deny-keep");
    assert_eq!(d["path2"], ws.s("free/stolen"));
    let d = denial(&run, "rename", &ws.s("free/g"));
    assert_eq!(d["path2"], ws.s("keep/f"));
    assert_denied_by(d, "test.deny-keep");
    assert_allowed_by(&run, "rename", &ws.s("free/f"), "test.allow-free");
}

#[test]
fn chmod_denied_and_allowed() {
    require_seccomp!();
    let t = TempDir::new("enf-chmod");
    let ws = keep_free_ws("enf-chmod-ws");
    let policy = write_policy(&t, KEEP_FREE);
    let p = perl(&[
        ("keep", "chmod 0600, 'keep/f'"),
        ("free", "chmod 0600, 'free/f'"),
    ]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["keep"], EPERM, "{}", run.stderr());
    assert_eq!(o["free"], "ok");
    let mode = |p: &str| std::fs::metadata(ws.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("keep/f"), 0o644);
    assert_eq!(mode("free/f"), 0o600);
    let d = denial(&run, "chmod", &ws.s("keep/f"));
    assert_denied_by(d, "test.deny-keep");
    assert_eq!(d["mode"], 0o600);
    assert_allowed_by(&run, "chmod", &ws.s("free/f"), "test.allow-free");
}

#[test]
fn chown_denied_and_allowed() {
    require_seccomp!();
    let t = TempDir::new("enf-chown");
    let ws = keep_free_ws("enf-chown-ws");
    let policy = write_policy(&t, KEEP_FREE);
    let p = perl(&[
        ("keep", "chown 1234, 5678, 'keep/f'"),
        ("free", "chown 1234, 5678, 'free/f'"),
    ]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["keep"], EPERM, "{}", run.stderr());
    assert_eq!(o["free"], "ok");
    assert_eq!(std::fs::metadata(ws.join("keep/f")).unwrap().uid(), 0);
    assert_eq!(std::fs::metadata(ws.join("free/f")).unwrap().uid(), 1234);
    let d = denial(&run, "chown", &ws.s("keep/f"));
    assert_denied_by(d, "test.deny-keep");
    assert_eq!(d["owner_uid"], 1234);
    assert_eq!(d["owner_gid"], 5678);
    assert_allowed_by(&run, "chown", &ws.s("free/f"), "test.allow-free");
}

#[test]
fn truncate_and_ftruncate_denied_and_allowed() {
    require_seccomp!();
    let t = TempDir::new("enf-trunc");
    let ws = keep_free_ws("enf-trunc-ws");
    sh("echo keep2 > keep/g", ws.path());
    // Only `truncate` is denied: the read-write open before ftruncate is a
    // `write` and goes through, so the fd-based call itself is judged.
    let policy = write_policy(
        &t,
        r#"
version = 1

[[rule]]
id = "test.no-truncate-keep"
reason = "keep/ must not shrink"
ops = ["truncate"]
paths = ["${workspace}/keep/**"]
treatment = "deny"

[[rule]]
id = "test.allow-free"
reason = "free/ is scratch space"
paths = ["${workspace}/free/**"]
treatment = "accept"
"#,
    );
    let p = perl(&[
        ("path", "truncate 'keep/f', 0"),
        ("fd", "open(FH, '+<', 'keep/g') && truncate(FH, 0)"),
        ("free", "truncate 'free/f', 0"),
    ]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["path"], EPERM, "{}", run.stderr());
    assert_eq!(o["fd"], EPERM);
    assert_eq!(o["free"], "ok");
    assert_eq!(
        std::fs::read_to_string(ws.join("keep/f")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("keep/g")).unwrap(),
        "keep2\n"
    );
    assert_eq!(std::fs::metadata(ws.join("free/f")).unwrap().len(), 0);
    let d = denial(&run, "truncate", &ws.s("keep/f"));
    assert_denied_by(d, "test.no-truncate-keep");
    assert_eq!(d["syscall"], "truncate");
    let d = denial(&run, "truncate", &ws.s("keep/g"));
    assert_denied_by(d, "test.no-truncate-keep");
    assert_eq!(d["syscall"], "ftruncate");
    assert_allowed_by(&run, "truncate", &ws.s("free/f"), "test.allow-free");
}

#[test]
fn o_trunc_open_denied_and_allowed_and_read_only_opens_pass() {
    require_seccomp!();
    let t = TempDir::new("enf-otrunc");
    let ws = keep_free_ws("enf-otrunc-ws");
    let policy = write_policy(&t, KEEP_FREE);
    let p = perl(&[
        ("keep", "sysopen(my $h, 'keep/f', O_WRONLY|O_TRUNC)"),
        ("read", "sysopen(my $h, 'keep/f', O_RDONLY)"),
        ("free", "sysopen(my $h, 'free/f', O_WRONLY|O_TRUNC)"),
    ]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    let o = outcomes(&run);
    assert_eq!(o["keep"], EPERM, "{}", run.stderr());
    assert_eq!(o["read"], "ok", "a read-only open is never judged");
    assert_eq!(o["free"], "ok");
    assert_eq!(
        std::fs::read_to_string(ws.join("keep/f")).unwrap(),
        "keep\n"
    );
    assert_eq!(std::fs::metadata(ws.join("free/f")).unwrap().len(), 0);
    let d = denial(&run, "truncate", &ws.s("keep/f"));
    assert_denied_by(d, "test.deny-keep");
    assert_eq!(d["syscall"], "openat");
    assert!(
        d["flag_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "O_TRUNC"),
        "{d}"
    );
    assert_allowed_by(&run, "truncate", &ws.s("free/f"), "test.allow-free");
    // The shell's `>` (O_CREAT|O_WRONLY|O_TRUNC) is refused the same way.
    let run = enforced(
        &t,
        ws.path(),
        &policy,
        &[],
        &["sh", "-c", "echo new > keep/f"],
    );
    assert!(!run.output.status.success());
    assert_eq!(
        std::fs::read_to_string(ws.join("keep/f")).unwrap(),
        "keep\n"
    );
    assert_denied_by(denial(&run, "truncate", &ws.s("keep/f")), "test.deny-keep");
}

#[test]
fn exec_denied_does_not_run_and_allowed_exec_runs() {
    require_seccomp!();
    let t = TempDir::new("enf-exec");
    let ws = TempDir::new("enf-exec-ws");
    let policy = write_policy(
        &t,
        r#"
version = 1

[[rule]]
id = "test.no-touch"
reason = "touch is not allowed here"
ops = ["exec"]
program = ["touch"]
treatment = "deny"
"#,
    );
    let run = enforced(
        &t,
        ws.path(),
        &policy,
        &[],
        &[
            "sh",
            "-c",
            "touch made; echo touch=$?; ls >/dev/null; echo ls=$?",
        ],
    );
    let o = outcomes(&run);
    assert_ne!(o["touch"], "0", "{}", run.stderr());
    assert_eq!(o["ls"], "0");
    assert!(!ws.join("made").exists(), "the denied program ran");
    let d = denial(&run, "exec", "/usr/bin/touch");
    assert_denied_by(d, "test.no-touch");
    assert_eq!(d["argv"], serde_json::json!(["touch", "made"]));
    assert_eq!(d["cwd"], ws.path().to_string_lossy().as_ref());
    let ls = run
        .events()
        .find(|e| e["op"] == "exec" && e["path"] == "/usr/bin/ls")
        .expect("ls exec recorded");
    assert_eq!(ls["result"], 0);
    assert_eq!(ls["verdict"]["rule"], "default");
    assert_trace_sound(&run);
}

/// Polls `abm pending` until a request shows up.
fn wait_pending(sock: &str) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let out = Command::new(ABM)
            .args(["pending", "--json", "--socket", sock])
            .output()
            .unwrap();
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if let Some(list) = v.as_array().filter(|l| !l.is_empty()) {
                return list.clone();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no pending request appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn confirm_approved_from_another_process_through_the_control_socket() {
    require_seccomp!();
    let t = TempDir::new("enf-approve");
    let ws = TempDir::new("enf-approve-ws");
    sh("echo v > victim && echo w > victim2", ws.path());
    let policy = write_policy(&t, CONFIRM);
    let (child, trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &["--quiet", "--confirm-timeout", "30"],
        &["sh", "-c", "rm victim; echo rc=$?"],
    );
    let sock = t.s("ctl.sock");
    let pending = wait_pending(&sock);
    assert_eq!(pending.len(), 1, "{pending:?}");
    let p = &pending[0];
    assert_eq!(p["op"], "unlink");
    assert_eq!(p["path"], ws.s("victim"));
    assert_eq!(p["rule"], "test.ask");
    assert!(ws.join("victim").exists(), "the call waits");
    // Deny of an unknown id is an error, not a crash.
    let out = Command::new(ABM)
        .args(["deny", "999", "--socket", &sock])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let id = p["id"].as_u64().unwrap().to_string();
    let out = Command::new(ABM)
        .args(["approve", &id, "--socket", &sock])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "rc=0");
    assert!(!ws.join("victim").exists());
    assert!(
        !Path::new(&sock).exists(),
        "the control socket is removed at the end"
    );
    let records = read_records(&trace);
    let note = records
        .iter()
        .find(|r| {
            r["type"] == "note"
                && r["kind"] == "enforcement"
                && r["body"]["enforcement"]["decision"] == "approved"
        })
        .expect("approval note");
    let enf = &note["body"]["enforcement"];
    assert_eq!(enf["decided_by"], "control:0", "{note}");
    assert_eq!(enf["rule"], "test.ask");
    assert!(enf["decided_at"].is_string() && enf["requested_at"].is_string());
    let ev = records
        .iter()
        .find(|r| r["type"] == "event" && r["op"] == "unlink" && r["path"] == ws.s("victim"))
        .expect("unlink event");
    assert_eq!(ev["result"], 0, "{ev}");
    assert_eq!(ev["verdict"]["treatment"], "confirm");
    assert_eq!(ev["enforcement"]["decision"], "approved", "{ev}");
    assert!(records
        .iter()
        .any(|r| r["type"] == "note" && r["body"]["decision"] == "pending"));
}

#[test]
fn confirm_denied_from_another_process() {
    require_seccomp!();
    let t = TempDir::new("enf-deny");
    let ws = TempDir::new("enf-deny-ws");
    sh("echo v > victim", ws.path());
    let policy = write_policy(&t, CONFIRM);
    let (child, trace) = spawn_enforced(
        &t,
        ws.path(),
        &policy,
        &["--quiet", "--confirm-timeout", "30"],
        &["rm", "victim"],
    );
    let sock = t.s("ctl.sock");
    let id = wait_pending(&sock)[0]["id"].as_u64().unwrap().to_string();
    let out = Command::new(ABM)
        .args(["deny", &id, "--socket", &sock])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "rm must fail");
    assert!(ws.join("victim").exists());
    let records = read_records(&trace);
    let d = records
        .iter()
        .find(|r| r["type"] == "event" && r["result_note"] == "denied_by_seccomp")
        .expect("denial event");
    assert_eq!(d["enforcement"]["decision"], "denied");
    assert_eq!(d["enforcement"]["decided_by"], "control:0");
    assert_eq!(d["verdict"]["rule"], "test.ask");
}

#[test]
fn confirm_without_an_answer_times_out_and_denies() {
    require_seccomp!();
    let t = TempDir::new("enf-timeout");
    let ws = TempDir::new("enf-timeout-ws");
    sh("echo v > victim", ws.path());
    let policy = write_policy(&t, CONFIRM);
    let start = Instant::now();
    let p = perl(&[("rm", "unlink 'victim'")]);
    let run = enforced(
        &t,
        ws.path(),
        &policy,
        &["--confirm-timeout", "1"],
        &as_strs(&p),
    );
    let took = start.elapsed();
    assert_eq!(outcomes(&run)["rm"], EPERM, "{}", run.stderr());
    assert!(
        took >= Duration::from_secs(1),
        "denied before the timeout: {took:?}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(ws.join("victim").exists());
    let d = denial(&run, "unlink", &ws.s("victim"));
    assert_eq!(d["enforcement"]["decision"], "timeout", "{d}");
    assert_eq!(d["enforcement"]["decided_by"], "timeout");
    assert_eq!(d["enforcement"]["rule"], "test.ask");
    assert!(
        d["enforcement"]["waited_ms"].as_u64().unwrap() >= 900,
        "{d}"
    );
    assert_trace_sound(&run);
}

const PRESERVE: &str = r#"
version = 1

[[rule]]
id = "test.keep-a-copy"
reason = "keep a copy of what goes away"
paths = ["${workspace}/tree/**", "${workspace}/tree", "${workspace}/doc*"]
treatment = "preserve"
"#;

/// path -> (kind, mode, content or link target)
fn snapshot(root: &Path) -> BTreeMap<String, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, p: &Path, out: &mut BTreeMap<String, (String, u32, Vec<u8>)>) {
        let m = std::fs::symlink_metadata(p).unwrap();
        let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
        let mode = m.permissions().mode() & 0o7777;
        if m.file_type().is_symlink() {
            let target = std::fs::read_link(p).unwrap();
            out.insert(
                rel,
                (
                    "symlink".into(),
                    0,
                    target.to_string_lossy().as_bytes().to_vec(),
                ),
            );
        } else if m.is_dir() {
            out.insert(rel, ("dir".into(), mode, vec![]));
            let mut kids: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            kids.sort();
            for k in kids {
                walk(base, &k, out);
            }
        } else {
            out.insert(rel, ("file".into(), mode, std::fs::read(p).unwrap()));
        }
    }
    walk(root, &root.join("tree"), &mut out);
    out
}

fn make_tree(ws: &Path) {
    sh(
        "mkdir -p tree/a/b tree/c tree/empty && echo one > tree/a/b/f1 && printf 'two\\000\\377bin' > tree/a/f2 \
         && : > tree/c/empty-file && head -c 100000 /dev/urandom > tree/c/big && ln -s ../a/f2 tree/c/link \
         && chmod 640 tree/a/f2 && chmod 700 tree/a/b && chmod 750 tree/c && chmod 4755 tree/c/big && chmod 555 tree/empty",
        ws,
    );
}

fn undo(args: &[&str]) -> std::process::Output {
    Command::new(ABM).arg("undo").args(args).output().unwrap()
}

#[test]
fn undo_brings_back_a_preserved_tree_byte_for_byte() {
    require_seccomp!();
    let t = TempDir::new("enf-undo");
    let ws = TempDir::new("enf-undo-ws");
    make_tree(ws.path());
    let before = snapshot(ws.path());
    let policy = write_policy(&t, PRESERVE);
    let run = enforced(&t, ws.path(), &policy, &[], &["rm", "-rf", "tree"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(!ws.join("tree").exists(), "rm -rf went through");
    assert!(denials(&run).is_empty());
    // Every unlink and rmdir is recorded with the preservation it got.
    let q = t.join("quarantine");
    for f in [
        "tree/a/b/f1",
        "tree/a/f2",
        "tree/c/big",
        "tree/c/link",
        "tree/c/empty-file",
    ] {
        let e = run.one("unlink", &ws.s(f));
        assert_eq!(e["result"], 0);
        assert_eq!(e["enforcement"]["decision"], "preserved", "{e}");
        assert_eq!(e["enforcement"]["rule"], "test.keep-a-copy");
    }
    let ns = notes(&run, "enforcement");
    assert_eq!(
        ns.iter()
            .filter(|n| n["body"]["enforcement"]["decision"] == "preserved")
            .count(),
        10,
        "4 files, 1 symlink, 5 directories"
    );
    let manifest = std::fs::read_to_string(q.join("manifest.jsonl")).unwrap();
    let f1 = manifest
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["path"] == ws.s("tree/a/b/f1"))
        .unwrap();
    assert_eq!(f1["method"], "hardlink", "same file system: O(1) link");
    assert_eq!(f1["meta"]["size"], 4);
    assert!(f1["sha256"].is_string());
    // Listing changes nothing.
    let out = undo(&[&t.s("quarantine")]);
    assert!(out.status.success());
    assert!(!ws.join("tree").exists());
    // Restore by trace path.
    let out = undo(&[run.trace.to_str().unwrap(), "--all"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(ws.path()), before, "restored tree differs");
    // Twice is harmless.
    let out = undo(&[&t.s("quarantine"), "--all"]);
    assert!(out.status.success());
    assert_eq!(snapshot(ws.path()), before);
}

#[test]
fn undo_reports_conflicts_and_force_keeps_the_occupant() {
    require_seccomp!();
    let t = TempDir::new("enf-conflict");
    let ws = TempDir::new("enf-conflict-ws");
    sh(
        "echo original > doc && echo second > doc2 && echo moved > src",
        ws.path(),
    );
    let policy = write_policy(&t, PRESERVE);
    // Overwrite doc (O_TRUNC: a copy is kept), delete doc2, rename src to doc3.
    let run = enforced(
        &t,
        ws.path(),
        &policy,
        &[],
        &["sh", "-c", "echo clobbered > doc && rm doc2 && mv src doc3"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "clobbered\n"
    );
    let e = run.one("truncate", &ws.s("doc"));
    assert_eq!(e["enforcement"]["decision"], "preserved", "{e}");
    // Someone writes a new doc2 before the undo.
    std::fs::write(ws.join("doc2"), "new content\n").unwrap();
    let q = t.s("quarantine");
    let out = undo(&[&q, "--all"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "conflicts exit 1: {stdout}");
    assert!(stdout.contains("CONFLICT"), "{stdout}");
    assert!(
        stdout.contains("changed after the run ended: a file was created there"),
        "{stdout}"
    );
    // doc still holds what the action wrote: it is restored (the action's
    // version moved into displaced/).
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "original\n",
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("doc2")).unwrap(),
        "new content\n",
        "not overwritten"
    );
    // The rename had no conflict and was undone.
    assert!(
        !ws.join("doc3").exists() && ws.join("src").exists(),
        "{stdout}"
    );
    let out = undo(&[&q, "--all", "--force"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("doc2")).unwrap(),
        "second\n"
    );
    assert_eq!(std::fs::read_to_string(ws.join("src")).unwrap(), "moved\n");
    assert!(!ws.join("doc3").exists());
    // The displaced versions are kept.
    let displaced: Vec<String> = std::fs::read_dir(t.join("quarantine/displaced"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        displaced.contains(&"clobbered\n".to_owned()),
        "{displaced:?}"
    );
    assert!(
        displaced.contains(&"new content\n".to_owned()),
        "{displaced:?}"
    );
}

#[test]
fn preserve_across_file_systems_copies() {
    require_seccomp!();
    let shm = Path::new("/dev/shm");
    let t = TempDir::new("enf-xfs");
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if dev(shm).is_none() || dev(shm) == dev(t.path()) {
        common::skip_or_fail("other-fs", "/dev/shm is not a separate file system");
        return;
    }
    let ws = PathBuf::from(format!("/dev/shm/abm-test-xfs-{}", std::process::id()));
    std::fs::create_dir_all(&ws).unwrap();
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _c = Cleanup(ws.clone());
    make_tree(&ws);
    let before = snapshot(&ws);
    let policy = write_policy(&t, PRESERVE);
    let run = enforced(&t, &ws, &policy, &[], &["rm", "-rf", "tree"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(!ws.join("tree").exists());
    let manifest = std::fs::read_to_string(t.join("quarantine/manifest.jsonl")).unwrap();
    let big = manifest
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["path"] == format!("{}/tree/c/big", ws.display()))
        .unwrap();
    assert!(
        big["method"] == "copy" || big["method"] == "reflink",
        "{big}"
    );
    let out = undo(&[&t.s("quarantine"), "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(snapshot(&ws), before);
}

#[test]
fn benign_workload_under_the_default_policy_has_no_denials() {
    require_seccomp!();
    for p in ["git", "make", "cc"] {
        if !have(p) {
            common::skip_or_fail(&format!("prog:{p}"), &format!("{p} not installed"));
            return;
        }
    }
    let t = TempDir::new("enf-benign");
    let ws = TempDir::new("enf-benign-ws");
    let script = r#"
set -e
git init -q .
git config user.email dev@example.com && git config user.name dev
printf 'int main(void){return 0;}\n' > main.c
printf 'all: out/app\nout/app: main.c\n\tmkdir -p out\n\tcc -o out/app main.c\nclean:\n\trm -rf out\n' > Makefile
echo '# project' > README.md
git add -A && git commit -qm init
git checkout -q -b feature
echo 'more text' >> README.md
sed -i 's/project/Project/' README.md
mv README.md README.tmp && mv README.tmp README.md
make -s && make -s clean && make -s
./out/app
chmod 755 out/app
mkdir -p target/debug/deps && echo artefact > target/debug/deps/lib.rlib.tmp && mv target/debug/deps/lib.rlib.tmp target/debug/deps/lib.rlib
T=$(mktemp -d) && echo scratch > "$T/x" && cp "$T/x" scratch.txt && rm -rf "$T"
rm -f scratch.txt
echo 'to stderr by name' > /dev/stderr
python3 -c "import os; fd = os.open('jobs', os.O_WRONLY | os.O_CREAT, 0o644); f = open('/dev/fd/%d' % fd, 'w'); f.write('token'); f.close()"
test "$(cat jobs)" = token && rm jobs
git add -A && git commit -qm feature
git checkout -q -
echo done
"#;
    let run = abm_run(
        &t,
        ws.path(),
        &[
            "--enforce",
            "--no-prompt",
            "--confirm-timeout",
            "2",
            "--quarantine",
            &t.s("q"),
            "--control-socket",
            &t.s("ctl.sock"),
        ],
        &["sh", "-c", script],
    );
    assert!(
        run.output.status.success(),
        "benign workload failed:\n{}",
        run.stderr()
    );
    assert!(String::from_utf8_lossy(&run.output.stdout).contains("done"));
    let ds = denials(&run);
    assert!(ds.is_empty(), "denials in a benign workload: {ds:#?}");
    let asked: Vec<_> = notes(&run, "enforcement")
        .into_iter()
        .filter(|n| n["body"]["decision"] == "pending")
        .collect();
    assert!(
        asked.is_empty(),
        "confirmations in a benign workload: {asked:#?}"
    );
    assert!(
        run.events().filter(|e| e["op"] == "unlink").count() > 3,
        "the workload was traced"
    );
}

#[test]
fn enforce_without_a_backend_fails_before_running_the_command() {
    require_kernel!();
    let t = TempDir::new("enf-nobackend");
    let ws = TempDir::new("enf-nobackend-ws");
    let trace = t.join("trace.jsonl");
    let run = |backend: &str| {
        Command::new(ABM)
            .args(["run", "--enforce", "--enforce-backend", backend, "--trace"])
            .arg(&trace)
            .arg("--workspace")
            .arg(ws.path())
            .args(["--", "touch", "marker"])
            .current_dir(ws.path())
            .env("ABM_TEST_DISABLE_SECCOMP", "1")
            .output()
            .unwrap()
    };
    let out = run("seccomp");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("seccomp backend does not work here")
            && err.contains("disabled by ABM_TEST_DISABLE_SECCOMP"),
        "{err}"
    );
    assert!(!ws.join("marker").exists(), "the command ran");
    assert!(!trace.exists(), "nothing is started before the check");
    // `auto` fails the same way where BPF LSM cannot enforce either.
    let doctor = Command::new(ABM)
        .args(["doctor", "--json"])
        .env("ABM_TEST_DISABLE_SECCOMP", "1")
        .output()
        .unwrap();
    let caps: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let cap = |n: &str| {
        caps.as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(cap("seccomp_user_notif")["available"], false);
    if cap("bpf_lsm")["available"] != true {
        let out = run("auto");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no enforcement backend works here"), "{err}");
        assert!(
            err.contains("bpf_lsm:") && err.contains("seccomp:"),
            "{err}"
        );
        assert!(!ws.join("marker").exists());
        assert_eq!(cap("enforce")["available"], false);
    }
}

#[test]
fn doctor_reports_seccomp_user_notification() {
    require_seccomp!();
    let out = Command::new(ABM)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let caps: Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |n: &str| {
        caps.as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .cloned()
            .expect(n)
    };
    assert_eq!(find("seccomp_user_notif")["available"], true, "{caps}");
    assert!(find("bpf_lsm")["detail"].is_string());
    assert_eq!(find("enforce")["available"], true);
}

#[test]
fn io_uring_setup_is_refused_and_recorded() {
    require_seccomp!();
    let t = TempDir::new("enf-uring");
    let ws = TempDir::new("enf-uring-ws");
    let policy = write_policy(&t, KEEP_FREE);
    // io_uring_setup(1, params): refused with EPERM under --enforce.
    let p = perl(&[("uring", "syscall(425, 1, my $p = \"\\0\" x 120) >= 0")]);
    let run = enforced(&t, ws.path(), &policy, &[], &as_strs(&p));
    assert_eq!(outcomes(&run)["uring"], EPERM, "{}", run.stderr());
    let d = run
        .events()
        .find(|e| e["op"] == "io_uring_setup" && e["result_note"] == "denied_by_seccomp")
        .expect("io_uring denial");
    assert_eq!(d["enforcement"]["rule"], "builtin.enforce-io-uring");
}

#[test]
fn the_quarantine_and_control_socket_are_out_of_reach() {
    require_seccomp!();
    let t = TempDir::new("enf-guard");
    let ws = TempDir::new("enf-guard-ws");
    sh("echo x > doc", ws.path());
    let policy = write_policy(&t, PRESERVE);
    let q = t.s("quarantine");
    let script = format!("rm doc; rm -rf {q}; rm -f {}; echo rc=$?", t.s("ctl.sock"));
    let run = enforced(&t, ws.path(), &policy, &[], &["sh", "-c", &script]);
    assert!(std::fs::read_to_string(t.join("quarantine/manifest.jsonl"))
        .unwrap()
        .contains("doc"));
    let guarded: Vec<_> = denials(&run)
        .into_iter()
        .filter(|d| d["verdict"]["rule"] == "builtin.enforce-integrity")
        .collect();
    assert!(!guarded.is_empty(), "{}", run.stderr());
    let out = undo(&[&q, "--all"]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(ws.join("doc")).unwrap(), "x\n");
}
