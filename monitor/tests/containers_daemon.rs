//! `abm daemon` with real Docker containers: a target named before its
//! container exists covers the container from its first process (its
//! exec and first actions are in the trace, with host and container
//! paths); a target added for a running container says in its trace from
//! when it is covered; `docker exec` bursts of short-lived processes get
//! both views.
mod common;
mod docker;

use std::process::Command;

use common::{
    daemon::{config, Daemon},
    TempDir, ABM,
};
use docker::{docker_ready, IMAGE};
use serde_json::Value;

struct Removed(String);
impl Drop for Removed {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

fn docker(args: &[&str]) {
    let o = Command::new("docker").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn records(trace: &str) -> Vec<Value> {
    // The daemon writes the compact form: read either.
    common::read_records(std::path::Path::new(trace))
}

fn in_container<'a>(recs: &'a [Value], op: &str, cpath: &str) -> Vec<&'a Value> {
    recs.iter()
        .filter(|r| r["type"] == "event" && r["op"] == op && r["container_path"] == cpath)
        .collect()
}

fn sealed_trace(d: &Daemon, name: &str) -> String {
    d.wait("the target's trace to be sealed", || {
        d.target(name)["state"]
            .as_str()
            .is_some_and(|s| s != "active" && s != "waiting")
    });
    let trace = d.target(name)["trace"].as_str().unwrap().to_owned();
    let v = Command::new(ABM).args(["verify", &trace]).output().unwrap();
    assert!(
        v.status.success(),
        "abm verify: {}",
        String::from_utf8_lossy(&v.stdout)
    );
    trace
}

/// Named before it exists (by name, then by label): the container's first
/// exec and first actions are in the target's trace.
#[test]
fn a_container_named_before_it_exists_is_covered_from_its_first_process() {
    require_kernel!();
    docker_ready();
    let dir = TempDir::new("dc-early");
    let d = Daemon::start(&dir, &config(&dir, ""));
    let tag = std::process::id();
    for (how, selector) in [
        ("name", format!("abm-early-{tag}")),
        ("label", format!("abm.trial=early-{tag}")),
    ] {
        let target = format!("t-{how}");
        let add = d.abm(&["watch", "add", &target, "--container", &selector]);
        assert!(
            add.status.success(),
            "{}",
            String::from_utf8_lossy(&add.stderr)
        );
        assert_eq!(
            d.target(&target)["state"],
            "waiting",
            "{:#}",
            d.target(&target)
        );
        let cname = format!("abm-early-{how}-{tag}");
        let _rm = Removed(cname.clone());
        let mut args = vec!["run", "--rm", "--name", &cname];
        let label = format!("abm.trial=early-{tag}");
        if how == "label" {
            args.extend(["--label", &label]);
        } else {
            args[3] = &selector;
        }
        args.extend([
            IMAGE,
            "sh",
            "-c",
            "touch /first && rm /first && mkdir /d && rmdir /d",
        ]);
        docker(&args);
        let trace = sealed_trace(&d, &target);
        let recs = records(&trace);
        let late: Vec<_> = recs
            .iter()
            .filter(|r| r["kind"] == "coverage_late")
            .collect();
        assert!(late.is_empty(), "covered from the start: {late:#?}");
        let exec = in_container(&recs, "exec", "/bin/sh");
        assert_eq!(exec.len(), 1, "the container's first exec");
        let mut n = 1;
        for (op, p) in [("write", "/first"), ("unlink", "/first"), ("rmdir", "/d")] {
            let e = in_container(&recs, op, p);
            assert_eq!(e.len(), 1, "{how}: {op} {p}");
            let host = e[0]["path"].as_str().unwrap();
            assert!(
                host.starts_with("/var/lib/docker/") && host.ends_with(p),
                "{host}"
            );
            n += 1;
        }
        eprintln!("target by {how}: {n} of 4 first actions recorded");
    }
}

/// A target added for a running container: the trace says from when it
/// is covered; `docker exec` bursts get host and container paths.
#[test]
fn a_running_container_is_covered_late_with_a_note_and_exec_bursts_get_both_views() {
    require_kernel!();
    docker_ready();
    let dir = TempDir::new("dc-late");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let d = Daemon::start(&dir, &config(&dir, ""));
    let cname = format!("abm-late-{}", std::process::id());
    let _rm = Removed(cname.clone());
    let vol = format!("{}:/data", ws.display());
    docker(&[
        "run", "-d", "--name", &cname, "-v", &vol, IMAGE, "sleep", "60",
    ]);
    let add = d.abm(&["watch", "add", "late", "--container", &cname]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    assert_eq!(d.target("late")["state"], "active");
    for i in 0..5 {
        let s = format!("echo {i} > /data/keep{i}.txt && rm /data/keep{i}.txt");
        docker(&["exec", &cname, "sh", "-c", &s]);
    }
    docker(&["rm", "-f", &cname]);
    let trace = sealed_trace(&d, "late");
    let recs = records(&trace);
    let late: Vec<_> = recs
        .iter()
        .filter(|r| r["kind"] == "coverage_late")
        .collect();
    assert_eq!(late.len(), 1, "{late:#?}");
    assert!(late[0]["body"]["reason"]
        .as_str()
        .unwrap()
        .contains("already running"));
    let mut recorded = 0;
    for i in 0..5 {
        for op in ["truncate", "unlink"] {
            let cp = format!("/data/keep{i}.txt");
            let e = in_container(&recs, op, &cp);
            assert_eq!(e.len(), 1, "{op} {cp}");
            assert_eq!(
                e[0]["path"],
                format!("{}/keep{i}.txt", ws.display()),
                "{:#}",
                e[0]
            );
            recorded += 1;
        }
    }
    eprintln!("docker exec bursts: {recorded} of 10 actions recorded with both views");
}
