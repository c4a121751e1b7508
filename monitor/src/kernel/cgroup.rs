//! cgroup v2: finding the hierarchy, cgroup ids, container ids in the
//! runtimes' layouts, Kubernetes pod cgroups, and the fresh cgroup of
//! `abm run --cgroup`.
//!
//! A cgroup's id, as `bpf_get_current_cgroup_id()` returns it, is the inode
//! number of its directory in the cgroup2 file system.
use std::{
    collections::VecDeque,
    ffi::CString,
    io,
    os::{
        fd::{AsRawFd, OwnedFd},
        unix::{ffi::OsStrExt as _, fs::MetadataExt as _},
    },
    path::{Component, Path, PathBuf},
};

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Directories visited at most by one search of the hierarchy.
const MAX_SCAN_DIRS: usize = 50_000;
/// Depth searched for container and pod cgroups.
const MAX_SCAN_DEPTH: usize = 10;

/// Where the cgroup v2 hierarchy is mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// Mount point (`/sys/fs/cgroup`, `/sys/fs/cgroup/unified` in the hybrid
    /// layout, or a bind mount of the node's hierarchy in a pod).
    pub mount: PathBuf,
    /// The cgroup shown at the mount point, relative to the hierarchy's
    /// root (`/` unless only a subtree is mounted).
    pub root: PathBuf,
}

/// One line of /proc/PID/mountinfo (see proc(5)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountLine {
    pub dev: String,
    /// Path inside the file system that is mounted.
    pub root: Vec<u8>,
    pub mount_point: Vec<u8>,
    pub fstype: String,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, ...).
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                out.push((oct[0] - b'0') * 64 + (oct[1] - b'0') * 8 + (oct[2] - b'0'));
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

pub fn parse_mountinfo(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let _id = it.next()?;
            let _parent = it.next()?;
            let dev = it.next()?.to_owned();
            let root = unescape(it.next()?);
            let mount_point = unescape(it.next()?);
            let rest: Vec<&str> = it.collect();
            let sep = rest.iter().position(|f| *f == "-")?;
            let fstype = rest.get(sep + 1)?.to_string();
            Some(MountLine {
                dev,
                root,
                mount_point,
                fstype,
            })
        })
        .collect()
}

