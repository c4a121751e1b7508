//! `abm daemon` as the daemon suites run it: a real daemon with a config
//! file, its log and its control socket in a test directory.

use std::{
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use super::{TempDir, ABM};

/// The config the suites share: traces, anchors and the socket in `dir`,
/// a small ring, a fast poll, then `extra` (more keys and targets).
pub fn config(dir: &TempDir, extra: &str) -> String {
    format!(
        "trace_dir = \"{}\"\nanchor_dir = \"{}\"\nsocket = \"{}\"\nringbuf_kib = 4096\n\
         poll_interval = \"200ms\"\n{extra}",
        dir.s("traces"),
        dir.s("anchors"),
        dir.s("run/daemon.sock"),
    )
}

/// Calls `f` every 50 ms until it holds; panics after `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A running `abm daemon`; stopped with SIGTERM (then killed) on drop.
pub struct Daemon {
    child: Option<Child>,
    /// The config file it was started with.
    pub config: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
}

impl Daemon {
    /// Starts the daemon with `config` (which must name its `socket`),
    /// written to a new file in `dir`; does not wait for it.
    pub fn spawn(dir: &TempDir, config: &str) -> Daemon {
        Daemon::spawn_with(dir, config, |_| {})
    }

    /// [`spawn`](Self::spawn), with `prepare` applied to the command first
    /// (e.g. to start it in a mount namespace of its own).
    pub fn spawn_with(dir: &TempDir, config: &str, prepare: impl FnOnce(&mut Command)) -> Daemon {
        let n = nanos();
        let cfg = dir.join(&format!("abm-{n}.toml"));
        std::fs::write(&cfg, config).unwrap();
        let log = dir.join(&format!("daemon-{n}.log"));
        let socket = config
            .lines()
            .find_map(|l| l.strip_prefix("socket = "))
            .map(|s| PathBuf::from(s.trim_matches('"')))
            .expect("the config names the socket");
        let mut cmd = Command::new(ABM);
        cmd.args(["daemon", "--config"])
            .arg(&cfg)
            .env("ABM_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        prepare(&mut cmd);
        let child = cmd.spawn().unwrap();
        Daemon {
            child: Some(child),
            config: cfg,
            socket,
            log,
        }
    }

    /// [`spawn`](Self::spawn), then waits up to 30 s for the control socket
    /// to answer.
    pub fn start(dir: &TempDir, config: &str) -> Daemon {
        Daemon::start_with(dir, config, |_| {})
    }

    /// [`start`](Self::start) with [`spawn_with`](Self::spawn_with)'s `prepare`.
    pub fn start_with(dir: &TempDir, config: &str, prepare: impl FnOnce(&mut Command)) -> Daemon {
        let d = Daemon::spawn_with(dir, config, prepare);
        let end = Instant::now() + Duration::from_secs(30);
        while d.try_status().is_none() {
            assert!(
                Instant::now() < end,
                "the daemon's control socket did not answer; log:\n{}",
                d.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        d
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("the daemon runs").id() as i32
    }

    /// `abm ARGS --socket SOCKET`.
    pub fn abm(&self, args: &[&str]) -> Output {
        Command::new(ABM)
            .args(args)
            .arg("--socket")
            .arg(&self.socket)
            .output()
            .unwrap()
    }

    /// `abm status --json`, if the daemon answers.
    pub fn try_status(&self) -> Option<Value> {
        let o = self.abm(&["status", "--json"]);
        o.status
            .success()
            .then(|| serde_json::from_slice(&o.stdout).ok())
            .flatten()
    }

    /// `abm status --json`; panics with the daemon's log if it fails.
    pub fn status(&self) -> Value {
        self.try_status()
            .unwrap_or_else(|| panic!("abm status failed; daemon log:\n{}", self.log_text()))
    }

    /// The status of the newest target named `name` (null if none).
    pub fn target(&self, name: &str) -> Value {
        self.status()["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Calls `f` every 50 ms until it holds; after 30 s panics with the
    /// daemon's log.
    pub fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(30);
        while !f() {
            assert!(
                Instant::now() < end,
                "timed out waiting for {what}; daemon log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Waits up to 30 s for the daemon to exit; its exit code.
    pub fn exit_code(&mut self) -> i32 {
        let mut c = self.child.take().expect("the daemon runs");
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            if Instant::now() > end {
                let _ = c.kill();
                panic!("the daemon did not exit; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, and the daemon's exit code.
    pub fn stop(&mut self) -> i32 {
        self.signal(libc::SIGTERM);
        self.exit_code()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            if c.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}
