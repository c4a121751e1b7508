//! Grouping, recoverability and scope on real git repositories made with
//! the real `git` in temporary directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::blast::{normalize, preview};
use super::recover::Measurer;
use super::scope::Locator;
use super::*;
use crate::record::{Location, ObjectKind, Recovery};

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs (install git)");
    assert!(st.success(), "git {args:?} failed in {}", dir.display());
}

/// A repository with three committed files, one modified, one untracked,
/// one ignored build output.
fn repo(dir: &Path) -> PathBuf {
    let r = dir.join("proj");
    std::fs::create_dir_all(r.join("src")).unwrap();
    git(&r, &["init", "-q"]);
    std::fs::write(r.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(r.join("src/b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(r.join("README"), "readme\n").unwrap();
    std::fs::write(r.join(".gitignore"), "/target/\n*.o\n").unwrap();
    git(&r, &["add", "."]);
    git(&r, &["commit", "-qm", "init"]);
    std::fs::write(r.join("src/b.rs"), "fn b() { changed() }\n").unwrap();
    std::fs::write(r.join("notes.txt"), "my notes\n").unwrap();
    std::fs::create_dir_all(r.join("target/debug")).unwrap();
    std::fs::write(r.join("target/debug/app"), "ELF").unwrap();
    std::fs::write(r.join("src/x.o"), "obj").unwrap();
    r
}

fn measurer(ws: &Path, home: &Path) -> Measurer {
    Measurer::new(Locator::new(ws, home))
}

/// A command line as the judge takes it.
fn cmdline(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn recoverability_is_measured_from_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let mut m = measurer(&r, &tmp.path().join("home"));
    let clean = m.measure(&s(&r.join("src/a.rs")), false);
    assert_eq!(
        (clean.recovery, clean.object),
        (Recovery::Recoverable, ObjectKind::Tracked),
        "{clean:?}"
    );
    assert_eq!(clean.location, Location::Workspace);
    let modified = m.measure(&s(&r.join("src/b.rs")), false);
    assert_eq!(
        (modified.recovery, modified.object),
        (Recovery::Irreversible, ObjectKind::Modified)
    );
    let untracked = m.measure(&s(&r.join("notes.txt")), false);
    assert_eq!(
        (untracked.recovery, untracked.object),
        (Recovery::Irreversible, ObjectKind::Untracked)
    );
    let built = m.measure(&s(&r.join("target/debug/app")), false);
    assert_eq!(
        (built.recovery, built.object),
        (Recovery::Reversible, ObjectKind::BuildOutput)
    );
    let obj = m.measure(&s(&r.join("src/x.o")), false);
    assert_eq!(obj.object, ObjectKind::BuildOutput);
    // .git internals: git's own housekeeping vs. anyone else.
    let head = s(&r.join(".git/HEAD"));
    assert_eq!(m.measure(&head, true).recovery, Recovery::Reversible);
    let outside = m.measure(&head, false);
    assert_eq!(
        (outside.recovery, outside.object),
        (Recovery::Irreversible, ObjectKind::GitInternal)
    );
    // Another hard link keeps the content.
    std::fs::hard_link(r.join("notes.txt"), tmp.path().join("notes.link")).unwrap();
    assert_eq!(
        m.measure(&s(&r.join("notes.txt")), false).object,
        ObjectKind::Linked
    );
    // Databases and credentials are never regenerable, even if ignored.
    std::fs::write(r.join("app.sqlite3"), "SQLite format 3").unwrap();
    assert_eq!(
        m.measure(&s(&r.join("app.sqlite3")), false).object,
        ObjectKind::Database
    );
    std::fs::write(r.join(".env"), "TOKEN=1").unwrap();
    assert_eq!(
        m.measure(&s(&r.join(".env")), false).object,
        ObjectKind::Credential
    );
}

#[test]
fn packed_objects_count_as_recoverable() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    git(&r, &["gc", "-q"]);
    assert!(
        std::fs::read_dir(r.join(".git/objects/pack"))
            .unwrap()
            .count()
            > 0
    );
    let mut m = measurer(&r, tmp.path());
    let clean = m.measure(&s(&r.join("README")), false);
    assert_eq!(clean.recovery, Recovery::Recoverable, "{clean:?}");
}

/// What the repository reader keeps between git commands follows what
/// git changed: a file staged, and objects packed, after a first read.
#[test]
fn what_was_read_follows_git_after_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let mut repo = git::Repo::open(&r).unwrap();
    assert!(repo.entry(b"notes.txt").is_none());
    assert!(repo.entry(b"README").is_some());
    let readme = git::blob_id(b"readme\n");
    git(&r, &["add", "notes.txt"]);
    git(&r, &["tag", "v1"]);
    // Not checked again until git is known to have run.
    assert!(repo.entry(b"notes.txt").is_none());
    repo.invalidate();
    assert!(repo.entry(b"notes.txt").is_some(), "the new index is read");
    git(&r, &["gc", "-q", "--prune=now"]);
    assert!(!r
        .join(".git/objects")
        .join(&hex::encode(readme)[..2])
        .exists());
    repo.invalidate();
    assert!(repo.has_object(&readme), "the new pack is read");
    repo.invalidate();
    assert!(repo.has_object(&readme));
    assert!(!repo.has_object(&[7; 20]));
    // Branch tips are the local branches only, packed (gc) or loose.
    git(&r, &["branch", "topic"]);
    let (tips, _) = git::branch_tips_stamped(&r.join(".git"));
    let mut names: Vec<&str> = tips.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"refs/heads/topic"), "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("refs/heads/")),
        "{names:?}"
    );
}

/// A read of the branch tips is trusted later only while nothing that
/// holds branches has changed: a new loose ref (also in a nested
/// directory), a deleted one, a repacking. A read within the clock's
/// resolution of a change is never trusted.
#[test]
fn branch_tips_are_read_again_when_a_branch_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let common = r.join(".git");
    git(&r, &["branch", "feature/a"]);
    let (_, racy) = git::branch_tips_stamped(&common);
    assert!(racy.changed(), "a read just after a change is not trusted");
    let settle = || std::thread::sleep(std::time::Duration::from_millis(80));
    // (command, whether it changes the branches or only where they are)
    let steps: [(&[&str], bool); 4] = [
        (&["branch", "topic"], true),
        (&["branch", "feature/b"], true),
        (&["branch", "-D", "topic"], true),
        (&["pack-refs", "--all"], false),
    ];
    for (step, changes) in steps {
        settle();
        let (tips, stamp) = git::branch_tips_stamped(&common);
        assert!(!stamp.changed(), "nothing changed since the read");
        git(&r, step);
        assert!(stamp.changed(), "git {step:?} is seen");
        let (now, _) = git::branch_tips_stamped(&common);
        assert_eq!(tips != now, changes, "git {step:?}: {tips:?} then {now:?}");
    }
}