impl Hierarchy {
    /// The first cgroup2 mount of this process's mount table.
    pub fn detect() -> io::Result<Hierarchy> {
        let text = std::fs::read_to_string("/proc/self/mountinfo")?;
        Hierarchy::from_mountinfo(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no cgroup2 file system is mounted (cgroup v2 is needed to watch containers)",
            )
        })
    }

    pub fn from_mountinfo(text: &str) -> Option<Hierarchy> {
        let m = parse_mountinfo(text)
            .into_iter()
            .find(|m| m.fstype == "cgroup2")?;
        Some(Hierarchy {
            mount: PathBuf::from(std::ffi::OsStr::from_bytes(&m.mount_point)),
            root: PathBuf::from(std::ffi::OsStr::from_bytes(&m.root)),
        })
    }

    /// The hierarchy at a configured path (it must be a cgroup2 mount or a
    /// directory in one); `root` is taken from the mount table when the
    /// path is a mount point there, else `/`.
    pub fn at(path: &Path) -> io::Result<Hierarchy> {
        if !is_cgroup2(path) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a cgroup v2 file system", path.display()),
            ));
        }
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let root = parse_mountinfo(&text)
            .into_iter()
            .find(|m| {
                m.fstype == "cgroup2"
                    && Path::new(std::ffi::OsStr::from_bytes(&m.mount_point)) == path
            })
            .map(|m| PathBuf::from(std::ffi::OsStr::from_bytes(&m.root)))
            .unwrap_or_else(|| PathBuf::from("/"));
        Ok(Hierarchy {
            mount: path.to_path_buf(),
            root,
        })
    }

    /// A configured cgroup path: absolute paths under the mount are kept,
    /// anything else is taken relative to the mount.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.starts_with(&self.mount) {
            return p.to_path_buf();
        }
        let rel: PathBuf = p
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect();
        self.mount.join(rel)
    }

    /// Level of a cgroup directory in the hierarchy (the root is level 0),
    /// as `bpf_get_current_ancestor_cgroup_id` counts.
    pub fn level(&self, dir: &Path) -> u32 {
        let normal = |p: &Path| {
            p.components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .count() as u32
        };
        let rel = dir.strip_prefix(&self.mount).unwrap_or(dir);
        normal(&self.root) + normal(rel)
    }

    /// Path of the calling process's own cgroup, when it is inside the mount.
    pub fn own_cgroup(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let line = text.lines().find(|l| l.starts_with("0::"))?;
        let own = Path::new(&line[3..]);
        let rel = own.strip_prefix(&self.root).ok()?;
        Some(self.mount.join(rel))
    }

    /// Finds the cgroup of a container by id (or unique prefix) through the
    /// runtimes' layouts: `docker-<id>.scope`, `docker/<id>`,
    /// `cri-containerd-<id>.scope`, `crio-<id>.scope`, `libpod-<id>.scope`,
    /// any `*-<id>.scope`, and a directory named after the id (cgroupfs
    /// drivers, `kubepods/.../<id>`).
    pub fn find_container(&self, id: &str) -> io::Result<Option<PathBuf>> {
        let id = id.to_ascii_lowercase();
        let mut found: Vec<PathBuf> = Vec::new();
        self.scan(|path, name| {
            if let Some(cid) = container_id_of(name) {
                if cid.starts_with(&id) {
                    found.push(path.to_path_buf());
                    return false; // its children belong to it
                }
            }
            true
        })?;
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "container id {id} is ambiguous: {}",
                    found
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Finds a Kubernetes pod's cgroup by pod uid in the kubelet layouts:
    /// `kubepods/<qos>/pod<uid>` (cgroupfs driver) and
    /// `kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice`
    /// (systemd driver, dashes of the uid turned into underscores).
    pub fn find_pod(&self, uid: &str) -> io::Result<Option<PathBuf>> {
        let plain = format!("pod{uid}");
        let systemd = format!("pod{}.slice", uid.replace('-', "_"));
        let mut found = None;
        self.scan(|path, name| {
            if found.is_some() {
                return false;
            }
            if name == plain || name.ends_with(&systemd) {
                found = Some(path.to_path_buf());
                return false;
            }
            // Only the kubelet's subtree can hold pods (below a top-level
            // directory such as `kubepods` or `kubepods.slice`, possibly
            // under a slice of its own).
            let rel = path.strip_prefix(&self.mount).unwrap_or(path);
            rel.components().count() <= 1
                || rel
                    .components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with("kubepods"))
        })?;
        Ok(found)
    }

    /// Breadth-first walk of the hierarchy; `visit(path, name)` says whether
    /// to descend into a directory.
    fn scan(&self, mut visit: impl FnMut(&Path, &str) -> bool) -> io::Result<()> {
        let mut queue = VecDeque::from([(self.mount.clone(), 0usize)]);
        let mut seen = 0;
        while let Some((dir, depth)) = queue.pop_front() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                seen += 1;
                if seen > MAX_SCAN_DIRS {
                    return Ok(());
                }
                let path = e.path();
                let name = e.file_name();
                let name = name.to_string_lossy();
                if visit(&path, &name) && depth + 1 < MAX_SCAN_DEPTH {
                    queue.push_back((path, depth + 1));
                }
            }
        }
        Ok(())
    }
}

/// The container id a cgroup directory name carries, if any.
pub fn container_id_of(name: &str) -> Option<&str> {
    if name.contains("conmon") {
        return None; // podman's monitor process, not the container
    }
    let stem = name.strip_suffix(".scope").unwrap_or(name);
    let id = stem.rsplit('-').next().unwrap_or(stem);
    (id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// Whether `path` is on a cgroup2 file system.
pub fn is_cgroup2(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain old data; all-zero bytes are a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_type as i64 == CGROUP2_SUPER_MAGIC
}

/// The cgroup id of a cgroup v2 directory.
pub fn cgroup_id(dir: &Path) -> io::Result<u64> {
    if !is_cgroup2(dir) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a cgroup v2 directory", dir.display()),
        ));
    }
    let m = std::fs::metadata(dir)?;
    if !m.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a directory", dir.display()),
        ));
    }
    Ok(m.ino())
}

