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
    let cidfile = dir.s("cid");
    let run = abm_run(
        &dir,
        &ws,
        &[],
        &[
            "docker",
            "run",
            "--rm",
            "--cidfile",
            &cidfile,
            "-v",
            &vol,
            IMAGE,
            "sh",
            "-c",
            script,
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    // Its own container (others' tests may create containers meanwhile,
    // which `tree` mode cannot tell apart: docs/harness.md).
    let cid = std::fs::read_to_string(&cidfile).unwrap();
    let notes: Vec<&Value> = followed(&run)
        .into_iter()
        .filter(|n| n["body"]["container"] == cid.trim())
        .collect();
    assert_eq!(
        notes.len(),
        1,
        "its container followed: {:#?}",
        followed(&run)
    );
    assert_eq!(notes[0]["body"]["reason"], "client_running");

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
    // Records of containers that other tests start at the same time (with
    // `--follow-containers=all`, this run follows them too) are told apart
    // by the cgroup.
    let ours = &notes[0]["body"]["cgroup_id"];
    let mut recorded = 0;
    for (op, cpath, host) in &expect {
        let found: Vec<&Value> = in_container(&run, op, cpath)
            .into_iter()
            .filter(|e| &e["cgroup_id"] == ours)
            .collect();
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
        "docker run -d --cidfile cid --name {name} {IMAGE} sleep 60 >/dev/null && \
         docker exec {name} sh -c 'echo a > /e1 && rm /e1' && \
         {{ docker exec {name} rmdir /nonexistent; true; }} && \
         docker rm -f {name} >/dev/null"
    );
    let run = abm_run(&dir, &ws, &["--linger", "0"], &["sh", "-c", &script]);
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    assert!(run.output.status.success(), "{}", run.stderr());
    let cid = std::fs::read_to_string(ws.join("cid")).unwrap();
    assert!(
        followed(&run)
            .iter()
            .any(|n| n["body"]["container"] == cid.trim()),
        "{:#?}",
        followed(&run)
    );
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
        // Other tests start containers at the same time: this one is
        // told apart by its id.
        let cidfile = dir.join("cid");
        let cid_arg = cidfile.to_string_lossy().into_owned();
        // The other client starts once the run is under way (its command
        // has begun), and the run lasts until the other client is done,
        // however slowly docker starts the container on a loaded machine.
        let started = ws.join("started");
        let done = ws.join("done");
        let other = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            while !started.exists() && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let out = Command::new("docker")
                .args([
                    "run",
                    "--rm",
                    "--cidfile",
                    &cid_arg,
                    &img,
                    "sh",
                    "-c",
                    &script,
                ])
                .output()
                .unwrap();
            std::fs::write(done, "").unwrap();
            out
        });
        let run = abm_run(
            &dir,
            &ws,
            &["--follow-containers", mode],
            &[
                "sh",
                "-c",
                "touch started; i=0; while [ ! -e done ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; rm -f gone",
            ],
        );
        let out = other.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(run.output.status.success(), "{}", run.stderr());
        let cid = std::fs::read_to_string(&cidfile).unwrap();
        let cid = cid.trim();
        assert_eq!(cid.len(), 64, "docker wrote no container id: {cid:?}");
        let seen = in_container(&run, "unlink", &marker).len();
        let ours: Vec<&Value> = followed(&run)
            .into_iter()
            .filter(|n| n["body"]["container"] == cid)
            .collect();
        let notes = ours.len();
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
            assert_eq!(ours[0]["body"]["reason"], "all");
        }
        eprintln!("other client's container, {mode}: {seen} of 1 unlink recorded");
    }
}

/// A podman container (no daemon: conmon and the container descend from
/// `podman` itself) under `abm run`: its actions in both views.
#[test]
fn podman_run_is_covered_with_host_and_container_paths() {
    require_kernel!();
    assert!(
        common::have("podman"),
        "podman is missing: install the Debian package podman (cargo xtask test does)"
    );
    let img = "localhost/abm-test-busybox:1";
    let have_image = Command::new("podman")
        .args(["image", "exists", img])
        .status()
        .is_ok_and(|s| s.success());
    if !have_image {
        let dir = TempDir::new("podman-image");
        std::fs::copy("/bin/busybox", dir.join("busybox"))
            .expect("busybox is missing: install busybox-static (cargo xtask test does)");
        std::fs::write(
            dir.join("Containerfile"),
            "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
        )
        .unwrap();
        let out = Command::new("podman")
            .args(["build", "-q", "-t", img, "-f"])
            .arg(dir.join("Containerfile"))
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "podman build: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = TempDir::new("podman-run");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws_s = ws.to_string_lossy().into_owned();
    let vol = format!("{ws_s}:/data");
    // Limits within this host's hard limits (podman raises them by default).
    let run = abm_run(
        &dir,
        &ws,
        &[],
        &[
            "podman",
            "run",
            "--rm",
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
            "-v",
            &vol,
            img,
            "sh",
            "-c",
            "touch /p && rm /p && echo x > /data/p.txt && rm /data/p.txt",
        ],
    );
    assert!(run.output.status.success(), "{}", run.stderr());
    let mut recorded = 0;
    for (op, cpath, host) in [
        ("write", "/p", None),
        ("unlink", "/p", None),
        ("truncate", "/data/p.txt", Some(format!("{ws_s}/p.txt"))),
        ("unlink", "/data/p.txt", Some(format!("{ws_s}/p.txt"))),
    ] {
        let found = in_container(&run, op, cpath);
        assert_eq!(found.len(), 1, "{op} {cpath}: {found:#?}");
        let path = found[0]["path"].as_str().unwrap();
        match host {
            Some(h) => assert_eq!(path, h),
            None => assert!(
                path.starts_with("/var/lib/containers/storage/") && path.ends_with(cpath),
                "{path}"
            ),
        }
        assert!(!issues(found[0]).iter().any(|i| i == "host_path_unknown"));
        recorded += 1;
    }
    eprintln!("podman run: {recorded} of 4 container actions recorded");
}
