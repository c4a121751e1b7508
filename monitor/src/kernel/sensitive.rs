//! Sensitive-data exposure: which files count as sensitive, resolved to
//! inodes at the start of a run, and the kernel program that records their
//! read-only opens (`monitor-ebpf/src/probes/sensitive.rs`).
//!
//! The kernel decides by inode, so an ordinary open costs one fd-table read
//! and one hash lookup and sends nothing. Files are resolved when the run
//! starts; a file the command creates later under a sensitive pattern (a
//! `.env` it writes, a key it renames into place) is added when the record
//! of its creation is released ([`Watcher::created`]), so reads from then
//! on are recorded.
//!
//! A sandbox (`unshare -m` + an overlay + `chroot`, a container) has files
//! of its own: its `/etc/shadow` is another inode than the host's. Each
//! mount namespace and root the tree enters ([`ViewKey`]) has the set
//! resolved again inside it, with the thread resolving it chrooted into
//! the process's root ([`in_view`]), and its inodes join the kernel's set
//! ([`Views::enter`]).
use std::{
    collections::HashSet,
    os::{
        fd::{AsRawFd as _, OwnedFd},
        unix::fs::MetadataExt as _,
    },
    path::{Component, Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use aya::maps::{HashMap, MapData};
use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use monitor_common::InodeKey;

use super::probes::{ProbeError, Probes};
use crate::core::anchor::{self, Anchor};

/// Capacity of the kernel's `SENSITIVE_INODES` map.
pub const MAX_SENSITIVE: usize = 4096;

/// The default sensitive set: the system's secrets (password hashes, ssh
/// host keys, TLS private keys), credentials, private keys, cluster and
/// cloud configurations. `${home}` and `${workspace}` are the run's roots;
/// root's own keys are `${home}/...` when the run's home is `/root`.
pub const DEFAULT_PATTERNS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private/*",
    "${home}/.ssh/id_*",
    "${home}/.ssh/*.pem",
    "${home}/.aws/credentials",
    "${home}/.aws/config",
    "${home}/.kube/config",
    "${home}/.docker/config.json",
    "${home}/.netrc",
    "${home}/.git-credentials",
    "${home}/.pgpass",
    "${home}/.npmrc",
    "${home}/.pypirc",
    "${home}/.config/gcloud/**/*credentials*",
    "${home}/.config/gh/hosts.yml",
    "${home}/.gnupg/private-keys-v1.d/*",
    "${home}/**/.env",
    "${home}/**/*.pem",
    "${home}/**/*.key",
    "${workspace}/**/.env",
    "${workspace}/**/.env.*",
    "${workspace}/**/*.pem",
    "${workspace}/**/*.key",
    "${workspace}/**/*.kubeconfig",
];

/// Deepest directory level a `**` pattern descends to below its fixed
/// prefix, and the most directory entries one run looks at in all: a large
/// home directory is sampled, never walked for minutes.
const MAX_WALK_DEPTH: usize = 6;
const MAX_WALK_ENTRIES: usize = 50_000;

/// Directories a `**` walk never enters: caches and build trees hold no
/// credentials of the user's and can be huge.
const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".cache",
    ".cargo",
    ".rustup",
    ".npm",
    ".local",
    "__pycache__",
    ".venv",
    "venv",
];

#[derive(Debug, thiserror::Error)]
pub enum SensitiveError {
    #[error("--sensitive `{pattern}`: {why}")]
    Pattern { pattern: String, why: String },
}

/// The files a run treats as sensitive.
#[derive(Debug, Default)]
pub struct SensitiveSet {
    /// Each file once (by inode), with the first path it was found under.
    pub files: Vec<(InodeKey, PathBuf)>,
    /// True when the walk stopped at [`MAX_WALK_ENTRIES`] or the set at
    /// [`MAX_SENSITIVE`].
    pub partial: bool,
    /// Every pattern, anchored: what a file created later is checked
    /// against.
    pub patterns: GlobSet,
    /// What was resolved, to resolve it again in another view.
    spec: Spec,
}

