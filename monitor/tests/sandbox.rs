//! `abm run` around a sandbox with its own mount namespace (bubblewrap, as
//! coding agents' sandboxes use it): every path is recorded in the host
//! view (`path`) and as the sandboxed process saw it (`container_path`),
//! the same way the daemon records containers.
mod common;

use common::{abm_run, have, TempDir};

/// `bwrap` with DIR bound at /w and the host's /usr (and its usual
/// symlinks) read-only, then `sh -c script` inside.
fn bwrap(dir: &str, script: &str) -> Vec<String> {
    let mut argv: Vec<String> = [
        "bwrap",
        "--bind",
        dir,
        "/w",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--ro-bind",
        "/usr",
        "/usr",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for d in ["/bin", "/sbin", "/lib", "/lib64"] {
        match std::fs::read_link(d) {
            // Debian's merged /usr: /bin -> usr/bin and so on.
            Ok(target) => argv.extend([
                "--symlink".into(),
                target.to_string_lossy().into_owned(),
                d.into(),
            ]),
            Err(_) if std::path::Path::new(d).is_dir() => {
                argv.extend(["--ro-bind".into(), d.into(), d.into()])
            }
            Err(_) => {}
        }
    }
    argv.extend(["--chdir".into(), "/w".into(), "--".into()]);
    argv.extend(["/bin/sh".into(), "-c".into(), script.into()]);
    argv
}

#[test]
#[ignore = "racy: the mount namespace of a short-lived sandboxed process is sometimes read after it exited, and its paths stay in the sandbox view; passes in about half the runs"]
fn bwrap_sandbox_paths_are_recorded_in_host_and_sandbox_views() {
    require_kernel!();
    assert!(
        have("bwrap"),
        "bwrap is missing: install the Debian package bubblewrap (cargo xtask test does)"
    );
    let dir = TempDir::new("bwrap");
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("x"), "x").unwrap();
    std::fs::write(ws.join("sub/y"), "y").unwrap();
    let ws_s = ws.to_string_lossy().into_owned();
    let argv = bwrap(&ws_s, "rm /w/x && cd sub && mv y z && chmod 600 z");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = abm_run(&dir, &ws, &[], &argv);
    assert!(run.output.status.success(), "{}", run.stderr());
    assert!(!ws.join("x").exists(), "the sandboxed rm did not happen");

    let host_x = format!("{ws_s}/x");
    let unlink = run.one("unlink", &host_x);
    assert_eq!(unlink["container_path"], "/w/x", "{unlink:#}");
    assert_eq!(unlink["result"], 0, "{unlink:#}");
    assert!(
        unlink.get("path_issues").is_none_or(|i| !i
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "host_path_unknown"))),
        "{unlink:#}"
    );

    // A relative path from a cwd inside the sandbox, and a second path.
    let mv = run.one("rename", &format!("{ws_s}/sub/y"));
    assert_eq!(mv["path2"], format!("{ws_s}/sub/z"), "{mv:#}");
    assert_eq!(mv["container_path"], "/w/sub/y", "{mv:#}");
    assert_eq!(mv["container_path2"], "/w/sub/z", "{mv:#}");
    let chmod = run.one("chmod", &format!("{ws_s}/sub/z"));
    assert_eq!(chmod["container_path"], "/w/sub/z", "{chmod:#}");

    // Nothing is reported under the sandbox's own view as if it were a
    // host path.
    assert!(
        run.events().all(|e| e["path"] != "/w/x"),
        "a sandbox path was recorded as a host path"
    );
}
