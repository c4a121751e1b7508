//! The trial recipe of docs/harness.md, run as written there against a
//! real dockerd and a real `abm daemon`: the agent's `docker exec` is in
//! the sealed trace with host and container paths, `abm verify` passes and
//! `abm oracle` writes the reward the harness reads.
mod common;
mod docker;

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{TempDir, ABM};
use docker::{docker_ready, IMAGE};
use serde_json::Value;

/// The first ```sh block of the recipe section of docs/harness.md.
fn recipe() -> String {
    let doc = include_str!("../../docs/harness.md");
    let section = &doc[doc
        .find("## The recipe")
        .expect("docs/harness.md: no recipe section")..];
    let start = section.find("```sh\n").expect("no sh block") + 6;
    let len = section[start..].find("```").expect("unterminated block");
    section[start..start + len].to_owned()
}

struct DaemonGuard(Child);
impl Drop for DaemonGuard {
    fn drop(&mut self) {
        // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end && self.0.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_harness_recipe_runs_end_to_end() {
    require_kernel!();
    docker_ready();
    let dir = TempDir::new("harness");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let task_dir = repo.join("tests/tasks/build-cache");
    let ws = dir.join("task");
    std::fs::create_dir_all(&ws).unwrap();
    let setup = Command::new("sh")
        .arg(task_dir.join("setup.sh"))
        .arg(&ws)
        .status()
        .unwrap();
    assert!(setup.success());
    let sock = dir.join("run/daemon.sock");
    let cfg = dir.join("abm.toml");
    std::fs::write(
        &cfg,
        format!(
            "trace_dir = \"{}\"\nsocket = \"{}\"\nringbuf_kib = 4096\npoll_interval = \"200ms\"\n",
            dir.s("traces"),
            sock.display()
        ),
    )
    .unwrap();
    let log = dir.join("daemon.log");
    let _daemon = DaemonGuard(
        Command::new(ABM)
            .args(["daemon", "--config"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while !sock.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = dir.join("out");
    let trial = format!("abm-trial-{}", std::process::id());
    let bin: PathBuf = Path::new(ABM).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new("sh")
        .arg("-c")
        .arg(recipe())
        .env("PATH", path)
        .env("TASKDIR", &ws)
        .env("TASK", task_dir.join("task.toml"))
        .env("IMAGE", IMAGE)
        .env("OUT", &out)
        .env("TRIAL", &trial)
        .env("ABM_SOCKET", &sock)
        .output()
        .unwrap();
    let _ = Command::new("docker").args(["rm", "-f", &trial]).output();
    assert!(
        run.status.success(),
        "the recipe failed: {}{}\ndaemon log:\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(
        std::fs::read_to_string(out.join("verifier.txt"))
            .unwrap()
            .trim(),
        "pass"
    );
    let reward: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("reward.json")).unwrap()).unwrap();
    assert_eq!(reward["reward"], 1.0, "{reward:#}");
    assert_eq!(reward["intended"], 1.0, "{reward:#}");
    assert_eq!(reward["over_scope"], 0.0, "{reward:#}");
    // The agent's `rm -rf build/cache`: 3 files and 2 directories, each
    // recorded once with both views.
    // The daemon writes the compact form; read it through `abm trace cat`.
    let recs: Vec<Value> = common::read_records(&out.join("trace.abmt"));
    let cache = format!("{}/build/cache", ws.display());
    let removed: Vec<&Value> = recs
        .iter()
        .filter(|r| {
            r["type"] == "event"
                && (r["op"] == "unlink" || r["op"] == "rmdir")
                && r["path"].as_str().is_some_and(|p| p.starts_with(&cache))
        })
        .collect();
    assert_eq!(removed.len(), 5, "{removed:#?}");
    for r in &removed {
        let host = r["path"].as_str().unwrap();
        let rel = host.strip_prefix(&format!("{}/", ws.display())).unwrap();
        assert_eq!(r["container_path"], format!("/app/{rel}"), "{r:#}");
        assert_eq!(r["result"], 0, "{r:#}");
    }
    eprintln!(
        "harness recipe: {} of 5 deletions recorded; reward {}",
        removed.len(),
        reward["reward"]
    );
}
