//! The test suite's fresh host: a private mount namespace in which nothing
//! that a development machine accumulates is visible.
//!
//! A developer's machine has tracefs, debugfs, bpffs and securityfs mounted
//! (by a bench, by bpftrace, by an earlier run), traces and quarantine
//! under /var/lib/abm and sockets under /run/abm. A freshly booted host has
//! none of them. `cargo xtask test` calls [`enter`] before it runs any
//! test: it moves itself (and so every test it starts) into a new mount
//! namespace, unmounts those file systems there and hides /run/abm behind
//! an empty directory, so that a test passes only if abm works
//! the way a user's first run finds the machine. The host keeps its mounts;
//! the namespace goes away with the last process in it.
//!
//! Mounts of the host made later (a dockerd that was already running
//! mounts its containers' root file systems there) still reach the
//! namespace: its root is a slave of the host's, so those appear here,
//! while what is unmounted here stays unmounted.
use std::{ffi::CString, path::Path};

use anyhow::{bail, Context as _, Result};

/// File system types a fresh boot does not mount and abm must not need.
pub const UNMOUNTED_TYPES: &[&str] = &["tracefs", "debugfs", "bpf", "securityfs"];

/// Directories abm writes to, hidden behind empty ones: a test sees no
/// socket left by an earlier run. /var/lib/abm is not hidden this way: a
/// bind mount is another mount, and the hard links `preserve` makes from
/// a workspace into /var/lib/abm/quarantine would fail across it (EXDEV)
/// where a real host's would not. The fresh-host test runs abm with no
/// /var/lib/abm at all instead (monitor/tests/fresh_host.rs).
pub const HIDDEN_DIRS: &[&str] = &["/run/abm"];

/// Set in the environment of everything started inside the namespace.
pub const MARKER: &str = "ABM_FRESH_HOST";

fn cstr(p: &str) -> Result<CString> {
    CString::new(p).with_context(|| format!("path {p:?} has a NUL byte"))
}

fn mount(src: &str, target: &str, fstype: Option<&str>, flags: libc::c_ulong) -> Result<()> {
    let (s, t) = (cstr(src)?, cstr(target)?);
    let f = fstype.map(cstr).transpose()?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call, or null where mount(2) allows it.
    let r = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
            flags,
            std::ptr::null(),
        )
    };
    if r != 0 {
        bail!(
            "mount {src} on {target}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Mount points of the given types, deepest first (so that nested ones,
/// e.g. tracefs under debugfs, go before their parents).
fn mount_points(types: &[&str]) -> Result<Vec<String>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").context("reading mountinfo")?;
    let mut points: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let fstype = right.split(' ').next()?;
            let point = left.split(' ').nth(4)?;
            types.contains(&fstype).then(|| point.replace("\\040", " "))
        })
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    points.dedup();
    Ok(points)
}

/// Moves this process into a fresh mount namespace (see the module
/// documentation). `scratch` holds the empty directories mounted over
/// [`HIDDEN_DIRS`]. Idempotent: a process already inside one returns.
pub fn enter(scratch: &Path) -> Result<()> {
    if std::env::var_os(MARKER).is_some() {
        return Ok(());
    }
    // SAFETY: unshare(2) with a flag constant; xtask runs no other thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        bail!(
            "unshare(CLONE_NEWNS): {} (the test suite needs root to make its fresh mount namespace)",
            std::io::Error::last_os_error()
        );
    }
    mount("none", "/", None, libc::MS_REC | libc::MS_SLAVE)?;
    // Unmounting repeats: a file system can be mounted twice on one point.
    for _ in 0..4 {
        let points = mount_points(UNMOUNTED_TYPES)?;
        if points.is_empty() {
            break;
        }
        for p in points {
            let c = cstr(&p)?;
            // SAFETY: a NUL-terminated path that outlives the call.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
                bail!("umount {p}: {}", std::io::Error::last_os_error());
            }
        }
    }
    let left = mount_points(UNMOUNTED_TYPES)?;
    if !left.is_empty() {
        bail!("still mounted in the fresh namespace: {}", left.join(", "));
    }
    let _ = std::fs::remove_dir_all(scratch);
    for dir in HIDDEN_DIRS {
        let empty = scratch.join(dir.trim_start_matches('/').replace('/', "-"));
        std::fs::create_dir_all(&empty).with_context(|| format!("creating {}", empty.display()))?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {dir}"))?;
        let e = empty.to_str().context("scratch path is not UTF-8")?;
        mount(e, dir, None, libc::MS_BIND)?;
    }
    std::env::set_var(MARKER, "1");
    eprintln!(
        "xtask: tests run in a fresh mount namespace: no {} mounted; {} empty",
        UNMOUNTED_TYPES.join(", "),
        HIDDEN_DIRS.join(" and ")
    );
    Ok(())
}