#[test]
fn index_v2_and_v4_are_parsed() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    // Names that sort around `src/`: `-` and `.` sort before `/`.
    for f in ["src-x/c", "src.d", "srcz"] {
        std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
        std::fs::write(r.join(f), f).unwrap();
    }
    git(&r, &["add", "src-x/c", "src.d", "srcz"]);
    for version in ["2", "4"] {
        git(&r, &["update-index", "--index-version", version]);
        let idx = std::fs::read(r.join(".git/index")).unwrap();
        assert_eq!(idx[7].to_string(), version);
        let entries = git::parse_index(&idx).unwrap();
        let names = |it: &mut dyn Iterator<Item = (&[u8], &git::IndexEntry)>| -> Vec<String> {
            it.map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect()
        };
        assert_eq!(
            names(&mut entries.iter()),
            [
                ".gitignore",
                "README",
                "src-x/c",
                "src.d",
                "src/a.rs",
                "src/b.rs",
                "srcz"
            ]
        );
        assert_eq!(names(&mut entries.under(b"src")), ["src/a.rs", "src/b.rs"]);
        assert_eq!(names(&mut entries.under(b"src-x")), ["src-x/c"]);
        assert_eq!(names(&mut entries.under(b"")).len(), 7);
        assert_eq!(
            entries.get(b"src/a.rs").unwrap().sha,
            git::blob_id(b"fn a() {}\n")
        );
        assert!(entries.get(b"src").is_none() && entries.get(b"srcz/").is_none());
    }
}

#[test]
fn scope_workspace_scratch_shared_protected() {
    let tmp = tempfile::tempdir().unwrap();
    // The workspace lives under /tmp: it is still the workspace.
    let ws = repo(tmp.path());
    let home = tmp.path().join("home");
    let loc = Locator::new(&ws, &home);
    assert_eq!(
        loc.locate(&s(&ws.join("src/a.rs")), true),
        Location::Workspace
    );
    assert_eq!(
        loc.locate("/tmp/pip-build-x/setup.py", false),
        Location::Scratch
    );
    assert_eq!(loc.locate("/tmp/other-repo/src/x", true), Location::Shared);
    assert_eq!(loc.locate("/etc/sudoers", false), Location::Protected);
    assert_eq!(loc.locate("/var/log/auth.log", false), Location::Protected);
    assert_eq!(
        loc.locate(&s(&home.join(".bash_history")), false),
        Location::Protected
    );
    assert_eq!(
        loc.locate(&s(&home.join(".ssh/authorized_keys")), false),
        Location::Protected
    );
    assert_eq!(
        normalize(Path::new("/w/ws/../billing/./x")),
        PathBuf::from("/w/billing/x")
    );
}

#[test]
fn preview_counts_what_a_tree_deletion_destroys() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let sib = repo(tmp.path());
    let mut m = measurer(&ws, &tmp.path().join("home"));
    let argv = cmdline(&["rm", "-rf", "../proj"]);
    let b = preview(&argv, &ws, &mut m).expect("rm -rf is previewed");
    // 3 committed (1 of them modified), .gitignore, notes, 2 ignored outputs.
    assert_eq!(b.modified, 1, "{b:?}");
    assert_eq!(b.untracked, 1, "{b:?}");
    assert_eq!(b.recoverable, 3, "{b:?}");
    assert!(b.git_internal > 5, "{b:?}");
    assert_eq!(b.outside, b.irreversible);
    assert!(b
        .describe()
        .contains("1 untracked, 1 modified since the index, 3 recoverable"));
    // git reset --hard in the repository: one modified file.
    let argv = cmdline(&["git", "reset", "--hard"]);
    let b = preview(&argv, &sib, &mut m).expect("reset --hard is previewed");
    assert_eq!(
        (b.modified, b.irreversible, b.recoverable),
        (1, 1, 3),
        "{b:?}"
    );
    // git clean -fd: the untracked notes, not the ignored outputs; -x both.
    let argv = cmdline(&["git", "clean", "-fd"]);
    let b = preview(&argv, &sib, &mut m).unwrap();
    assert_eq!((b.untracked, b.files), (1, 1), "{b:?}");
    let argv = cmdline(&["git", "clean", "-fdx"]);
    let b = preview(&argv, &sib, &mut m).unwrap();
    assert_eq!(
        (b.untracked, b.reversible, b.irreversible),
        (1, 2, 1),
        "{b:?}"
    );
    // -X: only the ignored outputs, not the untracked notes.
    let argv = cmdline(&["git", "clean", "-fdX"]);
    let b = preview(&argv, &sib, &mut m).unwrap();
    assert_eq!(
        (b.untracked, b.reversible, b.irreversible),
        (0, 2, 0),
        "{b:?}"
    );
    let _ = sib;
}

fn exec(pid: u32, ppid: u32, argv: &[&str], path: &str, result: i64) -> Action {
    Action {
        op: Some(Op::Exec),
        pid,
        tid: pid,
        ppid,
        path: Some(path.into()),
        argv: Some(argv.iter().map(|s| s.to_string()).collect()),
        cwd: Some("/w".into()),
        result: Some(result),
        ..Default::default()
    }
}

#[test]
fn git_children_belong_to_the_porcelain_command() {
    let mut g = Grouper::default();
    let (sh, role) = g.exec(&exec(10, 1, &["bash", "-c", "x"], "/usr/bin/bash", 0), 100);
    assert_eq!((sh, role), (100, ExecRole::Begins));
    g.fork(10, 11);
    let (stash, role) = g.exec(&exec(11, 10, &["git", "stash"], "/usr/bin/git", 0), 101);
    assert_eq!((stash, role), (101, ExecRole::Begins));
    g.fork(11, 12);
    // git stash runs `git reset --hard` (through libexec/git-core).
    let (k, role) = g.exec(
        &exec(
            12,
            11,
            &["git", "reset", "--hard"],
            "/usr/lib/git-core/git",
            0,
        ),
        102,
    );
    assert_eq!((k, role), (101, ExecRole::Inside));
    // The shell's next command is a new action; a PATH search retry is not.
    g.fork(10, 13);
    let (rm, _) = g.exec(&exec(13, 10, &["rm", "x"], "/usr/local/bin/rm", -2), 103);
    let (again, role) = g.exec(&exec(13, 10, &["rm", "x"], "/usr/bin/rm", 0), 104);
    assert_eq!((again, role), (rm, ExecRole::Retry));
    assert_eq!(g.exit(12), None);
    assert_eq!(g.exit(11), Some(101));
}

