//! Tracing of destructive syscalls in a launched process tree, on the real
//! kernel with real commands. Each test asserts on event content: operation,
//! resolved absolute path, result and acting process.
mod common;

use common::*;

#[test]
fn rm_rf_of_a_tree_records_every_unlink_and_rmdir() {
    require_kernel!();
    let t = TempDir::new("rmrf");
    let ws = TempDir::new("rmrf-ws");
    sh(
        "mkdir -p tree/a/b tree/c && touch tree/a/b/f1 tree/a/f2 tree/c/f3",
        ws.path(),
    );
    let run = abm_run(&t, ws.path(), &[], &["rm", "-rf", "tree"]);
    assert!(run.output.status.success(), "{}", run.stderr());
    for f in ["tree/a/b/f1", "tree/a/f2", "tree/c/f3"] {
        let e = run.one("unlink", &ws.s(f));
        assert_eq!(e["result"], 0);
        assert_eq!(e["comm"], "rm");
        assert_eq!(e["syscall"], "unlinkat");
    }
    for d in ["tree/a/b", "tree/a", "tree/c", "tree"] {
        let e = run.one("rmdir", &ws.s(d));
        assert_eq!(e["result"], 0);
        assert!(e["flag_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "AT_REMOVEDIR"));
    }
    assert!(run.execs().iter().any(|a| a == &["rm", "-rf", "tree"]));
    // Header first, seal last, sequence numbers dense.
    assert_eq!(run.records[0]["type"], "header");
    assert_eq!(run.records.last().unwrap()["type"], "seal");
    for (i, r) in run.records.iter().enumerate() {
        assert_eq!(r["seq"], i as u64);
    }
}

#[test]
fn mv_across_directories_records_both_paths() {
    require_kernel!();
    let t = TempDir::new("mv");
    let ws = TempDir::new("mv-ws");
    sh("mkdir src dst && echo x > src/file", ws.path());
    let run = abm_run(&t, ws.path(), &[], &["mv", "src/file", "dst/renamed"]);
    let e = run.one("rename", &ws.s("src/file"));
    assert_eq!(e["path2"], ws.s("dst/renamed"));
    assert_eq!(e["raw_path"], "src/file");
    assert_eq!(e["result"], 0);
    assert_eq!(e["comm"], "mv");
}

#[test]
fn chmod_recursive_and_chown_record_mode_and_owner() {
    require_kernel!();
    let t = TempDir::new("chmod");
    let ws = TempDir::new("chmod-ws");
    sh("mkdir -p d/e && touch d/f d/e/g", ws.path());
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["sh", "-c", "chmod -R 700 d && chown 1234:5678 d/f"],
    );
    for p in ["d", "d/f", "d/e", "d/e/g"] {
        let e = run.one("chmod", &ws.s(p));
        assert_eq!(e["mode"], 0o700, "{e}");
        assert_eq!(e["result"], 0);
    }
    let e = run.one("chown", &ws.s("d/f"));
    assert_eq!(e["owner_uid"], 1234);
    assert_eq!(e["owner_gid"], 5678);
    assert_eq!(e["result"], 0);
    assert_eq!(e["comm"], "chown");
}

#[test]
fn shell_redirection_and_truncate_command_are_truncations() {
    require_kernel!();
    let t = TempDir::new("trunc");
    let ws = TempDir::new("trunc-ws");
    sh("echo data > a && echo data > b", ws.path());
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["sh", "-c", ": > a; truncate -s0 b; echo x > /dev/null"],
    );
    // A redirection to /dev/null destroys nothing, and the verdict says
    // what the measurement says.
    let null = run.one("truncate", "/dev/null");
    assert_eq!(null["measured"]["object"], "device", "{null}");
    assert_eq!(null["measured"]["recovery"], "reversible", "{null}");
    assert_eq!(null["verdict"]["irreversibility"], "reversible", "{null}");
    // The workspace file truncated by the shell held data in no
    // repository: its verdict is not softened with it.
    let e = run.one("truncate", &ws.s("a"));
    assert_ne!(e["verdict"]["irreversibility"], "reversible", "{e}");
    assert!(
        e["flag_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "O_TRUNC"),
        "{e}"
    );
    assert!(e["result"].as_i64().unwrap() >= 0, "an open returns an fd");
    // truncate(1) opens without O_TRUNC, then ftruncate()s: the fd resolves.
    let e = run
        .events()
        .find(|e| e["syscall"] == "ftruncate" && e["path"] == ws.s("b"))
        .expect("ftruncate of b");
    assert_eq!(e["op"], "truncate");
    assert_eq!(e["result"], 0);
    assert_eq!(e["comm"], "truncate");
}

#[test]
fn find_delete_records_unlinks_relative_to_directory_fds() {
    require_kernel!();
    let t = TempDir::new("find");
    let ws = TempDir::new("find-ws");
    sh(
        "mkdir -p x/y && touch x/y/old.log x/keep.txt x/y/other.log",
        ws.path(),
    );
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["find", "x", "-name", "*.log", "-delete"],
    );
    for f in ["x/y/old.log", "x/y/other.log"] {
        let e = run.one("unlink", &ws.s(f));
        assert_eq!(e["result"], 0);
        assert_eq!(e["comm"], "find");
    }
    assert!(run.find("unlink", &ws.s("x/keep.txt")).is_empty());
    assert!(ws.join("x/keep.txt").exists());
}

