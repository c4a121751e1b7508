//! A running dockerd and the test image, shared by the container tests.
use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::common::{have, TempDir};

pub const IMAGE: &str = "abm-test-busybox:1";

/// A running dockerd and the test image, or a failure saying what is missing.
pub fn docker_ready() {
    assert!(
        have("docker") && have("dockerd"),
        "docker is missing: install the Debian package docker.io (cargo xtask test does)"
    );
    let info = || {
        Command::new("docker")
            .arg("info")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !info() {
        // No service manager here: start the daemon in the background (a
        // second start racing with another test binary fails harmlessly).
        let log = std::fs::File::create("/tmp/abm-test-dockerd.log").unwrap();
        let _ = Command::new("dockerd")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn();
        let t = Instant::now();
        while !info() {
            assert!(
                t.elapsed() < Duration::from_secs(40),
                "dockerd did not start in 40 s (see /tmp/abm-test-dockerd.log)"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let have_image = Command::new("docker")
        .args(["image", "inspect", IMAGE])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_image {
        let dir = TempDir::new("image");
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("busybox is missing: install busybox-static (cargo xtask test does)");
        std::fs::copy(busybox, dir.join("busybox")).unwrap();
        std::fs::write(
            dir.join("Dockerfile"),
            "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
        )
        .unwrap();
        let out = Command::new("docker")
            .args(["build", "-q", "-t", IMAGE])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "docker build: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