#[test]
fn a_program_that_replaces_itself_hands_over_its_action() {
    // A pyenv shim: bash → `pyenv exec python3` → python3 in the same
    // process; the `git reset --hard` the script runs is its own action.
    let mut g = Grouper::default();
    let (shim, _) = g.exec(&exec(10, 1, &["bash", "shim"], "/usr/bin/bash", 0), 100);
    let (pyenv, role) = g.exec(
        &exec(10, 1, &["pyenv", "exec", "python3"], "/opt/pyenv", 0),
        101,
    );
    assert_eq!((role, pyenv != shim), (ExecRole::Begins, true));
    g.fork(10, 11);
    let (k, role) = g.exec(
        &exec(11, 10, &["readlink", "x"], "/usr/bin/readlink", 0),
        102,
    );
    assert_eq!((k, role), (pyenv, ExecRole::Inside));
    let (py, role) = g.exec(
        &exec(10, 1, &["python3", "s.py"], "/usr/bin/python3", 0),
        103,
    );
    assert_eq!((py, role), (103, ExecRole::Begins));
    g.fork(10, 12);
    let (reset, role) = g.exec(
        &exec(12, 10, &["git", "reset", "--hard"], "/usr/bin/git", 0),
        104,
    );
    assert_eq!((reset, role), (104, ExecRole::Begins));
    // git's own children still belong to git.
    g.fork(12, 13);
    let (k, role) = g.exec(
        &exec(
            13,
            12,
            &["git-upload-pack"],
            "/usr/lib/git-core/git-upload-pack",
            0,
        ),
        105,
    );
    assert_eq!((k, role), (104, ExecRole::Inside));
}

#[test]
fn before_it_runs_a_replacing_exec_still_hands_over() {
    // The seccomp supervisor sees execs before they run (no result).
    let mut g = Grouper::default();
    let mut pyenv = exec(10, 1, &["pyenv", "exec", "python3"], "/opt/pyenv", 0);
    pyenv.result = None;
    let (k, _) = g.exec(&pyenv, 100);
    let mut py = exec(10, 1, &["python3", "s.py"], "/usr/bin/python3", 0);
    py.result = None;
    let (py_k, role) = g.exec(&py, 101);
    assert_eq!((py_k, role), (101, ExecRole::Begins));
    assert_ne!(k, py_k);
    let mut reset = exec(11, 10, &["git", "reset", "--hard"], "/a/git", 0);
    reset.result = None;
    assert_eq!(g.exec(&reset, 102), (102, ExecRole::Begins));
    // The PATH search's next attempt is a retry, not a replacement.
    let mut again = reset.clone();
    again.path = Some("/b/git".into());
    assert_eq!(g.exec(&again, 103), (102, ExecRole::Retry));
}

#[test]
fn git_internals_are_recoverable_only_when_every_branch_is_on_a_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let origin = tmp.path().join("origin.git");
    git(tmp.path(), &["init", "-q", "--bare", &s(&origin)]);
    git(&r, &["remote", "add", "origin", &s(&origin)]);
    let object = |m: &mut Measurer| m.measure(&s(&r.join(".git/HEAD")), false).recovery;
    let mut m = measurer(&r, &tmp.path().join("home"));
    assert_eq!(object(&mut m), Recovery::Irreversible, "nothing pushed yet");
    git(&r, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    git(&r, &["fetch", "-q", "origin"]);
    let mut m = measurer(&r, &tmp.path().join("home"));
    assert_eq!(
        object(&mut m),
        Recovery::Recoverable,
        "every branch is on origin"
    );
    // A commit that is only local makes the repository irreplaceable.
    git(&r, &["commit", "-qam", "local only"]);
    m.invalidate(&r);
    assert_eq!(object(&mut m), Recovery::Irreversible);
    git(&r, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    git(&r, &["fetch", "-q", "origin"]);
    m.invalidate(&r);
    assert_eq!(object(&mut m), Recovery::Recoverable);
    // So does a stash.
    std::fs::write(r.join("src/a.rs"), "fn a() { stashed() }\n").unwrap();
    git(&r, &["stash", "-q"]);
    m.invalidate(&r);
    assert_eq!(object(&mut m), Recovery::Irreversible);
}

/// The context of a run whose workspace is the repository `r`.
/// A real repository in a temporary directory (kept while the first
/// value lives), a context rooted in it, and the default pack.
fn repo_ctx() -> (tempfile::TempDir, PathBuf, Context, Policy) {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let ctx = ctx_in(&r, tmp.path());
    (tmp, r, ctx, Policy::default_pack())
}

fn ctx_in(r: &Path, tmp: &Path) -> Context {
    Context {
        workspace: r.to_path_buf(),
        home: tmp.join("home"),
        trace_path: None,
    }
}

/// A file call of one process on `path`, not yet judged.
fn file_effect(op: Op, path: &Path, flags: &[&str]) -> Action {
    Action {
        op: Some(op),
        pid: 30,
        tid: 30,
        ppid: 1,
        path: Some(s(path)),
        flag_names: flags.iter().map(|f| f.to_string().into()).collect(),
        ..Default::default()
    }
}

/// When a git command ends, the branch tips are read again only when its
/// records changed something under the refs, or the repository was never
/// read: `git status` after `git status` reads nothing.
#[test]
fn tips_are_read_again_only_after_a_git_command_changed_the_refs() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    let mut j = Judge::new(&ctx);
    let known = |j: &Judge, b: &str| {
        let name = format!("refs/heads/{b}");
        j.measurer.tips.values().any(|t| t.contains_key(&name))
    };
    let run = |j: &mut Judge, pid: u32, argv: &[&str], effects: Vec<Action>| {
        let mut e = exec(pid, 1, argv, "/usr/bin/git", 0);
        e.cwd = Some(s(&r));
        j.judge(&mut e, &policy, &ctx);
        for mut a in effects {
            (a.pid, a.tid) = (pid, pid);
            j.judge(&mut a, &policy, &ctx);
        }
        let mut x = Action {
            op: Some(Op::Exit),
            pid,
            tid: pid,
            ppid: 1,
            ..Default::default()
        };
        j.judge(&mut x, &policy, &ctx);
    };
    git(&r, &["branch", "one"]);
    run(&mut j, 40, &["git", "status"], vec![]);
    assert!(known(&j, "one"), "the repository's first git command reads");
    git(&r, &["branch", "two"]);
    run(&mut j, 41, &["git", "status"], vec![]);
    assert!(!known(&j, "two"), "no record changed a ref: nothing read");
    let heads = r.join(".git/refs/heads");
    let mut made = file_effect(Op::Rename, &heads.join("two.lock"), &[]);
    made.path2 = Some(s(&heads.join("two")));
    run(&mut j, 42, &["git", "branch", "two"], vec![made]);
    assert!(known(&j, "two"), "a ref renamed into place: read again");
    assert!(touches_refs(&file_effect(
        Op::Write,
        &r.join(".git/packed-refs.lock"),
        &["O_CREAT"]
    )));
    assert!(!touches_refs(&file_effect(
        Op::Write,
        &r.join(".git/index.lock"),
        &["O_CREAT"]
    )));
}