#[test]
fn git_branch_delete_and_clean_in_a_real_repository() {
    require_kernel!();
    if !have("git") {
        common::skip_or_fail("prog:git", "git not installed");
        return;
    }
    let t = TempDir::new("git");
    let ws = TempDir::new("git-ws");
    sh(
        "git init -q -b main . && git -c user.email=t@e -c user.name=t commit -q --allow-empty -m init \
         && git branch feature-old && echo junk > untracked.txt && mkdir build && touch build/out.o",
        ws.path(),
    );
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["sh", "-c", "git branch -D feature-old && git clean -fdx"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(run
        .execs()
        .iter()
        .any(|a| a == &["git", "branch", "-D", "feature-old"]));
    // The loose ref is unlinked (git may also rewrite packed-refs).
    let e = run.one("unlink", &ws.s(".git/refs/heads/feature-old"));
    assert_eq!(e["result"], 0);
    assert_eq!(e["comm"], "git");
    let e = run.one("unlink", &ws.s("untracked.txt"));
    assert_eq!(e["result"], 0);
    assert_eq!(run.one("unlink", &ws.s("build/out.o"))["result"], 0);
    assert_eq!(run.one("rmdir", &ws.s("build"))["result"], 0);
}

#[test]
fn python_remove_rmtree_and_dirfd_relative_unlink() {
    require_kernel!();
    let t = TempDir::new("py");
    let ws = TempDir::new("py-ws");
    sh(
        "mkdir -p tree/sub dir && touch f tree/sub/g dir/x",
        ws.path(),
    );
    let script = "import os, shutil\n\
                  os.remove('f')\n\
                  shutil.rmtree('tree')\n\
                  fd = os.open('dir', os.O_RDONLY)\n\
                  os.unlink('x', dir_fd=fd)\n";
    let run = abm_run(&t, ws.path(), &[], &["python3", "-c", script]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let e = run.one("unlink", &ws.s("f"));
    assert_eq!(e["result"], 0);
    assert!(e["comm"].as_str().unwrap().starts_with("python"));
    assert_eq!(run.one("unlink", &ws.s("tree/sub/g"))["result"], 0);
    assert_eq!(run.one("rmdir", &ws.s("tree/sub"))["result"], 0);
    assert_eq!(run.one("rmdir", &ws.s("tree"))["result"], 0);
    let e = run.one("unlink", &ws.s("dir/x"));
    assert_eq!(e["raw_path"], "x", "raw argument kept");
    assert!(e["fd"].as_i64().unwrap() >= 0, "a real dirfd, not AT_FDCWD");
}

#[test]
fn failed_delete_carries_the_errno() {
    require_kernel!();
    let t = TempDir::new("enoent");
    let ws = TempDir::new("enoent-ws");
    let run = abm_run(&t, ws.path(), &[], &["rm", "does-not-exist"]);
    assert!(
        !run.output.status.success(),
        "rm fails and abm passes its exit code on"
    );
    assert_eq!(run.output.status.code(), Some(1));
    let e = run.one("unlink", &ws.s("does-not-exist"));
    assert_eq!(e["result"], -2);
    assert_eq!(e["errno"], "ENOENT");
}

#[test]
fn exec_of_a_cli_records_argv_cwd_and_program_path() {
    require_kernel!();
    let t = TempDir::new("exec");
    let ws = TempDir::new("exec-ws");
    let bin = ws.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("kubectl"), "#!/bin/sh\nexit 0\n").unwrap();
    sh("chmod +x bin/kubectl", ws.path());
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &[
            "sh",
            "-c",
            "PATH=$PWD/bin:$PATH kubectl --context prod delete namespace payments --wait=false",
        ],
    );
    let e = run
        .events()
        .find(|e| e["op"] == "exec" && e["argv"][0] == "kubectl" && e["result"] == 0)
        .expect("exec of kubectl");
    assert_eq!(e["path"], ws.s("bin/kubectl"));
    assert_eq!(e["argv"][1], "--context");
    assert_eq!(e["argv"][5], "payments");
    assert_eq!(e["cwd"], ws.path().to_string_lossy().as_ref());
}

