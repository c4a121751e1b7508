//! Host and container views of paths for processes in their own mount
//! namespace.
//!
//! The kernel walks a path up to the root of the mount namespace of the
//! mount it lies in. For a process in the host's mount namespace (a chroot
//! included) that is the host view, and the task root walk gives the
//! container view (`resolve`). A container made with a new mount namespace
//! and `pivot_root` (Docker, containerd, Podman, ...) has its own mount
//! tree: the walk then gives the path as the container's namespace sees it.
//! This module maps such a path to the host view through the mount tables:
//! the namespace's mount that covers the path gives the device and the
//! path inside that file system; a host mount of the same device whose
//! root contains that path gives the host path. A path on a file system
//! the host has not mounted anywhere (a tmpfs made inside the container)
//! has no host view: it keeps the namespace's view and is flagged
//! `host_path_unknown`.
//!
//! The namespace's table comes from the kernel, captured at the time of the
//! call (`MountInfo` records, sent before the first record made under each
//! new state of the namespace's mount tree; the call's record names the
//! namespace in its `MNT_NS` field): exact even for a process that exited
//! long before its record is read, and for the host mounts a container
//! used that are gone by then (the kernel captures the host's table the
//! same way). For records without that field (a namespace the kernel did
//! not tag) the table is read by a short-lived thread that joins the
//! namespace (`setns`) while a process of it is alive; when no table can
//! be had the path keeps the namespace's view and `path_issues` says
//! `host_path_unknown`.
use std::{
    collections::HashMap,
    fs::File,
    io::{self, Read as _},
    os::{
        fd::{AsRawFd, FromRawFd as _},
        unix::fs::MetadataExt as _,
    },
    time::{Duration, Instant},
};

use monitor_common::{field_flags, field_tag};

use super::resolve::{components_to_path, join, strip_root};
use crate::{
    kernel::{
        cgroup::{parse_mountinfo, MountLine},
        KernelEvent,
    },
    record::{text_fields, Action, PathIssue},
};

/// How long a mount table is trusted before it is read again (when a path
/// is not covered, it is read again at once, at most this often).
const TABLE_TTL: Duration = Duration::from_secs(2);

/// The mount ns inode of a process.
pub fn mnt_ns_of(pid: u32) -> Option<u64> {
    std::fs::metadata(format!("/proc/{pid}/ns/mnt"))
        .ok()
        .map(|m| m.ino())
}

/// Whether `prefix` is `path` or a parent directory of it.
fn is_under(path: &[u8], prefix: &[u8]) -> bool {
    if prefix == b"/" {
        return path.starts_with(b"/");
    }
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
}

/// `base` + the part of `path` below `prefix`.
fn rebase(path: &[u8], prefix: &[u8], base: &[u8]) -> Vec<u8> {
    let rest = if prefix == b"/" {
        path
    } else {
        &path[prefix.len()..]
    };
    let rest = rest.strip_prefix(b"/").unwrap_or(rest);
    let mut out = base.to_vec();
    if rest.is_empty() {
        if out.is_empty() {
            out.push(b'/');
        }
        return out;
    }
    if !out.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(rest);
    out
}

/// Maps `path` (in the coordinates of the namespace whose table is `ns`)
/// to the host view through `host`.
pub fn to_host(path: &[u8], ns: &[MountLine], host: &[MountLine]) -> Option<Vec<u8>> {
    // The covering mount: the longest mount point above the path; among
    // mounts on the same point the last one (on top).
    let m = ns.iter().filter(|m| is_under(path, &m.mount_point)).fold(
        None::<&MountLine>,
        |best, m| match best {
            Some(b) if b.mount_point.len() > m.mount_point.len() => Some(b),
            _ => Some(m),
        },
    )?;
    let in_fs = rebase(path, &m.mount_point, &m.root);
    // A host mount of the same file system whose root holds the path; the
    // deepest root, then the shortest mount point.
    let h = host
        .iter()
        .filter(|h| h.dev == m.dev && is_under(&in_fs, &h.root))
        .min_by_key(|h| (usize::MAX - h.root.len(), h.mount_point.len()))?;
    Some(rebase(&in_fs, &h.root, &h.mount_point))
}

