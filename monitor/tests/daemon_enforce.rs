//! `abm daemon` asked to enforce, on the real kernel. Enforcement in the
//! daemon needs the BPF LSM backend; where LSM programs cannot load (the
//! development hosts of this project, see docs/lsm.md), a target asking
//! for it is refused with the reason, never watched unenforced. Where they
//! do load, the target is watched and reported as enforcing. The refusals
//! and confirmations in containers are tested in the BPF LSM VMs
//! (`cargo xtask vm-test`, tests/vm/daemon.sh).
mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

use common::{
    daemon::{config, Daemon},
    TempDir, ABM,
};
use monitor::kernel::cgroup::Hierarchy;
use serde_json::Value;

/// A cgroup v2 directory removed on drop.
struct Cgroup(PathBuf);

impl Cgroup {
    fn new(tag: &str) -> Cgroup {
        let h = Hierarchy::detect().expect("a cgroup v2 mount");
        let p = h
            .mount
            .join(format!("abm-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Cgroup(p)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Why BPF LSM programs do not load here, or `None` when they do.
fn lsm_unavailable() -> Option<String> {
    monitor::enforce::lsm::available()
        .err()
        .map(|e| e.to_string())
}

#[test]
fn watch_add_enforce_is_refused_with_the_reason_where_bpf_lsm_cannot_load() {
    require_kernel!();
    let dir = TempDir::new("daemon-enforce");
    let cg = Cgroup::new("enforce");
    let cgs = cg.0.display().to_string();
    let mut d = Daemon::start(&dir, &config(&dir, ""));
    let add = d.abm(&["watch", "add", "e", "--cgroup", &cgs, "--enforce"]);
    match lsm_unavailable() {
        Some(why) => {
            assert!(!add.status.success(), "{}", text(&add));
            let out = text(&add);
            assert!(
                out.contains("--enforce needs the BPF LSM backend")
                    && out.contains(&why)
                    && out.contains("without --enforce"),
                "the refusal names the backend, the reason and the way out: {out}"
            );
            let st = d.try_status().unwrap();
            assert_eq!(st["targets"], serde_json::json!([]), "nothing half-added");
            assert_eq!(st["daemon"]["backends"], serde_json::json!(["tracepoint"]));
            // The same target, recording only, is accepted.
            let add = d.abm(&["watch", "add", "e", "--cgroup", &cgs]);
            assert!(add.status.success(), "{}", text(&add));
            let t = &d.try_status().unwrap()["targets"][0];
            assert_eq!(t["name"], "e");
            assert_eq!(t["enforce"], false);
            // No enforcing target: nothing to answer.
            let ap = d.abm(&["approve", "1"]);
            assert!(!ap.status.success());
            assert!(
                text(&ap).contains("no target of this daemon enforces"),
                "{}",
                text(&ap)
            );
        }
        None => {
            assert!(add.status.success(), "{}", text(&add));
            assert!(text(&add).contains("enforcing (BPF LSM)"), "{}", text(&add));
            let st = d.try_status().unwrap();
            assert_eq!(st["targets"][0]["enforce"], true);
            assert_eq!(
                st["daemon"]["backends"],
                serde_json::json!(["tracepoint", "lsm"])
            );
        }
    }
    let pending = d.abm(&["pending", "--json"]);
    assert!(pending.status.success(), "{}", text(&pending));
    assert_eq!(
        serde_json::from_slice::<Value>(&pending.stdout).unwrap(),
        serde_json::json!([])
    );
    assert_eq!(d.stop(), 0);
}

#[test]
fn a_configured_enforcing_target_stops_the_daemon_where_bpf_lsm_cannot_load() {
    require_kernel!();
    let dir = TempDir::new("daemon-enforce-cfg");
    let cg = Cgroup::new("enforce-cfg");
    let extra = format!(
        "[[target]]\nname = \"agent\"\ncgroup = \"{}\"\nenforce = true\n",
        cg.0.display()
    );
    let mut d = Daemon::spawn(&dir, &config(&dir, &extra));
    let Some(why) = lsm_unavailable() else {
        // Where BPF LSM works, the daemon starts and the target enforces.
        let end = Instant::now() + Duration::from_secs(60);
        while d.try_status().is_none() {
            assert!(Instant::now() < end, "{}", d.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(d.try_status().unwrap()["targets"][0]["enforce"], true);
        assert_eq!(d.stop(), 0);
        return;
    };
    let code = d.exit_code();
    let log = d.log_text();
    assert_ne!(code, 0, "{log}");
    assert!(
        log.contains("target \"agent\" asks for enforcement")
            && log.contains(&d.config.display().to_string())
            && log.contains("--enforce needs the BPF LSM backend")
            && log.contains(&why),
        "the error names the config file, the target and the reason: {log}"
    );
    assert!(
        !Path::new(&dir.s("run/daemon.sock")).exists(),
        "no socket left behind"
    );
    let traces: Vec<_> = std::fs::read_dir(dir.join("traces"))
        .map(|r| r.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert!(traces.is_empty(), "no trace opened: {traces:?}");
}

#[test]
fn run_enforce_of_a_container_client_says_what_it_cannot_enforce() {
    require_kernel!();
    assert!(
        common::have("docker"),
        "docker is missing: install the Debian package docker.io (cargo xtask test does)"
    );
    let dir = TempDir::new("run-enforce-docker");
    let o = Command::new(ABM)
        .args(["run", "--enforce", "--no-prompt", "--trace"])
        .arg(dir.join("t.jsonl"))
        .args(["--", "docker", "--version"])
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("--enforce guards docker and the processes it starts itself")
            && out.contains("NOT enforced")
            && out.contains("abm watch add NAME --container NAME-OR-ID --enforce"),
        "the run explains what it cannot enforce and how to: {out}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Docker version"),
        "docker itself ran: {out}"
    );
}
