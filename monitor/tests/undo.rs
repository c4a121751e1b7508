//! `preserve` and `abm undo` with real tools under `abm run --enforce` on
//! the real kernel (seccomp backend) and a preserve-all policy: each tool's
//! run is undone by action (`--action ID`) and, in a second run, by point
//! in time (`--to SEQ`), and the workspace must come back byte for byte,
//! with its modes and owners. Also: failed calls keep nothing, temporary
//! files do not come back, conflicts are refused and `--force` keeps what
//! it replaces, and the quarantine limit refuses calls it cannot cover.
//!
//! These tests need root, BTF and seccomp user notification; on a machine
//! without them they fail with the reason.
mod common;

use std::{
    collections::BTreeMap,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
    process::{Command, Output},
};

use common::*;
use serde_json::Value;

const PRESERVE_ALL: &str = r#"
version = 1

[[rule]]
id = "test.preserve-all"
reason = "keep a copy of everything the workspace loses"
paths = ["${workspace}/**"]
treatment = "preserve"
"#;

fn require_enforcement() {
    if let Some(why) = kernel_unavailable() {
        panic!("these tests need the real kernel: {why}");
    }
    let avail =
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    assert!(
        avail.split_whitespace().any(|a| a == "user_notif"),
        "these tests need seccomp user notification (actions_avail: {avail})"
    );
}

fn enforced(t: &TempDir, ws: &Path, extra: &[&str], cmd: &[&str]) -> Run {
    let policy = t.join("policy.toml");
    std::fs::write(&policy, PRESERVE_ALL).unwrap();
    let (p, q, s) = (
        policy.to_string_lossy().into_owned(),
        t.s("quarantine"),
        t.s("ctl.sock"),
    );
    let mut args = vec![
        "--enforce",
        "--enforce-backend",
        "seccomp",
        "--policy",
        &p,
        "--quarantine",
        &q,
        "--control-socket",
        &s,
        "--no-prompt",
    ];
    args.extend_from_slice(extra);
    abm_run(t, ws, &args, cmd)
}