/// The path of the object `path` (host view) names under its file
/// system's primary mount, when the mount that covers `path` is another
/// view of that file system (a bind mount of a subtree, or a second mount
/// of the same device): the mount of the same device with the shortest
/// root that holds the object, then the shortest mount point, then the
/// first in the table. `None` when `path` is already that view.
pub fn unaliased(path: &[u8], host: &[MountLine]) -> Option<Vec<u8>> {
    let (m, primary, in_fs) = views_of(path, host)?;
    if is_primary(m, primary) {
        return None;
    }
    let canonical = rebase(&in_fs, &primary.root, &primary.mount_point);
    // The primary view must itself be reachable: a mount on top of it (or
    // of a directory above the object) hides it.
    let top = host
        .iter()
        .filter(|x| is_under(&canonical, &x.mount_point))
        .fold(None::<&MountLine>, |best, x| match best {
            Some(b) if b.mount_point.len() > x.mount_point.len() => Some(b),
            _ => Some(x),
        })?;
    (top.dev == primary.dev && top.root == primary.root && canonical != path).then_some(canonical)
}

/// The mount `path` is seen through, the primary mount of the same object
/// (see [`unaliased`]), and the path inside the file system.
fn views_of<'a>(
    path: &[u8],
    host: &'a [MountLine],
) -> Option<(&'a MountLine, &'a MountLine, Vec<u8>)> {
    let m = host
        .iter()
        .filter(|m| is_under(path, &m.mount_point))
        .fold(None::<&MountLine>, |best, m| match best {
            Some(b) if b.mount_point.len() > m.mount_point.len() => Some(b),
            _ => Some(m),
        })?;
    let in_fs = rebase(path, &m.mount_point, &m.root);
    let primary = host
        .iter()
        .filter(|h| h.dev == m.dev && is_under(&in_fs, &h.root))
        .min_by_key(|h| (h.root.len(), h.mount_point.len()))?;
    Some((m, primary, in_fs))
}

fn is_primary(m: &MountLine, primary: &MountLine) -> bool {
    std::ptr::eq(primary, m) || (primary.root == m.root && primary.mount_point == m.mount_point)
}

/// [`unaliased`] with what `table` learnt: a directory seen through its
/// primary mount, with no mount point beneath it, holds only names that
/// are their own views (that mount holds them all, and no mount with a
/// shorter root holds them), so the table remembers it and its other
/// names need no scan.
fn unaliased_in(path: &[u8], table: &mut Table) -> Option<Vec<u8>> {
    let dir = match path.iter().rposition(|&c| c == b'/') {
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    };
    let plain = dir.and_then(|d| table.plain_dirs.get(d).copied());
    if plain == Some(true) {
        return None;
    }
    let found = unaliased(path, &table.mounts);
    if let (None, Some(d)) = (plain, dir) {
        // Decided once per directory, plain or not.
        let beneath = |m: &MountLine| m.mount_point.len() > d.len() && is_under(&m.mount_point, d);
        let own = views_of(d, &table.mounts).is_some_and(|(m, p, _)| is_primary(m, p));
        let is_plain = own && !table.mounts.iter().any(beneath);
        table.plain_dirs.insert(d.to_vec(), is_plain);
    }
    found
}

/// Reads the mount table of the mount namespace of `pid`, as seen from
/// that namespace's root, by joining it in a helper thread.
pub fn read_ns_table(pid: u32) -> io::Result<Vec<MountLine>> {
    let ns = File::open(format!("/proc/{pid}/ns/mnt"))?;
    let proc_dir = File::open("/proc")?;
    let text = std::thread::Builder::new()
        .name("abm-mountns".into())
        .spawn(move || -> io::Result<String> {
            // SAFETY: unshare/setns/openat on valid fds; this thread's fs
            // context is its own after unshare(CLONE_FS) and dies with it.
            unsafe {
                if libc::unshare(libc::CLONE_FS) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNS) != 0 {
                    return Err(io::Error::last_os_error());
                }
                let fd = libc::openat(
                    proc_dir.as_raw_fd(),
                    c"thread-self/mountinfo".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let mut f = File::from_raw_fd(fd);
                let mut s = String::new();
                f.read_to_string(&mut s)?;
                Ok(s)
            }
        })?
        .join()
        .map_err(|_| io::Error::other("mount namespace reader panicked"))??;
    Ok(parse_mountinfo(&text))
}