#[test]
fn processes_outside_the_scope_produce_no_events() {
    require_kernel!();
    let t = TempDir::new("outside");
    let ws = TempDir::new("outside-ws");
    let other = TempDir::new("outside-other");
    sh("for i in $(seq 1 50); do touch f$i; done", other.path());
    // An unrelated process deletes files while abm watches another tree.
    let mut bg = std::process::Command::new("sh")
        .arg("-c")
        .arg("sleep 0.2; for i in $(seq 1 50); do rm f$i; sleep 0.01; done")
        .current_dir(other.path())
        .spawn()
        .unwrap();
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["sh", "-c", "sleep 1.2; touch mine; rm mine"],
    );
    bg.wait().unwrap();
    assert!(!other.join("f1").exists(), "the outside process did delete");
    let other_prefix = other.path().to_string_lossy().into_owned();
    let leaked: Vec<_> = run
        .events()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.starts_with(&other_prefix))
        })
        .collect();
    assert!(leaked.is_empty(), "outside events recorded: {leaked:?}");
    assert_eq!(run.one("unlink", &ws.s("mine"))["result"], 0);
    let pids: std::collections::BTreeSet<u64> =
        run.events().filter_map(|e| e["pid"].as_u64()).collect();
    assert!(!pids.contains(&(bg.id() as u64)));
}

#[test]
fn double_forked_daemon_grandchild_stays_in_scope() {
    require_kernel!();
    let t = TempDir::new("daemon");
    let ws = TempDir::new("daemon-ws");
    sh("touch victim", ws.path());
    // The command exits at once; its double-forked, setsid'd grandchild
    // deletes later. --linger keeps watching the remaining tree.
    let script = "(setsid sh -c 'sleep 0.5; rm victim' &) ; exit 0";
    let run = abm_run(&t, ws.path(), &["--linger", "5"], &["sh", "-c", script]);
    let e = run.one("unlink", &ws.s("victim"));
    assert_eq!(e["result"], 0);
    assert_eq!(e["comm"], "rm");
    assert!(!ws.join("victim").exists());
}

#[test]
fn summary_reports_counts_losses_and_trace() {
    require_kernel!();
    let t = TempDir::new("summary");
    let ws = TempDir::new("summary-ws");
    sh("mkdir d && touch d/1 d/2 d/3", ws.path());
    let trace = t.join("s.jsonl");
    let out = std::process::Command::new(ABM)
        .args(["run", "--trace"])
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .args(["--", "rm", "-r", "d"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unlink 3"), "{err}");
    assert!(err.contains("rmdir 1"), "{err}");
    assert!(err.contains("lost events: 0"), "{err}");
    assert!(err.contains(&trace.display().to_string()), "{err}");
    assert!(err.contains("verdicts by treatment"), "{err}");
}

/// A reader that stops early (`abm trace cat T | head`) ends abm's output
/// quietly, as it ends any Unix tool's: no panic, no error message.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    require_kernel!();
    let t = TempDir::new("epipe");
    let ws = TempDir::new("epipe-ws");
    // Far more output than a pipe holds (64 KiB).
    let run = abm_run(
        &t,
        ws.path(),
        &[],
        &["sh", "-c", "for i in $(seq 400); do : > /dev/null; done"],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let trace = run.trace.to_str().unwrap();
    for args in [
        &["trace", "cat", trace][..],
        &["replay", "--json", trace][..],
        &["replay", trace][..],
    ] {
        let mut child = std::process::Command::new(ABM)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty(), "abm {args:?} printed nothing");
        // The read end is closed here, with most of the output unread.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "abm {args:?}: {err}"
        );
    }
}

#[test]
fn command_not_found_is_one_clear_line() {
    require_kernel!();
    let t = TempDir::new("nf");
    let out = std::process::Command::new(ABM)
        .args(["run", "--trace"])
        .arg(t.join("t.jsonl"))
        .args(["--", "definitely-not-a-command-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot run definitely-not-a-command-xyz"),
        "{err}"
    );
}

#[test]
fn an_unreadable_argv_is_counted_as_a_failed_user_read() {
    require_kernel!();
    let t = TempDir::new("badargv");
    let ws = TempDir::new("badargv-ws");
    // execve with argv at an unmapped address: the exec program's read of
    // argv[0] fails at the tracepoint (the kernel then fails the call with
    // EFAULT). The record's argument list is empty; the trace must say why.
    let script = "import ctypes\n\
                  libc = ctypes.CDLL(None, use_errno=True)\n\
                  libc.execve(b'/bin/true', ctypes.c_void_p(8), None)\n\
                  assert ctypes.get_errno() == 14, ctypes.get_errno()\n";
    let run = abm_run(&t, ws.path(), &[], &["python3", "-c", script]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let e = run
        .events()
        .find(|e| e["syscall"] == "execve" && e["result"] == -14)
        .unwrap_or_else(|| panic!("no failed execve in {:#?}", run.records));
    assert_eq!(e["raw_path"], "/bin/true", "{e}");
    assert_eq!(e["argv"], serde_json::json!([]), "{e}");
    let failed: u64 = run
        .records
        .iter()
        .filter(|r| r["type"] == "loss" && r["cause"] == "user_read_failed")
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert!(
        failed >= 1,
        "no user_read_failed loss in the trace: {:#?}",
        run.records
            .iter()
            .filter(|r| r["type"] == "loss")
            .collect::<Vec<_>>()
    );
}
