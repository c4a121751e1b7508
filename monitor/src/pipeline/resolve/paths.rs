//! Path algebra (join, fold, strip a root, `/proc` links) and the
//! directory cache that canonicalises a record's parent directory once per
//! burst.
use std::{
    collections::HashMap,
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::Path,
    time::{Duration, Instant},
};

use monitor_common::EventKind;

use crate::kernel::events::KernelEvent;

/// Components stored leaf first, NUL-terminated, to an absolute path.
pub fn components_to_path(data: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = data.split(|&b| b == 0).filter(|c| !c.is_empty()).collect();
    parts.reverse();
    let mut out = Vec::with_capacity(data.len() + 1);
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Lexical normalisation of an absolute path: folds `.`, `..` and repeated
/// slashes; `..` at the root stays at the root (as the kernel does).
pub fn normalize(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len().max(1));
    push_normalized(&mut out, path);
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Appends the components of `path` to the normalised path `out` (empty
/// for the root), folding `.`, `..` and repeated slashes as it goes.
pub(super) fn push_normalized(out: &mut Vec<u8>, path: &[u8]) {
    for c in path.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                let parent = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(parent);
            }
            c => {
                out.push(b'/');
                out.extend_from_slice(c);
            }
        }
    }
}

/// Joins a raw path argument to its kernel-walked base directory.
/// For an absolute raw path the base is the task root (host view).
pub fn join(base: &[u8], raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(base.len() + 1 + raw.len());
    push_normalized(&mut out, base);
    push_normalized(&mut out, raw);
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// The path relative to a task root, when the path lies under that root.
pub fn strip_root(path: &[u8], root: &[u8]) -> Option<Vec<u8>> {
    if root == b"/" {
        return None;
    }
    let rest = path.strip_prefix(root)?;
    if rest.is_empty() {
        return Some(b"/".to_vec());
    }
    rest.starts_with(b"/").then(|| rest.to_vec())
}

/// A directory's canonical path in three syscalls whatever its depth
/// (realpath(3) costs a readlink per component): open it with O_PATH and
/// read the kernel's name for the fd.
pub(super) fn canonical_dir(dir: &Path) -> Option<Vec<u8>> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: valid C string; the fd is closed below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let r = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
    // SAFETY: our own fd.
    unsafe { libc::close(fd) };
    let r = r?.into_os_string().into_vec();
    (r.first() == Some(&b'/') && !r.ends_with(b" (deleted)")).then_some(r)
}

/// Canonicalises the parent directory of `path` (symlinks and `..` in the
/// raw argument, resolved as the kernel does), keeping the final component
/// as is (it may be a symlink itself, which unlink/rename act on, or
/// already gone).
#[cfg(test)]
pub fn canonical_parent(path: &[u8]) -> Option<Vec<u8>> {
    canonical_parent_with(path, None)
}

pub(super) fn canonical_parent_with(path: &[u8], cache: Option<&mut DirCache>) -> Option<Vec<u8>> {
    let p = Path::new(std::ffi::OsStr::from_bytes(path));
    let parent = p.parent()?;
    let name = p.file_name()?;
    let mut out = match cache {
        Some(c) => c.canonical_dir(parent)?,
        None => canonical_dir(parent)?,
    };
    if out != b"/" {
        out.push(b'/');
    }
    out.extend_from_slice(name.as_bytes());
    Some(out)
}

/// Directories canonicalised for recent records, so that many calls in one
/// directory cost one lookup (the canonical name is read from the file
/// system when the record is read, with or without the cache).
///
/// An entry is used for [`DirCache::TTL`] at most, and the whole cache is
/// dropped whenever a record that can change what a directory path names
/// is read (a rename, rmdir or symlink in the traced tree: see
/// [`DirCache::invalidates`]). An unlink drops only the entries whose path
/// is not already canonical (it went through a symbolic link or `..`): a
/// path whose every component is a directory names that directory, or
/// nothing (and then resolves to itself, as the cache says), until a
/// rename or a symlink. So records are resolved against the same
/// file-system state as without the cache; only a change made outside the
/// traced tree can go unseen, for at most the TTL (resolution is already
/// that late: records are read in batches, every 25 ms at most). Paths
/// under `/proc` (per-process magic links) and directories that do not
/// exist are never cached.
#[derive(Debug, Default)]
pub struct DirCache {
    /// Path as written → (canonical path, when, whether it is its own
    /// canonical path).
    pub(super) dirs: HashMap<Vec<u8>, (Vec<u8>, Instant, bool)>,
}