struct Table {
    mounts: Vec<MountLine>,
    read_at: Instant,
    /// Directories looked up, and whether every name in them is its own
    /// view (see [`unaliased_in`]).
    plain_dirs: HashMap<Vec<u8>, bool>,
}

/// A namespace's table as the kernel captured it.
#[derive(Default)]
struct Captured {
    /// Change counter of the namespace when it was captured.
    event: u64,
    /// (mount id, line), in capture order.
    mounts: Vec<(u32, MountLine)>,
    /// More mounts than the kernel sends per capture.
    cut: bool,
}

/// The mountinfo device string of a kernel `dev_t` (major << 20 | minor).
pub fn dev_string(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & 0xf_ffff)
}

/// Per-namespace mount tables and the namespace of each process seen.
pub struct Views {
    /// A process of the host view: its mount table is the host's.
    host_pid: u32,
    host_ns: Option<u64>,
    host: Option<Table>,
    tables: HashMap<u64, Table>,
    /// pid -> mount ns inode (cleared at exit).
    pid_ns: HashMap<u32, u64>,
    /// target id -> last foreign namespace seen (for processes already gone).
    target_ns: HashMap<u32, (u64, u32)>,
    /// Namespace inode -> the last complete table the kernel captured.
    captured: HashMap<u64, Captured>,
    /// Captures being received.
    receiving: HashMap<u64, Captured>,
    /// When the host's table was last re-read because a path was not covered.
    host_retry: Option<Instant>,
    /// The host's mountinfo, polled for changes ([`Views::unalias`]).
    host_watch: Option<File>,
    /// `CLOCK_MONOTONIC` (the clock of the records' `ktime_ns`) just before
    /// the last poll of `host_watch`: a change made before then was seen,
    /// so a record of a call that entered before then needs no new poll.
    polled_at: u64,
    /// The kernel programs tag every record made outside this view's host
    /// namespace (the host they are given is the same): a record without a
    /// tag was made in the host's namespace, with no lookup in /proc.
    kernel_tags: bool,
}

impl Default for Views {
    fn default() -> Self {
        Views::new()
    }
}

impl Views {
    /// The daemon's views: the host is the mount namespace of pid 1 (a
    /// daemon in a pod runs with hostPID and its own mount namespace).
    pub fn new() -> Views {
        match mnt_ns_of(1) {
            Some(ns) => Views::with_host(1, ns),
            None => Views::own(),
        }
    }

    /// `abm run`'s views: the host is abm's own mount namespace, the view
    /// of the person who started the command.
    pub fn own() -> Views {
        let me = std::process::id();
        match mnt_ns_of(me) {
            Some(ns) => Views::with_host(me, ns),
            None => Views::with_host(me, 0),
        }
    }

    fn with_host(host_pid: u32, ns: u64) -> Views {
        let kernel_host = crate::kernel::probes::host_mnt_ns();
        Views {
            kernel_tags: ns != 0 && kernel_host != 0 && u64::from(kernel_host) == ns,
            host_pid,
            host_ns: (ns != 0).then_some(ns),
            host: None,
            tables: HashMap::new(),
            pid_ns: HashMap::new(),
            target_ns: HashMap::new(),
            captured: HashMap::new(),
            receiving: HashMap::new(),
            host_retry: None,
            host_watch: None,
            polled_at: 0,
        }
    }

    /// One `MountInfo` record of the kernel (layout in
    /// `monitor_common::mountns`).
    pub fn captured_mount(&mut self, ev: &KernelEvent) {
        use monitor_common::mountns::{CUT, LAST};
        let h = &ev.hdr;
        let ns = h.result as u64;
        let line = MountLine {
            dev: dev_string(h.owner_uid),
            root: ev
                .field(field_tag::MNT_FS_ROOT)
                .map(|f| components_to_path(&f.data))
                .unwrap_or_else(|| b"/".to_vec()),
            mount_point: ev
                .field(field_tag::MNT_POINT)
                .map(|f| components_to_path(&f.data))
                .unwrap_or_else(|| b"/".to_vec()),
            fstype: String::new(),
        };
        let c = self.receiving.entry(ns).or_default();
        if c.event != h.flags {
            *c = Captured {
                event: h.flags,
                ..Default::default()
            };
        }
        // Two CPUs may capture the same state at once: one line per mount.
        if !c.mounts.iter().any(|(id, _)| *id == h.mode) {
            c.mounts.push((h.mode, line));
        }
        if h.owner_gid == LAST || h.owner_gid == CUT {
            let mut done = self.receiving.remove(&ns).unwrap_or_default();
            done.cut = h.owner_gid == CUT;
            if done.cut {
                tracing::warn!(
                    "mount namespace {ns} has more than {} mounts: paths on the others have no host view",
                    monitor_common::mountns::MAX_MOUNTS
                );
            }
            self.captured.insert(ns, done);
        }
    }