/// Processes in a cgroup (not its descendants).
pub fn procs(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Processes in a cgroup and its descendants.
pub fn procs_recursive(dir: &Path) -> Vec<u32> {
    let mut out = procs(dir);
    for (_, sub) in descendants(dir) {
        out.extend(procs(&sub));
    }
    out
}

/// (id, path) of every cgroup below `dir` (bounded walk).
pub fn descendants(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    let mut queue = VecDeque::from([(dir.to_path_buf(), 0usize)]);
    while let Some((d, depth)) = queue.pop_front() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let p = e.path();
            if let Ok(m) = e.metadata() {
                out.push((m.ino(), p.clone()));
            }
            if out.len() >= MAX_SCAN_DIRS {
                return out;
            }
            if depth + 1 < 32 {
                queue.push_back((p, depth + 1));
            }
        }
    }
    out
}

/// Kills every process of a cgroup tree: `cgroup.kill` where the kernel
/// has it (5.14+), else SIGKILL to each listed process.
pub fn kill_all(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    for pid in procs_recursive(dir) {
        // SAFETY: plain kill(2).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

/// Sends `sig` to every process of a cgroup tree.
pub fn signal_all(dir: &Path, sig: i32) {
    for pid in procs_recursive(dir) {
        // SAFETY: plain kill(2).
        unsafe { libc::kill(pid as i32, sig) };
    }
}

/// Removes a cgroup tree, children first.
pub fn remove_tree(dir: &Path) -> io::Result<()> {
    let mut subs = descendants(dir);
    subs.sort_by_key(|(_, p)| std::cmp::Reverse(p.components().count()));
    for (_, p) in subs {
        let _ = std::fs::remove_dir(&p);
    }
    std::fs::remove_dir(dir)
}

/// The fresh cgroup `abm run --cgroup` puts its command in.
#[derive(Debug)]
pub struct RunCgroup {
    pub path: PathBuf,
    pub id: u64,
    pub level: u32,
    /// `cgroup.procs` opened for writing; the child writes "0" to it
    /// between fork and exec (async-signal-safe) to move itself in.
    procs: OwnedFd,
}

impl RunCgroup {
    /// Creates `abm-run-<pid>` under the caller's own cgroup (or the
    /// hierarchy's root) of the cgroup v2 hierarchy found in
    /// /proc/self/mountinfo.
    pub fn create() -> anyhow::Result<RunCgroup> {
        use anyhow::Context as _;
        let h = Hierarchy::detect()?;
        let parent = h
            .own_cgroup()
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| h.mount.clone());
        let mut n = 0;
        let path = loop {
            let name = if n == 0 {
                format!("abm-run-{}", std::process::id())
            } else {
                format!("abm-run-{}-{n}", std::process::id())
            };
            let p = parent.join(name);
            match std::fs::create_dir(&p) {
                Ok(()) => break p,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create cgroup {}", p.display()))
                }
            }
        };
        let id = cgroup_id(&path)?;
        let level = h.level(&path);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path.join("cgroup.procs"))
            .with_context(|| format!("cannot open {}/cgroup.procs", path.display()))?;
        Ok(RunCgroup {
            path,
            id,
            level,
            procs: f.into(),
        })
    }

    /// Raw fd of `cgroup.procs`, for [`join_cgroup`] in the child.
    pub fn procs_fd(&self) -> i32 {
        self.procs.as_raw_fd()
    }

    /// Processes in the cgroup tree now.
    pub fn pids(&self) -> Vec<u32> {
        procs_recursive(&self.path)
    }

    /// Removes the cgroup (it must be empty); retries briefly while the
    /// kernel finishes reaping.
    pub fn remove(&self) -> io::Result<()> {
        let mut last = Ok(());
        for _ in 0..20 {
            last = remove_tree(&self.path);
            match &last {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(25)),
            }
        }
        last
    }
}

