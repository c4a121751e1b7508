//! `abm run` around container clients: the containers `docker run` starts
//! are followed from their cgroup's creation (their processes are children
//! of the runtime, not of the command), every action recorded with its
//! host path and its path in the container; containers the watched tree
//! did not ask for are left out unless `--follow-containers=all`.
//!
//! Real components: Debian's `docker.io` (dockerd is started here when it
//! is not running), an image built locally FROM scratch with the static
//! busybox (nothing is pulled).
mod common;
mod docker;

use std::{process::Command, time::Duration};

use common::{abm_run, Run, TempDir};
use docker::{docker_ready, IMAGE};
use serde_json::Value;

fn issues(e: &Value) -> Vec<String> {
    e.get("path_issues")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The records whose path in the container is `cpath`, with op `op`.
fn in_container<'a>(run: &'a Run, op: &str, cpath: &str) -> Vec<&'a Value> {
    run.events()
        .filter(|e| e["op"] == op && e["container_path"] == cpath)
        .collect()
}

fn followed(run: &Run) -> Vec<&Value> {
    run.records
        .iter()
        .filter(|r| r["type"] == "note" && r["kind"] == "container_followed")
        .collect()
}

#[test]
fn docker_run_is_followed_with_host_and_container_paths() {
    require_kernel!();
    docker_ready();
    let dir = TempDir::new("docker-run");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws_s = ws.to_string_lossy().into_owned();
    let script = "touch /f && rm /f && echo x > /data/k.txt && mv /data/k.txt /data/k2.txt && rm /data/k2.txt && mkdir /data/d && rmdir /data/d";
    let vol = format!("{ws_s}:/data");
    let run = abm_run(
        &dir,
        &ws,
        &[],
        &[
            "docker", "run", "--rm", "-v", &vol, IMAGE, "sh", "-c", script,
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let notes = followed(&run);
    assert_eq!(notes.len(), 1, "one container followed: {notes:#?}");
    assert_eq!(notes[0]["body"]["reason"], "client_running");
    let cid = notes[0]["body"]["container"].as_str().unwrap().to_owned();
    assert_eq!(cid.len(), 64);

    // The seven file actions of the script, each once, in both views.
    let expect: [(&str, &str, String); 7] = [
        ("write", "/f", String::new()),
        ("unlink", "/f", String::new()),
        ("truncate", "/data/k.txt", format!("{ws_s}/k.txt")),
        ("rename", "/data/k.txt", format!("{ws_s}/k.txt")),
        ("unlink", "/data/k2.txt", format!("{ws_s}/k2.txt")),
        ("rmdir", "/data/d", format!("{ws_s}/d")),
        ("exec", "/bin/sh", String::new()),
    ];
    let mut recorded = 0;
    for (op, cpath, host) in &expect {
        let found = in_container(&run, op, cpath);
        assert_eq!(found.len(), 1, "{op} {cpath}: {found:#?}");
        let e = found[0];
        let path = e["path"].as_str().unwrap();
        if host.is_empty() {
            // On the container's overlay root: the runtime's merged dir.
            assert!(
                path.starts_with("/var/lib/docker/") && path.ends_with(cpath),
                "{op} {cpath}: host path {path}"
            );
        } else {
            assert_eq!(path, host, "{e:#}");
        }
        assert!(!issues(e).iter().any(|i| i == "host_path_unknown"), "{e:#}");
        assert_eq!(e["cgroup_id"], notes[0]["body"]["cgroup_id"], "{e:#}");
        recorded += 1;
    }
    let mv = &in_container(&run, "rename", "/data/k.txt")[0];
    assert_eq!(mv["path2"], format!("{ws_s}/k2.txt"));
    assert_eq!(mv["container_path2"], "/data/k2.txt");
    eprintln!(
        "docker run: {recorded} of {} container actions recorded",
        expect.len()
    );
}

#[test]
fn docker_exec_into_a_container_the_run_started_is_recorded() {
    require_kernel!();
    docker_ready();
    let dir = TempDir::new("docker-exec");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let name = format!("abm-test-exec-{}", std::process::id());
    let script = format!(
        "docker run -d --name {name} {IMAGE} sleep 60 >/dev/null && \
         docker exec {name} sh -c 'echo a > /e1 && rm /e1' && \
         {{ docker exec {name} rmdir /nonexistent; true; }} && \
         docker rm -f {name} >/dev/null"
    );
    let run = abm_run(&dir, &ws, &["--linger", "0"], &["sh", "-c", &script]);
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    assert!(run.output.status.success(), "{}", run.stderr());
    assert_eq!(followed(&run).len(), 1, "{:#?}", followed(&run));
    let w = in_container(&run, "truncate", "/e1");
    let u = in_container(&run, "unlink", "/e1");
    assert_eq!((w.len(), u.len()), (1, 1), "{w:#?} {u:#?}");
    assert_eq!(u[0]["result"], 0);
    assert!(
        u[0]["path"].as_str().unwrap().ends_with("/merged/e1"),
        "{:#}",
        u[0]
    );
    // The failed delete of the second exec is recorded with its error.
    let f = in_container(&run, "rmdir", "/nonexistent");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["errno"], "ENOENT", "{:#}", f[0]);
    eprintln!("docker exec: 3 of 3 container actions recorded");
}

/// A container another client creates while the run lasts is not the
/// run's (`tree`), unless every container is followed (`all`).
#[test]
fn containers_of_other_clients_are_followed_only_with_all() {
    require_kernel!();
    docker_ready();
    for mode in ["tree", "all"] {
        let dir = TempDir::new("docker-other");
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let marker = format!("/other-{mode}-{}", std::process::id());
        let script = format!("touch {marker} && rm {marker}");
        let img = IMAGE.to_owned();
        // The other client starts once the run is under way.
        let other = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            Command::new("docker")
                .args(["run", "--rm", &img, "sh", "-c", &script])
                .output()
                .unwrap()
        });
        let run = abm_run(
            &dir,
            &ws,
            &["--follow-containers", mode],
            &["sh", "-c", "sleep 6; rm -f gone"],
        );
        let out = other.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(run.output.status.success(), "{}", run.stderr());
        let seen = in_container(&run, "unlink", &marker).len();
        let notes = followed(&run).len();
        if mode == "tree" {
            assert_eq!(
                (seen, notes),
                (0, 0),
                "another client's container was attributed to the run"
            );
        } else {
            assert_eq!(
                (seen, notes),
                (1, 1),
                "--follow-containers=all missed a container"
            );
            assert_eq!(followed(&run)[0]["body"]["reason"], "all");
        }
        eprintln!("other client's container, {mode}: {seen} of 1 unlink recorded");
    }
}