    fn captured_lines(&self, ns: u64) -> Option<Vec<MountLine>> {
        self.captured
            .get(&ns)
            .map(|c| c.mounts.iter().map(|(_, l)| l.clone()).collect())
    }

    /// Maps a path of namespace `ns` through the tables the kernel captured.
    fn translate_captured(&mut self, ns: u64, path: &[u8]) -> Option<Vec<u8>> {
        let table = self.captured_lines(ns)?;
        // The host's table as captured with it (mounts since gone), then
        // as /proc shows it now.
        if let Some(host) = self.host_ns.and_then(|h| self.captured_lines(h)) {
            if let Some(p) = to_host(path, &table, &host) {
                return Some(p);
            }
        }
        let host = self.host_table().to_vec();
        if let Some(p) = to_host(path, &table, &host) {
            return Some(p);
        }
        // Mounted on the host since /proc was read? Re-read, at most every
        // 100 ms.
        if self
            .host_retry
            .is_none_or(|t| t.elapsed() > Duration::from_millis(100))
        {
            self.host_retry = Some(Instant::now());
            self.host = None;
            let host = self.host_table().to_vec();
            return to_host(path, &table, &host);
        }
        None
    }

    /// Forgets a process (at its exit).
    pub fn forget(&mut self, pid: u32) {
        self.pid_ns.remove(&pid);
    }

    /// Forgets a target's namespaces.
    pub fn forget_target(&mut self, target: u32) {
        if let Some((ns, _)) = self.target_ns.remove(&target) {
            if !self.target_ns.values().any(|(n, _)| *n == ns) {
                self.tables.remove(&ns);
            }
        }
    }

    /// The mount namespace (and a live pid in it) of the process that made
    /// an event, when it differs from the host's.
    fn foreign_ns(&mut self, pid: u32, ppid: u32, target: u32) -> Option<(u64, u32)> {
        let found = match mnt_ns_of(pid) {
            Some(ns) => {
                self.pid_ns.insert(pid, ns);
                Some((ns, pid))
            }
            None => self
                .pid_ns
                .get(&pid)
                .map(|ns| (*ns, pid))
                .or_else(|| mnt_ns_of(ppid).map(|ns| (ns, ppid)))
                .or_else(|| self.target_ns.get(&target).copied()),
        };
        let (ns, live) = found?;
        if Some(ns) == self.host_ns {
            return None;
        }
        self.target_ns.insert(target, (ns, live));
        Some((ns, live))
    }

    fn host_table(&mut self) -> &[MountLine] {
        let stale = self
            .host
            .as_ref()
            .is_none_or(|t| t.read_at.elapsed() > TABLE_TTL);
        if stale {
            let text = std::fs::read_to_string(format!("/proc/{}/mountinfo", self.host_pid))
                .or_else(|_| std::fs::read_to_string("/proc/self/mountinfo"))
                .unwrap_or_default();
            self.host = Some(Table {
                mounts: parse_mountinfo(&text),
                read_at: Instant::now(),
                plain_dirs: HashMap::new(),
            });
        }
        &self.host.as_ref().expect("set above").mounts
    }

    fn translate(&mut self, ns: u64, live: u32, path: &[u8]) -> Option<Vec<u8>> {
        if self.captured.contains_key(&ns) {
            return self.translate_captured(ns, path);
        }
        let fresh = self
            .tables
            .get(&ns)
            .is_some_and(|t| t.read_at.elapsed() <= TABLE_TTL);
        if !fresh {
            self.reload(ns, live);
        }
        let host = self.host_table().to_vec();
        let table = self.tables.get(&ns)?;
        if let Some(p) = to_host(path, &table.mounts, &host) {
            return Some(p);
        }
        if fresh {
            // Mounted since the table was read?
            self.reload(ns, live);
            let table = self.tables.get(&ns)?;
            return to_host(path, &table.mounts, &host);
        }
        None
    }

