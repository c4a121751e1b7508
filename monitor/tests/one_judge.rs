//! One judge (issue 39): the verdict of an action does not depend on the
//! mode that asked. The same session, from the same starting state, run
//! in observe mode and under `abm run --enforce --no-prompt` (seccomp,
//! which judges before each call) gives every action the same treatment;
//! `abm replay` of the observe trace gives the recorded ones; and
//! `abm hook` (which judges a command line before it runs) answers with
//! the treatment the run then gives that command. Real git, real pip, the
//! real abm binary; workspaces live under $HOME, not /tmp (which the
//! default pack treats as scratch).
//!
//! These tests need root and seccomp user notification; without them they
//! fail (with the reason) instead of passing as skipped.
mod common;

use std::{
    collections::BTreeMap,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use common::*;
use serde_json::{json, Value};

/// A workspace under $HOME (removed on drop): the default pack treats
/// /tmp as scratch, which would hide what these sessions measure.
fn ws(tag: &str) -> TempDir {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    TempDir::new_in(&home, &format!("onejudge-{tag}"))
}

/// The mode-independent name of an action: op, paths relative to the
/// workspace, argv.
fn key(e: &Value, ws: &Path) -> String {
    let rel = |v: &Value| {
        v.as_str()
            .map(|p| {
                p.strip_prefix(&*ws.to_string_lossy())
                    .map(|r| format!("$WS{r}"))
                    .unwrap_or_else(|| p.to_owned())
            })
            .unwrap_or_default()
    };
    let argv = e["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    format!(
        "{} {} {} {}",
        e["op"].as_str().unwrap_or("?"),
        rel(&e["path"]),
        rel(&e["path2"]),
        argv.replace(&*ws.to_string_lossy(), "$WS")
    )
}

/// Action key → the treatments (with rules) its records got.
fn verdicts(run: &Run, ws: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in run.events() {
        let v = &e["verdict"];
        if v.is_null() || e["op"] == "fork" || e["op"] == "exit" {
            continue;
        }
        // A failed call that its mode made fail (a refused one) is still
        // the same action; an ENOENT of a PATH search is not an action.
        if e["op"] == "exec" && e["errno"] == "ENOENT" {
            continue;
        }
        let t = format!(
            "{}/{}",
            v["treatment"].as_str().unwrap_or("?"),
            v["rule"].as_str().unwrap_or("?")
        );
        let list = out.entry(key(e, ws)).or_default();
        if !list.contains(&t) {
            list.push(t);
        }
    }
    out
}

/// The differences between two runs' verdicts, one line each.
fn differences(
    a: &BTreeMap<String, Vec<String>>,
    b: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, va) in a {
        if let Some(vb) = b.get(k) {
            let mut x = va.clone();
            let mut y = vb.clone();
            x.sort();
            y.sort();
            if x != y {
                out.push(format!("{k}: observe {x:?}, enforce {y:?}"));
            }
        }
    }
    out
}

fn observe(t: &TempDir, ws: &Path, script: &str) -> Run {
    abm_run(t, ws, &[], &["sh", "-c", script])
}

fn enforce(t: &TempDir, ws: &Path, script: &str) -> Run {
    // A short socket path (sun_path holds 108 bytes).
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ctl = format!("/run/abm-oj-{}-{n}.sock", std::process::id());
    let q = t.s(&format!("q-{n}"));
    abm_run(
        t,
        ws,
        &[
            "--enforce",
            "--enforce-backend",
            "seccomp",
            "--no-prompt",
            "--confirm-timeout",
            "1",
            "--control-socket",
            &ctl,
            "--quarantine",
            &q,
        ],
        &["sh", "-c", script],
    )
}

