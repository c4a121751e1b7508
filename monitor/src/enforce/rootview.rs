//! The host's way to an object a BPF LSM decision names, for `preserve`.
//!
//! The kernel walks a refused call's path up to the root of the caller's
//! mount namespace. For a process in the host's mount tree (a `chroot`
//! container included) that is the host path, which abm can open. For a
//! container with its own root (`pivot_root`: Docker, containerd, Podman)
//! it is the container's path (`/ws/keep/a`), which names nothing, or
//! another file, on the host. [`host_view`] finds the path through which
//! the daemon reaches the very object the kernel refused, checked by its
//! device and inode (from the decision record):
//!
//! 1. the path as the kernel reported it (the host's mount tree);
//! 2. the host path the mount tables give (the container's mount covering
//!    the path, then a host mount of the same device, as for events:
//!    [`crate::pipeline::mounts::to_host`]): a path that stays valid after
//!    the container's processes exit, so `abm undo` can restore there;
//! 3. the path under the caller's root, `/proc/<pid>/root/<path>` (then
//!    its parent's, when the caller has exited already): a file system
//!    mounted only inside the container has no host path.
//!
//! When none of them is the refused object, the copy cannot be made and
//! the call stays refused (fail closed).
use std::{
    ffi::OsStr,
    io,
    os::unix::{ffi::OsStrExt as _, fs::MetadataExt as _},
    path::Path,
};

use crate::{
    kernel::cgroup::{parse_mountinfo, MountLine},
    pipeline::mounts::{mnt_ns_of, read_ns_table, to_host},
    record::{text_fields, Action},
};

use super::{lsm::kernel_dev, preserve::exact};

/// Whether `p` is the object with kernel device `dev` and inode `ino`.
fn is_object(p: &[u8], dev: u64, ino: u64) -> bool {
    std::fs::symlink_metadata(Path::new(OsStr::from_bytes(p)))
        .is_ok_and(|m| m.ino() == ino && u64::from(kernel_dev(m.dev())) == dev)
}

/// `root` + `path` (absolute).
fn under(root: &str, path: &[u8]) -> Vec<u8> {
    let mut out = root.as_bytes().to_vec();
    if !path.starts_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(path);
    out
}

/// A way from the host to the caller's paths.
enum Way {
    /// Through the mount tables of the caller's namespace and the host's.
    Mounts(Vec<MountLine>, Vec<MountLine>),
    /// Below this root (`/proc/<pid>/root`).
    Root(String),
}

impl Way {
    fn apply(&self, p: &[u8]) -> Option<Vec<u8>> {
        match self {
            Way::Mounts(ns, host) => to_host(p, ns, host),
            Way::Root(r) => Some(under(r, p)),
        }
    }
}

/// `a` with its paths replaced by the host paths of the objects the
/// decision (kernel device `dev`, inode `ino`) names, the kernel's paths
/// kept as `container_path`/`container_path2`. `a` unchanged when its
/// path is the object already, or when there is no object to check (an
/// inode key of 0: nothing existed to refuse, or a process in the host's
/// mount namespace). An error when a caller in its own mount namespace
/// named an object none of the host's paths reaches.
pub fn host_view(a: &Action, dev: u32, ino: u64) -> io::Result<Action> {
    let Some(path) = exact(&a.path, &a.path_b64) else {
        return Ok(a.clone());
    };
    let dev = u64::from(dev);
    if ino == 0 || is_object(&path, dev, ino) {
        return Ok(a.clone());
    }
    let own_ns = |pid: u32| {
        let ns = mnt_ns_of(pid)?;
        (Some(ns) != mnt_ns_of(std::process::id())).then_some(ns)
    };
    // The caller's mount namespace, through the caller or its parent.
    let pids: Vec<u32> = [a.pid, a.ppid]
        .into_iter()
        .filter(|p| *p > 1 && own_ns(*p).is_some())
        .collect();
    if pids.is_empty() {
        // The host's mount tree (or the caller is gone): the path is the
        // host's, and what is there is what the copy reads (as before).
        return Ok(a.clone());
    }
    let mut ways = Vec::new();
    if let Ok(host) = std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)) {
        for p in &pids {
            if let Ok(ns) = read_ns_table(*p) {
                ways.push(Way::Mounts(ns, host.clone()));
                break;
            }
        }
    }
    ways.extend(pids.iter().map(|p| Way::Root(format!("/proc/{p}/root"))));
    for w in ways {
        let Some(hp) = w.apply(&path) else { continue };
        if !is_object(&hp, dev, ino) {
            continue;
        }
        let mut out = a.clone();
        set(&mut out.path, &mut out.path_b64, &hp);
        out.container_path = a.path.clone();
        if let Some(p2) = exact(&a.path2, &a.path2_b64) {
            if let Some(hp2) = w.apply(&p2) {
                set(&mut out.path2, &mut out.path2_b64, &hp2);
                out.container_path2 = a.path2.clone();
            }
        }
        return Ok(out);
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "{} (pid {}, in its own mount namespace) names an object the daemon cannot reach: \
             neither that path, the host path its mount table gives, nor /proc/{}/root{} is \
             the object the kernel refused (device {}:{}, inode {ino})",
            String::from_utf8_lossy(&path),
            a.pid,
            a.pid,
            String::from_utf8_lossy(&path),
            dev >> 20,
            dev & 0xf_ffff
        ),
    ))
}

fn set(s: &mut Option<String>, b64: &mut Option<String>, p: &[u8]) {
    let (text, b) = text_fields(p);
    *s = Some(text);
    *b64 = b;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_dev_of_a_user_dev() {
        // 8:1 (sda1) and 0:45 (a tmpfs), as stat(2) encodes them.
        assert_eq!(kernel_dev(libc::makedev(8, 1)), 8 << 20 | 1);
        assert_eq!(kernel_dev(libc::makedev(0, 45)), 45);
        assert_eq!(kernel_dev(libc::makedev(259, 300)), 259 << 20 | 300);
    }

    #[test]
    fn a_path_that_is_the_object_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        std::fs::write(&f, "x").unwrap();
        let m = std::fs::metadata(&f).unwrap();
        let a = Action {
            path: Some(f.to_string_lossy().into_owned()),
            pid: std::process::id(),
            ..Default::default()
        };
        let v = host_view(&a, kernel_dev(m.dev()), m.ino()).unwrap();
        assert_eq!(v.path, a.path);
        assert_eq!(v.container_path, None);
        // Another object at the path, a caller in the host's namespace: as before.
        let v = host_view(&a, 1, m.ino() + 1).unwrap();
        assert_eq!(v.path, a.path);
    }

    #[test]
    fn under_a_root() {
        assert_eq!(under("/proc/7/root", b"/ws/a"), b"/proc/7/root/ws/a");
    }
}