impl DirCache {
    /// How long a canonical directory is trusted.
    pub const TTL: Duration = Duration::from_millis(100);
    /// Entries kept at most (the cache is emptied when it is full).
    pub const MAX_ENTRIES: usize = 4096;

    /// Whether a record can change what directory paths name: the entry or
    /// the result of a rename, rmdir, unlink or symlink (the result too,
    /// because the entry can be read while the call is still running), or
    /// a 32-bit call of any kind.
    pub fn invalidates(ev: &KernelEvent) -> bool {
        let kind = match ev.kind {
            EventKind::SyscallExit => match monitor_common::syscall(ev.hdr.syscall) {
                Some(s) => s.kind,
                None => return true,
            },
            k => k,
        };
        matches!(
            kind,
            EventKind::Rename
                | EventKind::Rmdir
                | EventKind::Unlink
                | EventKind::Symlink
                | EventKind::CompatSyscall
        )
    }

    /// Whether a record that [`DirCache::invalidates`] removes only files
    /// (an unlink, entry or result), so [`DirCache::forget_indirect`] is
    /// enough. `unlinkat(AT_REMOVEDIR)`, recorded as an unlink too, removes
    /// a directory: its path, if canonical, still names what the cache says
    /// (the path as written, which is also what a missing directory
    /// resolves to).
    pub fn only_unlinks(ev: &KernelEvent) -> bool {
        let kind = match ev.kind {
            EventKind::SyscallExit => match monitor_common::syscall(ev.hdr.syscall) {
                Some(s) => s.kind,
                None => return false,
            },
            k => k,
        };
        kind == EventKind::Unlink
    }

    /// Forgets the directories whose path as written is not their
    /// canonical path (it went through a symbolic link or `..`).
    pub fn forget_indirect(&mut self) {
        self.dirs.retain(|_, (_, _, direct)| *direct);
    }

    /// Forgets every directory.
    pub fn clear(&mut self) {
        if !self.dirs.is_empty() {
            self.dirs.clear();
        }
    }

    fn canonical_dir(&mut self, dir: &Path) -> Option<Vec<u8>> {
        let key = dir.as_os_str().as_bytes();
        if is_proc(key) {
            return canonical_dir(dir);
        }
        let now = Instant::now();
        if let Some((real, at, _)) = self.dirs.get(key) {
            if now.duration_since(*at) <= Self::TTL {
                return Some(real.clone());
            }
        }
        let real = canonical_dir(dir);
        match &real {
            Some(r) if is_proc(r) => {}
            Some(r) => {
                if self.dirs.len() >= Self::MAX_ENTRIES {
                    self.dirs.clear();
                }
                let direct = r.as_slice() == key;
                self.dirs.insert(key.to_vec(), (r.clone(), now, direct));
            }
            None => {
                self.dirs.remove(key);
            }
        }
        real
    }
}

/// Whether a path is under /proc (leading slashes folded).
pub(super) fn is_proc(p: &[u8]) -> bool {
    let start = p.iter().position(|&b| b != b'/').unwrap_or(p.len());
    let p = &p[start..];
    p == b"proc" || p.starts_with(b"proc/")
}