#[test]
fn an_rmdir_loses_nothing_but_the_files_it_held_are_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    std::fs::create_dir_all(r.join("tests")).unwrap();
    std::fs::write(r.join("tests/test_x.py"), "def test(): pass\n").unwrap();
    let ctx = ctx_in(&r, tmp.path());
    let policy = Policy::default_pack();
    let mut j = Judge::new(&ctx);
    let mut effect = |op: Op, path: &Path, flags: &[&str]| {
        let mut a = file_effect(op, path, flags);
        j.judge(&mut a, &policy, &ctx);
        a
    };
    // The untracked test file itself is work that exists nowhere else.
    let file = effect(Op::Unlink, &r.join("tests/test_x.py"), &[]);
    let m = file.measured.as_ref().unwrap();
    assert_eq!(
        (m.recovery, m.object),
        (Recovery::Irreversible, ObjectKind::Untracked)
    );
    assert_eq!(file.verdict.as_ref().unwrap().treatment, Treatment::Confirm);
    // Emptied, the directory's rmdir destroys nothing: accepted, not
    // preserved as a "test file".
    std::fs::remove_file(r.join("tests/test_x.py")).unwrap();
    let dir = effect(Op::Rmdir, &r.join("tests"), &["AT_REMOVEDIR"]);
    let m = dir.measured.as_ref().unwrap();
    assert_eq!(
        (m.recovery, m.object, m.location),
        (
            Recovery::Reversible,
            ObjectKind::Directory,
            Location::Workspace
        )
    );
    let v = dir.verdict.as_ref().unwrap();
    assert_eq!(v.treatment, Treatment::Accept, "{v:?}");
    // The same for a fan-out directory of an unpushed repository's object
    // store, which its files (irreplaceable) would not be.
    let objects = r.join(".git/objects/ab");
    std::fs::create_dir_all(&objects).unwrap();
    let dir = effect(Op::Rmdir, &objects, &["AT_REMOVEDIR"]);
    assert_eq!(dir.verdict.as_ref().unwrap().treatment, Treatment::Accept);
    let head = effect(Op::Unlink, &r.join(".git/HEAD"), &[]);
    assert_eq!(
        head.measured.as_ref().unwrap().recovery,
        Recovery::Irreversible
    );
    assert!(head.verdict.as_ref().unwrap().treatment >= Treatment::Confirm);
}

/// An open the kernel says created its file destroyed nothing and makes
/// the file this run's own, without measuring it; an open of a file that
/// was there before is measured as before.
#[test]
fn an_open_that_created_its_file_destroyed_nothing() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    let mut j = Judge::new(&ctx);
    let mut effect = |op: Op, path: &Path, flags: &[&str], created: bool| {
        let mut a = Action {
            result: Some(3),
            created_by_call: created,
            ..file_effect(op, path, flags)
        };
        j.judge(&mut a, &policy, &ctx);
        a
    };
    let trunc = ["O_WRONLY", "O_CREAT", "O_TRUNC"];
    // The file is not on disk: had it been measured, it would be "gone".
    let new = r.join("out/new.txt");
    let a = effect(Op::Truncate, &new, &trunc, true);
    let m = a.measured.as_ref().unwrap();
    assert_eq!(
        (m.recovery, m.object, m.location),
        (
            Recovery::Reversible,
            ObjectKind::Created,
            Location::Workspace
        )
    );
    assert!(m.why.contains("created by this call"), "{}", m.why);
    // Its later removal is of this run's own file.
    let a = effect(Op::Unlink, &new, &[], false);
    let m = a.measured.as_ref().unwrap();
    assert_eq!(
        (m.recovery, m.object),
        (Recovery::Reversible, ObjectKind::Created)
    );
    // A write open without O_TRUNC that created the file names it too.
    let log = r.join("build.log");
    let a = effect(Op::Write, &log, &["O_WRONLY", "O_CREAT", "O_APPEND"], true);
    assert_eq!(a.measured.as_ref().unwrap().object, ObjectKind::Created);
    // Truncating a modified tracked file the call did not create is
    // measured from the file system, as before.
    let a = effect(Op::Truncate, &r.join("src/b.rs"), &trunc, false);
    let m = a.measured.as_ref().unwrap();
    assert_ne!(m.object, ObjectKind::Created);
    assert_eq!(m.recovery, Recovery::Unmeasured, "{m:?}");
}