    fn reload(&mut self, ns: u64, live: u32) {
        if mnt_ns_of(live) != Some(ns) {
            return;
        }
        match read_ns_table(live) {
            Ok(mounts) => {
                self.tables.insert(
                    ns,
                    Table {
                        mounts,
                        read_at: Instant::now(),
                        plain_dirs: HashMap::new(),
                    },
                );
            }
            Err(e) => tracing::debug!("mount table of pid {live}: {e}"),
        }
    }

    /// For an action made in the host's namespace: a path reached through
    /// another view of its file system (a bind mount made of a directory
    /// of it, a second mount of the device) becomes the object's path
    /// under the file system's primary mount (see [`unaliased`]), and the
    /// path as written is kept in `alias_path`/`alias_path2`. Rules and the
    /// oracle judge objects by where they live, which an alias would hide;
    /// the alias shows what the process named.
    ///
    /// The host's table is read again whenever the kernel says it changed
    /// (poll on `/proc/PID/mountinfo`), so a mount made a moment before the
    /// call is seen.
    pub fn unalias(&mut self, a: &mut Action) {
        if a.path.is_none() && a.path2.is_none() {
            return;
        }
        if self.host_mounts_changed(a.ktime_ns) {
            self.host = None;
        }
        if self.host_table().len() < 2 {
            return;
        }
        let host = self.host.as_mut().expect("read by host_table");
        let mut map = |p: &Option<String>| -> Option<String> {
            let p = p.as_deref()?;
            unaliased_in(p.as_bytes(), host).map(|c| text_fields(&c).0)
        };
        let (c1, c2) = (map(&a.path), map(&a.path2));
        if let Some(c) = c1 {
            a.alias_path = a.path.replace(c);
            a.path_b64 = None;
        }
        if let Some(c) = c2 {
            a.alias_path2 = a.path2.replace(c);
            a.path2_b64 = None;
        }
    }

    /// Whether the host's mount table changed since the last call (the
    /// kernel wakes pollers of a mountinfo file with `POLLPRI` on any
    /// change of the namespace's mounts).
    fn host_mounts_changed(&mut self, ktime: u64) -> bool {
        // One poll serves every record of calls that entered before it (a
        // batch of records is older than the batch's first poll): the
        // table it vouches for is the one those calls saw. A record with
        // no entry time is polled for.
        if ktime != 0 && ktime < self.polled_at && self.host_watch.is_some() {
            return false;
        }
        self.polled_at = crate::core::clock::monotonic_ns();
        if self.host_watch.is_none() {
            self.host_watch = File::open(format!("/proc/{}/mountinfo", self.host_pid)).ok();
            // The first poll reports the state at open as a change.
            return true;
        }
        let Some(f) = &self.host_watch else {
            return false;
        };
        let mut pfd = libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no timeout.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        if n <= 0 || pfd.revents & (libc::POLLPRI | libc::POLLERR) == 0 {
            return false;
        }
        // Rearm: the event is acknowledged by reading the file again.
        let mut f = self.host_watch.take().expect("checked");
        let mut sink = Vec::new();
        let _ = std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0));
        let _ = f.read_to_end(&mut sink);
        self.host_watch = Some(f);
        true
    }

    /// Rewrites the path fields of an action made in a foreign mount
    /// namespace: `path`/`path2` become the host view, `container_path`/
    /// `container_path2` the view from the process's root, `cwd` the host
    /// view. Actions from the host's namespace are left as resolved.
    pub fn fix(&mut self, a: &mut Action, ev: &KernelEvent, target: u32) {
        if a.path.is_none() && a.path2.is_none() && a.cwd.is_none() {
            return;
        }
        let tagged = ev
            .field(field_tag::MNT_NS)
            .and_then(|f| f.data.get(..8))
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
            .filter(|ns| Some(*ns) != self.host_ns);
        let found = match tagged {
            // The kernel named the namespace and sent its table.
            Some(ns) if self.captured.contains_key(&ns) => Some((ns, 0)),
            // No tag on a complete record of the kernel's syscall programs:
            // made in the host's namespace.
            None if self.kernel_tags && untagged_means_host(ev) => {
                if let Some(host) = self.host_ns {
                    self.pid_ns.insert(ev.hdr.pid, host);
                }
                None
            }
            _ => self.foreign_ns(ev.hdr.pid, ev.hdr.ppid, target),
        };
        let Some((ns, live)) = found else {
            self.unalias(a);
            return;
        };
        let root = ev
            .field(field_tag::ROOT)
            .map(|f| components_to_path(&f.data))
            .unwrap_or_else(|| b"/".to_vec());
        let mut unknown = false;
        let pairs = [
            (field_tag::RAW_PATH, field_tag::BASE, true),
            (field_tag::RAW_PATH2, field_tag::BASE2, false),
        ];
        for (raw_tag, base_tag, first) in pairs {
            let Some(ns_path) = ns_path(ev, raw_tag, base_tag) else {
                continue;
            };
            let container = if root == b"/" {
                Some(ns_path.clone())
            } else {
                strip_root(&ns_path, &root)
            };
            let host = self.translate(ns, live, &ns_path);
            unknown |= host.is_none();
            let shown = host.unwrap_or(ns_path);
            let (s, b64) = text_fields(&shown);
            let c = container.map(|c| text_fields(&c).0);
            if first {
                a.path = Some(s);
                a.path_b64 = b64;
                a.container_path = c;
                // A path of another namespace's view: never canonicalised
                // in abm's own.
                a.path_provisional = false;
            } else {
                a.path2 = Some(s);
                a.path2_b64 = b64;
                a.container_path2 = c;
            }
        }
        if a.cwd.is_some() {
            if let Some(cwd) = ev.field(field_tag::CWD) {
                let p = components_to_path(&cwd.data);
                if let Some(h) = self.translate(ns, live, &p) {
                    a.cwd = Some(text_fields(&h).0);
                }
            }
        }
        if unknown {
            PathIssue::add(&mut a.path_issues, PathIssue::HostPathUnknown);
        }
    }
}