/// A path by which the caller names its own /proc entry, rewritten to
/// `/proc/<tid>/…`: `/proc/self/…`, `/proc/thread-self/…` and the links
/// into them that programs use (`/dev/fd/N`, `/dev/stdin`, `/dev/stdout`,
/// `/dev/stderr`; a jobserver client opens `/dev/fd/N`). Resolved in abm's
/// process they would name abm's own entries.
pub fn caller_proc_path(raw: &[u8], tid: u32) -> Option<Vec<u8>> {
    const ALIASES: [(&[u8], &[u8]); 4] = [
        (b"/dev/fd/", b"fd/"),
        (b"/dev/stdin", b"fd/0"),
        (b"/dev/stdout", b"fd/1"),
        (b"/dev/stderr", b"fd/2"),
    ];
    let rest: Vec<u8> = if let Some(r) = raw
        .strip_prefix(b"/proc/self/")
        .or_else(|| raw.strip_prefix(b"/proc/thread-self/"))
    {
        r.to_vec()
    } else {
        ALIASES.iter().find_map(|(alias, to)| {
            let r = raw.strip_prefix(*alias)?;
            // `/dev/stdin` itself or `/dev/fd/<rest>`, not `/dev/stdinx`.
            (alias.ends_with(b"/") || r.is_empty() || r.first() == Some(&b'/')).then(|| {
                let mut p = to.to_vec();
                p.extend_from_slice(r);
                p
            })
        })?
    };
    let mut p = format!("/proc/{tid}/").into_bytes();
    p.extend_from_slice(&rest);
    Some(p)
}

/// The absolute path a raw argument names relative to its base directory.
/// For a process on the host root whose argument has directory components,
/// the directory part is resolved as the kernel did: symlinks first, then
/// `..` physically (so `link/../f` names the file next to the link's
/// target, not next to the link). Lexical folding is the fallback when the
/// directory no longer exists, and the only option inside another root.
pub fn resolve_raw(base: &[u8], raw: &[u8], host_root: bool) -> Vec<u8> {
    resolve_raw_with(base, raw, host_root, None)
}

pub(super) fn resolve_raw_with(
    base: &[u8],
    raw: &[u8],
    host_root: bool,
    cache: Option<&mut DirCache>,
) -> Vec<u8> {
    if host_root && raw.contains(&b'/') {
        let mut unfolded = base.to_vec();
        unfolded.push(b'/');
        unfolded.extend_from_slice(raw);
        if let Some(real) = canonical_parent_with(&unfolded, cache) {
            return real;
        }
    }
    join(base, raw)
}

/// Whether `path` goes through a per-process link of `/proc`:
/// `/proc/<pid|self|thread-self>/[task/<tid>/]{cwd,root,fd/N,map_files/…}`
/// (or an `/proc/<pid>/exe`), which names a file only for that process.
pub fn names_proc_link(path: &[u8]) -> bool {
    let mut parts = path.split(|&b| b == b'/').filter(|c| !c.is_empty());
    if parts.next() != Some(b"proc") {
        return false;
    }
    let Some(who) = parts.next() else {
        return false;
    };
    if !(who == b"self" || who == b"thread-self" || who.iter().all(u8::is_ascii_digit)) {
        return false;
    }
    let mut what = parts.next();
    if what == Some(b"task") {
        parts.next();
        what = parts.next();
    }
    matches!(what, Some(b"cwd" | b"root" | b"fd" | b"exe" | b"map_files"))
}

/// For a call that followed a final symlink ([`follows_final_link`]): when
/// `path` is a symlink now, the file it leads to (resolved as the kernel
/// would, from the host root), else `None`. Read after the call, so the
/// record says so (`symlink_resolved_late`).
pub(super) fn late_link_target(path: &[u8]) -> Option<Vec<u8>> {
    let p = Path::new(std::ffi::OsStr::from_bytes(path));
    if !std::fs::symlink_metadata(p).ok()?.file_type().is_symlink() {
        return None;
    }
    if let Ok(real) = std::fs::canonicalize(p) {
        return Some(real.into_os_string().into_vec());
    }
    // A dangling link: its target, joined to the link's directory.
    let target = std::fs::read_link(p).ok()?.into_os_string().into_vec();
    let dir = p.parent().map_or(&b"/"[..], |d| d.as_os_str().as_bytes());
    Some(if target.starts_with(b"/") {
        normalize(&target)
    } else {
        join(dir, &target)
    })
}

/// Whether a path has a `..` component.
pub(super) fn has_dot_dot(p: &[u8]) -> bool {
    p.split(|&b| b == b'/').any(|c| c == b"..")
}