impl Drop for RunCgroup {
    /// Removes the cgroup when it is empty (processes left running with
    /// `--keep-orphans` keep it).
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            tracing::warn!("cgroup {} left in place: {e}", self.path.display());
        }
    }
}

/// Tells the kernel at which hierarchy levels watched cgroups sit, so a
/// process in a sub-cgroup of a watched cgroup is matched through
/// `bpf_get_current_ancestor_cgroup_id` (`current_scope` in the kernel
/// programs).
pub fn set_watched_levels(
    probes: &mut super::probes::Probes,
    levels: impl IntoIterator<Item = u32>,
) {
    let mask = levels
        .into_iter()
        .filter(|l| *l < 32)
        .fold(0u32, |m, l| m | (1 << l));
    let entry = monitor_common::ScopeEntry {
        target: mask,
        _pad: 0,
    };
    if let Err(e) = probes.scope_cgroups.insert(0u64, entry, 0) {
        tracing::warn!("cannot set the watched cgroup levels: {e}");
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open
/// as `fd` ("0" means the writer). Async-signal-safe: used between fork and
/// exec.
pub fn join_cgroup(fd: i32) -> io::Result<()> {
    // SAFETY: write(2) of a 1-byte static buffer.
    let r = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A new container cgroup the kernel reported while following was armed
/// (`monitor-ebpf/src/probes/cgroups.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCgroup {
    pub id: u64,
    pub level: u32,
    /// Path in the v2 hierarchy, from its root (`/docker/<id>`).
    pub path: String,
    /// The container id its name carries.
    pub container: Option<String>,
    /// Whether the kernel put it in scope (else the scope table was full).
    pub in_scope: bool,
}

impl NewCgroup {
    /// Decodes a `CgroupMkdir` record.
    pub fn from_event(ev: &super::KernelEvent) -> NewCgroup {
        let path = ev
            .field(monitor_common::field_tag::CGROUP_PATH)
            .map(|f| String::from_utf8_lossy(&f.data).into_owned())
            .unwrap_or_default();
        let name = path.rsplit('/').next().unwrap_or("");
        NewCgroup {
            id: ev.hdr.result as u64,
            level: ev.hdr.flags as u32,
            container: container_id_of(name).map(str::to_owned),
            path,
            in_scope: ev.hdr.mode & monitor_common::cgroup_follow::ADDED != 0,
        }
    }
}

/// Loads and attaches the `cgroup_mkdir` program and arms it: from now on
/// every new container cgroup is in scope with `target` at once.
pub fn arm_follow(probes: &mut super::probes::Probes, target: u32) -> anyhow::Result<()> {
    use aya::maps::Array;
    attach_follow(probes)?;
    let mut follow: Array<_, u32> = Array::try_from(
        probes
            .ebpf
            .map_mut("FOLLOW")
            .ok_or_else(|| anyhow::anyhow!("the kernel object has no FOLLOW map"))?,
    )?;
    follow.set(1, target, 0)?;
    follow.set(0, 1, 0)?;
    Ok(())
}

/// Loads and attaches the `cgroup_mkdir` program, not armed (once: armed
/// again after a disarm, it is attached already).
pub fn attach_follow(probes: &mut super::probes::Probes) -> anyhow::Result<()> {
    use aya::programs::RawTracePoint;
    let prog: &mut RawTracePoint = probes
        .ebpf
        .program_mut("cgroup_mkdir")
        .ok_or_else(|| anyhow::anyhow!("the kernel object has no cgroup_mkdir program"))?
        .try_into()?;
    if prog.fd().is_err() {
        prog.load()?;
        prog.attach("cgroup_mkdir")?;
    }
    Ok(())
}

/// Stops following new container cgroups (those followed stay in scope).
pub fn disarm_follow(probes: &mut super::probes::Probes) {
    if let Some(m) = probes.ebpf.map_mut("FOLLOW") {
        if let Ok(mut follow) = aya::maps::Array::<_, u32>::try_from(m) {
            let _ = follow.set(0, 0, 0);
        }
    }
}

/// Programs that ask a container runtime for containers (their containers
/// are not their children).
pub const CONTAINER_CLIENTS: [&str; 7] = [
    "docker",
    "podman",
    "nerdctl",
    "ctr",
    "crictl",
    "docker-compose",
    "kubectl",
];

/// Whether `program` (a path or a name) is a container client.
pub fn is_container_client(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    CONTAINER_CLIENTS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 8:1 /srv/a\\040b /mnt/x\\040y rw - ext4 /dev/sda1 rw
";

    #[test]
    fn finds_the_v2_mount_in_a_hybrid_layout() {
        let h = Hierarchy::from_mountinfo(MOUNTINFO).unwrap();
        assert_eq!(h.mount, PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(h.root, PathBuf::from("/"));
        assert_eq!(h.level(Path::new("/sys/fs/cgroup/unified")), 0);
        assert_eq!(h.level(Path::new("/sys/fs/cgroup/unified/a/b")), 2);
        assert_eq!(
            h.resolve(Path::new("agents/a1")),
            PathBuf::from("/sys/fs/cgroup/unified/agents/a1")
        );
        assert_eq!(
            h.resolve(Path::new("/agents/a1")),
            PathBuf::from("/sys/fs/cgroup/unified/agents/a1")
        );
        assert_eq!(
            h.resolve(Path::new("/sys/fs/cgroup/unified/x")),
            PathBuf::from("/sys/fs/cgroup/unified/x")
        );
        let sub = Hierarchy {
            mount: "/host/cg".into(),
            root: "/kubepods".into(),
        };
        assert_eq!(sub.level(Path::new("/host/cg/burstable/podx")), 3);
    }

    #[test]
    fn mountinfo_escapes() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m[3].root, b"/srv/a b");
        assert_eq!(m[3].mount_point, b"/mnt/x y");
        assert_eq!(m[3].dev, "8:1");
        assert_eq!(m[3].fstype, "ext4");
    }

    #[test]
    fn finds_containers_and_pods_in_a_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let h = Hierarchy {
            mount: tmp.path().to_path_buf(),
            root: "/".into(),
        };
        let id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
        let uid_ = uid.replace('-', "_");
        for d in [
            format!("system.slice/docker-{id}.scope/inner"),
            "kubepods/burstable/pod11111111-2222-3333-4444-555555555555/abc".to_string(),
            format!(
                "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice/cri-containerd-{}.scope",
                "f".repeat(64)
            ),
            format!("kubepods/burstable/pod{uid}x"),
        ] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        assert_eq!(
            h.find_container(&id[..12]).unwrap(),
            Some(tmp.path().join(format!("system.slice/docker-{id}.scope")))
        );
        assert_eq!(h.find_container("abcdefabcdef").unwrap(), None);
        assert_eq!(
            h.find_pod("11111111-2222-3333-4444-555555555555").unwrap(),
            Some(
                tmp.path()
                    .join("kubepods/burstable/pod11111111-2222-3333-4444-555555555555")
            )
        );
        let p = h.find_pod(uid).unwrap().unwrap();
        assert!(
            p.ends_with(format!("kubepods-besteffort-pod{uid_}.slice")),
            "{p:?}"
        );
        std::fs::create_dir_all(tmp.path().join(format!("other/docker-{id}.scope"))).unwrap();
        assert!(h.find_container(id).is_err(), "two cgroups for one id");
    }

    #[test]
    fn container_ids_in_runtime_layouts() {
        let id = "3f2a9c1e5b7d0a4c8e6f1b2d3c4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d";
        for name in [
            format!("docker-{id}.scope"),
            format!("cri-containerd-{id}.scope"),
            format!("crio-{id}.scope"),
            format!("libpod-{id}.scope"),
            id.to_string(),
        ] {
            assert_eq!(container_id_of(&name), Some(id), "{name}");
        }
        assert_eq!(container_id_of(&format!("libpod-conmon-{id}.scope")), None);
        assert_eq!(container_id_of("user.slice"), None);
        assert_eq!(container_id_of("session-3.scope"), None);
        assert_eq!(container_id_of("docker"), None);
    }
}