fn undo(args: &[&str]) -> Output {
    Command::new(ABM).arg("undo").args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn undo_ok(args: &[&str]) -> String {
    let o = undo(args);
    assert!(
        o.status.success(),
        "abm undo {args:?} failed:\n{}",
        text(&o)
    );
    text(&o)
}

type Snap = BTreeMap<String, (String, u32, u32, u32, Vec<u8>)>;

/// relative path -> (type, mode, uid, gid, content or link target), for
/// everything under `root` except `skip`.
fn snapshot(root: &Path, skip: &[&str]) -> Snap {
    fn walk(base: &Path, p: &Path, skip: &[&str], out: &mut Snap) {
        let m = std::fs::symlink_metadata(p).unwrap();
        let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
        if skip.contains(&rel.as_str()) {
            return;
        }
        let mode = m.permissions().mode() & 0o7777;
        let (kind, data) = if m.file_type().is_symlink() {
            (
                "symlink",
                std::fs::read_link(p)
                    .unwrap()
                    .to_string_lossy()
                    .as_bytes()
                    .to_vec(),
            )
        } else if m.is_dir() {
            ("dir", vec![])
        } else {
            ("file", std::fs::read(p).unwrap())
        };
        out.insert(rel, (kind.into(), mode, m.uid(), m.gid(), data));
        if m.is_dir() {
            let mut kids: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            kids.sort();
            for k in kids {
                walk(base, &k, skip, out);
            }
        }
    }
    let mut out = Snap::new();
    walk(root, root, skip, &mut out);
    out
}

/// The action of the last successful exec whose argv starts with `argv`
/// (argv[0] compared by base name: a wrapper such as a pyenv shim execs
/// the real program under its full path). Without the trace's `action`
/// field, each exec begins an action.
fn action_of(run: &Run, argv: &[&str]) -> u64 {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
    let hits: Vec<u64> = run
        .events()
        .filter(|e| e["op"] == "exec" && e["result"] == 0)
        .filter(|e| {
            let a: Vec<&str> = e["argv"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            a.len() >= argv.len() && base(a[0]) == argv[0] && a[1..argv.len()] == argv[1..]
        })
        .map(|e| e["action"].as_u64().unwrap_or(e["seq"].as_u64().unwrap()))
        .collect();
    *hits.last().unwrap_or_else(|| panic!("no exec of {argv:?}"))
}

fn manifest(t: &TempDir) -> Vec<Value> {
    std::fs::read_to_string(t.join("quarantine/manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Files of the workspace get distinct modes and owners, so that a
/// restore that loses them is caught.
const OWNERS: &str = "chown 1234:5678";

/// One tool, twice: run `tool` (then a later action that creates
/// later.txt) under the preserve-all policy; undo the tool's action alone,
/// then, in a fresh run, everything from the tool's action on.
fn undone_by_action_and_by_point_in_time(tag: &str, setup: &str, tool: &str, argv: &[&str]) {
    require_enforcement();
    for by_time in [false, true] {
        let t = TempDir::new(&format!("undo-{tag}"));
        let ws = TempDir::new(&format!("undo-{tag}-ws"));
        sh(setup, ws.path());
        let before = snapshot(ws.path(), &[]);
        let cmd = format!("{tool}; echo later > later.txt");
        let run = enforced(&t, ws.path(), &[], &["sh", "-c", &cmd]);
        assert!(run.output.status.success(), "{}", run.stderr());
        let after = snapshot(ws.path(), &["later.txt"]);
        assert_ne!(after, before, "{tool} changed nothing");
        assert!(
            run.events()
                .all(|e| e["result_note"] != "denied_by_seccomp"),
            "nothing is refused under preserve"
        );
        let id = action_of(&run, argv).to_string();
        let trace = run.trace.to_string_lossy().into_owned();
        let listing = undo_ok(&[&trace]);
        let header = listing
            .lines()
            .find(|l| l.starts_with(&format!("action {id}: ")))
            .unwrap_or_else(|| panic!("action {id} is listed:\n{listing}"));
        assert!(header.contains(&argv[1..].join(" ")), "{header}");
        assert_eq!(
            snapshot(ws.path(), &["later.txt"]),
            after,
            "listing changes nothing"
        );
        // The plan first: nothing changes.
        let plan = undo_ok(&[&trace, "--action", &id, "--dry-run"]);
        assert!(plan.contains("plan (dry run"), "{plan}");
        assert_eq!(snapshot(ws.path(), &["later.txt"]), after, "{plan}");
        if by_time {
            let out = undo_ok(&[&trace, "--to", &id, "--remove-created"]);
            assert_eq!(snapshot(ws.path(), &[]), before, "{tool} --to {id}:\n{out}");
        } else {
            let out = undo_ok(&[&trace, "--action", &id]);
            assert_eq!(
                snapshot(ws.path(), &["later.txt"]),
                before,
                "{tool} --action {id}:\n{out}"
            );
            assert_eq!(
                std::fs::read_to_string(ws.join("later.txt")).unwrap(),
                "later\n",
                "another action's file is left alone"
            );
            // A second undo finds everything restored already.
            let again = undo_ok(&[&trace, "--action", &id]);
            assert!(again.contains("restored earlier"), "{again}");
            assert!(snapshot(ws.path(), &["later.txt"]) == before);
        }
    }
}

#[test]
fn mv_over_an_existing_file() {
    undone_by_action_and_by_point_in_time(
        "mv",
        &format!(
            "printf 'print(1)\\n' > other.py && printf 'LIB\\000\\377' > lib.py && chmod 640 lib.py && chmod 751 other.py && {OWNERS} lib.py"
        ),
        "mv other.py lib.py",
        &["mv", "other.py", "lib.py"],
    );
}

#[test]
fn editor_style_write_temp_then_rename() {
    undone_by_action_and_by_point_in_time(
        "editor",
        &format!("printf 'draft one\\n' > doc.txt && chmod 604 doc.txt && {OWNERS} doc.txt"),
        "python3 -c \"import os; f=open('doc.txt.tmp','w'); f.write('final version\\n'); f.close(); os.chmod('doc.txt.tmp', 0o600); os.replace('doc.txt.tmp', 'doc.txt')\"",
        &["python3", "-c"],
    );
}

#[test]
fn rm_rf_of_a_tree() {
    undone_by_action_and_by_point_in_time(
        "rmrf",
        &format!(
            "mkdir -p tree/a/b tree/c tree/empty && echo one > tree/a/b/f1 && printf 'two\\000\\377bin' > tree/a/f2 \
             && : > tree/c/empty-file && head -c 100000 /dev/urandom > tree/c/big && ln -s ../a/f2 tree/c/link \
             && {OWNERS} tree/a/f2 tree/c && chmod 640 tree/a/f2 && chmod 700 tree/a/b && chmod 750 tree/c \
             && chmod 4755 tree/c/big && chmod 555 tree/empty"
        ),
        "rm -rf tree",
        &["rm", "-rf", "tree"],
    );
}

#[test]
fn git_clean_fdx() {
    undone_by_action_and_by_point_in_time(
        "gitclean",
        &format!(
            "git init -q . && git config user.email t@example.com && git config user.name t \
             && echo tracked > tracked.txt && echo 'build/' > .gitignore && git add . && git commit -qm init \
             && mkdir -p build/obj untracked && echo o > build/obj/x.o && echo u > untracked/notes.txt \
             && printf 'scratch\\n' > scratch.txt && chmod 600 scratch.txt && {OWNERS} untracked/notes.txt"
        ),
        "git clean -fdx -e later.txt",
        &["git", "clean"],
    );
}

/// Tracked files identical to their git blob are not copied: their
/// entries name the blob, and undo writes it back after the repository
/// itself is restored from the quarantine.
#[test]
fn rm_rf_of_a_repository_keeps_tracked_files_as_git_blobs() {
    undone_by_action_and_by_point_in_time(
        "repo",
        "mkdir proj && cd proj && git init -q . && git config user.email t@example.com \
         && git config user.name t && mkdir src && printf 'fn main() {}\\n' > src/main.rs \
         && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh && echo one > notes.txt \
         && git add . && git commit -qm init && echo changed > notes.txt && echo new > untracked.txt",
        "rm -rf proj",
        &["rm", "-rf", "proj"],
    );
    // The same run again, to look at what the quarantine holds.
    require_enforcement();
    let t = TempDir::new("undo-repo-blobs");
    let ws = TempDir::new("undo-repo-blobs-ws");
    sh(
        "git init -q . && git config user.email t@example.com && git config user.name t \
         && echo tracked > a.txt && echo second > b.txt && git add . && git commit -qm init \
         && echo changed > b.txt",
        ws.path(),
    );
    let expected = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD:a.txt"])
            .current_dir(ws.path())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let run = enforced(&t, ws.path(), &[], &["rm", "a.txt", "b.txt"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let m = manifest(&t);
    let kind_of = |name: &str| {
        m.iter()
            .find(|e| e["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|e| (e["kind"].clone(), e["git"]["blob"].clone()))
    };
    let (kind, blob) = kind_of("/a.txt").expect("an entry for a.txt");
    assert_eq!(kind, "recoverable", "{m:#?}");
    assert_eq!(blob.as_str(), Some(expected.trim()), "{m:#?}");
    // A modified tracked file differs from its blob: it is kept.
    assert_eq!(kind_of("/b.txt").expect("an entry for b.txt").0, "file");
    let out = undo_ok(&[&run.trace.to_string_lossy(), "--all"]);
    assert!(out.contains("written back from git blob"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "tracked\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "changed\n"
    );
}

#[test]
fn truncate_of_a_file() {
    undone_by_action_and_by_point_in_time(
        "truncate",
        &format!("head -c 5000 /dev/urandom > data.bin && chmod 640 data.bin && {OWNERS} data.bin"),
        "truncate -s 10 data.bin",
        &["truncate", "-s", "10"],
    );
}

#[test]
fn sed_i_chain_unwinds_by_action_and_by_point_in_time() {
    require_enforcement();
    let t = TempDir::new("undo-sed");
    let ws = TempDir::new("undo-sed-ws");
    sh(
        &format!("printf 'alpha\\nkeep\\n' > f.txt && chmod 640 f.txt && {OWNERS} f.txt"),
        ws.path(),
    );
    let before = snapshot(ws.path(), &[]);
    let ino = std::fs::metadata(ws.join("f.txt")).unwrap().ino();
    let run = enforced(
        &t,
        ws.path(),
        &[],
        &[
            "sh",
            "-c",
            "sed -i s/alpha/beta/ f.txt && sed -i s/beta/gamma/ f.txt && sed -i s/keep/kept/ f.txt",
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert_eq!(
        std::fs::read_to_string(ws.join("f.txt")).unwrap(),
        "gamma\nkept\n"
    );
    let trace = run.trace.to_string_lossy().into_owned();
    let s1 = action_of(&run, &["sed", "-i", "s/alpha/beta/"]).to_string();
    let s2 = action_of(&run, &["sed", "-i", "s/beta/gamma/"]).to_string();
    let s3 = action_of(&run, &["sed", "-i", "s/keep/kept/"]).to_string();
    // sed's temporary files are known as such.
    let listing = undo_ok(&[&trace]);
    assert!(
        listing.contains("temporary file of the action"),
        "{listing}"
    );
    // The first edit cannot be undone alone: later edits changed the file.
    let o = undo(&[&trace, "--action", &s1]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let msg = text(&o);
    assert!(msg.contains("CONFLICT"), "{msg}");
    assert!(
        msg.contains(&format!(
            "changed after this action by action {s2} (`sed -i s/beta/gamma/ f.txt`"
        )),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("f.txt")).unwrap(),
        "gamma\nkept\n",
        "nothing changed"
    );
    // The newest edit alone: the file as the second edit left it.
    undo_ok(&[&trace, "--action", &s3]);
    assert_eq!(
        std::fs::read_to_string(ws.join("f.txt")).unwrap(),
        "gamma\nkeep\n"
    );
    // Back to before the second edit by point in time, then the first by action.
    undo_ok(&[&trace, "--to", &s2]);
    assert_eq!(
        std::fs::read_to_string(ws.join("f.txt")).unwrap(),
        "beta\nkeep\n"
    );
    undo_ok(&[&trace, "--action", &s1]);
    assert_eq!(
        snapshot(ws.path(), &[]),
        before,
        "no sed temporary file left"
    );
    assert_eq!(
        std::fs::metadata(ws.join("f.txt")).unwrap().ino(),
        ino,
        "the original inode is back (moved out of the quarantine)"
    );
}

#[test]
fn a_failed_rename_keeps_nothing() {
    require_enforcement();
    let t = TempDir::new("undo-noreplace");
    let ws = TempDir::new("undo-noreplace-ws");
    sh("echo a > a && echo b > b", ws.path());
    // mv tries renameat2(RENAME_NOREPLACE) first, which fails with EEXIST.
    let run = enforced(&t, ws.path(), &[], &["mv", "a", "b"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let failed: Vec<&Value> = run
        .events()
        .filter(|e| e["op"] == "rename" && e["errno"] == "EEXIST")
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "mv's RENAME_NOREPLACE attempt is in the trace"
    );
    assert!(
        failed[0]["enforcement"].is_null(),
        "nothing preserved for it: {}",
        failed[0]
    );
    let m = manifest(&t);
    let renames: Vec<&Value> = m.iter().filter(|e| e["kind"] == "rename").collect();
    assert_eq!(renames.len(), 1, "only the real rename: {m:?}");
    assert_eq!(renames[0]["syscall"], "renameat");
    undo_ok(&[&t.s("quarantine"), "--all"]);
    assert_eq!(std::fs::read_to_string(ws.join("a")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(ws.join("b")).unwrap(), "b\n");
}

#[test]
fn a_change_after_the_run_is_refused_and_force_keeps_it() {
    require_enforcement();
    let t = TempDir::new("undo-conflict");
    let ws = TempDir::new("undo-conflict-ws");
    sh("printf 'original\\n' > doc && chmod 640 doc", ws.path());
    let run = enforced(
        &t,
        ws.path(),
        &[],
        &["sed", "-i", "s/original/edited/", "doc"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let trace = run.trace.to_string_lossy().into_owned();
    let id = action_of(&run, &["sed"]).to_string();
    // Someone edits doc after the run.
    std::fs::write(ws.join("doc"), "mine, written later\n").unwrap();
    let o = undo(&[&trace, "--action", &id]);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(1), "{msg}");
    assert!(msg.contains("CONFLICT"), "{msg}");
    assert!(
        msg.contains(&format!(
            "{} changed after the run ended: it was modified (size 7 -> 20",
            ws.s("doc")
        )),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "mine, written later\n",
        "not overwritten"
    );
    // The forced plan says what it would do, and changes nothing.
    let plan = undo_ok(&[&trace, "--action", &id, "--force", "--dry-run"]);
    assert!(plan.contains("forced: "), "{plan}");
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "mine, written later\n"
    );
    let out = undo_ok(&[&trace, "--action", &id, "--force"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("doc")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::metadata(ws.join("doc"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        0o640
    );
    // What was overwritten is kept, and the output says where.
    let displaced = t.join("quarantine/displaced");
    let kept: Vec<(String, String)> = std::fs::read_dir(&displaced)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    let (path, _) = kept
        .iter()
        .find(|(_, c)| c == "mine, written later\n")
        .unwrap_or_else(|| panic!("the later version is kept: {kept:?}"));
    assert!(
        out.contains(path.as_str()),
        "the output names {path}:\n{out}"
    );
}

#[test]
fn the_quarantine_limit_refuses_what_it_cannot_cover() {
    require_enforcement();
    let t = TempDir::new("undo-limit");
    let ws = TempDir::new("undo-limit-ws");
    sh(
        "head -c 3000 /dev/urandom > a && head -c 3000 /dev/urandom > b",
        ws.path(),
    );
    let b = std::fs::read(ws.join("b")).unwrap();
    let run = enforced(
        &t,
        ws.path(),
        &["--quarantine-limit", "4K"],
        &["rm", "a", "b"],
    );
    assert_eq!(
        run.output.status.code(),
        Some(1),
        "rm fails on b: {}",
        run.stderr()
    );
    assert!(!ws.join("a").exists(), "a fitted and was removed");
    assert_eq!(std::fs::read(ws.join("b")).unwrap(), b, "b is untouched");
    assert!(
        run.stderr().contains("quarantine limit reached"),
        "{}",
        run.stderr()
    );
    let e = run.one("unlink", &ws.s("b"));
    assert_eq!(e["errno"], "EPERM", "{e}");
    assert!(
        e["enforcement"]["preserve_error"]
            .as_str()
            .unwrap_or("")
            .contains("would exceed --quarantine-limit 4096 bytes"),
        "{e}"
    );
    let notes: Vec<&Value> = run
        .records
        .iter()
        .filter(|r| r["type"] == "note" && r["kind"] == "quarantine_limit")
        .collect();
    assert_eq!(notes.len(), 1, "one note");
    assert_eq!(notes[0]["body"]["limit_bytes"], 4096);
    assert_eq!(notes[0]["body"]["used_bytes"], 3000);
    undo_ok(&[&t.s("quarantine"), "--all"]);
    assert_eq!(std::fs::metadata(ws.join("a")).unwrap().len(), 3000);
    // A bad limit is refused before anything runs.
    let o = Command::new(ABM)
        .args([
            "run",
            "--enforce",
            "--quarantine-limit",
            "lots",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("expected a size such as 500M"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_unchanged_file_is_copied_once() {
    require_enforcement();
    let t = TempDir::new("undo-once");
    let ws = TempDir::new("undo-once-ws");
    sh("head -c 5000 /dev/urandom > data.bin", ws.path());
    let before = std::fs::read(ws.join("data.bin")).unwrap();
    // truncate opens the file for writing (a copy), then ftruncates it,
    // unchanged since the copy: the second entry shares the first copy.
    let run = enforced(&t, ws.path(), &[], &["truncate", "-s", "10", "data.bin"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let kept: Vec<Value> = manifest(&t)
        .into_iter()
        .filter(|e| e["kind"] == "file" && e["path"] == ws.s("data.bin"))
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0]["method"], "copy");
    assert_eq!(kept[1]["method"], "hardlink");
    assert_eq!(kept[1]["shares"], kept[0]["quarantine"]);
    let ino = |e: &Value| {
        std::fs::metadata(t.join("quarantine").join(e["quarantine"].as_str().unwrap()))
            .unwrap()
            .ino()
    };
    assert_eq!(ino(&kept[0]), ino(&kept[1]), "one copy on disk");
    let listing = undo_ok(&[&t.s("quarantine")]);
    assert!(listing.contains("2 entries, 4.9 KiB kept"), "{listing}");
    undo_ok(&[run.trace.to_str().unwrap(), "--all"]);
    assert_eq!(std::fs::read(ws.join("data.bin")).unwrap(), before);
}