/// An exec previewed when its record arrived is judged by that preview,
/// even if the command has destroyed what it names by the time its record
/// is judged; without the early preview the same record finds nothing.
#[test]
fn an_exec_previewed_on_arrival_is_judged_by_what_was_there() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    let clean = |ktime_ns: u64| Action {
        cwd: Some(s(&r)),
        ktime_ns,
        ..exec(40, 1, &["git", "clean", "-fd"], "/usr/bin/git", 0)
    };
    let mut j = Judge::new(&ctx);
    let mut early = clean(100);
    j.preview_early(&early);
    // `git clean -fd` removes the untracked notes before the record is judged.
    std::fs::remove_file(r.join("notes.txt")).unwrap();
    // Another attempt of the same thread's path search shares the walk
    // taken for the first (it would find nothing now).
    let retry = clean(101);
    j.preview_early(&retry);
    let shared = |t: u64| j.early[&(40, t)].blast.untracked;
    assert_eq!((shared(100), shared(101)), (1, 1));
    j.early.remove(&(40, 101));
    j.judge(&mut early, &policy, &ctx);
    let v = early.verdict.as_ref().unwrap();
    assert_eq!(
        (v.rule.as_str(), v.treatment),
        ("repo.clean-force", Treatment::Confirm),
        "{v:?}"
    );
    // The record carries the preview its verdict was decided on, and a
    // replay of the record decides the same without looking again.
    let carried = early
        .preview
        .clone()
        .expect("the exec record carries its preview");
    assert_eq!((carried.untracked, carried.files), (1, 1));
    assert!(carried.seen.is_empty(), "only the counts are recorded");
    let mut again = Action {
        verdict: None,
        ..early.clone()
    };
    Judge::new(&ctx).rejudge(&mut again, &policy, &ctx);
    assert_eq!(
        again.verdict.as_ref().unwrap().treatment,
        Treatment::Confirm
    );
    // The same command judged only late: nothing untracked is left to count.
    let mut late = clean(200);
    let mut lj = Judge::new(&ctx);
    lj.judge(&mut late, &policy, &ctx);
    assert_eq!(late.verdict.as_ref().unwrap().treatment, Treatment::Accept);
    // Its record of the removal measures what the preview came too late to
    // count, and the command is judged again on it, as the judge before
    // the call judged it: once.
    let removed = |name: &str| Action {
        pid: 40,
        tid: 40,
        result: Some(0),
        ..file_effect(Op::Unlink, &r.join(name), &[])
    };
    let mut gone = removed("notes.txt");
    lj.judge(&mut gone, &policy, &ctx);
    let m = gone.measured.as_ref().unwrap();
    assert_eq!(
        (m.recovery, m.object),
        (Recovery::Irreversible, ObjectKind::Untracked)
    );
    let v = gone.verdict.as_ref().unwrap();
    assert_eq!(
        (v.rule.as_str(), v.treatment),
        ("repo.clean-force", Treatment::Confirm),
        "{v:?}"
    );
    assert!(v.reason.contains("git clean -fd: 1 file"), "{}", v.reason);
    let mut next = removed("other.txt");
    lj.judge(&mut next, &policy, &ctx);
    assert_eq!(next.verdict.as_ref().unwrap().rule, "action.git-effects");
    // A replay of the three records decides the same.
    let mut rj = Judge::new(&ctx);
    for (rec, want) in [(&late, Treatment::Accept), (&gone, Treatment::Confirm)] {
        let mut again = Action {
            verdict: None,
            ..rec.clone()
        };
        rj.rejudge(&mut again, &policy, &ctx);
        assert_eq!(again.verdict.as_ref().unwrap().treatment, want);
    }
    // An early preview is used once, by the record it was taken for.
    assert!(j.early.is_empty());
}