/// `abm replay --json` of a trace: (seq, recorded treatment, new one).
fn replay_changes(trace: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_abm"))
        .args(["replay", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "abm replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["changed"] == true)
        .map(|e| {
            format!(
                "seq {} {}: {} -> {}",
                e["seq"], e["subject"], e["old"], e["new"]
            )
        })
        .collect()
}

/// A git repository with one commit.
fn repo(ws: &Path) {
    sh(
        "git init -q -b main . && git config user.email t@example.com && git config user.name t \
         && mkdir -p src config && printf 'fn main() {}\\n' > src/main.rs \
         && printf 'name: app\\n' > config/app.yaml && printf '[project]\\nname=\"x\"\\n' > pyproject.toml \
         && printf 'data/\\n*.log\\n' > .gitignore && git add -A && git commit -qm init",
        ws,
    );
}

/// A wheel that ships a public certificate bundle, as certifi does.
fn wheel(dir: &Path) -> PathBuf {
    let script = r#"
import zipfile, sys, hashlib, base64, os
d = sys.argv[1]
bundle = open('/etc/ssl/certs/ca-certificates.crt').read() if os.path.exists('/etc/ssl/certs/ca-certificates.crt') else '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
files = {
  'demobundle/__init__.py': 'def where():\n    return __file__\n',
  'demobundle/cacert.pem': bundle,
  'demobundle-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: demobundle\nVersion: 1.0\n',
  'demobundle-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
}
def h(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
rec = ''.join(f'{n},{h(c.encode())},{len(c.encode())}\n' for n, c in files.items())
rec += 'demobundle-1.0.dist-info/RECORD,,\n'
p = os.path.join(d, 'demobundle-1.0-py3-none-any.whl')
with zipfile.ZipFile(p, 'w') as z:
    for n, c in files.items():
        z.writestr(n, c)
    z.writestr('demobundle-1.0.dist-info/RECORD', rec)
print(p)
"#;
    PathBuf::from(python_out(script, &[dir.as_os_str()], dir))
}

/// A virtualenv made and a package installed into it (pip writes the
/// certificate bundles it and the package ship): the same verdict for
/// every action in observe, enforce and replay, and the enforced run
/// is not broken.
#[test]
fn a_venv_and_pip_install_get_the_same_verdicts_in_every_mode() {
    require_seccomp_enforce();
    assert!(
        have("python3") && have("git"),
        "cannot run: python3 and git are needed"
    );
    let t = TempDir::new("onejudge-pip");
    let whl = wheel(t.path());
    let script = format!(
        "python3 -m venv v && v/bin/pip install --no-index --no-cache-dir -q {} \
         && v/bin/pip install --no-index --no-cache-dir -q --force-reinstall {} && v/bin/python -c 'import demobundle'",
        whl.display(),
        whl.display()
    );
    let (wa, wb) = (ws("pip-obs"), ws("pip-enf"));
    repo(&wa.0);
    repo(&wb.0);
    let obs = observe(&t, &wa.0, &script);
    let enf = enforce(&t, &wb.0, &script);
    assert_eq!(
        obs.output.status.code(),
        Some(0),
        "observe: {}",
        obs.stderr()
    );
    assert_eq!(
        enf.output.status.code(),
        Some(0),
        "the session is broken under --enforce --no-prompt: {}",
        enf.stderr()
    );
    let (vo, ve) = (verdicts(&obs, &wa.0), verdicts(&enf, &wb.0));
    let diff = differences(&vo, &ve);
    assert!(
        diff.is_empty(),
        "{} actions judged differently:\n{}",
        diff.len(),
        diff.join("\n")
    );
    let flagged: Vec<_> = ve
        .iter()
        .filter(|(_, v)| v.iter().any(|t| !t.starts_with("accept/")))
        .map(|(k, v)| format!("{k}: {v:?}"))
        .collect();
    assert!(
        flagged.is_empty(),
        "benign session flagged:\n{}",
        flagged.join("\n")
    );
    let changed = replay_changes(&obs.trace);
    assert!(
        changed.is_empty(),
        "replay judged {} actions differently:\n{}",
        changed.len(),
        changed.join("\n")
    );
}

/// The uncommitted state the destructive commands below act on: a tracked
/// file modified, untracked files, an ignored data directory.
fn dirty(ws: &Path) {
    repo(ws);
    sh(
        "printf 'fn main() { println!(\"wip\"); }\\n' > src/main.rs \
         && printf 'db: secret-local\\n' > config/local.yaml && printf 'notes\\n' > notes.md \
         && mkdir -p data && printf 'rows\\n' > data/users.csv",
        ws,
    );
}

/// `abm hook json` before the command: its decision and treatment.
fn hook(ws: &Path, command: &str) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_abm"))
        .args(["hook", "json", "--state-dir"])
        .arg(ws.parent().unwrap().join(".abm-hooks-test"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = json!({"phase": "pre", "command": command, "cwd": ws, "call_id": "t"});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "abm hook: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn rank(t: &str) -> u8 {
    match t {
        "accept" => 0,
        "audit" => 1,
        "preserve" => 2,
        "confirm" => 3,
        "deny" => 4,
        _ => 5,
    }
}

/// The worst treatment a run gave, with its rule.
fn worst(run: &Run) -> (String, String) {
    run.events()
        .filter(|e| !e["verdict"].is_null())
        .map(|e| {
            (
                e["verdict"]["treatment"].as_str().unwrap_or("?").to_owned(),
                format!(
                    "{} by {}",
                    key(e, Path::new("/")),
                    e["verdict"]["rule"].as_str().unwrap_or("?")
                ),
            )
        })
        .max_by_key(|(t, _)| rank(t))
        .unwrap_or_else(|| ("accept".into(), "nothing".into()))
}

/// Destructive and benign command lines in a repository with uncommitted
/// and untracked work: the hook's answer is the treatment the run gives,
/// and the run gives the same treatment observed and enforced.
#[test]
fn the_hook_gives_each_command_the_treatment_the_run_gives() {
    require_seccomp_enforce();
    assert!(have("git"), "cannot run: git is needed");
    let t = TempDir::new("onejudge-hook");
    let cases: &[(&str, &str)] = &[
        ("git reset --hard", "confirm"),
        ("git checkout .", "confirm"),
        ("git clean -fd", "confirm"),
        ("rm -rf config", "confirm"),
        (": > config/local.yaml", "confirm"),
        ("cp src/main.rs notes.md", "confirm"),
        ("mv pyproject.toml notes.md", "confirm"),
        ("git status --short", "accept"),
        ("echo hi > new.txt", "accept"),
        ("git stash && git stash pop", "accept"),
        ("rm -rf data/cache-does-not-exist", "accept"),
    ];
    let mut diffs = Vec::new();
    // Observe mode previews a command when its exec record reaches abm;
    // a command that destroys within about a millisecond (git in a small
    // repository) can finish first, and its exec is then judged on what
    // is left (docs/policy.md, Limits). Listed, and strict with
    // ABM_STRICT_OBSERVE=1.
    let mut observe_diffs = Vec::new();
    for (cmd, want) in cases {
        let (wh, wo, we) = (ws("hook"), ws("obs"), ws("enf"));
        for w in [&wh, &wo, &we] {
            dirty(&w.0);
        }
        let h = hook(&wh.0, cmd);
        let ht = h["treatment"].as_str().unwrap_or("?").to_owned();
        let enf = enforce(&t, &we.0, cmd);
        let (et, ewhy) = worst(&enf);
        let obs = observe(&t, &wo.0, cmd);
        let (ot, owhy) = worst(&obs);
        if ht != et || et != *want {
            diffs.push(format!(
                "`{cmd}`: hook {ht} ({}), enforce {et} ({ewhy}), expected {want}",
                h["reason"].as_str().unwrap_or("")
            ));
        }
        if ot != et {
            observe_diffs.push(format!(
                "`{cmd}`: observe {ot} ({owhy}), enforce {et} ({ewhy})"
            ));
        }
        let want_decision = match et.as_str() {
            "deny" => "deny",
            "confirm" => "ask",
            _ => "allow",
        };
        if h["decision"] != want_decision {
            diffs.push(format!(
                "`{cmd}`: hook decision {} for a run that gives {et}",
                h["decision"]
            ));
        }
    }
    if !observe_diffs.is_empty() {
        eprintln!(
            "observe differs from enforce (preview race) for {}:\n{}",
            observe_diffs.len(),
            observe_diffs.join("\n")
        );
        if std::env::var_os("ABM_STRICT_OBSERVE").is_some() {
            diffs.extend(observe_diffs);
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// An application's own data layer: `init` drops and recreates its
/// tables, as `flask init-db` does; `add` inserts a row and deletes
/// another, as the application's pages do. Python's `sqlite3`, SQLite's
/// default rollback journal.
const APP: &str = r#"
import os, sqlite3, sys
db = sqlite3.connect("instance/app.sqlite")
db.execute("PRAGMA journal_mode=" + os.environ.get("JOURNAL", "DELETE"))
if sys.argv[1] == "init":
    db.executescript("""
DROP TABLE IF EXISTS user;
DROP TABLE IF EXISTS post;
CREATE TABLE user (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE post (id INTEGER PRIMARY KEY, body TEXT);
""")
else:
    db.execute("INSERT INTO post (body) VALUES ('third')")
    db.execute("DELETE FROM post WHERE body = 'first'")
db.commit()
"#;

/// The dev database the session finds: a user and two posts.
fn database(ws: &Path) {
    std::fs::create_dir_all(ws.join("instance")).unwrap();
    std::fs::write(ws.join("app.py"), APP).unwrap();
    sh(
        "python3 -c \"import sqlite3; c = sqlite3.connect('instance/app.sqlite'); \
         c.executescript('CREATE TABLE user (id INTEGER PRIMARY KEY, name TEXT); \
         CREATE TABLE post (id INTEGER PRIMARY KEY, body TEXT); \
         INSERT INTO user (name) VALUES (\\'ada\\'); \
         INSERT INTO post (body) VALUES (\\'first\\'), (\\'second\\');'); c.commit()\"",
        ws,
    );
}

/// Rows of each table of the dev database, as SQLite reads it (a journal
/// left by a refused commit is played back first).
fn rows(ws: &Path) -> String {
    python_out(
        "import sqlite3; c = sqlite3.connect('instance/app.sqlite'); \
         print(*[t + '=' + str(c.execute('SELECT count(*) FROM ' + t).fetchone()[0]) \
         for (t,) in c.execute(\"SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name\")])",
        &[],
        ws,
    )
}

/// The records of `python3 app.py init`'s commits (its journal removed,
/// or emptied).
fn commits(run: &Run) -> Vec<&Value> {
    let init: Vec<&Value> = run
        .events()
        .filter(|e| {
            e["op"] == "exec"
                && e["errno"].is_null()
                && e["argv"].as_array().and_then(|a| a.last()) == Some(&json!("init"))
        })
        .map(|e| &e["action"])
        .collect();
    run.events()
        .filter(|e| {
            (e["op"] == "unlink" || e["op"] == "truncate")
                && init.contains(&&e["action"])
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("instance/app.sqlite-journal"))
        })
        .collect()
}

#[test]
fn a_database_emptied_by_its_application_is_asked_about_once_in_every_mode() {
    database_session("DELETE");
}

#[test]
fn a_database_in_truncate_journal_mode_is_judged_at_its_commit_too() {
    database_session("TRUNCATE");
}

/// Everyday work first: the application adds a row and deletes one; then
/// its init command over the tables the session found. In observe mode
/// and under seccomp, SQLite in journal mode `journal`.
fn database_session(journal: &str) {
    require_seccomp_enforce();
    assert!(have("python3"), "cannot run: python3 is needed");
    let t = TempDir::new("onejudge-db");
    let script = format!("export JOURNAL={journal}; python3 app.py add && python3 app.py init");
    let script = script.as_str();
    let tag = journal.to_lowercase();
    let (wa, wb) = (ws(&format!("db-obs-{tag}")), ws(&format!("db-enf-{tag}")));
    database(&wa.0);
    database(&wb.0);
    let obs = observe(&t, &wa.0, script);
    assert_eq!(obs.output.status.code(), Some(0), "{}", obs.stderr());
    assert_eq!(rows(&wa.0), "post=0 user=0", "observe mode changes nothing");
    let enf = enforce(&t, &wb.0, script);
    assert_ne!(
        enf.output.status.code(),
        Some(0),
        "the init command's commit is refused: {}",
        enf.stderr()
    );
    assert_eq!(
        rows(&wb.0),
        "post=2 user=1",
        "the refused commit's journal restores the tables"
    );
    let (vo, ve) = (verdicts(&obs, &wa.0), verdicts(&enf, &wb.0));
    for v in [&vo, &ve] {
        let add: Vec<_> = v.iter().filter(|(k, _)| k.contains("app.py add")).collect();
        assert!(
            !add.is_empty()
                && add
                    .iter()
                    .all(|(_, t)| t.iter().all(|t| t.starts_with("accept/"))),
            "rows added and one deleted are everyday work: {add:?}"
        );
    }
    // Observe mode judges the commits after the command is done (the
    // tables it recreated are empty); seccomp, the first one before it
    // runs (the table it dropped). Both confirm, naming the database.
    let (co, ce) = (commits(&obs), commits(&enf));
    assert!(!co.is_empty() && !ce.is_empty());
    for (c, lost) in [
        (
            co[0],
            "emptied table `post` (2 rows), emptied table `user` (1 row)",
        ),
        (ce[0], "dropped table `user` (1 row)"),
    ] {
        assert_eq!(c["verdict"]["rule"], "action.database-destroy", "{c}");
        assert_eq!(c["verdict"]["treatment"], "confirm", "{c}");
        assert_eq!(c["measured"]["object"], "database", "{c}");
        let why = c["measured"]["why"].as_str().unwrap();
        assert!(
            why.contains("instance/app.sqlite ") && why.contains(lost),
            "{why}"
        );
    }
    assert_eq!(ce.len(), 1, "the command stops at its refused commit");
    let questions = enf
        .records
        .iter()
        .filter(|r| r["kind"] == "enforcement" && r["body"]["decision"] == "pending")
        .count();
    assert_eq!(questions, 1, "one question");
    let diff = differences(&vo, &ve);
    assert!(diff.is_empty(), "judged differently:\n{}", diff.join("\n"));
    let changed = replay_changes(&obs.trace);
    assert!(changed.is_empty(), "replay: {}", changed.join("\n"));
}
