//! The Docker engine the container tests use, started the way a service
//! manager would start it: in the host's mount namespace, before the suite
//! enters its own (xtask/src/fresh.rs).
//!
//! The suite's namespace is a slave of the host's, so the root file
//! systems dockerd mounts for its containers reach the tests, and stay
//! valid for the next run's namespace. A dockerd started inside an earlier
//! run's namespace (by a test run directly with `cargo test` inside one)
//! mounts its containers there only, where abm cannot see them: it is
//! stopped first, with a message.
use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

/// The mount namespace of a process (the inode of /proc/PID/ns/mnt).
fn mnt_ns(pid: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(format!("/proc/{pid}/ns/mnt"))
        .ok()
        .map(|m| m.ino())
}

/// Pids of running processes whose command name is `comm`.
fn pids_of(comm: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.to_owned();
            pid.parse::<u32>().ok()?;
            let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            (c.trim() == comm).then_some(pid)
        })
        .collect()
}

fn answers() -> bool {
    Command::new("docker")
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Stops a dockerd of another mount namespace, then starts one here when
/// none answers. `log` receives the daemon's output.
pub fn ensure(log: &Path) -> Result<()> {
    let ours = mnt_ns("self");
    for pid in pids_of("dockerd") {
        let ns = mnt_ns(&pid);
        if ns.is_none() || ns == ours {
            continue;
        }
        eprintln!(
            "xtask: stopping dockerd {pid}: it runs in mount namespace {ns:?}, not this one ({ours:?}), so its containers' files are invisible here"
        );
        // SAFETY: kill(2) takes no pointers.
        unsafe { libc::kill(pid.parse().unwrap_or(0), libc::SIGTERM) };
        let t = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists() {
            if t.elapsed() > Duration::from_secs(60) {
                bail!("dockerd {pid} did not stop in 60 s; stop it by hand");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    if answers() {
        return Ok(());
    }
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    eprintln!("xtask: starting dockerd (log: {})", log.display());
    Command::new("dockerd")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("cannot start dockerd (install the Debian package docker.io)")?;
    let t = Instant::now();
    while !answers() {
        if t.elapsed() > Duration::from_secs(60) {
            bail!("dockerd did not answer in 60 s (see {})", log.display());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(())
}