/// One judge: a file call judged before it runs (seccomp, `abm hook`) and
/// the same call judged after it (the trace pipeline) get the same
/// measurement and verdict, for every kind of rewrite.
#[test]
fn a_rewrite_is_judged_the_same_before_and_after_the_call() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    let trunc = ["O_WRONLY", "O_CREAT", "O_TRUNC"];
    // (call, what it does to the file system, the verdict both must give)
    type Case<'a> = (&'a str, Action, Box<dyn Fn()>, Treatment);
    let site = r.join("v/lib/python3.11/site-packages/certifi");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(r.join("v/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    std::fs::write(r.join("config.yaml"), "db: local\n").unwrap();
    std::fs::write(r.join("empty.txt"), "").unwrap();
    std::fs::write(site.join("old.pem"), "-----BEGIN CERTIFICATE-----\n").unwrap();
    let write = |p: PathBuf, text: &'static str| move || std::fs::write(&p, text).unwrap();
    let cases: Vec<Case> = vec![
        // pip writing a certificate bundle into a new virtualenv.
        (
            "new cacert.pem in a venv",
            file_effect(Op::Truncate, &site.join("cacert.pem"), &trunc),
            Box::new(write(
                site.join("cacert.pem"),
                "-----BEGIN CERTIFICATE-----\n",
            )),
            Treatment::Accept,
        ),
        // ... and rewriting the one it installed before the run.
        (
            "existing .pem in a venv",
            file_effect(Op::Truncate, &site.join("old.pem"), &trunc),
            Box::new(write(
                site.join("old.pem"),
                "-----BEGIN CERTIFICATE-----\nx\n",
            )),
            Treatment::Accept,
        ),
        // `: > config.yaml` over an untracked file.
        (
            "truncated untracked file",
            file_effect(Op::Truncate, &r.join("config.yaml"), &trunc),
            Box::new(write(r.join("config.yaml"), "")),
            Treatment::Confirm,
        ),
        // An empty untracked file is judged like a full one (after the
        // call nothing tells them apart).
        (
            "truncated empty untracked file",
            file_effect(Op::Truncate, &r.join("empty.txt"), &trunc),
            Box::new(write(r.join("empty.txt"), "")),
            Treatment::Confirm,
        ),
        // A rewrite of a tracked file: not measured either way.
        (
            "rewritten modified tracked file",
            file_effect(Op::Truncate, &r.join("src/b.rs"), &trunc),
            Box::new(write(r.join("src/b.rs"), "new")),
            Treatment::Accept,
        ),
        // `mv draft notes.txt` over untracked notes.
        (
            "rename over untracked notes",
            Action {
                path2: Some(s(&r.join("notes.txt"))),
                ..file_effect(Op::Rename, &r.join("draft"), &[])
            },
            Box::new(write(r.join("notes.txt"), "draft")),
            Treatment::Confirm,
        ),
    ];
    std::fs::write(r.join("draft"), "draft").unwrap();
    let mut diffs = Vec::new();
    for (what, a, act, want) in cases {
        let mut before = a.clone();
        Judge::live(&ctx).judge(&mut before, &policy, &ctx);
        let created =
            a.path.as_deref().is_some_and(|p| !Path::new(p).exists()) && a.op != Some(Op::Rename);
        act();
        let mut after = Action {
            result: Some(0),
            created_by_call: created,
            dst_dir_ino: a.path2.as_ref().map(|_| 1),
            dst_ino: a.path2.as_ref().map(|_| 2),
            ..a
        };
        Judge::new(&ctx).judge(&mut after, &policy, &ctx);
        let (vb, va) = (before.verdict.unwrap(), after.verdict.unwrap());
        let (mb, ma) = (before.measured.unwrap(), after.measured.unwrap());
        if vb.treatment != va.treatment
            || vb.rule != va.rule
            || mb.recovery != ma.recovery
            || vb.treatment != want
        {
            diffs.push(format!(
                "{what}: before {:?} by {} ({:?} {:?}: {}), after {:?} by {} ({:?} {:?}: {}), want {want:?}",
                vb.treatment, vb.rule, mb.recovery, mb.object, mb.why,
                va.treatment, va.rule, ma.recovery, ma.object, ma.why
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// `git checkout PATHSPEC` without `--` is previewed like `git checkout --
/// PATHSPEC`; a branch name is not a pathspec.
#[test]
fn git_checkout_of_a_pathspec_is_previewed() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    git(&r, &["branch", "feature"]);
    let mut m = measurer(&r, &tmp.path().join("home"));
    let b = preview(&cmdline(&["git", "checkout", "."]), &r, &mut m).expect("previewed");
    assert_eq!((b.modified, b.irreversible), (1, 1), "{b:?}");
    let b = preview(&cmdline(&["git", "checkout", "src/b.rs"]), &r, &mut m).expect("previewed");
    assert_eq!(b.modified, 1, "{b:?}");
    let b = preview(&cmdline(&["git", "checkout", "HEAD", "src"]), &r, &mut m).expect("previewed");
    assert_eq!(b.modified, 1, "{b:?}");
    assert!(preview(&cmdline(&["git", "checkout", "feature"]), &r, &mut m).is_none());
    assert!(preview(&cmdline(&["git", "checkout", "-b", "new"]), &r, &mut m).is_none());
}

/// One judge: `rm -f core` (a `make clean` of a file that was never
/// built), `rm -rf build` when there is none, `truncate` of a missing
/// file: before the call the name is missing, after it the kernel said
/// ENOENT; both judges find that nothing is destroyed. A file removed by
/// the call itself (result 0, gone afterwards) is still judged by what it
/// held.
#[test]
fn a_call_on_a_missing_name_destroys_nothing_before_and_after() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    for (op, rel) in [
        (Op::Unlink, "core"),
        (Op::Unlink, "no/such/dir/file"),
        (Op::Rmdir, "build"),
        (Op::Truncate, "missing.log"),
    ] {
        let a = file_effect(op, &r.join(rel), &[]);
        let mut before = a.clone();
        Judge::live(&ctx).judge(&mut before, &policy, &ctx);
        let mut after = Action {
            result: Some(-(libc::ENOENT as i64)),
            ..a
        };
        Judge::new(&ctx).judge(&mut after, &policy, &ctx);
        for (when, x) in [("before", &before), ("after", &after)] {
            let m = x.measured.as_ref().unwrap();
            let v = x.verdict.as_ref().unwrap();
            assert_eq!(m.object, ObjectKind::None, "{rel} {when}: {m:?}");
            assert_eq!(m.recovery, Recovery::Reversible, "{rel} {when}: {m:?}");
            assert_eq!(v.treatment, Treatment::Accept, "{rel} {when}: {v:?}");
        }
    }
    // Removed by the call: an untracked file's content is lost.
    let mut removed = Action {
        result: Some(0),
        ..file_effect(Op::Unlink, &r.join("notes.txt"), &[])
    };
    Judge::new(&ctx).judge(&mut removed, &policy, &ctx);
    let m = removed.measured.unwrap();
    assert_eq!(m.recovery, Recovery::Irreversible, "{m:?}");
    assert_ne!(removed.verdict.unwrap().treatment, Treatment::Accept);
}

/// A repository with one stash entry pushed before the run, and a
/// measurer whose run starts after it.
fn stash_from_before_the_run() -> (tempfile::TempDir, PathBuf, Measurer) {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    git(&r, &["stash", "push", "-q", "-m", "old"]);
    let mut m = measurer(&r, &tmp.path().join("home"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    m.since = std::time::SystemTime::now();
    (tmp, r, m)
}

/// `git stash drop`/`clear` lose the entries the run did not push; those
/// whose commit was written since the run started are its own. A remote
/// branch or tag deleted is lost only when no other ref holds its commits.
#[test]
fn stash_drops_and_remote_deletes_are_judged_by_what_they_lose() {
    let (tmp, r, mut m) = stash_from_before_the_run();
    let b = preview(&cmdline(&["git", "stash", "drop"]), &r, &mut m).expect("previewed");
    assert_eq!((b.refs, b.irreversible, b.recoverable), (1, 1, 0), "{b:?}");
    // One the run pushed: stash@{0} is its own, stash@{1} is not.
    std::fs::write(r.join("src/a.rs"), "fn a() { scratch() }\n").unwrap();
    git(&r, &["stash", "push", "-q", "-m", "scratch"]);
    let b = preview(&cmdline(&["git", "stash", "drop", "-q"]), &r, &mut m).unwrap();
    assert_eq!((b.refs, b.irreversible, b.recoverable), (1, 0, 1), "{b:?}");
    let b = preview(&cmdline(&["git", "stash", "drop", "stash@{1}"]), &r, &mut m).unwrap();
    assert_eq!((b.refs, b.irreversible), (1, 1), "{b:?}");
    let b = preview(&cmdline(&["git", "stash", "clear"]), &r, &mut m).unwrap();
    assert_eq!((b.refs, b.irreversible, b.recoverable), (2, 1, 1), "{b:?}");
    assert!(
        b.describe().contains("2 refs or stash entries"),
        "{}",
        b.describe()
    );

    // Remote refs: a bare origin holding main and a branch only it has.
    let origin = tmp.path().join("origin.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(&r, &["remote", "add", "origin", origin.to_str().unwrap()]);
    git(&r, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    git(
        &r,
        &["commit", "-q", "--allow-empty", "-m", "only on the remote"],
    );
    git(&r, &["push", "-q", "origin", "HEAD:refs/heads/theirs"]);
    git(&r, &["reset", "-q", "--soft", "HEAD~1"]);
    git(&r, &["tag", "v1", "HEAD"]);
    git(&r, &["push", "-q", "origin", "v1"]);
    git(&r, &["fetch", "-q", "origin"]);
    m.invalidate(&r);
    // `theirs` holds a commit no other ref has (the local branch moved
    // back, the commit stays only under refs/remotes/origin/theirs).
    let b = preview(
        &cmdline(&["git", "push", "origin", "--delete", "theirs"]),
        &r,
        &mut m,
    )
    .unwrap();
    assert_eq!((b.refs, b.irreversible), (1, 1), "{b:?}");
    // The tag withdrawn while the local tag stays: nothing lost.
    let b = preview(
        &cmdline(&["git", "push", "-q", "origin", ":refs/tags/v1"]),
        &r,
        &mut m,
    )
    .unwrap();
    assert_eq!((b.refs, b.irreversible, b.recoverable), (1, 0, 1), "{b:?}");
    assert!(preview(&cmdline(&["git", "push", "origin", "main"]), &r, &mut m).is_none());

    // Local branches: `gone` holds a commit from before the run that no
    // other ref has; `merged` is contained in the current branch; `mine` was committed
    // by the run.
    git(&r, &["branch", "merged"]);
    git(&r, &["commit", "-q", "--allow-empty", "-m", "past merged"]);
    git(&r, &["switch", "-q", "-c", "gone"]);
    git(&r, &["commit", "-q", "--allow-empty", "-m", "only here"]);
    git(&r, &["switch", "-q", "-"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    m.since = std::time::SystemTime::now();
    git(&r, &["switch", "-q", "-c", "mine"]);
    git(
        &r,
        &["commit", "-q", "--allow-empty", "-m", "the run's own"],
    );
    git(&r, &["switch", "-q", "-"]);
    m.invalidate(&r);
    let del = |args: &[&str], m: &mut Measurer| {
        let b = preview(&cmdline(args), &r, m).expect("previewed");
        (b.refs, b.irreversible, b.recoverable)
    };
    assert_eq!(del(&["git", "branch", "-D", "gone"], &mut m), (1, 1, 0));
    assert_eq!(
        del(&["git", "branch", "--delete", "--force", "gone"], &mut m),
        (1, 1, 0)
    );
    assert_eq!(del(&["git", "branch", "-d", "merged"], &mut m), (1, 0, 1));
    assert_eq!(del(&["git", "branch", "-D", "mine"], &mut m), (1, 0, 1));
    // A name with no branch destroys nothing (git refuses).
    assert_eq!(del(&["git", "branch", "-D", "nosuch"], &mut m), (0, 0, 0));
    assert!(preview(&cmdline(&["git", "branch", "new"]), &r, &mut m).is_none());

    // Judged after it ran (a trace record): the branch is gone, and its
    // tip as remembered earlier in the run decides, once.
    m.remember_tips(&r);
    git(&r, &["branch", "-D", "-q", "gone"]);
    assert_eq!(del(&["git", "branch", "-D", "gone"], &mut m), (1, 1, 0));
    assert_eq!(del(&["git", "branch", "-D", "gone"], &mut m), (0, 0, 0));
    git(&r, &["branch", "-D", "-q", "merged"]);
    assert_eq!(del(&["git", "branch", "-d", "merged"], &mut m), (1, 0, 1));
}

/// A drop previewed after it ran (its entry already gone, as a trace's
/// records arrive once the command is done) is judged on the entries read
/// when the run started or as an earlier drop left them; a judge ahead of
/// the call only ever sees the entries as they are.
#[test]
fn a_stash_drop_previewed_after_it_ran_is_judged_on_what_it_dropped() {
    let (tmp, r, mut m) = stash_from_before_the_run();
    std::fs::write(r.join("src/a.rs"), "fn a() { scratch() }\n").unwrap();
    git(&r, &["stash", "push", "-q", "-m", "scratch"]);
    // The run starts: the stash holds the run's own entry over an old one.
    m.remember_tips(&r);
    let late = |args: &[&str], m: &mut Measurer| {
        git(&r, &args[1..]);
        let b = preview(&cmdline(args), &r, m).expect("previewed");
        (b.refs, b.irreversible, b.recoverable)
    };
    assert_eq!(late(&["git", "stash", "drop", "-q"], &mut m), (1, 0, 1));
    assert_eq!(late(&["git", "stash", "drop", "-q"], &mut m), (1, 1, 0));

    // Ahead of the call, an entry already gone is not counted.
    std::fs::write(r.join("src/a.rs"), "fn a() { again() }\n").unwrap();
    git(&r, &["stash", "push", "-q", "-m", "again"]);
    let mut ahead = measurer(&r, &tmp.path().join("home"));
    ahead.late = false;
    ahead.remember_tips(&r);
    git(&r, &["stash", "drop", "-q"]);
    let b = preview(&cmdline(&["git", "stash", "drop"]), &r, &mut ahead);
    assert!(b.as_ref().is_none_or(|b| b.refs == 0), "{b:?}");
}

/// Git-ignored is not regenerable: an ignored file in a build or tool
/// output directory, or of an output kind, is regenerated; any other
/// ignored file (a data directory, a local config) exists nowhere else.
/// The judges before and after the call agree.
#[test]
fn ignored_is_regenerable_only_as_build_output() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    std::fs::write(r.join(".git/info/exclude"), "data/\ninstance/\n").unwrap();
    std::fs::create_dir_all(r.join("data")).unwrap();
    std::fs::create_dir_all(r.join("instance")).unwrap();
    std::fs::write(r.join("data/events.jsonl"), "{\"seq\":1}\n").unwrap();
    std::fs::write(r.join("instance/config.py"), "SECRET = 'x'\n").unwrap();
    let mut m = measurer(&r, &tmp.path().join("home"));
    for (p, want) in [
        (
            "data/events.jsonl",
            (Recovery::Irreversible, ObjectKind::Untracked),
        ),
        (
            "instance/config.py",
            (Recovery::Irreversible, ObjectKind::Untracked),
        ),
        (
            "target/debug/app",
            (Recovery::Reversible, ObjectKind::BuildOutput),
        ),
        ("src/x.o", (Recovery::Reversible, ObjectKind::BuildOutput)),
    ] {
        let path = s(&r.join(p));
        let before = m.measure(&path, false);
        assert_eq!((before.recovery, before.object), want, "{p}: {before:?}");
        let rewrite = m.measure_rewrite(&path, Some(Op::Truncate), false);
        assert_eq!(rewrite.recovery, want.0, "{p} rewritten: {rewrite:?}");
        std::fs::remove_file(r.join(p)).unwrap();
        let after = m.measure(&path, false);
        assert_eq!((after.recovery, after.object), want, "{p} gone: {after:?}");
    }
}

/// A preview taken when an exec record arrived may run ahead of the
/// records that made its files: once they are judged, those files are the
/// run's own and the preview stops counting them as lost.
#[test]
fn an_early_preview_forgets_what_the_run_made_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    std::fs::write(r.join(".git/info/exclude"), "/example\n").unwrap();
    std::fs::write(r.join("example"), "ELF").unwrap();
    let mut m = measurer(&r, &tmp.path().join("home"));
    let argv = cmdline(&["git", "clean", "-fX"]);
    let mut b = preview(&argv, &r, &mut m).unwrap();
    assert_eq!((b.irreversible, b.untracked), (1, 1), "{b:?}");
    m.created.insert(&s(&r.join("example")));
    b.forget_own(&m.created, &m.built);
    assert_eq!((b.irreversible, b.untracked), (0, 0), "{b:?}");
    assert!(b.reversible >= 1, "{b:?}");
}

/// The warm-up judges made-up records only: it writes nothing and leaves
/// the workspace and home as they were.
#[test]
fn warming_the_judge_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let ctx = ctx_in(&r, tmp.path());
    let list = |d: &Path| {
        let mut v: Vec<String> = walkdir(d);
        v.sort();
        v
    };
    let before = list(tmp.path());
    warm(&Policy::default_pack(), &ctx);
    assert_eq!(list(tmp.path()), before);
}

fn walkdir(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        out.push(format!("{} {:?}", p.display(), meta.modified().ok()));
        if meta.is_dir() {
            out.extend(walkdir(&p));
        }
    }
    out
}

/// A batch charges its records the CPU the judge used, not the time the
/// thread spent off the CPU (preempted by the workload, or here asleep).
#[test]
fn a_batch_charges_cpu_not_time_off_the_cpu() {
    let (_tmp, r, ctx, policy) = repo_ctx();
    let mut j = Judge::new(&ctx);
    let rec = |t: u64| Action {
        cwd: Some(s(&r)),
        ktime_ns: t,
        ..exec(50 + t as u32, 1, &["git", "status"], "/usr/bin/git", 0)
    };
    for t in 0..20 {
        j.judge(&mut rec(t), &policy, &ctx);
    }
    let cost = |j: &mut Judge, sleep: bool| {
        let before = j.cost_ns;
        j.begin_batch();
        for t in 100..120 {
            j.judge(&mut rec(t), &policy, &ctx);
        }
        if sleep {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        j.end_batch();
        j.cost_ns - before
    };
    let awake = cost(&mut j, false);
    let asleep = cost(&mut j, true);
    assert!(awake > 0);
    assert!(asleep * 5 < awake, "awake {awake} ns, asleep {asleep} ns");
    // Outside a batch each record is charged its wall time at once.
    let before = j.cost_ns;
    j.judge(&mut rec(200), &policy, &ctx);
    assert!(j.cost_ns > before);
}

/// A truncating open of a special file is judged by what the file is: a
/// character device such as `/dev/null` (every `> /dev/null`) or a pipe
/// holds nothing to lose, a block device's data is overwritten. A rename
/// over one replaces the name, as the judge after the call sees it: judged
/// by name and place, never as a device.
#[test]
fn truncating_a_special_file_is_judged_by_its_kind() {
    use std::ffi::CString;
    let tmp = tempfile::tempdir().unwrap();
    let r = repo(tmp.path());
    let mut m = measurer(&r, &tmp.path().join("home"));
    let null = m.measure_rewrite("/dev/null", Some(Op::Truncate), false);
    assert_eq!(
        (null.recovery, null.object),
        (Recovery::Reversible, ObjectKind::Device),
        "{null:?}"
    );
    let node = |name: &str, mode: libc::mode_t, dev: libc::dev_t| {
        let p = r.join(name);
        let c = CString::new(s(&p)).unwrap();
        // SAFETY: a valid NUL-terminated path; mknod only reads it.
        let rc = unsafe { libc::mknod(c.as_ptr(), mode | 0o600, dev) };
        assert_eq!(rc, 0, "mknod {name}: {}", std::io::Error::last_os_error());
        s(&p)
    };
    let disk = node("disk.img", libc::S_IFBLK, libc::makedev(7, 200));
    let fifo = node("fifo", libc::S_IFIFO, 0);
    let mem = node("mem", libc::S_IFCHR, libc::makedev(1, 1));
    let zero = node("zero", libc::S_IFCHR, libc::makedev(1, 5));
    for (p, want) in [
        (&disk, Recovery::Irreversible),
        (&mem, Recovery::Irreversible),
        (&fifo, Recovery::Reversible),
        (&zero, Recovery::Reversible),
    ] {
        let got = m.measure_rewrite(p, Some(Op::Truncate), false);
        assert_eq!(
            (got.recovery, got.object),
            (want, ObjectKind::Device),
            "{p}: {got:?}"
        );
    }
    // A build tool writing through /dev/null (`cc -o /dev/null`, as
    // configure scripts do) made no output of its own there: a later
    // `> /dev/null` is still a device's, not a build output's.
    let ctx = ctx_in(&r, tmp.path());
    let policy = Policy::default_pack();
    let mut j = Judge::new(&ctx);
    let mut cc = exec(30, 1, &["cc", "-o", "/dev/null", "t.c"], "/usr/bin/cc", 0);
    cc.cwd = Some(s(&r));
    j.judge(&mut cc, &policy, &ctx);
    for (op, flags) in [
        (Op::Write, &["O_WRONLY", "O_CREAT"][..]),
        (Op::Truncate, &["O_WRONLY", "O_CREAT", "O_TRUNC"][..]),
    ] {
        let mut a = file_effect(op, Path::new("/dev/null"), flags);
        a.result = Some(3);
        j.judge(&mut a, &policy, &ctx);
        if op == Op::Truncate {
            let m = a.measured.as_ref().unwrap();
            assert_eq!(
                (m.recovery, m.object),
                (Recovery::Reversible, ObjectKind::Device),
                "{m:?}"
            );
        }
    }
    assert!(!j.measurer.built.contains("/dev/null"));
    assert!(!j.measurer.created.contains("/dev/null"));
    // Renamed over: an untracked name in the repository, device or not.
    let over = m.measure_rewrite(&zero, Some(Op::Rename), false);
    assert_eq!(
        (over.recovery, over.object),
        (Recovery::Irreversible, ObjectKind::Untracked),
        "{over:?}"
    );
}