/// The arguments of [`resolve`].
#[derive(Clone, Debug, Default)]
struct Spec {
    workspace: PathBuf,
    home: PathBuf,
    extra: Vec<String>,
    defaults: bool,
}

/// Expands `${home}`/`${workspace}` and `~/`; an absolute pattern stays.
fn anchor(pattern: &str, workspace: &Path, home: &Path) -> Result<String, SensitiveError> {
    let bad = |why: &str| SensitiveError::Pattern {
        pattern: pattern.to_owned(),
        why: why.to_owned(),
    };
    let out = match anchor::split(pattern, &["${home}", "${workspace}"]) {
        Anchor::Var(0, rest) => format!("{}{rest}", home.display()),
        Anchor::Var(_, rest) => format!("{}{rest}", workspace.display()),
        Anchor::Tilde(rest) if rest.starts_with('/') => format!("{}{rest}", home.display()),
        Anchor::Absolute => pattern.to_owned(),
        Anchor::Tilde(_)
        | Anchor::AnyDepth
        | Anchor::UnknownVar(_)
        | Anchor::Empty
        | Anchor::Relative => {
            return Err(bad(
                "a relative pattern; anchor it: `${workspace}/...`, `${home}/...`, `~/...` or an absolute path",
            ));
        }
    };
    if Path::new(&out)
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(bad(
            "`.` and `..` components never match: write the resolved path",
        ));
    }
    Ok(out)
}

fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '[', '{'])
}

/// Resolves the default set (unless `defaults` is false) and `extra`
/// patterns to inodes. Only regular files count; symbolic links are
/// followed, since an open follows them.
pub fn resolve(
    workspace: &Path,
    home: &Path,
    extra: &[String],
    defaults: bool,
) -> Result<SensitiveSet, SensitiveError> {
    let mut patterns: Vec<String> = Vec::new();
    if defaults {
        for p in DEFAULT_PATTERNS {
            patterns.push(anchor(p, workspace, home)?);
        }
    }
    for p in extra {
        patterns.push(anchor(p, workspace, home)?);
    }
    let mut set = SensitiveSet {
        spec: Spec {
            workspace: workspace.to_path_buf(),
            home: home.to_path_buf(),
            extra: extra.to_vec(),
            defaults,
        },
        ..SensitiveSet::default()
    };
    let mut seen: HashSet<InodeKey> = HashSet::new();
    let mut budget = MAX_WALK_ENTRIES;
    let mut all = GlobSetBuilder::new();
    for pat in &patterns {
        let built = GlobBuilder::new(pat)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| SensitiveError::Pattern {
                pattern: pat.clone(),
                why: e.kind().to_string(),
            })?;
        let glob = built.compile_matcher();
        all.add(built);
        // The fixed directory prefix, and how deep below it to look.
        let comps: Vec<&str> = pat.split('/').filter(|c| !c.is_empty()).collect();
        let fixed = comps.iter().take_while(|c| !is_glob(c)).count();
        let mut base = PathBuf::from("/");
        base.extend(&comps[..fixed.min(comps.len())]);
        let rest = &comps[fixed..];
        let depth = if rest.iter().any(|c| c.contains("**")) {
            MAX_WALK_DEPTH
        } else {
            rest.len()
        };
        let mut found = Vec::new();
        if rest.is_empty() {
            found.push(base);
        } else {
            walk(&base, depth, &glob, &mut found, &mut budget);
        }
        for path in found {
            let Ok(m) = std::fs::metadata(&path) else {
                continue;
            };
            if !m.is_file() || path.extension().is_some_and(|e| e == "pub") {
                continue;
            }
            for key in keys_of(&path, &m) {
                if seen.insert(key) {
                    if set.files.len() >= MAX_SENSITIVE {
                        set.partial = true;
                        break;
                    }
                    set.files.push((key, path.clone()));
                }
            }
        }
    }
    set.partial |= budget == 0;
    set.patterns = all.build().map_err(|e| SensitiveError::Pattern {
        pattern: patterns.join(" "),
        why: e.to_string(),
    })?;
    Ok(set)
}

