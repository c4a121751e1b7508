//! Records that do not lie: attacks an unprivileged tree can make on the
//! path a record names, each run for real in the real kernel.
//!
//! - a second thread rewrites the path argument while the first calls
//!   `unlink` (tests/truth/race.c): every successful unlink's record names
//!   the file the kernel removed, or says in `path_issues` that it cannot
//!   vouch for its path;
//! - the same race against `chmod`, `truncate`, `chown` and `utimes` by
//!   path, with and without the named file already holding the value the
//!   call sets: every record names the file whose attributes changed, or
//!   says it cannot vouch for it;
//! - 32-bit (`int 0x80`) calls (tests/truth/compat.c): result, identity
//!   and recoverability as for their 64-bit twins;
//! - a delete through a bind mount made inside the tree: the record names
//!   the file under its own mount and keeps the alias.
mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::{
    abm_run,
    race::{build_c, tally_attr_race, tally_race},
    TempDir,
};
use serde_json::Value;

#[test]
fn a_raced_path_argument_is_never_named_without_a_flag() {
    require_kernel!();
    let dir = TempDir::new("race");
    let race = build_c("race", &dir.0, &["-pthread"]);
    const COUNT: usize = 1000;
    // A race needs both threads running at once: on a machine busy with
    // other work a round can pass without one attempt seeing the other
    // name, which tests nothing. Up to three rounds, each checked whole.
    for round in 1..=3 {
        let ws = dir.join(&format!("ws{round}"));
        std::fs::create_dir_all(ws.join("d")).unwrap();
        let run = abm_run(
            &dir,
            &ws,
            &[],
            &[
                race.to_str().unwrap(),
                ws.join("d").to_str().unwrap(),
                &COUNT.to_string(),
            ],
        );
        let out = String::from_utf8_lossy(&run.output.stdout);
        assert!(
            run.output.status.success(),
            "the race did not complete: {out} {}",
            run.stderr()
        );
        let failed: usize = out
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("race prints its counts");
        let events: Vec<&Value> = run.events().collect();
        let t = tally_race(&events, &ws.join("d"));
        eprintln!(
            "race, round {round}: {COUNT} files removed, {failed} attempts the kernel saw as the other name; records: {} total, {} confirmed, {} flagged ({} of them naming a file that never existed), {} wrong and unflagged",
            t.total, t.confirmed, t.flagged, t.wrong_flagged, t.wrong_unflagged
        );
        assert_eq!(t.total, COUNT, "one record per successful unlink: {t:?}");
        assert_eq!(
            t.wrong_unflagged, 0,
            "records naming a file that never existed without a flag: {t:?}"
        );
        if failed > 0 {
            return;
        }
    }
    panic!(
        "the race did not race in three rounds (no attempt saw the other name): nothing was tested"
    );
}

#[test]
fn a_raced_attribute_change_names_the_file_changed_or_says_it_cannot() {
    require_kernel!();
    let dir = TempDir::new("race-attr");
    let race = build_c("race", &dir.0, &["-pthread"]);
    const COUNT: usize = 300;
    for op in ["chmod", "truncate", "chown", "utimes"] {
        for noop in [false, true] {
            let mut raced = false;
            for round in 1..=3 {
                let ws = dir.join(&format!("{op}-{noop}-{round}"));
                std::fs::create_dir_all(ws.join("d")).unwrap();
                let d = ws.join("d");
                let n = COUNT.to_string();
                let mut cmd = vec![race.to_str().unwrap(), d.to_str().unwrap(), &n, op];
                if noop {
                    cmd.push("noop");
                }
                let run = abm_run(&dir, &ws, &[], &cmd);
                assert!(
                    run.output.status.success(),
                    "the {op} race did not complete: {}",
                    run.stderr()
                );
                let events: Vec<&Value> = run.events().collect();
                let (t, other) = tally_attr_race(&events, &d, op, COUNT);
                eprintln!(
                    "{op} race{}, round {round}: {other} of {COUNT} calls acted on the other name; records: {} total, {} confirmed, {} flagged ({} of them naming the file not changed), {} wrong and unflagged",
                    if noop { " (named file already set)" } else { "" },
                    t.total, t.confirmed, t.flagged, t.wrong_flagged, t.wrong_unflagged
                );
                assert_eq!(
                    t.wrong_unflagged, 0,
                    "{op}: records naming a file the call did not change, without a flag: {t:?}"
                );
                if other > 0 {
                    raced = true;
                    break;
                }
            }
            assert!(
                raced,
                "the {op} race did not race in three rounds: nothing was tested"
            );
        }
    }
}

