//! Telling the agent why and asking the human once, on the real kernel with
//! real commands: the reason line on a refused command's own stderr; the
//! Claude Code hook (PreToolUse judgment, PostToolUse report from a live
//! `abm run --enforce`); one question for a PATH search through three
//! `git`s; runs that end cleanly on SIGHUP and stop their tree when abm is
//! killed; concurrent runs whose traces share a name; the summary.
//!
//! These tests need root and seccomp user notification; without them they
//! fail (with the reason) instead of passing as skipped.
mod common;

use std::{
    io::Write as _,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use common::*;
use serde_json::{json, Value};

fn write(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
}

const DENY_KEEP: &str = r#"
version = 1

[[rule]]
id = "test.keep"
reason = "keep files are never deleted"
paths = ["${workspace}/keep*"]
ops = ["unlink"]
treatment = "deny"

[[rule]]
id = "test.ask"
reason = "a human decides about victim files"
paths = ["${workspace}/victim*"]
ops = ["unlink"]
treatment = "confirm"
"#;

fn run_enforced(t: &TempDir, ws: &Path, extra: &[&str], cmd: &[&str]) -> Run {
    let policy = t.join("policy.toml");
    write(&policy, DENY_KEEP);
    let mut args = vec![
        "--enforce".to_owned(),
        "--enforce-backend".into(),
        "seccomp".into(),
        "--no-prompt".into(),
        "--policy".into(),
        policy.to_string_lossy().into_owned(),
        "--control-socket".into(),
        t.s("ctl.sock"),
        "--quarantine".into(),
        t.s("q"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    abm_run(t, ws, &a, cmd)
}

#[test]
fn a_denied_rm_prints_the_rule_and_the_way_out_on_its_own_stderr() {
    require_seccomp_enforce();
    let t = TempDir::new("fb-notify");
    let ws = TempDir::new("fb-notify-ws");
    sh("echo k > keep.txt && echo v > victim.txt", ws.path());
    // The command's stderr goes to a file abm does not write itself.
    let run = run_enforced(
        &t,
        ws.path(),
        &["--confirm-timeout", "0.5"],
        &[
            "sh",
            "-c",
            "rm keep.txt 2>deny.err; rm victim.txt 2>ask.err; true",
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(ws.join("keep.txt").exists() && ws.join("victim.txt").exists());
    let deny = std::fs::read_to_string(ws.join("deny.err")).unwrap();
    let want = format!(
        "abm: denied unlink {} (test.keep: keep files are never deleted",
        ws.s("keep.txt")
    );
    assert!(deny.starts_with(&want), "got:\n{deny}");
    assert!(
        deny.contains(
            "). No approval path: the policy denies this; ask the user to change the policy.\n"
        ),
        "got:\n{deny}"
    );
    assert!(
        deny.contains("Operation not permitted"),
        "rm's own message follows: {deny}"
    );
    let ask = std::fs::read_to_string(ws.join("ask.err")).unwrap();
    let want = format!(
        "abm: timed out unlink {} (test.ask: a human decides about victim files",
        ws.s("victim.txt")
    );
    assert!(ask.starts_with(&want), "got:\n{ask}");
    assert!(
        ask.contains("). Ask the user; they can allow it with: abm approve 1\n"),
        "got:\n{ask}"
    );
    // abm's own stderr does not carry these lines (only the caller's).
    assert!(
        !run.stderr().contains("abm: denied unlink"),
        "{}",
        run.stderr()
    );
    let summary = run
        .records
        .iter()
        .find(|r| r["type"] == "note" && r["kind"] == "enforcement_summary")
        .expect("enforcement summary");
    assert_eq!(summary["body"]["notified"]["sent"], 2, "{summary}");

    // --no-notify: nothing on the caller's stderr but the command's own.
    let t2 = TempDir::new("fb-notify-off");
    let run = run_enforced(
        &t2,
        ws.path(),
        &["--no-notify"],
        &["sh", "-c", "rm keep.txt 2>off.err; true"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let off = std::fs::read_to_string(ws.join("off.err")).unwrap();
    assert!(!off.contains("abm:"), "{off}");
    assert!(off.contains("Operation not permitted"), "{off}");
}

/// Runs `abm hook claude-code [args]` with `input` on stdin.
fn hook(input: &Value, args: &[&str]) -> Value {
    let mut c = Command::new(ABM)
        .args(["hook", "claude-code"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "hook failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {:?}", out.stdout))
}

/// A PreToolUse input of the Bash tool, as Claude Code sends it.
fn pre_tool_use(cwd: &Path, command: &str, id: &str) -> Value {
    json!({
        "session_id": "5f0c7a43-d0a9-4d55-9d3e-2f1d2c7c8b11",
        "transcript_path": "/root/.claude/projects/-w/5f0c7a43-d0a9-4d55-9d3e-2f1d2c7c8b11.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "Run a command" },
        "tool_use_id": id,
    })
}

#[test]
fn claude_code_pre_tool_use_denies_and_asks_with_the_reason() {
    // Pure judgment: no kernel needed.
    let ws = TempDir::new("fb-hook-pre");
    let st = TempDir::new("fb-hook-state");
    let state = st.s("state");
    let args = ["--state-dir", state.as_str()];
    let out = hook(
        &pre_tool_use(ws.path(), "cd /tmp && rm -rf /etc", "toolu_01"),
        &args,
    );
    let h = &out["hookSpecificOutput"];
    assert_eq!(h["hookEventName"], "PreToolUse", "{out}");
    assert_eq!(h["permissionDecision"], "deny", "{out}");
    let reason = h["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("host.rm-system-dirs"), "{reason}");
    assert!(reason.contains("`rm -rf /etc`"), "{reason}");

    let out = hook(
        &pre_tool_use(
            ws.path(),
            "git status && git push --force origin main",
            "toolu_02",
        ),
        &args,
    );
    let h = &out["hookSpecificOutput"];
    assert_eq!(h["permissionDecision"], "ask", "{out}");
    assert!(h["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("repo.push-force"));

    let out = hook(
        &pre_tool_use(ws.path(), "ls -la | grep foo", "toolu_03"),
        &args,
    );
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "allow",
        "{out}"
    );
    // Not fully parsed: no allow, the harness decides.
    let out = hook(
        &pre_tool_use(ws.path(), "ls $(cat dirs)", "toolu_04"),
        &args,
    );
    assert!(
        out["hookSpecificOutput"]["permissionDecision"].is_null(),
        "{out}"
    );
    assert!(out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("Not fully parsed (command substitution)"));
    // Another tool: nothing to say.
    let mut other = pre_tool_use(ws.path(), "x", "toolu_05");
    other["tool_name"] = json!("Read");
    other["tool_input"] = json!({ "file_path": "/etc/passwd" });
    assert_eq!(hook(&other, &args), json!({}));
}

#[test]
fn claude_code_post_tool_use_returns_the_verdicts_of_the_call() {
    require_seccomp_enforce();
    let t = TempDir::new("fb-hook-post");
    let ws = TempDir::new("fb-hook-post-ws");
    sh("echo k > keep.txt && echo x > scratch.txt", ws.path());
    let policy = t.join("policy.toml");
    write(&policy, DENY_KEEP);
    let sock = t.s("ctl.sock");
    let state = t.s("state");
    let args = ["--state-dir", state.as_str(), "--socket", sock.as_str()];
    // The agent: waits for the tool call to start, runs the command, stays.
    let trace = t.join("post.jsonl");
    let mut run = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args(["--enforce", "--enforce-backend", "seccomp", "--no-prompt", "--policy"])
        .arg(&policy)
        .args(["--control-socket", &sock, "--quarantine", &t.s("q"), "--"])
        .args([
            "sh",
            "-c",
            "while [ ! -e go ]; do sleep 0.05; done; rm scratch.txt; rm keep.txt 2>/dev/null; touch done; sleep 10",
        ])
        .current_dir(ws.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !Path::new(&sock).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no control socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let cmd = "rm scratch.txt; rm keep.txt";
    let pre = hook(&pre_tool_use(ws.path(), cmd, "toolu_post1"), &args);
    assert_eq!(
        pre["hookSpecificOutput"]["permissionDecision"], "allow",
        "{pre}"
    );
    sh("touch go", ws.path());
    while !ws.join("done").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the command did not run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut post_in = pre_tool_use(ws.path(), cmd, "toolu_post1");
    post_in["hook_event_name"] = json!("PostToolUse");
    post_in["tool_response"] = json!({
        "stdout": "", "stderr": "rm: cannot remove 'keep.txt': Operation not permitted",
        "interrupted": false, "isImage": false
    });
    // Records reach the control socket once ordered (a fraction of a second).
    let post = loop {
        let v = hook(&post_in, &args);
        if v["decision"] == "block" || start.elapsed() > Duration::from_secs(20) {
            break v;
        }
        // The state file is consumed: later polls use the window.
        std::thread::sleep(Duration::from_millis(200));
    };
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
    let _ = run.wait();
    assert_eq!(post["decision"], "block", "{post}");
    let reason = post["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "unlink {}: deny by test.keep (keep files are never deleted",
            ws.s("keep.txt")
        )),
        "{reason}"
    );
    let ctx = post["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(post["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert!(ctx.contains("test.keep"), "{ctx}");
    // The allowed delete is not reported as refused.
    assert!(!reason.contains("scratch.txt"), "{reason}");
    assert!(!ws.join("scratch.txt").exists() && ws.join("keep.txt").exists());
}

/// Three PATH entries, each with a `git`; Python's subprocess tries every
/// entry when exec fails.
#[test]
fn one_git_reset_through_three_path_entries_asks_once_and_a_no_sticks() {
    require_seccomp_enforce();
    assert!(have("git") && have("python3"), "git and python3 are needed");
    let t = TempDir::new("fb-path");
    let ws = TempDir::new("fb-path-ws");
    sh(
        "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x \
         && echo tracked > f && git add f && git -c user.name=t -c user.email=t@t commit -qm f \
         && echo changed > f",
        ws.path(),
    );
    let git = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let mut path = Vec::new();
    for d in ["a", "b", "c"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
        std::os::unix::fs::symlink(git.trim(), t.join(d).join("git")).unwrap();
        path.push(t.s(d));
    }
    let path = path.join(":");
    let script = format!(
        "import subprocess, os\n\
         env = dict(os.environ, PATH={path:?})\n\
         for i in range(2):\n\
         \x20   try:\n\
         \x20       r = subprocess.run(['git', 'reset', '--hard'], env=env).returncode\n\
         \x20   except PermissionError:\n\
         \x20       r = 'EPERM'\n\
         \x20   print('try', i, r, flush=True)\n"
    );
    let policy = t.join("policy.toml");
    write(&policy, "version = 1\n");
    let sock = t.s("ctl.sock");
    let trace = t.join("path.jsonl");
    let child = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args([
            "--enforce",
            "--enforce-backend",
            "seccomp",
            "--no-prompt",
            "--confirm-timeout",
            "30",
        ])
        .args(["--control-socket", &sock, "--quarantine", &t.s("q"), "--"])
        .args(["python3", "-c", &script])
        .current_dir(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Exactly one request, which says what the reset would discard.
    let start = Instant::now();
    let pending = loop {
        let out = Command::new(ABM)
            .args(["pending", "--json", "--socket", &sock])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if let Some(l) = v.as_array().filter(|l| !l.is_empty()) {
            break l.clone();
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no request");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(pending.len(), 1, "{pending:#?}");
    let p = &pending[0];
    assert_eq!(p["rule"], "repo.reset-hard", "{p}");
    let would = p["would"].as_str().unwrap_or("");
    assert!(
        would.starts_with("would discard 1 uncommitted change") && would.contains(": f"),
        "{p}"
    );
    let out = Command::new(ABM)
        .args(["deny", &p["id"].to_string(), "--socket", &sock])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("try 0 EPERM") && stdout.contains("try 1 EPERM"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("f")).unwrap(), "changed\n");
    let recs = read_records(&trace);
    let asked = recs
        .iter()
        .filter(|r| r["type"] == "note" && r["body"]["decision"] == "pending")
        .count();
    assert_eq!(asked, 1, "one question for the whole action");
    let refused: Vec<&Value> = recs
        .iter()
        .filter(|r| {
            r["type"] == "event" && r["op"] == "exec" && r["result_note"] == "denied_by_seccomp"
        })
        .collect();
    // Three PATH entries, twice: six refused execs, one human answer.
    assert_eq!(refused.len(), 6, "{refused:#?}");
    let by_answer = refused
        .iter()
        .filter(|r| r["enforcement"]["decided_by"] == format!("request:{}", p["id"]))
        .count();
    assert_eq!(by_answer, 5, "{refused:#?}");
    // Each refused command tells the agent (once per process: the PATH
    // search's other attempts are not repeated) why, what the reset would
    // discard, and which request a human can still approve.
    let line = format!(
        "abm: refused exec git reset --hard (repo.reset-hard: discards all uncommitted changes (git reset --hard) — git reset --hard: 1 file (1 modified since the index)). Ask the user; they can allow it with: abm approve {}",
        p["id"]
    );
    assert_eq!(
        stderr.lines().filter(|l| *l == line).count(),
        2,
        "{line}\n{stderr}"
    );
    assert!(!stderr.contains("No approval path"), "{stderr}");
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive: it runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn pids_in(p: &Path) -> Vec<i32> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// A tree with a background child and a double-forked daemon; each writes
/// its pid to `pids`.
const TREE: &str = "echo $$ >> pids; sleep 60 & echo $! >> pids; \
    (setsid sh -c 'echo $$ >> pids; exec sleep 61' &); sleep 62";

#[expect(
    clippy::zombie_processes,
    reason = "the child is returned to the caller, which waits for it"
)]
fn spawn_tree(t: &TempDir, ws: &Path, trace: &Path) -> (std::process::Child, Vec<i32>) {
    let _ = t;
    let mut child = Command::new(ABM)
        .args(["run", "--quiet", "--trace"])
        .arg(trace)
        .arg("--workspace")
        .arg(ws)
        .args(["--", "sh", "-c", TREE])
        .current_dir(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let p = pids_in(&ws.join("pids"));
        if p.len() >= 3 {
            return (child, p);
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the tree did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_dead(pids: &[i32], within: Duration) {
    let start = Instant::now();
    while pids.iter().any(|p| alive(*p)) {
        if start.elapsed() > within {
            for p in pids {
                // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            panic!("processes still running: {pids:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn verify(trace: &Path) -> (i32, String) {
    let out = Command::new(ABM).arg("verify").arg(trace).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn sighup_seals_the_trace_and_stops_the_tree() {
    require_seccomp_enforce();
    let t = TempDir::new("fb-hup");
    let ws = TempDir::new("fb-hup-ws");
    let trace = t.join("hup.jsonl");
    let (mut child, pids) = spawn_tree(&t, ws.path(), &trace);
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let st = child.wait().unwrap();
    wait_dead(&pids, Duration::from_secs(10));
    assert_ne!(
        st.code(),
        Some(129),
        "abm handled SIGHUP instead of dying of it"
    );
    let (code, text) = verify(&trace);
    assert_eq!(code, 0, "sealed and intact: {text}");
    let recs = read_records(&trace);
    let note = recs
        .iter()
        .find(|r| r["type"] == "note" && r["kind"] == "interrupted")
        .expect("interrupted note");
    assert_eq!(note["body"]["signal"], "SIGHUP", "{note}");
    let lsattr = Command::new("lsattr").arg(&trace).output().unwrap();
    let flags = String::from_utf8_lossy(&lsattr.stdout);
    assert!(
        !flags.split_whitespace().next().unwrap_or("").contains('a'),
        "{flags}"
    );
}

#[test]
fn kill_9_of_abm_stops_the_tree_and_leaves_a_verifiable_trace() {
    require_seccomp_enforce();
    let t = TempDir::new("fb-kill");
    let ws = TempDir::new("fb-kill-ws");
    let trace = t.join("kill.jsonl");
    let (mut child, pids) = spawn_tree(&t, ws.path(), &trace);
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    wait_dead(&pids, Duration::from_secs(10));
    let (code, text) = verify(&trace);
    assert_eq!(code, 2, "unsealed, records intact: {text}");
    // The lifeline cleared the append-only flag.
    let start = Instant::now();
    loop {
        let lsattr = Command::new("lsattr").arg(&trace).output().unwrap();
        let flags = String::from_utf8_lossy(&lsattr.stdout).into_owned();
        if !flags.split_whitespace().next().unwrap_or("").contains('a') {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{flags}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_concurrent_runs_with_the_same_trace_name_do_not_collide() {
    require_seccomp_enforce();
    let a = TempDir::new("fb-twin-a");
    let b = TempDir::new("fb-twin-b");
    let ws = TempDir::new("fb-twin-ws");
    let spawn = |d: &TempDir| {
        Command::new(ABM)
            .args(["run", "--quiet", "--trace"])
            .arg(d.join("run.jsonl"))
            .arg("--workspace")
            .arg(ws.path())
            .args([
                "--enforce",
                "--enforce-backend",
                "seccomp",
                "--no-prompt",
                "--",
                "sleep",
                "1.5",
            ])
            .current_dir(ws.path())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let ca = spawn(&a);
    let cb = spawn(&b);
    let oa = ca.wait_with_output().unwrap();
    let ob = cb.wait_with_output().unwrap();
    assert!(
        oa.status.success(),
        "{}",
        String::from_utf8_lossy(&oa.stderr)
    );
    assert!(
        ob.status.success(),
        "{}",
        String::from_utf8_lossy(&ob.stderr)
    );
    let enf = |d: &TempDir| read_records(&d.join("run.jsonl"))[0]["extra"]["enforcement"].clone();
    let (ea, eb) = (enf(&a), enf(&b));
    assert_ne!(ea["run_id"], eb["run_id"]);
    assert_ne!(ea["control_socket"], eb["control_socket"]);
    assert_ne!(ea["quarantine"], eb["quarantine"]);
    assert!(ea["run_id"].as_str().unwrap().starts_with("run-"), "{ea}");
    assert_eq!(verify(&a.join("run.jsonl")).0, 0);
    assert_eq!(verify(&b.join("run.jsonl")).0, 0);
}

const SUMMARY_POLICY: &str = r#"
version = 1

[[rule]]
id = "test.branch-force-delete"
reason = "Force-Deletes a Branch"
program = ["git"]
subcommand = ["branch"]
flags = ["-D"]
treatment = "audit"

[[rule]]
id = "test.tree"
reason = "Deletes In Tree"
paths = ["${workspace}/tree", "${workspace}/tree/**"]
ops = ["unlink", "rmdir"]
treatment = "audit"
"#;

#[test]
fn the_summary_keeps_case_groups_actions_and_records_exit_statuses() {
    require_seccomp_enforce();
    assert!(have("git"), "git is needed");
    let t = TempDir::new("fb-summary");
    let ws = TempDir::new("fb-summary-ws");
    sh(
        "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x \
         && git branch X-Upper3 && mkdir tree && touch tree/A tree/b tree/C",
        ws.path(),
    );
    let policy = t.join("policy.toml");
    write(&policy, SUMMARY_POLICY);
    let trace = t.join("s.jsonl");
    let out = Command::new(ABM)
        .args(["run", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .arg("--policy")
        .arg(&policy)
        .args([
            "--",
            "sh",
            "-c",
            "git branch -D X-Upper3 >/dev/null; rm -r tree; sh -c 'exit 3'; true",
        ])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("abm: flagged: audit git branch -D X-Upper3 (test.branch-force-delete: Force-Deletes a Branch)"),
        "{err}"
    );
    // One line for the whole `rm -r tree`, with its count.
    let rm: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("flagged:") && l.contains("`rm -r tree`"))
        .collect();
    assert_eq!(rm.len(), 1, "{err}");
    assert!(rm[0].contains("4 calls (unlink 3, rmdir 1)"), "{err}");
    assert!(rm[0].contains("Deletes In Tree"), "{err}");
    assert!(err.contains("abm:   exit 3: sh -c exit 3"), "{err}");
    let recs = read_records(&trace);
    // abm searched PATH itself: the command's first exec is its program,
    // not failed attempts in other PATH entries.
    let first = recs
        .iter()
        .find(|r| r["type"] == "event" && r["op"] == "exec")
        .unwrap();
    assert_eq!(first["result"], 0, "{first}");
    assert_eq!(first["argv"][0], "sh", "{first}");
    assert!(
        recs.iter()
            .any(|r| r["type"] == "event" && r["op"] == "exit" && r["result"] == 768),
        "the exit record carries the wait status"
    );
}