/// The keys the kernel may see for a file: its (`st_dev`, `st_ino`) and,
/// where its directory reports another device (a file of an overlay whose
/// layers are on other file systems: `stat` gives the layer's device, the
/// opened inode is the overlay's), the directory's device with the file's
/// inode number.
fn keys_of(path: &Path, m: &std::fs::Metadata) -> Vec<InodeKey> {
    let key = |dev: u64| InodeKey {
        ino: m.ino(),
        dev: crate::core::sys::kernel_dev(dev),
        _pad: 0,
    };
    let mut keys = vec![key(m.dev())];
    if let Some(d) = path.parent().and_then(|d| std::fs::metadata(d).ok()) {
        if d.dev() != m.dev() {
            keys.push(key(d.dev()));
        }
    }
    keys
}

/// Collects the files under `dir` (at most `depth` levels down) that
/// `glob` matches.
fn walk(dir: &Path, depth: usize, glob: &GlobMatcher, out: &mut Vec<PathBuf>, budget: &mut usize) {
    if depth == 0 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let path = entry.path();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            let name = entry.file_name();
            if SKIP_DIRS.iter().any(|s| name == *s) {
                continue;
            }
            walk(&path, depth - 1, glob, out, budget);
        } else if glob.is_match(&path) {
            out.push(path);
        }
    }
}

/// The kernel's sensitive set while a run lasts: files created under a
/// sensitive pattern join it, and so do the sensitive files of each view
/// (mount namespace and root) the tree enters.
pub struct Watcher {
    patterns: GlobSet,
    views: Views,
    /// Files added after the start, by the path they were created at.
    pub added: Vec<PathBuf>,
    /// A file could not be added: the map was full.
    pub full: bool,
}

/// The kernel map and what is in it, shared by the session loop and the
/// seccomp supervisor (which adds a view's files before the call that
/// enters it runs).
struct Shared {
    map: Option<HashMap<MapData, InodeKey, u32>>,
    known: HashSet<InodeKey>,
    full: bool,
    /// Views resolved so far (abm's own first).
    seen: HashSet<ViewKey>,
}

/// A handle on the run's sensitive set that resolves it again in the
/// views the tree enters. Cheap to clone.
#[derive(Clone)]
pub struct Views {
    shared: Arc<Mutex<Shared>>,
    spec: Arc<Spec>,
}

impl Views {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether reads are recorded at all (a kernel map is attached).
    pub fn active(&self) -> bool {
        self.lock().map.is_some()
    }

    /// Whether `key` was resolved already (abm's own view always was).
    pub fn known(&self, key: &ViewKey) -> bool {
        self.lock().seen.contains(key)
    }

    /// Process `pid` runs in `key`, a view not seen before: the sensitive
    /// set resolved in it (`/etc/shadow`, `/root/.ssh/...` of the sandbox)
    /// joins the kernel's set. With `chroot_to`, the view is the one the
    /// process will have after `chroot(chroot_to)` (a path in its view).
    /// Returns the files added (`None`: the view was known, or no map).
    pub fn enter(&self, pid: u32, key: ViewKey, chroot_to: Option<&Path>) -> Option<View> {
        {
            let mut sh = self.lock();
            if sh.map.is_none() || !sh.seen.insert(key) {
                return None;
            }
        }
        let spec = self.spec.clone();
        let target = chroot_to.map(Path::to_path_buf);
        let found = in_view(pid, move || {
            if let Some(t) = target {
                chroot_here(&t)?;
            }
            Ok(resolve_in_view(&spec))
        });
        let root = std::fs::read_link(format!("/proc/{pid}/root")).unwrap_or_default();
        let mut view = View {
            key,
            root: chroot_to.map_or(root.clone(), |t| {
                root.join(t.strip_prefix("/").unwrap_or(t))
            }),
            files: Vec::new(),
            error: None,
        };
        let set = match found {
            Ok(set) => set,
            Err(e) => {
                tracing::warn!(
                    "sensitive files of process {pid}'s view (root {}) are not watched: {e}",
                    view.root.display()
                );
                view.error = Some(e.to_string());
                return Some(view);
            }
        };
        let mut sh = self.lock();
        for (key, path) in set.files {
            if sh.known.contains(&key) {
                continue;
            }
            if sh.known.len() >= MAX_SENSITIVE {
                sh.full = true;
                break;
            }
            let Some(map) = sh.map.as_mut() else { break };
            if map.insert(key, 1, 0).is_err() {
                sh.full = true;
                break;
            }
            sh.known.insert(key);
            view.files.push(path);
        }
        Some(view)
    }
}

