//! The action model on the real kernel with real git, sed and rm: records
//! grouped into logical actions (git's internal children in the porcelain
//! command), tree deletions judged once with their measured blast radius,
//! and under `--enforce` one question per action, a refusal that sticks
//! for identical retries, and git's own children left alone.
mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn require() {
    if let Some(why) = kernel_unavailable() {
        panic!("the action model tests need the real kernel: {why}");
    }
    assert!(have("git"), "git is needed (cargo xtask setup installs it)");
}

fn git(dir: &Path, script: &str) {
    sh(
        &format!("git -c user.email=t@example.com -c user.name=t {script}"),
        dir,
    );
}

/// A workspace repository with a modified file, and a sibling repository
/// with 3 committed files and 4 untracked ones.
fn setup(t: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let ws = t.join("ws");
    let sib = t.join("sib");
    for d in [&ws, &sib] {
        std::fs::create_dir_all(d).unwrap();
        sh("git init -q", d);
    }
    sh("printf 'a\\n' > f1.txt; printf 'b\\n' > f2.txt", &ws);
    git(
        &ws,
        "add . && git -c user.email=t@example.com -c user.name=t commit -qm init",
    );
    sh("printf 'changed\\n' >> f1.txt", &ws);
    sh("for i in 1 2 3; do echo s$i > s$i; done", &sib);
    git(
        &sib,
        "add . && git -c user.email=t@example.com -c user.name=t commit -qm init",
    );
    sh("for i in 1 2 3 4; do echo u$i > u$i; done", &sib);
    (ws, sib)
}

fn exec_seq(run: &Run, argv: &[&str]) -> u64 {
    run.events()
        .find(|e| {
            e["op"] == "exec"
                && e["argv"].as_array().is_some_and(|a| {
                    a.iter()
                        .map(|v| v.as_str().unwrap_or(""))
                        .eq(argv.iter().copied())
                })
        })
        .unwrap_or_else(|| panic!("no exec of {argv:?}; execs: {:?}", run.execs()))["seq"]
        .as_u64()
        .unwrap()
}

fn action_note(run: &Run, id: u64) -> Value {
    run.records
        .iter()
        .find(|r| r["type"] == "note" && r["kind"] == "action" && r["body"]["action"] == id)
        .unwrap_or_else(|| panic!("no action note for {id}"))["body"]
        .clone()
}

#[test]
fn records_are_grouped_and_tree_deletions_judged_once() {
    require();
    let t = TempDir::new("action-observe");
    let (ws, sib) = setup(&t);
    let run = abm_run(
        &t,
        &ws,
        &[],
        &[
            "bash",
            "-c",
            "git stash -q && git stash pop -q; rm -rf ../sib; sed -i s/b/B/ f2.txt; true",
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(!sib.exists());
    // Every exec and file effect carries its action.
    for e in run
        .events()
        .filter(|e| e["op"] != "fork" && e["op"] != "exit")
    {
        assert!(e["action"].is_u64(), "record without action: {e}");
    }
    // git stash: its internal children (if any run) are inside it.
    let stash = exec_seq(&run, &["git", "stash", "-q"]);
    for e in run
        .events()
        .filter(|e| e["action"] == stash && e["op"] == "exec" && e["seq"] != stash)
    {
        assert_eq!(e["verdict"]["rule"], "action.inside", "{e}");
    }
    assert_eq!(action_note(&run, stash)["treatment"], "accept");
    // rm -rf ../sib: one action. In observe mode the blast preview races
    // with rm itself (the tree may already be gone when the exec record
    // is judged), so the question and its counts are asserted under
    // --enforce in the next test, where the exec waits for the verdict.
    let rm = exec_seq(&run, &["rm", "-rf", "../sib"]);
    let rm_exec = run.events().find(|e| e["seq"] == rm).unwrap();
    assert_eq!(rm_exec["action"], rm);
    let sib_s = sib.to_string_lossy();
    let u1 = format!("{sib_s}/u1");
    let unlink = run.one("unlink", &u1);
    assert_eq!(unlink["action"], rm);
    let note = action_note(&run, rm);
    assert_eq!(note["argv"][2], "../sib");
    // sed -i: the temporary file is made in this run; the rename is the
    // rewrite of f2.txt, an ordinary workspace edit.
    let sed = exec_seq(&run, &["sed", "-i", "s/b/B/", "f2.txt"]);
    let f2 = ws.join("f2.txt").to_string_lossy().into_owned();
    let rename = run
        .events()
        .find(|e| e["op"] == "rename" && e["path2"] == f2.as_str())
        .expect("sed renames its temporary file over f2.txt");
    assert_eq!(rename["action"], sed);
    assert_eq!(rename["verdict"]["treatment"], "accept");
    assert!(run.records.iter().any(|r| r["kind"] == "action_stats"));
}

#[test]
fn enforce_asks_once_per_action_and_a_refusal_sticks() {
    require();
    let t = TempDir::new("action-enforce");
    let (ws, sib) = setup(&t);
    let q = t.s("quarantine");
    let sock = t.s("ctl.sock");
    let run = abm_run(
        &t,
        &ws,
        &[
            "--enforce",
            "--enforce-backend",
            "seccomp",
            "--quarantine",
            &q,
            "--control-socket",
            &sock,
            "--no-prompt",
            "--confirm-timeout",
            "1",
        ],
        &[
            "bash",
            "-c",
            "git stash -q && git stash pop -q || exit 9; rm -rf ../sib; rm -rf ../sib; echo end",
        ],
    );
    // git stash and pop complete: their internal children are not judged
    // like a user's `git reset --hard`.
    assert_ne!(run.output.status.code(), Some(9), "{}", run.stderr());
    assert!(std::fs::read_to_string(ws.join("f1.txt"))
        .unwrap()
        .contains("changed"));
    // The sibling project is untouched, and only one question was asked.
    for f in ["s1", "u1", "u4", ".git/HEAD"] {
        assert!(sib.join(f).exists(), "{f} was deleted");
    }
    let pending: Vec<&Value> = run
        .records
        .iter()
        .filter(|r| r["type"] == "note" && r["body"]["decision"] == "pending")
        .collect();
    assert_eq!(
        pending.len(),
        1,
        "one question for two identical attempts: {pending:?}"
    );
    assert!(
        pending[0]["body"]["reason"]
            .as_str()
            .unwrap()
            .contains("4 untracked"),
        "{}",
        pending[0]
    );
    let denied: Vec<&Value> = run
        .events()
        .filter(|e| {
            e["op"] == "exec" && e["argv"][0] == "rm" && e["result_note"] == "denied_by_seccomp"
        })
        .collect();
    assert_eq!(denied.len(), 2, "both attempts refused");
    // The retry is refused by the earlier answer, which it names.
    assert_eq!(
        denied[1]["enforcement"]["decided_by"],
        format!("request:{}", pending[0]["body"]["request"])
    );
}