/// The record of the first successful `op` on `path`, with the fields the
/// judge reads.
fn judged<'a>(events: &[&'a Value], op: &str, path: &Path) -> &'a Value {
    let p = path.to_str().unwrap();
    events
        .iter()
        .copied()
        .find(|e| e["op"] == op && (e["path"] == p || e["path2"] == p))
        .unwrap_or_else(|| {
            panic!(
                "no {op} record of {p}; records:\n{}",
                events
                    .iter()
                    .map(|e| format!("{} {} {} {}", e["op"], e["syscall"], e["path"], e["result"]))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
}

#[test]
fn ia32_calls_are_recorded_measured_and_judged_as_their_64_bit_twins() {
    require_kernel!();
    let dir = TempDir::new("compat");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let compat = build_c("compat", &dir.0, &[]);
    for p in ["c32", "c64"] {
        for f in [
            "unlinked",
            "from",
            "to",
            "truncated",
            "truncated64",
            "chmoded",
        ] {
            std::fs::write(ws.join(format!("{p}-{f}")), "user data\n").unwrap();
        }
    }
    let script = format!("{c} 32 c32 && {c} 64 c64", c = compat.to_str().unwrap());
    let run = abm_run(&dir, &ws, &[], &["sh", "-c", &script]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let events: Vec<&Value> = run.events().collect();
    // (op, file, what the record must say beyond op and path)
    let calls = [
        ("unlink", "unlinked", "unlink"),
        ("rename", "to", "rename"),
        ("truncate", "truncated", "open"),
        ("truncate", "truncated64", "truncate64"),
        ("chmod", "chmoded", "chmod"),
    ];
    for (op, file, ia32_name) in calls {
        let r32 = judged(&events, op, &ws.join(format!("c32-{file}")));
        let r64 = judged(&events, op, &ws.join(format!("c64-{file}")));
        assert_eq!(
            r32["syscall"],
            format!("ia32:{ia32_name}"),
            "the ia32 call is named as such: {r32}"
        );
        assert_eq!(r32["result"], r64["result"], "{op}: result {r32} vs {r64}");
        assert!(
            r32["result"].as_i64().is_some_and(|r| r >= 0),
            "{op} returned: {r32}"
        );
        assert!(r32["result_note"].is_null(), "{op}: {r32}");
        assert!(r32["ino"].is_u64(), "{op}: identity recorded: {r32}");
        assert_eq!(
            r32["path_issues"], r64["path_issues"],
            "{op}:\n{r32}\n{r64}"
        );
        for field in ["irreversibility", "recovery", "blast"] {
            assert_eq!(
                r32.get(field),
                r64.get(field),
                "{op}: {field} of the ia32 call differs from its 64-bit twin's:\n{r32}\n{r64}"
            );
        }
        assert_eq!(
            r32["verdict"]["treatment"], r64["verdict"]["treatment"],
            "{op}: treatment differs:\n{r32}\n{r64}"
        );
    }
    // What the unlink destroyed is measured, not assumed: user data that
    // exists nowhere else.
    let u = judged(&events, "unlink", &ws.join("c32-unlinked"));
    assert_ne!(u["irreversibility"], "reversible", "{u}");
}

const PROTECT_DATA: &str = r#"
version = 1
[[rule]]
id = "test.data"
reason = "the data directory"
ops = ["unlink", "rmdir", "rename", "truncate", "write"]
paths = ["${workspace}/data/**"]
treatment = "deny"
"#;

/// Unmounts a bind mount even when the test fails.
struct Unmount(PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_delete_through_a_bind_mount_names_the_object_and_keeps_the_alias() {
    require_kernel!();
    let dir = TempDir::new("alias");
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("data")).unwrap();
    std::fs::create_dir_all(ws.join("alias")).unwrap();
    std::fs::write(ws.join("data/keep.db"), "rows\n").unwrap();
    std::fs::write(ws.join("data/other.db"), "rows\n").unwrap();
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, PROTECT_DATA).unwrap();
    let _guard = Unmount(ws.join("alias"));
    // The tree makes the alias itself, then deletes through it.
    let run = abm_run(
        &dir,
        &ws,
        &["--policy", policy.to_str().unwrap()],
        &[
            "sh",
            "-c",
            "mount --bind data alias && rm alias/keep.db && mv alias/other.db alias/moved.db",
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let events: Vec<&Value> = run.events().collect();
    let rm = judged(&events, "unlink", &ws.join("data/keep.db"));
    assert_eq!(
        rm["alias_path"],
        ws.join("alias/keep.db").to_str().unwrap(),
        "{rm}"
    );
    assert_eq!(
        rm["verdict"]["rule"], "test.data",
        "judged where the file lives: {rm}"
    );
    let mv = judged(&events, "rename", &ws.join("data/other.db"));
    assert_eq!(
        mv["alias_path"],
        ws.join("alias/other.db").to_str().unwrap(),
        "{mv}"
    );
    assert_eq!(
        mv["path2"],
        ws.join("data/moved.db").to_str().unwrap(),
        "{mv}"
    );
    assert_eq!(
        mv["alias_path2"],
        ws.join("alias/moved.db").to_str().unwrap(),
        "{mv}"
    );
    assert_eq!(mv["verdict"]["rule"], "test.data", "{mv}");
}