/// The sensitive files found in a view the tree entered.
#[derive(Debug)]
pub struct View {
    pub key: ViewKey,
    /// The view's root as abm reads it (`/proc/PID/root`).
    pub root: PathBuf,
    /// Paths in the view's own terms (`/etc/shadow`).
    pub files: Vec<PathBuf>,
    /// The view could not be entered (its files are not watched).
    pub error: Option<String>,
}

impl View {
    /// The added files under the view's root, as records name them.
    pub fn paths(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|f| {
                let p = self.root.join(f.strip_prefix("/").unwrap_or(f));
                p.to_string_lossy().into_owned()
            })
            .collect()
    }
}

/// The set again, from the calling thread's root: the system's secrets
/// and `${home}` patterns for root's home and the run's home.
fn resolve_in_view(spec: &Spec) -> SensitiveSet {
    let mut all = SensitiveSet::default();
    let mut homes = vec![PathBuf::from("/root")];
    if !homes.contains(&spec.home) {
        homes.push(spec.home.clone());
    }
    for home in homes {
        if let Ok(set) = resolve(&spec.workspace, &home, &spec.extra, spec.defaults) {
            all.files.extend(set.files);
        }
    }
    all
}

/// A process's view of the file system: its mount namespace and the
/// identity of its root directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViewKey {
    pub mnt_ns: u64,
    pub root_dev: u64,
    pub root_ino: u64,
}

impl ViewKey {
    /// The view of process (or thread) `pid`, from /proc.
    pub fn of(pid: u32) -> std::io::Result<ViewKey> {
        let ns = std::fs::metadata(format!("/proc/{pid}/ns/mnt"))?;
        let root = std::fs::metadata(format!("/proc/{pid}/root"))?;
        Ok(ViewKey {
            mnt_ns: ns.ino(),
            root_dev: root.dev(),
            root_ino: root.ino(),
        })
    }

    /// abm's own view (of its main thread, whatever a thread of it does).
    pub fn own() -> std::io::Result<ViewKey> {
        ViewKey::of(std::process::id())
    }
}

/// Runs `f` on a thread of its own whose root and working directory are
/// those of process `pid` (a `chroot` into `/proc/PID/root`, which keeps
/// that process's mount namespace's mounts): paths, absolute symlinks and
/// `..` resolve in `f` exactly as they do for the process. The thread
/// unshares its file-system attributes first, so abm's other threads keep
/// their root.
pub fn in_view<T: Send>(
    pid: u32,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    let root = open_path(&format!("/proc/{pid}/root"))?;
    let cwd = open_path(&format!("/proc/{pid}/cwd"))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: unshare(CLONE_FS) takes no pointers; it affects this
            // thread only.
            if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            enter_dirs(&root, &cwd)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the view's thread panicked")))
    })
}

/// Opens `p` as an `O_PATH` directory descriptor.
pub fn open_path(p: &str) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(p)?;
    Ok(OwnedFd::from(f))
}

/// Makes `root` the calling thread's root and `cwd` its working directory
/// (the thread must not share its file-system attributes).
pub fn enter_dirs(root: &OwnedFd, cwd: &OwnedFd) -> std::io::Result<()> {
    let ok = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: fchdir takes a descriptor; chroot a NUL-terminated string.
    unsafe {
        ok(libc::fchdir(root.as_raw_fd()))?;
        ok(libc::chroot(c".".as_ptr()))?;
        ok(libc::fchdir(cwd.as_raw_fd()))
    }
}