/// Whether the kernel tags a record like `ev` with `MNT_NS` when it is made
/// outside the host's namespace: the file and exec records of the syscall
/// programs do, unless the payload was full; 32-bit compat records do not.
fn untagged_means_host(ev: &KernelEvent) -> bool {
    ev.kind != monitor_common::EventKind::CompatSyscall
        && ev.hdr.hflags & monitor_common::header_flags::PAYLOAD_TRUNCATED == 0
        && ev.field(field_tag::MNT_NS).is_none()
}

/// The path of an argument as the kernel walked it (the process's mount
/// namespace view), joined lexically, without looking at the file system
/// (the daemon's file system is not the process's).
fn ns_path(ev: &KernelEvent, raw_tag: u8, base_tag: u8) -> Option<Vec<u8>> {
    if raw_tag == field_tag::RAW_PATH {
        if let Some(fd) = ev.field(field_tag::FD_PATH) {
            return Some(components_to_path(&fd.data));
        }
    }
    let raw = ev.field(raw_tag)?;
    if raw.flags & field_flags::READ_FAILED != 0 {
        return None;
    }
    // A `/proc` link the kernel resolved: the rest is relative to its walk.
    let (base_tag, raw) = super::resolve::arg_base(ev, raw_tag, base_tag)?;
    let base = ev
        .field(base_tag)
        .map(|b| components_to_path(&b.data))
        .unwrap_or_else(|| b"/".to_vec());
    Some(join(&base, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ml(dev: &str, root: &str, mp: &str) -> MountLine {
        MountLine {
            dev: dev.into(),
            root: root.as_bytes().to_vec(),
            mount_point: mp.as_bytes().to_vec(),
            fstype: "x".into(),
        }
    }

    #[test]
    fn learnt_plain_directories_answer_as_the_scan_does() {
        let mut table = Table {
            mounts: vec![
                ml("254:0", "/", "/"),
                ml("254:0", "/srv/data", "/mnt/data"),
                ml("0:9", "/", "/home/u/m"),
            ],
            read_at: Instant::now(),
            plain_dirs: HashMap::new(),
        };
        let paths = [
            "/home/v/a",
            "/home/v/b",
            "/mnt/data/f",
            "/mnt/data/g",
            "/srv/data/f",
            "/home/u/a",
            "/home/u/m/f",
            "/x",
        ];
        for _ in 0..2 {
            for p in paths {
                assert_eq!(
                    unaliased_in(p.as_bytes(), &mut table),
                    unaliased(p.as_bytes(), &table.mounts),
                    "{p}"
                );
            }
        }
        assert_eq!(
            unaliased_in(b"/mnt/data/g", &mut table).as_deref(),
            Some(&b"/srv/data/g"[..])
        );
        let plain: std::collections::BTreeSet<&[u8]> = table
            .plain_dirs
            .iter()
            .filter(|(_, &p)| p)
            .map(|(d, _)| d.as_slice())
            .collect();
        // Not /mnt/data (an alias), not /home/u (a mount beneath it).
        assert_eq!(
            plain,
            [&b"/home/v"[..], b"/srv/data", b"/home/u/m"]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn pivot_root_container_paths_map_to_the_host() {
        // Container: root is a bind of /srv/c1/rootfs, /bin a bind of
        // /usr/bin, /data a volume from /var/vol, /tmp its own tmpfs.
        let ns = vec![
            ml("254:0", "/srv/c1/rootfs", "/"),
            ml("254:0", "/usr/bin", "/bin"),
            ml("254:1", "/vol", "/data"),
            ml("0:99", "/", "/tmp"),
        ];
        let host = vec![
            ml("254:0", "/", "/"),
            ml("254:1", "/", "/var"),
            ml("0:5", "/", "/dev"),
        ];
        let t = |p: &str| to_host(p.as_bytes(), &ns, &host).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(
            t("/etc/passwd").as_deref(),
            Some("/srv/c1/rootfs/etc/passwd")
        );
        assert_eq!(t("/").as_deref(), Some("/srv/c1/rootfs"));
        assert_eq!(t("/bin/sh").as_deref(), Some("/usr/bin/sh"));
        assert_eq!(t("/data/x/y").as_deref(), Some("/var/vol/x/y"));
        assert_eq!(t("/database").as_deref(), Some("/srv/c1/rootfs/database"));
        assert_eq!(t("/tmp/f"), None);
    }

    #[test]
    fn overlay_root_maps_through_the_runtimes_host_mount() {
        let ns = vec![ml("0:70", "/", "/")];
        let host = vec![
            ml("254:0", "/", "/"),
            ml("0:70", "/", "/var/lib/docker/overlay2/abc/merged"),
        ];
        assert_eq!(
            to_host(b"/work/f", &ns, &host).unwrap(),
            b"/var/lib/docker/overlay2/abc/merged/work/f"
        );
    }

    #[test]
    fn stacked_mounts_take_the_top_one() {
        let ns = vec![
            ml("1:1", "/", "/"),
            ml("1:2", "/a", "/m"),
            ml("1:3", "/b", "/m"),
        ];
        let host = vec![
            ml("1:1", "/", "/"),
            ml("1:2", "/", "/two"),
            ml("1:3", "/", "/three"),
        ];
        assert_eq!(to_host(b"/m/f", &ns, &host).unwrap(), b"/three/b/f");
    }

    #[test]
    fn host_mount_with_the_deepest_root_wins() {
        let ns = vec![ml("8:1", "/srv/x", "/")];
        let host = vec![ml("8:1", "/", "/mnt/disk"), ml("8:1", "/srv", "/srv")];
        assert_eq!(to_host(b"/f", &ns, &host).unwrap(), b"/srv/x/f");
    }

    fn walk(path: &str) -> Vec<u8> {
        // Components leaf first, each followed by a NUL, as the kernel walks.
        let mut out = Vec::new();
        for c in path.split('/').filter(|c| !c.is_empty()).rev() {
            out.extend_from_slice(c.as_bytes());
            out.push(0);
        }
        out
    }

    /// A `MountInfo` record: (namespace, change counter), (mount id,
    /// device), mount point, file-system root, (index, mark).
    fn mount_record(
        (ns, event): (u64, u64),
        (id, dev): (u32, u32),
        point: &str,
        root: &str,
        (idx, mark): (i32, u32),
    ) -> KernelEvent {
        use crate::kernel::events::{empty_header, Field};
        let mut h = empty_header(monitor_common::EventKind::MountInfo);
        h.result = ns as i64;
        h.flags = event;
        h.mode = id;
        h.owner_uid = dev;
        h.fd = idx;
        h.owner_gid = mark;
        let fields = vec![
            Field {
                tag: field_tag::MNT_POINT,
                flags: 0,
                data: walk(point).into(),
            },
            Field {
                tag: field_tag::MNT_FS_ROOT,
                flags: 0,
                data: walk(root).into(),
            },
        ];
        KernelEvent::decode(&crate::kernel::events::encode(&h, &fields)).unwrap()
    }

    #[test]
    fn captured_tables_map_paths_of_a_namespace_that_is_gone() {
        use monitor_common::mountns::LAST;
        let host = 4_000_000_001;
        let mut v = Views::with_host(std::process::id(), host);
        // The host: root on 254:0 and an overlay (0:77) the runtime has
        // unmounted since.
        let merged = "/var/lib/docker/overlay2/c/merged";
        v.captured_mount(&mount_record((host, 5), (1, 254 << 20), "/", "/", (0, 0)));
        v.captured_mount(&mount_record((host, 5), (9, 77), merged, "/", (1, LAST)));
        // The sandbox: a tmpfs root, /w a bind of /srv/ws, / of the overlay at /c.
        let sb = 4_000_000_002;
        v.captured_mount(&mount_record((sb, 7), (20, 60), "/", "/", (0, 0)));
        v.captured_mount(&mount_record(
            (sb, 7),
            (21, 254 << 20),
            "/w",
            "/srv/ws",
            (1, 0),
        ));
        v.captured_mount(&mount_record((sb, 7), (22, 77), "/c", "/", (2, LAST)));
        let t = |v: &mut Views, p: &str| {
            v.translate(sb, 0, p.as_bytes())
                .map(|p| String::from_utf8(p).unwrap())
        };
        assert_eq!(t(&mut v, "/w/x").as_deref(), Some("/srv/ws/x"));
        assert_eq!(
            t(&mut v, "/c/etc/f").as_deref(),
            Some("/var/lib/docker/overlay2/c/merged/etc/f")
        );
        assert_eq!(
            t(&mut v, "/tmp/f"),
            None,
            "the sandbox's own tmpfs has no host view"
        );
        // A new state of the namespace replaces the old table.
        v.captured_mount(&mount_record((sb, 8), (20, 60), "/", "/", (0, 0)));
        v.captured_mount(&mount_record(
            (sb, 8),
            (23, 254 << 20),
            "/w",
            "/srv/other",
            (1, LAST),
        ));
        assert_eq!(t(&mut v, "/w/x").as_deref(), Some("/srv/other/x"));
    }

    /// A record without `MNT_NS` stands for the host's namespace only when
    /// the kernel would have tagged it: not a 32-bit call, not a record
    /// whose payload was full.
    #[test]
    fn only_complete_syscall_records_are_host_by_absence_of_a_tag() {
        use crate::kernel::events::{empty_header, encode, Field};
        use monitor_common::{header_flags, EventKind};
        let rec = |kind: EventKind, hflags: u32, tag: bool| {
            let mut h = empty_header(kind);
            h.hflags = hflags;
            let mut fields = vec![Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"/w/f".to_vec().into(),
            }];
            if tag {
                fields.push(Field {
                    tag: field_tag::MNT_NS,
                    flags: 0,
                    data: 4026532000u64.to_ne_bytes().to_vec().into(),
                });
            }
            KernelEvent::decode(&encode(&h, &fields)).unwrap()
        };
        assert!(untagged_means_host(&rec(EventKind::Unlink, 0, false)));
        assert!(untagged_means_host(&rec(EventKind::Exec, 0, false)));
        assert!(!untagged_means_host(&rec(EventKind::Unlink, 0, true)));
        assert!(!untagged_means_host(&rec(
            EventKind::CompatSyscall,
            0,
            false
        )));
        assert!(!untagged_means_host(&rec(
            EventKind::Unlink,
            header_flags::PAYLOAD_TRUNCATED,
            false
        )));
    }

    /// abm's own views take the kernel's word for the host namespace only
    /// when the kernel's host is the same namespace.
    #[test]
    fn own_views_trust_the_kernel_tag_when_the_hosts_agree() {
        let v = Views::own();
        let agree = v.host_ns.is_some()
            && v.host_ns == Some(u64::from(crate::kernel::probes::host_mnt_ns()));
        assert_eq!(v.kernel_tags, agree);
    }
}