/// `chroot(dir)` and `chdir("/")` for the calling thread.
fn chroot_here(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::chroot(c.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    std::env::set_current_dir("/")
}

impl Watcher {
    /// A watcher that records nothing (no kernel map).
    pub fn off(set: &SensitiveSet) -> Watcher {
        Watcher::with_map(set, None)
    }

    fn with_map(set: &SensitiveSet, map: Option<HashMap<MapData, InodeKey, u32>>) -> Watcher {
        let seen = ViewKey::own().into_iter().collect();
        Watcher {
            patterns: set.patterns.clone(),
            views: Views {
                shared: Arc::new(Mutex::new(Shared {
                    map,
                    known: set.files.iter().map(|(k, _)| *k).collect(),
                    full: false,
                    seen,
                })),
                spec: Arc::new(set.spec.clone()),
            },
            added: Vec::new(),
            full: false,
        }
    }

    /// The handle the seccomp supervisor uses to add the views it sees.
    pub fn views(&self) -> Views {
        self.views.clone()
    }

    /// A record of process `pid` was released (an exec): if the process
    /// runs in a view not seen before, its sensitive files join the set.
    /// Reads made between entering the view and this call are not
    /// recorded (under `--enforce` the supervisor adds the view before the
    /// exec or `chroot` runs).
    pub fn entered(&mut self, pid: u32) -> Option<View> {
        let key = ViewKey::of(pid).ok()?;
        if self.views.known(&key) {
            return None;
        }
        let v = self.views.enter(pid, key, None);
        self.full |= self.views.lock().full;
        v
    }

    /// A file was created, written or renamed to `path` (resolved, host
    /// view) by the watched tree; if it matches a sensitive pattern and is
    /// a regular file not yet in the set, reads of it are recorded from now
    /// on. Returns whether it was added.
    pub fn created(&mut self, path: &str) -> bool {
        if !self.patterns.is_match(path) || path.ends_with(".pub") {
            return false;
        }
        let Ok(m) = std::fs::metadata(path) else {
            return false;
        };
        if !m.is_file() {
            return false;
        }
        let mut sh = self.views.lock();
        let Shared {
            map, known, full, ..
        } = &mut *sh;
        let Some(map) = map.as_mut() else {
            return false;
        };
        let mut added = false;
        for key in keys_of(Path::new(path), &m) {
            if known.contains(&key) {
                continue;
            }
            if known.len() >= MAX_SENSITIVE || map.insert(key, 1, 0).is_err() {
                *full = true;
                self.full = true;
                break;
            }
            known.insert(key);
            added = true;
        }
        drop(sh);
        if added {
            self.added.push(PathBuf::from(path));
        }
        added
    }
}

/// Why reads of sensitive files cannot be recorded.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The program did not load or attach (see `abm doctor`'s
    /// `sensitive_reads`).
    #[error("{0}")]
    Attach(ProbeError),
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

/// Fills the kernel's `SENSITIVE_INODES` map and attaches the program that
/// records read-only opens (a BTF tracepoint on `sys_exit`, loaded by
/// [`Probes::load`]; no tracefs needed). Nothing is attached when no
/// pattern can ever match (no default set and no `--sensitive`), so such a
/// run pays nothing.
pub fn watch(probes: &mut Probes, set: &SensitiveSet) -> Result<Watcher, WatchError> {
    if set.files.is_empty() && set.patterns.is_empty() {
        return Ok(Watcher::off(set));
    }
    const MAP: &str = "SENSITIVE_INODES";
    let mut map: HashMap<MapData, InodeKey, u32> = HashMap::try_from(
        probes
            .ebpf
            .take_map(MAP)
            .ok_or(ProbeError::MissingMap(MAP))?,
    )
    .map_err(|source| ProbeError::Map { name: MAP, source })?;
    for (key, _) in &set.files {
        map.insert(key, 1, 0)
            .map_err(|source| ProbeError::Map { name: MAP, source })?;
    }
    probes.attach_sensitive().map_err(WatchError::Attach)?;
    Ok(Watcher::with_map(set, Some(map)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_defaults_and_extra_patterns_to_regular_files() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let ws = tmp.path().join("ws");
        for d in [".ssh", ".kube", "proj/sub", ".cache/x"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::create_dir_all(ws.join("app/.git")).unwrap();
        for f in [
            "home/.ssh/id_rsa",
            "home/.ssh/id_rsa.pub",
            "home/.ssh/known_hosts",
            "home/.kube/config",
            "home/proj/sub/.env",
            "home/.cache/x/.env",
            "ws/app/.env",
            "ws/app/server.key",
            "ws/app/.git/x.key",
            "ws/app/main.py",
            "ws/notes.txt",
        ] {
            std::fs::write(tmp.path().join(f), "x").unwrap();
        }
        let set = resolve(&ws, &home, &["${workspace}/notes.txt".into()], true).unwrap();
        // The system's own secrets (/etc/shadow ...) are in the set too;
        // this test looks at the temporary tree.
        let mut names: Vec<String> = set
            .files
            .iter()
            .filter(|(_, p)| p.starts_with(tmp.path()))
            .map(|(_, p)| p.strip_prefix(tmp.path()).unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "home/.kube/config",
                "home/.ssh/id_rsa",
                "home/proj/sub/.env",
                "ws/app/.env",
                "ws/app/server.key",
                "ws/notes.txt",
            ]
        );
        assert!(!set.partial);
        let none = resolve(&ws, &home, &[], false).unwrap();
        assert!(none.files.is_empty());
    }

    /// The system's secrets are absolute patterns: they are taken as they
    /// are (never joined to a root), a literal one names its file and a
    /// glob one walks its directory, private host keys only.
    #[test]
    fn absolute_patterns_resolve_as_written() {
        let (w, h) = (Path::new("/w"), Path::new("/h"));
        for p in DEFAULT_PATTERNS.iter().filter(|p| p.starts_with('/')) {
            assert_eq!(anchor(p, w, h).unwrap(), *p);
        }
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/ssh/ssh_host_ed25519_key",
        ] {
            assert!(
                DEFAULT_PATTERNS.contains(&secret)
                    || DEFAULT_PATTERNS.iter().any(|p| globset::Glob::new(p)
                        .unwrap()
                        .compile_matcher()
                        .is_match(secret)),
                "{secret} is not in the default set"
            );
        }
        let tmp = tempfile::tempdir().unwrap();
        let ssh = tmp.path().join("etc/ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        for f in [
            "etc/shadow",
            "etc/ssh/ssh_host_rsa_key",
            "etc/ssh/ssh_host_rsa_key.pub",
            "etc/ssh/ssh_host_ed25519_key",
            "etc/ssh/ssh_host_ed25519_key.pub",
            "etc/ssh/sshd_config",
        ] {
            std::fs::write(tmp.path().join(f), "x").unwrap();
        }
        let root = tmp.path().display().to_string();
        let extra = [
            format!("{root}/etc/shadow"),
            format!("{root}/etc/gshadow"),
            format!("{root}/etc/ssh/ssh_host_*_key"),
        ];
        let set = resolve(w, h, &extra, false).unwrap();
        let mut names: Vec<String> = set
            .files
            .iter()
            .map(|(_, p)| p.strip_prefix(tmp.path()).unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "etc/shadow",
                "etc/ssh/ssh_host_ed25519_key",
                "etc/ssh/ssh_host_rsa_key",
            ]
        );
        // A host key the run creates later joins the set by its pattern;
        // its public half never does.
        assert!(set
            .patterns
            .is_match(format!("{root}/etc/ssh/ssh_host_ecdsa_key")));
        assert!(!set
            .patterns
            .is_match(format!("{root}/etc/ssh/ssh_host_ecdsa_key.pub")));
        assert!(!set.patterns.is_match(format!("{root}/etc/ssh/sshd_config")));
    }

    #[test]
    fn relative_and_dotted_patterns_are_errors() {
        let (w, h) = (Path::new("/w"), Path::new("/h"));
        let e = resolve(w, h, &["secrets/x".into()], false).unwrap_err();
        assert!(e.to_string().contains("anchor it"), "{e}");
        let e = resolve(w, h, &["${workspace}/../x".into()], false).unwrap_err();
        assert!(e.to_string().contains("`..`"), "{e}");
    }
}
