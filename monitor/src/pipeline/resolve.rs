//! Turning kernel records into action records: absolute paths from the
//! kernel's dentry walks plus the raw arguments, container-relative paths,
//! symbolic flags, errno and syscall names.
//!
//! The kernel walks the *directory* a path is relative to (cwd, dirfd or the
//! task root) at syscall entry, so the base is exact even for relative paths
//! and dirfds. The raw argument is then joined lexically (`.` and `..` are
//! folded). When the raw argument has directory components of its own, the
//! parent directory is canonicalised in userspace if it still exists, so a
//! delete through a symlinked directory reports the real location. The
//! pipeline keeps the directories it canonicalised in a [`DirCache`], so a
//! burst of calls in one directory costs one lookup, not three syscalls each.
use std::{
    borrow::Cow,
    collections::HashMap,
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::Path,
    time::{Duration, Instant},
};

use monitor_common::{field_flags, field_tag, header_flags, EventKind};

use crate::{
    kernel::events::{Field, KernelEvent},
    record::{text_fields, Action, IdentityGap, Op, PathIssue},
};

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
fn push_normalized(out: &mut Vec<u8>, path: &[u8]) {
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
fn canonical_dir(dir: &Path) -> Option<Vec<u8>> {
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
pub(crate) fn canonical_parent(path: &[u8]) -> Option<Vec<u8>> {
    canonical_parent_with(path, None)
}

fn canonical_parent_with(path: &[u8], cache: Option<&mut DirCache>) -> Option<Vec<u8>> {
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
    dirs: HashMap<Vec<u8>, (Vec<u8>, Instant, bool)>,
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
fn is_proc(p: &[u8]) -> bool {
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

fn resolve_raw_with(
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

fn issues_of(f: &Field, out: &mut Vec<PathIssue>) {
    for (flag, issue) in [
        (field_flags::TRUNCATED, PathIssue::Truncated),
        (field_flags::DEPTH_LIMIT, PathIssue::DepthLimit),
        (field_flags::DISCONNECTED, PathIssue::Disconnected),
        (field_flags::READ_FAILED, PathIssue::ReadFailed),
    ] {
        if f.flags & flag != 0 {
            PathIssue::add(out, issue);
        }
    }
}

/// When the kernel resolved a link into the caller's own `/proc` entry at
/// the start of path argument `raw_tag` (`LINK_REST`): the rest of the
/// argument, relative to the object the link named (its walk is the base),
/// without leading slashes; empty when the argument names that object.
///
/// A call that does not follow its final component (unlink, rename,
/// `lchown`, ...) given the link itself (`/proc/self/fd/3`) acts on the
/// `/proc` entry, not on what it names: `None` then; also when the object
/// is not connected to the tree (a pipe's fd).
pub fn link_rest(ev: &KernelEvent, raw_tag: u8) -> Option<&[u8]> {
    let rest_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LINK_REST
    } else {
        field_tag::LINK_REST2
    };
    let f = ev.field(rest_tag)?;
    let off = u64::from_ne_bytes(f.data[..].try_into().ok()?);
    let raw = ev.field(raw_tag)?;
    let rest = raw.data.get(usize::try_from(off).ok()?..)?;
    let start = rest.iter().position(|&b| b != b'/').unwrap_or(rest.len());
    let rest = &rest[start..];
    // An object with no place in the tree (a pipe, a socket, a deleted
    // file) names no path: the argument stays as given, under /proc.
    let base_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::BASE
    } else {
        field_tag::BASE2
    };
    if ev
        .field(base_tag)
        .is_none_or(|b| b.flags & field_flags::DISCONNECTED != 0)
    {
        return None;
    }
    (!rest.is_empty() || (raw_tag == field_tag::RAW_PATH && follows_final(ev))).then_some(rest)
}

/// The base field and the part of path argument `raw_tag` relative to it:
/// the rest after a `/proc` link the kernel resolved ([`link_rest`]) and
/// the walk of its object; else the whole argument and `base_tag` (or the
/// task root when the kernel walked a link the call does not follow).
pub fn arg_base(ev: &KernelEvent, raw_tag: u8, base_tag: u8) -> Option<(u8, &[u8])> {
    if let Some(rest) = link_rest(ev, raw_tag) {
        return Some((base_tag, rest));
    }
    let raw = &ev.field(raw_tag)?.data;
    let rest_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LINK_REST
    } else {
        field_tag::LINK_REST2
    };
    let base = if ev.field(rest_tag).is_some() {
        field_tag::ROOT
    } else {
        base_tag
    };
    Some((base, raw))
}

/// Whether the call of an entry record follows a symlink (or `/proc`
/// link) in the final component of its first path: opens without
/// `O_NOFOLLOW`, exec, and [`follows_final_link`]'s calls.
fn follows_final(ev: &KernelEvent) -> bool {
    use monitor_common::syscall_nr as n;
    const O_NOFOLLOW: u64 = 0o400000;
    let h = &ev.hdr;
    if ev.kind == EventKind::CompatSyscall {
        return false;
    }
    let flags = ev
        .field(field_tag::OPEN_HOW)
        .and_then(|f| <[u8; 8]>::try_from(&f.data[..]).ok())
        .map_or(h.flags, u64::from_ne_bytes);
    match h.syscall {
        n::OPEN | n::OPENAT | n::OPENAT2 | n::CREAT => flags & O_NOFOLLOW == 0,
        n::EXECVE | n::EXECVEAT => true,
        nr => follows_final_link(nr, flags),
    }
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

/// The identity in an identity field (`BASE_ID`, `FD_ID`, `OPENED_ID`):
/// (`st_dev`, `st_ino`) as `stat` reports them.
pub fn identity(f: &Field) -> Option<(u64, u64)> {
    if f.flags & field_flags::READ_FAILED != 0 {
        return None;
    }
    let b: &[u8; 16] = f.data[..].try_into().ok()?;
    let ino = u64::from_ne_bytes(b[..8].try_into().ok()?);
    let kdev = u64::from_ne_bytes(b[8..].try_into().ok()?);
    Some((user_dev(kdev), ino))
}

/// A dentry-cache lookup the kernel made at syscall entry
/// (`field_tag::LOOKUP`): identities as `stat` reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The object the path named (none when absent or unknown).
    pub object: Option<(u64, u64)>,
    /// The directory that holds the final component.
    pub dir: Option<(u64, u64)>,
    /// Why there is no object identity, when the object may exist.
    pub gap: Option<IdentityGap>,
    /// The lookup followed a symbolic link on the way (`LINKS_FOLLOWED`).
    pub links_followed: bool,
}

impl Lookup {
    pub fn decode(f: &Field) -> Option<Lookup> {
        use monitor_common::lookup as l;
        if f.flags & field_flags::READ_FAILED != 0 || f.data.len() != 40 {
            return None;
        }
        let w =
            |i: usize| u64::from_ne_bytes(f.data[8 * i..8 * i + 8].try_into().unwrap_or_default());
        let status = w(4);
        let id = |ino: u64, kdev: u64| (ino != 0).then(|| (user_dev(kdev), ino));
        let gap = match status & 0xff {
            l::FOUND | l::ABSENT => None,
            l::SYMLINK => Some(IdentityGap::Symlink),
            l::MOUNT => Some(IdentityGap::Mount),
            l::NOT_CACHED => Some(IdentityGap::NotCached),
            l::FS_NAMES => Some(IdentityGap::FsNames),
            l::DEPTH => Some(IdentityGap::Depth),
            l::OFF => Some(IdentityGap::Off),
            _ => Some(IdentityGap::Other),
        };
        Some(Lookup {
            object: if status & 0xff == l::FOUND {
                id(w(0), w(1))
            } else {
                None
            },
            dir: if status & l::DIR_KNOWN != 0 {
                id(w(2), w(3))
            } else {
                None
            },
            gap,
            links_followed: status & l::LINKS_FOLLOWED != 0,
        })
    }
}

/// A device number in the kernel's internal encoding (`MKDEV`: major << 20
/// | minor) as userspace's `st_dev` shows it.
pub fn user_dev(kdev: u64) -> u64 {
    libc::makedev((kdev >> 20) as u32, (kdev & 0xf_ffff) as u32)
}

/// Whether `rel` (a path relative to a directory) names an entry of that
/// very directory: one component, not `.` or `..`.
fn single_component(rel: &[u8]) -> bool {
    let end = rel.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let rel = &rel[..end];
    !rel.is_empty() && !rel.contains(&b'/') && rel != b"." && rel != b".."
}

/// The identities the kernel sent with an entry record: the object's
/// (`dev`, `ino`: the fd's file of an fd-based call, or the object a
/// `/proc` link path names itself) and the directory's that holds the
/// path's final component (`dir_dev`, `dir_ino`: the base the path is
/// relative to, when it is one component below it).
///
/// The kernel's dentry-cache lookups (`LOOKUP`, `LOOKUP2`) give the object
/// and its directory at any depth; the base-directory rule above is the
/// fallback when the lookup is off.
fn entry_identities(ev: &KernelEvent, a: &mut Action) {
    if let Some((dev, ino)) = ev.field(field_tag::FD_ID).and_then(identity) {
        (a.dev, a.ino) = (Some(dev), Some(ino));
        return;
    }
    if let Some(l) = ev.field(field_tag::LOOKUP2).and_then(Lookup::decode) {
        (a.dst_dev, a.dst_ino) = l.object.unzip();
        (a.dst_dir_dev, a.dst_dir_ino) = l.dir.unzip();
        a.dst_identity_gap = l.gap;
    }
    if let Some(l) = ev.field(field_tag::LOOKUP).and_then(Lookup::decode) {
        a.identity_gap = l.gap;
        if l.gap != Some(IdentityGap::Off) {
            (a.dev, a.ino) = l.object.unzip();
            (a.dir_dev, a.dir_ino) = l.dir.unzip();
            return;
        }
    }
    let Some(base) = ev.field(field_tag::BASE_ID).and_then(identity) else {
        return;
    };
    let Some(raw) = ev
        .field(field_tag::RAW_PATH)
        .filter(|f| f.flags & field_flags::READ_FAILED == 0)
    else {
        return;
    };
    let rel = match link_rest(ev, field_tag::RAW_PATH) {
        Some([]) => {
            (a.dev, a.ino) = (Some(base.0), Some(base.1));
            return;
        }
        Some(rest) => rest,
        // An absolute path is relative to the root the base walked.
        None => raw.data.strip_prefix(b"/").unwrap_or(&raw.data),
    };
    if single_component(rel) {
        (a.dir_dev, a.dir_ino) = (Some(base.0), Some(base.1));
    }
}

/// Whether `path`, resolved by abm after the call, no longer leads to the
/// directory the kernel's lookup found at the call (`dir_dev`/`dir_ino`):
/// a symlinked or renamed directory on the way changed in between (`rm
/// A/f; ln -sfn /etc A`). Looked at only for a path of several components
/// (one component is resolved by the kernel from its base), and only when
/// the directory can still be read.
fn stale_dir(ev: &KernelEvent, a: &Action) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Some(dev), Some(ino), Some(path)) = (a.dir_dev, a.dir_ino, a.path.as_deref()) else {
        return false;
    };
    let several = ev
        .field(field_tag::RAW_PATH)
        .is_some_and(|f| !single_component(&f.data));
    if !several {
        return false;
    }
    let Some(parent) = Path::new(path).parent() else {
        return false;
    };
    std::fs::metadata(parent).is_ok_and(|m| (m.dev(), m.ino()) != (dev, ino))
}

/// Whether a call given a path follows a symlink in its final component
/// without returning an fd (so the kernel names no file it reached):
/// truncate, chmod, chown, the utimes family and setxattr/removexattr
/// unless told not to (`AT_SYMLINK_NOFOLLOW`, the `l*` variants), and
/// linkat with `AT_SYMLINK_FOLLOW`.
pub fn follows_final_link(nr: u32, flags: u64) -> bool {
    use monitor_common::{
        at_flags::{AT_SYMLINK_FOLLOW, AT_SYMLINK_NOFOLLOW},
        syscall_nr as n,
    };
    match nr {
        n::TRUNCATE | n::CHMOD | n::FCHMODAT | n::CHOWN | n::UTIME | n::UTIMES | n::FUTIMESAT => {
            true
        }
        n::SETXATTR | n::REMOVEXATTR => true,
        n::FCHMODAT2 | n::FCHOWNAT | n::UTIMENSAT => flags & AT_SYMLINK_NOFOLLOW == 0,
        n::LINKAT => flags & AT_SYMLINK_FOLLOW != 0,
        _ => false,
    }
}

/// For a call that followed a final symlink ([`follows_final_link`]): when
/// `path` is a symlink now, the file it leads to (resolved as the kernel
/// would, from the host root), else `None`. Read after the call, so the
/// record says so (`symlink_resolved_late`).
fn late_link_target(path: &[u8]) -> Option<Vec<u8>> {
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

/// What the kernel's exit check of a removal or move says of the named
/// object (`CONFIRM`, see `monitor_common::confirm`): contradicted for
/// either path is `argument_raced`, no conclusion `unconfirmed`.
fn apply_confirm(a: &mut Action, fields: &[Field]) {
    use monitor_common::confirm::{CONTRADICTED, SHIFT, UNKNOWN};
    let Some(v) = fields
        .iter()
        .find(|f| f.tag == field_tag::CONFIRM)
        .and_then(|f| f.data.get(..8))
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
    else {
        return;
    };
    let codes = [v & 0xf, (v >> SHIFT) & 0xf];
    if codes.contains(&CONTRADICTED) {
        PathIssue::add(&mut a.path_issues, PathIssue::ArgumentRaced);
    } else if codes.contains(&UNKNOWN) {
        PathIssue::add(&mut a.path_issues, PathIssue::Unconfirmed);
    }
}

/// Completes an action with what its result record carries: for a
/// successful open, the file the new fd names (`OPENED_PATH`, walked by
/// the kernel at the call's exit: the file really opened, through final
/// symlinks, `/proc/self/fd/N` reopens and handles) becomes `path`, and
/// its identity `dev`/`ino`, and whether the open created it
/// (`created_by_call`). A walk in another mount namespace keeps the
/// entry's (mapped) path and gives the identity only.
pub fn apply_result(a: &mut Action, fields: &[Field]) {
    apply_confirm(a, fields);
    let Some(opened) = fields.iter().find(|f| f.tag == field_tag::OPENED_PATH) else {
        return;
    };
    a.created_by_call = fields.iter().any(|f| f.tag == field_tag::OPENED_CREATED);
    if let Some((dev, ino)) = fields
        .iter()
        .find(|f| f.tag == field_tag::OPENED_ID)
        .and_then(identity)
    {
        (a.dev, a.ino) = (Some(dev), Some(ino));
    }
    let foreign = fields.iter().any(|f| f.tag == field_tag::MNT_NS);
    let inexact = field_flags::READ_FAILED
        | field_flags::DISCONNECTED
        | field_flags::DEPTH_LIMIT
        | field_flags::TRUNCATED;
    if foreign || opened.flags & inexact != 0 {
        return;
    }
    let host = components_to_path(&opened.data);
    // The task root, from the entry's host and container views.
    let root = match (&a.path, &a.container_path) {
        (Some(p), Some(c)) if c == "/" => Some(p.as_bytes().to_vec()),
        (Some(p), Some(c)) => p.strip_suffix(c.as_str()).map(|r| r.as_bytes().to_vec()),
        _ => None,
    };
    if let Some(root) = root {
        a.container_path = strip_root(&host, &root).map(|c| text_fields(&c).0);
    }
    if a.path.as_deref().map(str::as_bytes) != Some(&host[..]) {
        // Another file than the argument named (a symlink's target): the
        // directory read at entry held the link, not this file.
        (a.dir_dev, a.dir_ino) = (None, None);
    }
    set_text(&host, &mut a.path, &mut a.path_b64);
    a.path_provisional = false;
    // What made the entry's path inexact no longer applies to it.
    a.path_issues.retain(|i| {
        !matches!(
            i,
            PathIssue::ProcMagicLink
                | PathIssue::NoBase
                | PathIssue::Truncated
                | PathIssue::ByHandle
                | PathIssue::SymlinkResolvedLate
        )
    });
}

/// Result of resolving one path argument.
pub struct Resolved {
    pub host: Vec<u8>,
    pub container: Option<Vec<u8>>,
    pub raw: Option<Vec<u8>>,
    /// `host` is the lexical join, left for the open's result to name
    /// ([`Action::path_provisional`]).
    pub provisional: bool,
}

/// Resolves the path made of `raw_tag` + `base_tag` (or `FD_PATH`).
pub fn resolve_path(
    ev: &KernelEvent,
    raw_tag: u8,
    base_tag: u8,
    root: &[u8],
    issues: &mut Vec<PathIssue>,
    cache: Option<&mut DirCache>,
) -> Option<Resolved> {
    if let Some(fd) = ev
        .field(field_tag::FD_PATH)
        .filter(|_| raw_tag == field_tag::RAW_PATH)
    {
        issues_of(fd, issues);
        let host = components_to_path(&fd.data);
        let container = strip_root(&host, root);
        return Some(Resolved {
            host,
            container,
            raw: None,
            provisional: false,
        });
    }
    let raw = ev.field(raw_tag)?;
    issues_of(raw, issues);
    if raw.flags & field_flags::READ_FAILED != 0 {
        // The argument could not be read at syscall entry (e.g. its page was
        // not resident): the path is unknown, never guessed.
        return None;
    }
    if let Some(rest) = link_rest(ev, raw_tag) {
        // The kernel resolved the caller's `/proc` link at syscall entry:
        // the base is the object it named, the rest is relative to it.
        let b = ev.field(base_tag)?;
        issues_of(b, issues);
        if b.flags & field_flags::READ_FAILED != 0 {
            return None;
        }
        let base_path = components_to_path(&b.data);
        let host = if rest.is_empty() {
            base_path
        } else {
            resolve_raw_with(&base_path, rest, root == b"/", cache)
        };
        return Some(Resolved {
            container: strip_root(&host, root),
            host,
            raw: Some(raw.data.to_vec()),
            provisional: false,
        });
    }
    let base = ev.field(base_tag);
    let base_path = match base {
        // An absolute path is relative to the task root, which the kernel
        // walks for every record (this also covers an argument that was only
        // readable at syscall exit, when the entry walked the cwd instead).
        _ if raw.data.starts_with(b"/") && ev.field(field_tag::ROOT).is_some() => root.to_vec(),
        Some(b) => {
            issues_of(b, issues);
            components_to_path(&b.data)
        }
        None => {
            issues.push(PathIssue::NoBase);
            b"/".to_vec()
        }
    };
    // `/proc/self` and `/proc/thread-self` name the caller's entries, not
    // abm's: resolved through /proc/<tid>/ while the thread lives; if it is
    // gone the path stays under /proc and says so.
    let magic = (root == b"/")
        .then(|| caller_proc_path(&raw.data, ev.hdr.tid))
        .flatten();
    // A successful open's result record names the file it opened (its
    // directory canonical, walked by the kernel at exit): the directory of
    // its argument is canonicalised only if the result does not name it
    // ([`settle_path`]), which saves the open and readlink per directory
    // on the trace's path. Not with `..` in the argument, which lexical
    // folding would get wrong through a symlink, nor for a path that is not
    // UTF-8 (the action's text of it is not the path).
    let provisional = cache.is_some()
        && magic.is_none()
        && root == b"/"
        && raw_tag == field_tag::RAW_PATH
        && is_open(ev)
        && ev.field(field_tag::MNT_NS).is_none()
        && raw.data.contains(&b'/')
        && !has_dot_dot(&raw.data)
        && std::str::from_utf8(&raw.data).is_ok()
        && std::str::from_utf8(&base_path).is_ok();
    let host = match &magic {
        Some(p) => resolve_raw_with(b"/", p, true, cache),
        None if provisional || (root == b"/" && walked_plain(ev, raw_tag)) => {
            join(&base_path, &raw.data)
        }
        None => resolve_raw_with(&base_path, &raw.data, root == b"/", cache),
    };
    if names_proc_link(&host) {
        // Still through a process's `/proc` link (the caller's, gone by
        // now, or another process's): the file it named is not known.
        PathIssue::add(issues, PathIssue::ProcMagicLink);
    }
    let container = strip_root(&host, root);
    Some(Resolved {
        host,
        container,
        raw: Some(raw.data.to_vec()),
        provisional,
    })
}

/// Whether the entry record is of an open (`open`, `openat`, `openat2`,
/// `creat`, or their ia32 twins, recorded under these numbers), whose
/// result record names the file.
fn is_open(ev: &KernelEvent) -> bool {
    use monitor_common::syscall_nr as n;
    ev.kind != EventKind::CompatSyscall
        && matches!(ev.hdr.syscall, n::OPEN | n::OPENAT | n::OPENAT2 | n::CREAT)
}

/// Whether the kernel's dentry-cache lookup of argument `raw_tag` at the
/// call went through every component from the base (status found or
/// absent) without following a symbolic link (`LINKS_FOLLOWED`) or
/// leaving a mount by `..` (that status is `OTHER`): the lexical join of
/// the argument to its base is then the canonical path, as it was at the
/// call, and nothing needs to be read from the file system.
fn walked_plain(ev: &KernelEvent, raw_tag: u8) -> bool {
    let tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LOOKUP
    } else {
        field_tag::LOOKUP2
    };
    ev.field(field_tag::MNT_NS).is_none()
        && ev
            .field(tag)
            .and_then(Lookup::decode)
            .is_some_and(|l| l.gap.is_none() && !l.links_followed)
}

/// Whether a path has a `..` component.
fn has_dot_dot(p: &[u8]) -> bool {
    p.split(|&b| b == b'/').any(|c| c == b"..")
}

/// Canonicalises the directory of an action's provisional path
/// ([`Action::path_provisional`]): the open's result did not name the file.
pub fn settle_path(a: &mut Action, cache: Option<&mut DirCache>) {
    if !std::mem::take(&mut a.path_provisional) {
        return;
    }
    let Some(p) = a.path.as_deref() else {
        return;
    };
    if let Some(real) = canonical_parent_with(p.as_bytes(), cache) {
        set_text(&real, &mut a.path, &mut a.path_b64);
    }
}

/// The name of a traced syscall (`monitor_common::SYSCALLS`), or "".
pub fn syscall_name(nr: u32) -> &'static str {
    monitor_common::syscall(nr).map_or("", |s| s.name)
}

pub fn errno_name(err: i64) -> String {
    let e = (-err) as i32;
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EDQUOT => "EDQUOT",
        libc::ENXIO => "ENXIO",
        libc::ECHILD => "ECHILD",
        libc::ENOTTY => "ENOTTY",
        libc::ESPIPE => "ESPIPE",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::EDEADLK => "EDEADLK",
        libc::ENOLCK => "ENOLCK",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ESTALE => "ESTALE",
        libc::ECANCELED => "ECANCELED",
        libc::EOWNERDEAD => "EOWNERDEAD",
        libc::EKEYREJECTED => "EKEYREJECTED",
        _ => return format!("E{e}"),
    };
    name.to_owned()
}

/// Symbolic names of the set flags of an operation (shared by every backend).
pub fn flag_names(op: Op, syscall: &str, flags: u64) -> Vec<Cow<'static, str>> {
    let table: &[(u64, &str)] = match op {
        Op::Unlink | Op::Rmdir => &[(0x200, "AT_REMOVEDIR")],
        Op::Rename => &[
            (1, "RENAME_NOREPLACE"),
            (2, "RENAME_EXCHANGE"),
            (4, "RENAME_WHITEOUT"),
        ],
        Op::Truncate | Op::Write | Op::Read if !syscall.contains("truncate") => &[
            (0o1, "O_WRONLY"),
            (0o2, "O_RDWR"),
            (0o100, "O_CREAT"),
            (0o200, "O_EXCL"),
            (0o1000, "O_TRUNC"),
            (0o2000, "O_APPEND"),
            (0o200000, "O_DIRECTORY"),
            (0o400000, "O_NOFOLLOW"),
            (0o2000000, "O_CLOEXEC"),
            (0o20000000, "O_TMPFILE"),
        ],
        Op::Chown | Op::Chmod | Op::Exec | Op::Utimes => {
            &[(0x100, "AT_SYMLINK_NOFOLLOW"), (0x1000, "AT_EMPTY_PATH")]
        }
        Op::Link => &[(0x400, "AT_SYMLINK_FOLLOW"), (0x1000, "AT_EMPTY_PATH")],
        Op::Xattr => &[(1, "XATTR_CREATE"), (2, "XATTR_REPLACE")],
        // FS_IOC_SETFLAGS bits (include/uapi/linux/fs.h); FSSETXATTR's
        // xflags are named by `setflag_names`.
        Op::Setflags => &[
            (0x10, "FS_IMMUTABLE_FL"),
            (0x20, "FS_APPEND_FL"),
            (0x40, "FS_NODUMP_FL"),
            (0x80, "FS_NOATIME_FL"),
            (0x800000, "FS_NOCOW_FL"),
        ],
        _ => &[],
    };
    table
        .iter()
        .filter(|(bit, _)| flags & *bit == *bit && *bit != 0)
        .map(|(_, n)| Cow::Borrowed(*n))
        .collect()
}

fn set_text(bytes: &[u8], s: &mut Option<String>, b64: &mut Option<String>) {
    let (t, b) = text_fields(bytes);
    *s = Some(t);
    *b64 = b;
}

/// Inode flag names of an `ioctl` record: `FS_IOC_FSSETXATTR` (request in
/// the header's `mode`) carries `fsx_xflags`, whose bits differ.
fn setflag_names(request: u32, flags: u64) -> Vec<Cow<'static, str>> {
    if request == monitor_common::ioctl_cmd::FS_IOC_FSSETXATTR {
        [(0x8u64, "FS_XFLAG_IMMUTABLE"), (0x10, "FS_XFLAG_APPEND")]
            .iter()
            .filter(|(b, _)| flags & b != 0)
            .map(|(_, n)| Cow::Borrowed(*n))
            .collect()
    } else {
        flag_names(Op::Setflags, "ioctl", flags)
    }
}

/// Builds the action record of an enter (or lifecycle) event. Process
/// fields that need the process table (`exe`) and the result are filled by
/// the caller.
pub fn action_from_event(ev: &KernelEvent) -> Action {
    action_from_event_with(ev, None)
}

/// [`action_from_event`], canonicalising directories through `cache`.
pub fn action_from_event_with(ev: &KernelEvent, mut cache: Option<&mut DirCache>) -> Action {
    let h = &ev.hdr;
    let mut op = Op::from_kind(ev.kind);
    let compat = h.hflags & header_flags::COMPAT != 0;
    let syscall: Cow<'static, str> = if compat {
        // An ia32 call: a 32-bit exec keeps its own number in the header;
        // every other one is recorded as its x86_64 twin, with its own
        // number in `COMPAT_NR`.
        let ia32 = ev
            .field(field_tag::COMPAT_NR)
            .and_then(|f| <[u8; 8]>::try_from(&f.data[..]).ok())
            .map_or(h.syscall, |b| u64::from_ne_bytes(b) as u32);
        format!(
            "ia32:{}",
            monitor_common::compat_syscall(ia32).unwrap_or("unknown")
        )
        .into()
    } else {
        syscall_name(h.syscall).into()
    };
    let mut a = Action {
        op,
        syscall: syscall.clone(),
        ktime_ns: h.ktime_ns,
        pid: h.pid,
        tid: h.tid,
        ppid: h.ppid,
        uid: h.uid,
        gid: h.gid,
        comm: ev.comm(),
        cgroup_id: h.cgroup_id,
        ..Default::default()
    };
    let root = ev
        .field(field_tag::ROOT)
        .map(|f| components_to_path(&f.data))
        .unwrap_or_else(|| b"/".to_vec());
    let mut issues = Vec::new();
    if let Some(r) = resolve_path(
        ev,
        field_tag::RAW_PATH,
        field_tag::BASE,
        &root,
        &mut issues,
        cache.as_deref_mut(),
    ) {
        set_text(&r.host, &mut a.path, &mut a.path_b64);
        a.path_provisional = r.provisional;
        if let Some(c) = r.container {
            a.container_path = Some(text_fields(&c).0);
        }
        if let Some(raw) = r.raw {
            set_text(&raw, &mut a.raw_path, &mut a.raw_path_b64);
        }
    }
    if ev.field(field_tag::RAW_PATH2).is_some() {
        if let Some(r) = resolve_path(
            ev,
            field_tag::RAW_PATH2,
            field_tag::BASE2,
            &root,
            &mut issues,
            cache,
        ) {
            set_text(&r.host, &mut a.path2, &mut a.path2_b64);
            if let Some(c) = r.container {
                a.container_path2 = Some(text_fields(&c).0);
            }
            if let Some(raw) = r.raw {
                set_text(&raw, &mut a.raw_path2, &mut a.raw_path2_b64);
            }
        }
    }
    if h.hflags & header_flags::PAYLOAD_TRUNCATED != 0 {
        issues.push(PathIssue::PayloadTruncated);
    }
    // A symlink's target is a string relative to the new link's directory,
    // not to the caller's working directory.
    if op == Some(Op::Symlink) {
        if let (Some(raw), Some(link)) = (&a.raw_path, &a.path2) {
            if !raw.starts_with('/') {
                let dir = Path::new(link).parent().unwrap_or(Path::new("/"));
                let joined = join(dir.as_os_str().as_bytes(), raw.as_bytes());
                set_text(&joined, &mut a.path, &mut a.path_b64);
            }
        }
    }
    let mut flags = h.flags;
    if let Some(f) = ev.field(field_tag::OPEN_HOW) {
        // openat2 flags read at exit (or still unreadable: READ_FAILED).
        issues_of(f, &mut issues);
        if let Ok(b) = <[u8; 8]>::try_from(&f.data[..]) {
            flags = u64::from_ne_bytes(b);
            op = Some(if flags & 0o1000 != 0 {
                Op::Truncate
            } else {
                Op::Write
            });
            a.op = op;
        }
    } else if h.hflags & header_flags::FLAGS_UNREAD != 0 {
        issues.push(PathIssue::FlagsUnread);
    }
    // A 32-bit exec keeps its ia32 number: nothing below decodes it.
    let other_table = ev.kind == EventKind::CompatSyscall;
    if h.syscall == monitor_common::syscall_nr::OPEN_BY_HANDLE_AT && !other_table {
        // The file is named by a handle: its path is not known (until the
        // result record names the file opened).
        issues.push(PathIssue::ByHandle);
    }
    // The first path was resolved by abm after the call, in its own view
    // of the file system, which is the caller's on the host root and mount
    // namespace: not walked plainly by the kernel at the call, which makes
    // it the call's own path, with nothing that could have changed since.
    let resolved_late = !other_table
        && root == b"/"
        && ev.field(field_tag::MNT_NS).is_none()
        && !walked_plain(ev, field_tag::RAW_PATH);
    if !other_table {
        entry_identities(ev, &mut a);
        if resolved_late && stale_dir(ev, &a) {
            PathIssue::add(&mut issues, PathIssue::PathChanged);
        }
    }
    // A call that followed a final symlink with no fd to name what it
    // reached: the target, read now, and said so (the kernel's lookup
    // follows the final component for these calls, so a plain walk met
    // no symlink).
    if resolved_late
        && ev.field(field_tag::FD_PATH).is_none()
        && follows_final_link(h.syscall, flags)
    {
        if let Some(target) = a
            .path
            .as_deref()
            .and_then(|p| late_link_target(p.as_bytes()))
        {
            set_text(&target, &mut a.path, &mut a.path_b64);
            PathIssue::add(&mut issues, PathIssue::SymlinkResolvedLate);
            // The identities read at entry were the link's directory's.
            (a.dir_dev, a.dir_ino) = (None, None);
        }
    }
    if let Some(x) = ev.field(field_tag::XATTR_NAME) {
        issues_of(x, &mut issues);
        a.xattr = Some(text_fields(&x.data).0);
    }
    a.path_issues = issues;
    match ev.kind {
        EventKind::Fork => {
            // `result` of a fork record is the child's pid.
            a.result = Some(h.result);
        }
        // `result` of an exit record is the wait status (exit code << 8,
        // or the killing signal).
        EventKind::Exit => a.result = Some(h.result),
        EventKind::IoUringSetup => a.result = Some(0),
        // `result` of a sensitive read is the new fd.
        EventKind::Read => a.result = Some(h.result),
        _ => {}
    }
    if let Some(op) = op {
        if matches!(
            op,
            Op::Unlink
                | Op::Rmdir
                | Op::Rename
                | Op::Truncate
                | Op::Write
                | Op::Chmod
                | Op::Chown
                | Op::Exec
                | Op::Link
                | Op::Symlink
                | Op::Utimes
                | Op::Xattr
                | Op::Setflags
                | Op::CompatSyscall
                | Op::Read
        ) {
            a.flags = flags;
            a.flag_names = if op == Op::Setflags {
                setflag_names(h.mode, flags)
            } else {
                flag_names(op, &syscall, flags)
            };
            if ev.kind != EventKind::Fork {
                a.fd = Some(h.fd);
            }
        }
        let has_mode =
            op == Op::Chmod || (matches!(op, Op::Truncate | Op::Write) && flags & 0o100 != 0);
        if h.mode != u32::MAX && has_mode {
            a.mode = Some(h.mode & 0o7777);
        }
        if op == Op::Chown {
            a.owner_uid = (h.owner_uid != u32::MAX).then_some(h.owner_uid);
            a.owner_gid = (h.owner_gid != u32::MAX).then_some(h.owner_gid);
        }
        if op == Op::Exec {
            let mut argv = Vec::new();
            let mut argv_b64 = Vec::new();
            let mut any_b64 = false;
            let mut truncated = h.hflags & header_flags::ARGV_TRUNCATED != 0;
            for f in ev.fields(field_tag::ARG) {
                let (s, b) = text_fields(&f.data);
                truncated |= f.flags & field_flags::TRUNCATED != 0;
                any_b64 |= b.is_some();
                argv_b64.push(b.unwrap_or_else(|| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.encode(&f.data)
                }));
                argv.push(s);
            }
            a.argv = Some(argv);
            a.argv_b64 = any_b64.then_some(argv_b64);
            a.argv_truncated = truncated;
            if let Some(c) = ev.field(field_tag::CWD) {
                a.cwd = Some(text_fields(&components_to_path(&c.data)).0);
            }
            a.env = target_env(ev);
            a.env_partial = h.hflags & header_flags::ENV_PARTIAL != 0;
        }
    }
    a
}

/// The exec's target variables: the kernel copied every entry whose name
/// starts like one; only the exact names count.
fn target_env(ev: &KernelEvent) -> Option<std::collections::BTreeMap<String, String>> {
    let mut env = std::collections::BTreeMap::new();
    for f in ev.fields(field_tag::ENV) {
        let text = String::from_utf8_lossy(&f.data);
        let Some((name, value)) = text.split_once('=') else {
            continue;
        };
        if monitor_common::target_env::NAMES.contains(&name) {
            env.insert(name.to_owned(), value.to_owned());
        }
    }
    (!env.is_empty()).then_some(env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::events::{empty_header, encode, Field};

    #[test]
    fn components_reverse_into_absolute_path() {
        assert_eq!(components_to_path(b"c\0b\0a\0"), b"/a/b/c");
        assert_eq!(components_to_path(b""), b"/");
    }

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(normalize(b"/a/./b/../c//d/"), b"/a/c/d");
        assert_eq!(normalize(b"/../.."), b"/");
        assert_eq!(join(b"/work/ws", b"../x/./y"), b"/work/x/y");
        assert_eq!(join(b"/", b"/etc/passwd"), b"/etc/passwd");
        assert_eq!(join(b"/srv/root", b"/etc/passwd"), b"/srv/root/etc/passwd");
        assert_eq!(join(b"/a", b"../../.."), b"/");
        assert_eq!(join(b"/", b""), b"/");
        assert_eq!(join(b"/a/b/", b"c/"), b"/a/b/c");
        // Joining is normalising the two with a slash between them.
        let parts: [&[u8]; 9] = [
            b"/",
            b"/w",
            b"/w/",
            b"/w/x/..",
            b"..",
            b"../..",
            b"./a//b",
            b"a/../../c",
            b"",
        ];
        for base in parts {
            for raw in parts {
                let whole = [base, b"/", raw].concat();
                assert_eq!(join(base, raw), normalize(&whole), "{base:?} + {raw:?}");
            }
        }
    }

    #[test]
    fn strip_root_gives_container_view() {
        assert_eq!(
            strip_root(b"/srv/c1/etc/x", b"/srv/c1"),
            Some(b"/etc/x".to_vec())
        );
        assert_eq!(strip_root(b"/srv/c10/x", b"/srv/c1"), None);
        assert_eq!(strip_root(b"/etc/x", b"/"), None);
    }

    #[test]
    fn unlinkat_relative_to_dirfd_resolves_against_dirfd_base() {
        let mut h = empty_header(EventKind::Rmdir);
        h.syscall = 263;
        h.flags = 0x200;
        h.fd = 3;
        h.pid = 7;
        h.comm[..2].copy_from_slice(b"rm");
        let ev = KernelEvent::decode(&encode(
            &h,
            &[
                Field {
                    tag: field_tag::RAW_PATH,
                    flags: 0,
                    data: b"sub".to_vec().into(),
                },
                Field {
                    tag: field_tag::BASE,
                    flags: 0,
                    data: b"tree\0x\0tmp\0".to_vec().into(),
                },
                Field {
                    tag: field_tag::ROOT,
                    flags: 0,
                    data: vec![].into(),
                },
            ],
        ))
        .unwrap();
        let a = action_from_event(&ev);
        assert_eq!(a.op, Some(Op::Rmdir));
        assert_eq!(a.syscall, "unlinkat");
        assert_eq!(a.path.as_deref(), Some("/tmp/x/tree/sub"));
        assert_eq!(a.raw_path.as_deref(), Some("sub"));
        assert_eq!(a.flag_names, vec!["AT_REMOVEDIR"]);
        assert_eq!(a.fd, Some(3));
        assert_eq!(a.container_path, None);
        assert!(a.path_issues.is_empty());
    }

    #[test]
    fn container_process_gets_host_and_container_paths() {
        let mut h = empty_header(EventKind::Unlink);
        h.syscall = 87;
        let ev = KernelEvent::decode(&encode(
            &h,
            &[
                Field {
                    tag: field_tag::RAW_PATH,
                    flags: 0,
                    data: b"/data/f".to_vec().into(),
                },
                Field {
                    tag: field_tag::BASE,
                    flags: 0,
                    data: b"c1\0ctr\0".to_vec().into(),
                },
                Field {
                    tag: field_tag::ROOT,
                    flags: 0,
                    data: b"c1\0ctr\0".to_vec().into(),
                },
            ],
        ))
        .unwrap();
        let a = action_from_event(&ev);
        assert_eq!(a.path.as_deref(), Some("/ctr/c1/data/f"));
        assert_eq!(a.container_path.as_deref(), Some("/data/f"));
    }

    #[test]
    fn exec_argv_non_utf8_and_truncation_flags() {
        let mut h = empty_header(EventKind::Exec);
        h.syscall = 59;
        h.hflags = header_flags::ARGV_TRUNCATED;
        let ev = KernelEvent::decode(&encode(
            &h,
            &[
                Field {
                    tag: field_tag::RAW_PATH,
                    flags: 0,
                    data: b"/usr/bin/kubectl".to_vec().into(),
                },
                Field {
                    tag: field_tag::BASE,
                    flags: 0,
                    data: vec![].into(),
                },
                Field {
                    tag: field_tag::ARG,
                    flags: 0,
                    data: b"kubectl".to_vec().into(),
                },
                Field {
                    tag: field_tag::ARG,
                    flags: 0,
                    data: b"delete".to_vec().into(),
                },
                Field {
                    tag: field_tag::ARG,
                    flags: 0,
                    data: b"ns\xff".to_vec().into(),
                },
                Field {
                    tag: field_tag::CWD,
                    flags: 0,
                    data: b"w\0".to_vec().into(),
                },
                Field {
                    tag: field_tag::ENV,
                    flags: 0,
                    data: b"KUBECONFIG=/w/prod.yaml".to_vec().into(),
                },
                // Same 8-byte prefix, another name: the kernel copies it,
                // userspace drops it.
                Field {
                    tag: field_tag::ENV,
                    flags: 0,
                    data: b"KUBECONFIGX=/other".to_vec().into(),
                },
            ],
        ))
        .unwrap();
        let a = action_from_event(&ev);
        assert_eq!(
            a.env.as_ref().unwrap().iter().collect::<Vec<_>>(),
            [(&"KUBECONFIG".to_string(), &"/w/prod.yaml".to_string())]
        );
        assert!(!a.env_partial);
        assert_eq!(
            a.argv.as_ref().unwrap()[..2],
            ["kubectl".to_string(), "delete".to_string()]
        );
        assert_eq!(a.argv_b64.as_ref().unwrap()[2], "bnP/");
        assert!(a.argv_truncated);
        assert_eq!(a.cwd.as_deref(), Some("/w"));
        assert_eq!(a.program(), Some("kubectl"));
    }

    #[test]
    fn walk_problems_become_path_issues() {
        let mut h = empty_header(EventKind::Unlink);
        h.syscall = 263;
        let ev = KernelEvent::decode(&encode(
            &h,
            &[
                Field {
                    tag: field_tag::RAW_PATH,
                    flags: 0,
                    data: b"f".to_vec().into(),
                },
                Field {
                    tag: field_tag::BASE,
                    flags: field_flags::DEPTH_LIMIT,
                    data: b"deep\0".to_vec().into(),
                },
            ],
        ))
        .unwrap();
        assert_eq!(
            action_from_event(&ev).path_issues,
            vec![PathIssue::DepthLimit]
        );
    }

    #[test]
    fn unreadable_argument_gives_no_path_not_the_base() {
        let mut h = empty_header(EventKind::Write);
        h.syscall = 257;
        let ev = KernelEvent::decode(&encode(
            &h,
            &[
                Field {
                    tag: field_tag::RAW_PATH,
                    flags: field_flags::READ_FAILED,
                    data: vec![].into(),
                },
                Field {
                    tag: field_tag::BASE,
                    flags: 0,
                    data: b"ws\0".to_vec().into(),
                },
            ],
        ))
        .unwrap();
        let a = action_from_event(&ev);
        assert_eq!(a.path, None);
        assert_eq!(a.path_issues, vec![PathIssue::ReadFailed]);
    }

    #[test]
    fn errno_and_syscall_names() {
        assert_eq!(errno_name(-2), "ENOENT");
        assert_eq!(errno_name(-1), "EPERM");
        assert_eq!(syscall_name(316), "renameat2");
    }

    fn exit_record(nr: u32) -> KernelEvent {
        let mut h = empty_header(EventKind::SyscallExit);
        h.syscall = nr;
        KernelEvent::decode(&encode(&h, &[])).unwrap()
    }

    #[test]
    fn name_changing_records_drop_the_directory_cache() {
        use monitor_common::syscall_nr as nr;
        let entry = |k| KernelEvent::decode(&encode(&empty_header(k), &[])).unwrap();
        for k in [
            EventKind::Rename,
            EventKind::Rmdir,
            EventKind::Unlink,
            EventKind::Symlink,
            EventKind::CompatSyscall,
        ] {
            assert!(DirCache::invalidates(&entry(k)), "{k:?}");
        }
        for k in [EventKind::Write, EventKind::Truncate, EventKind::Exec] {
            assert!(!DirCache::invalidates(&entry(k)), "{k:?}");
        }
        assert!(DirCache::invalidates(&exit_record(nr::RENAMEAT2)));
        assert!(DirCache::invalidates(&exit_record(nr::UNLINKAT)));
        assert!(DirCache::invalidates(&exit_record(nr::SYMLINKAT)));
        assert!(!DirCache::invalidates(&exit_record(nr::OPENAT)));
    }

    /// A cached directory resolves like an uncached one; once cleared (as
    /// after a rename or symlink record), a symlink swapped to another
    /// target resolves to the new one. Paths under /proc and missing
    /// directories are never cached.
    #[test]
    fn directory_cache_resolves_like_the_file_system() {
        let d = std::env::temp_dir().join(format!("abm-dircache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::create_dir_all(d.join("b")).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
        let base = d.as_os_str().as_bytes();
        let real = |sub: &str| {
            let mut p = std::fs::canonicalize(d.join(sub))
                .unwrap()
                .into_os_string()
                .into_vec();
            p.extend_from_slice(b"/f");
            p
        };
        let mut cache = DirCache::default();
        let first = resolve_raw_with(base, b"link/f", true, Some(&mut cache));
        assert_eq!(first, real("a"));
        assert_eq!(first, resolve_raw(base, b"link/f", true));
        assert_eq!(cache.dirs.len(), 1);
        // Swap the link: the cache still answers within its TTL, as the
        // file system did when the entry was made ...
        std::fs::remove_file(d.join("link")).unwrap();
        std::os::unix::fs::symlink(d.join("b"), d.join("link")).unwrap();
        // ... and after a name-changing record clears it, the new target.
        cache.clear();
        assert_eq!(
            resolve_raw_with(base, b"link/f", true, Some(&mut cache)),
            real("b")
        );
        // A directory that does not exist: lexical, and not cached.
        cache.clear();
        let gone = resolve_raw_with(base, b"nope/../x/f", true, Some(&mut cache));
        assert_eq!(gone, join(base, b"nope/../x/f"));
        assert!(cache.dirs.is_empty());
        // /proc is per process: never cached.
        let _ = resolve_raw_with(b"/", b"/proc/self/fd/0", true, Some(&mut cache));
        assert!(cache.dirs.is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// An unlink keeps the directories whose path is already canonical
    /// and forgets those reached through a symbolic link.
    #[test]
    fn unlinks_forget_only_indirect_directories() {
        use monitor_common::syscall_nr as nr;
        let entry = |k| KernelEvent::decode(&encode(&empty_header(k), &[])).unwrap();
        assert!(DirCache::only_unlinks(&entry(EventKind::Unlink)));
        assert!(DirCache::only_unlinks(&exit_record(nr::UNLINKAT)));
        for k in [EventKind::Rename, EventKind::Rmdir, EventKind::Symlink] {
            assert!(!DirCache::only_unlinks(&entry(k)), "{k:?}");
        }
        assert!(!DirCache::only_unlinks(&exit_record(nr::RENAMEAT2)));

        let d = std::env::temp_dir().join(format!("abm-dircache-unlink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
        let d = std::fs::canonicalize(&d).unwrap();
        let base = d.as_os_str().as_bytes();
        let mut cache = DirCache::default();
        let direct = resolve_raw_with(base, b"a/f", true, Some(&mut cache));
        let via_link = resolve_raw_with(base, b"link/f", true, Some(&mut cache));
        assert_eq!(direct, via_link);
        assert_eq!(cache.dirs.len(), 2);
        cache.forget_indirect();
        assert_eq!(cache.dirs.len(), 1);
        assert!(cache.dirs.contains_key(d.join("a").as_os_str().as_bytes()));
        // The directory removed: the kept entry says what the file system
        // without the cache says.
        std::fs::remove_file(d.join("link")).unwrap();
        std::fs::remove_dir(d.join("a")).unwrap();
        assert_eq!(
            resolve_raw_with(base, b"a/f", true, Some(&mut cache)),
            resolve_raw(base, b"a/f", true)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn f(tag: u8, data: &[u8]) -> Field {
        Field {
            tag,
            flags: 0,
            data: data.to_vec().into(),
        }
    }

    fn id_field(tag: u8, ino: u64, kdev: u64) -> Field {
        let mut d = ino.to_ne_bytes().to_vec();
        d.extend_from_slice(&kdev.to_ne_bytes());
        f(tag, &d)
    }

    fn rest(off: u64) -> Field {
        f(field_tag::LINK_REST, &off.to_ne_bytes())
    }

    fn entry(kind: EventKind, nr: u32, flags: u64, fields: &[Field]) -> KernelEvent {
        let mut h = empty_header(kind);
        h.syscall = nr;
        h.flags = flags;
        h.tid = 4_000_000; // no such thread: nothing resolves through /proc
        KernelEvent::decode(&encode(&h, fields)).unwrap()
    }

    #[test]
    fn identities_decode_to_stat_numbers() {
        // sda1 (8:1) in the kernel's MKDEV encoding.
        let (dev, ino) = identity(&id_field(field_tag::BASE_ID, 77, (8 << 20) | 1)).unwrap();
        assert_eq!((dev, ino), (libc::makedev(8, 1), 77));
        assert_eq!(user_dev((259 << 20) | 300), libc::makedev(259, 300));
        let mut failed = id_field(field_tag::BASE_ID, 1, 1);
        failed.flags = field_flags::READ_FAILED;
        assert_eq!(identity(&failed), None);
        assert_eq!(identity(&f(field_tag::BASE_ID, b"short")), None);
    }

    fn lookup_field(tag: u8, obj: (u64, u64), dir: (u64, u64), status: u64) -> Field {
        let mut data = Vec::new();
        for v in [obj.0, obj.1, dir.0, dir.1, status] {
            data.extend_from_slice(&v.to_ne_bytes());
        }
        f(tag, &data)
    }

    /// A path as a base field: its components leaf first, NUL-terminated.
    fn base_of(p: &Path) -> Field {
        let mut d = Vec::new();
        for c in p.components().rev() {
            if let std::path::Component::Normal(c) = c {
                d.extend_from_slice(c.as_bytes());
                d.push(0);
            }
        }
        f(field_tag::BASE, &d)
    }

    /// A directory (canonical) holding `real/` and `link` → `real`.
    fn linked_dir() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
        (tmp, ws)
    }

    /// On the trace's path an open's directory is left for its result to
    /// name, and canonicalised only when the result does not (a failed
    /// open), which gives the path it would have had at entry.
    #[test]
    fn an_open_is_canonicalised_only_when_its_result_does_not_name_the_file() {
        use monitor_common::syscall_nr as n;
        let (_tmp, ws) = linked_dir();
        let open = |raw: &[u8]| {
            entry(
                EventKind::Write,
                n::OPENAT,
                0o101,
                &[f(field_tag::RAW_PATH, raw), base_of(&ws)],
            )
        };
        let real_f = ws.join("real/f").to_str().unwrap().to_owned();
        let link_f = ws.join("link/f").to_str().unwrap().to_owned();
        // Failed (no OPENED_PATH): canonicalised at its result.
        let mut cache = DirCache::default();
        let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
        assert_eq!(
            (a.path.as_deref(), a.path_provisional),
            (Some(&*link_f), true)
        );
        apply_result(&mut a, &[]);
        settle_path(&mut a, Some(&mut cache));
        assert_eq!(
            (a.path.as_deref(), a.path_provisional),
            (Some(&*real_f), false)
        );
        // Opened: the result names the file; nothing is canonicalised.
        let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
        apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"g\0elsewhere\0")]);
        assert!(!a.path_provisional);
        settle_path(&mut a, Some(&mut cache));
        assert_eq!(a.path.as_deref(), Some("/elsewhere/g"));
        // Without the trace's cache (the guardrails), and with `..`, at once.
        let a = action_from_event(&open(b"link/f"));
        assert_eq!(
            (a.path.as_deref(), a.path_provisional),
            (Some(&*real_f), false)
        );
        let a = action_from_event_with(&open(b"link/../real/f"), Some(&mut cache));
        assert!(!a.path_provisional);
        // Released without its result (lost): canonicalised then.
        let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
        settle_path(&mut a, None);
        assert_eq!(a.path.as_deref(), Some(&*real_f));
    }

    /// A path whose every component the kernel's lookup followed at the
    /// call (found or absent) is the lexical join of the argument to its
    /// base, read nowhere else; one through a symbolic link is
    /// canonicalised from the file system, as before.
    #[test]
    fn a_path_the_kernel_walked_plainly_is_not_read_again() {
        use monitor_common::{lookup as l, syscall_nr as n};
        let (_tmp, ws) = linked_dir();
        let unlink = |status: u64| {
            let lookup = lookup_field(field_tag::LOOKUP, (0, 0), (7, 1), status);
            let ev = entry(
                EventKind::Unlink,
                n::UNLINKAT,
                0,
                &[f(field_tag::RAW_PATH, b"link/f"), base_of(&ws), lookup],
            );
            action_from_event_with(&ev, Some(&mut DirCache::default()))
                .path
                .unwrap()
        };
        let path = |p: &str| ws.join(p).to_str().unwrap().to_owned();
        // Said plain (the kernel would not say so of this link): not read.
        assert_eq!(unlink(l::ABSENT | l::DIR_KNOWN), path("link/f"));
        assert_eq!(unlink(l::FOUND | l::DIR_KNOWN), path("link/f"));
        // A symbolic link on the way (followed, or not), or no lookup:
        // read from the tree.
        assert_eq!(unlink(l::FOUND | l::LINKS_FOLLOWED), path("real/f"));
        assert_eq!(unlink(l::SYMLINK), path("real/f"));
        assert_eq!(unlink(l::NOT_CACHED), path("real/f"));
    }

    /// The kernel's dentry-cache lookups give the object and its directory
    /// at any depth, and the second path's (a rename's replaced target);
    /// a lookup that stopped gives no object and says why; an absent
    /// object is no gap; a lookup that is off leaves the base rule.
    #[test]
    fn kernel_lookups_give_object_and_directory_identities() {
        use monitor_common::{lookup as l, syscall_nr as n};
        let base = [
            f(field_tag::RAW_PATH, b"a/b/f"),
            f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
            id_field(field_tag::BASE_ID, 9, 5),
        ];
        let with = |extra: &[Field]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            action_from_event(&entry(EventKind::Rename, n::RENAMEAT2, 0, &v))
        };
        let a = with(&[
            lookup_field(
                field_tag::LOOKUP,
                (11, (8 << 20) | 1),
                (10, (8 << 20) | 1),
                l::FOUND | l::DIR_KNOWN,
            ),
            lookup_field(
                field_tag::LOOKUP2,
                (21, (8 << 20) | 1),
                (9, (8 << 20) | 1),
                l::FOUND | l::DIR_KNOWN,
            ),
        ]);
        let sda1 = libc::makedev(8, 1);
        assert_eq!(
            (a.dev, a.ino, a.dir_dev, a.dir_ino),
            (Some(sda1), Some(11), Some(sda1), Some(10))
        );
        assert_eq!(
            (a.dst_dev, a.dst_ino, a.dst_dir_ino),
            (Some(sda1), Some(21), Some(9))
        );
        assert_eq!((a.identity_gap, a.dst_identity_gap), (None, None));
        // Stopped at a symlink the kernel could not follow, the target absent.
        let a = with(&[
            lookup_field(field_tag::LOOKUP, (0, 0), (0, 0), l::SYMLINK),
            lookup_field(field_tag::LOOKUP2, (0, 0), (9, 5), l::ABSENT | l::DIR_KNOWN),
        ]);
        assert_eq!(
            (a.dev, a.ino, a.dir_dev, a.dir_ino),
            (None, None, None, None)
        );
        assert_eq!(a.identity_gap, Some(IdentityGap::Symlink));
        assert_eq!(
            (a.dst_ino, a.dst_dir_ino, a.dst_identity_gap),
            (None, Some(9), None)
        );
        // A final component not in the cache: its directory only.
        let a = with(&[lookup_field(
            field_tag::LOOKUP,
            (0, 0),
            (10, 5),
            l::NOT_CACHED | l::DIR_KNOWN,
        )]);
        assert_eq!(
            (a.ino, a.dir_ino, a.identity_gap),
            (None, Some(10), Some(IdentityGap::NotCached))
        );
        // Off: the base directory rule (two components below: nothing).
        let a = with(&[lookup_field(field_tag::LOOKUP, (0, 0), (0, 0), l::OFF)]);
        assert_eq!(
            (a.ino, a.dir_ino, a.identity_gap),
            (None, None, Some(IdentityGap::Off))
        );
        assert!(Lookup::decode(&f(field_tag::LOOKUP, b"short")).is_none());
    }

    /// `rm /proc/self/cwd/d/c`: the kernel walked the caller's cwd and
    /// says where the rest starts; userspace joins them and flags nothing.
    #[test]
    fn proc_self_cwd_resolved_by_the_kernel_is_joined_to_its_rest() {
        let raw = b"/proc/self/cwd/d/c";
        let ev = entry(
            EventKind::Unlink,
            monitor_common::syscall_nr::UNLINKAT,
            0,
            &[
                f(field_tag::RAW_PATH, raw),
                f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
                id_field(field_tag::BASE_ID, 9, 5),
                rest(14),
                f(field_tag::ROOT, b""),
            ],
        );
        assert_eq!(link_rest(&ev, field_tag::RAW_PATH), Some(&b"d/c"[..]));
        let a = action_from_event(&ev);
        assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/d/c"));
        assert_eq!(a.raw_path.as_deref(), Some("/proc/self/cwd/d/c"));
        assert!(a.path_issues.is_empty(), "{:?}", a.path_issues);
        // Two components below the cwd: its identity is not the parent's.
        assert_eq!((a.dir_dev, a.dir_ino), (None, None));
        assert_eq!((a.dev, a.ino), (None, None));
        // One component: the cwd holds it.
        let ev = entry(
            EventKind::Unlink,
            monitor_common::syscall_nr::UNLINKAT,
            0,
            &[
                f(field_tag::RAW_PATH, b"/proc/1234/cwd/c"),
                f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
                id_field(field_tag::BASE_ID, 9, 5),
                rest(14),
            ],
        );
        let a = action_from_event(&ev);
        assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/c"));
        assert_eq!((a.dir_dev, a.dir_ino), (Some(libc::makedev(0, 5)), Some(9)));
    }

    /// `/proc/self/fd/3` given to a call that follows it names the fd's
    /// file (identity included); given to unlink it names the /proc entry
    /// itself, which is flagged, never the file.
    #[test]
    fn fd_link_names_the_file_only_for_calls_that_follow_it() {
        use monitor_common::syscall_nr as n;
        let fields = [
            f(field_tag::RAW_PATH, b"/proc/self/fd/3"),
            f(field_tag::BASE, b"a\0ws\0nowhere-abm-test\0"),
            id_field(field_tag::BASE_ID, 42, 7),
            rest(15),
            f(field_tag::ROOT, b""),
        ];
        let open = entry(EventKind::Truncate, n::OPENAT, 0o1001, &fields);
        let a = action_from_event(&open);
        assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/a"));
        assert_eq!((a.dev, a.ino), (Some(libc::makedev(0, 7)), Some(42)));
        assert!(a.path_issues.is_empty());
        let nofollow = entry(EventKind::Truncate, n::OPENAT, 0o1001 | 0o400000, &fields);
        assert_eq!(link_rest(&nofollow, field_tag::RAW_PATH), None);
        let unlink = entry(EventKind::Unlink, n::UNLINKAT, 0, &fields);
        let a = action_from_event(&unlink);
        assert_eq!(a.path.as_deref(), Some("/proc/4000000/fd/3"));
        assert_eq!(a.path_issues, vec![PathIssue::ProcMagicLink]);
        assert_eq!((a.dev, a.ino, a.dir_dev), (None, None, None));
        // A pipe's fd: its walk has no place in the tree; the argument
        // stays under /proc, flagged.
        let mut pipe = fields.clone();
        pipe[1] = Field {
            flags: field_flags::DISCONNECTED,
            ..f(field_tag::BASE, b"")
        };
        let a = action_from_event(&entry(EventKind::Write, n::OPENAT, 0o1, &pipe));
        assert_eq!(a.path.as_deref(), Some("/proc/4000000/fd/3"));
        assert_eq!(a.path_issues, vec![PathIssue::ProcMagicLink]);
        // The mount-namespace view joins the same way.
        assert_eq!(
            arg_base(&unlink, field_tag::RAW_PATH, field_tag::BASE),
            Some((field_tag::ROOT, &b"/proc/self/fd/3"[..]))
        );
        assert_eq!(
            arg_base(&open, field_tag::RAW_PATH, field_tag::BASE),
            Some((field_tag::BASE, &b""[..]))
        );
    }

    #[test]
    fn calls_that_follow_a_final_symlink_without_an_fd() {
        use monitor_common::syscall_nr as n;
        for nr in [
            n::TRUNCATE,
            n::CHMOD,
            n::FCHMODAT,
            n::CHOWN,
            n::UTIMES,
            n::SETXATTR,
        ] {
            assert!(follows_final_link(nr, 0), "{nr}");
        }
        for nr in [n::FCHOWNAT, n::UTIMENSAT, n::FCHMODAT2] {
            assert!(follows_final_link(nr, 0), "{nr}");
            assert!(!follows_final_link(nr, 0x100), "{nr} AT_SYMLINK_NOFOLLOW");
        }
        for nr in [n::LCHOWN, n::LSETXATTR, n::UNLINKAT, n::RENAMEAT2, n::LINK] {
            assert!(!follows_final_link(nr, 0), "{nr}");
        }
        assert!(follows_final_link(n::LINKAT, 0x400));
        assert!(!follows_final_link(n::LINKAT, 0));
    }

    /// chmod through a symlink: the target, read after the call, flagged.
    #[test]
    fn late_symlink_resolution_is_flagged() {
        let d = std::env::temp_dir().join(format!("abm-late-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("real")).unwrap();
        std::fs::write(d.join("real/f"), b"x").unwrap();
        std::os::unix::fs::symlink("real/f", d.join("link")).unwrap();
        // The kernel's walk of the directory: leaf first.
        let mut comps = Vec::new();
        let real_d = std::fs::canonicalize(&d).unwrap();
        for part in real_d.iter().rev().filter(|p| *p != "/") {
            comps.extend_from_slice(part.as_bytes());
            comps.push(0);
        }
        let fields = [
            f(field_tag::RAW_PATH, b"link"),
            f(field_tag::BASE, &comps),
            f(field_tag::ROOT, b""),
        ];
        let real = std::fs::canonicalize(d.join("real/f")).unwrap();
        let chmod = entry(
            EventKind::Chmod,
            monitor_common::syscall_nr::FCHMODAT,
            0,
            &fields,
        );
        let a = action_from_event(&chmod);
        assert_eq!(a.path.as_deref(), real.to_str());
        assert_eq!(a.raw_path.as_deref(), Some("link"));
        assert_eq!(a.path_issues, vec![PathIssue::SymlinkResolvedLate]);
        // lchown acts on the link itself: named as such, not flagged.
        let lchown = entry(
            EventKind::Chown,
            monitor_common::syscall_nr::LCHOWN,
            0,
            &fields,
        );
        let a = action_from_event(&lchown);
        assert!(a.path.as_deref().unwrap().ends_with("/link"));
        assert!(a.path_issues.is_empty());
        // The kernel's lookup at the call met no symlink (the link was
        // made since): the call's own path, nothing read late.
        use monitor_common::lookup as l;
        let mut plain = fields.to_vec();
        plain.push(lookup_field(
            field_tag::LOOKUP,
            (5, 1),
            (4, 1),
            l::FOUND | l::DIR_KNOWN,
        ));
        let chmod = entry(
            EventKind::Chmod,
            monitor_common::syscall_nr::FCHMODAT,
            0,
            &plain,
        );
        let a = action_from_event(&chmod);
        assert!(a.path.as_deref().unwrap().ends_with("/link"), "{a:?}");
        assert!(a.path_issues.is_empty(), "{a:?}");
        // It followed one: read late, as above.
        plain.pop();
        plain.push(lookup_field(
            field_tag::LOOKUP,
            (5, 1),
            (4, 1),
            l::FOUND | l::DIR_KNOWN | l::LINKS_FOLLOWED,
        ));
        let chmod = entry(
            EventKind::Chmod,
            monitor_common::syscall_nr::FCHMODAT,
            0,
            &plain,
        );
        assert_eq!(action_from_event(&chmod).path.as_deref(), real.to_str());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The result record of an open names the file opened and its
    /// identity; the entry's inexact path gives way to it.
    #[test]
    fn open_result_names_the_opened_file() {
        let mut a = Action {
            path: Some("/proc/99/fd/3".into()),
            path_issues: vec![PathIssue::ProcMagicLink],
            dir_dev: Some(1),
            dir_ino: Some(2),
            ..Default::default()
        };
        let fields = [
            f(field_tag::OPENED_PATH, b"f\0ws\0"),
            id_field(field_tag::OPENED_ID, 11, (8 << 20) | 2),
        ];
        apply_result(&mut a, &fields);
        assert_eq!(a.path.as_deref(), Some("/ws/f"));
        assert_eq!((a.dev, a.ino), (Some(libc::makedev(8, 2)), Some(11)));
        assert!(a.path_issues.is_empty());
        assert_eq!((a.dir_dev, a.dir_ino), (None, None));
        // In a container: the container view follows the new path.
        let mut a = Action {
            path: Some("/srv/c1/etc/link".into()),
            container_path: Some("/etc/link".into()),
            ..Default::default()
        };
        apply_result(
            &mut a,
            &[f(field_tag::OPENED_PATH, b"hosts\0etc\0c1\0srv\0")],
        );
        assert_eq!(a.path.as_deref(), Some("/srv/c1/etc/hosts"));
        assert_eq!(a.container_path.as_deref(), Some("/etc/hosts"));
        // Another mount namespace, or an inexact walk: identity only.
        let mut a = Action {
            path: Some("/x".into()),
            ..Default::default()
        };
        let mut walk = f(field_tag::OPENED_PATH, b"y\0");
        walk.flags = field_flags::DISCONNECTED;
        apply_result(&mut a, &[walk, id_field(field_tag::OPENED_ID, 3, 4)]);
        assert_eq!((a.path.as_deref(), a.ino), (Some("/x"), Some(3)));
        let ns = f(field_tag::MNT_NS, &5u64.to_ne_bytes());
        apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"y\0"), ns]);
        assert_eq!(a.path.as_deref(), Some("/x"));
        // No open result: nothing changes.
        apply_result(&mut a, &[]);
        assert_eq!(a.path.as_deref(), Some("/x"));
        assert!(!a.created_by_call);
        // The kernel's FMODE_CREATED: the open created the file.
        let created = f(field_tag::OPENED_CREATED, &(1u64 << 20).to_ne_bytes());
        apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"y\0"), created]);
        assert!(a.created_by_call);
    }

    #[test]
    fn paths_through_proc_links_of_any_process_are_recognised() {
        for p in [
            "/proc/self/fd/3",
            "/proc/123/cwd/x",
            "/proc/thread-self/root",
            "/proc/1/task/2/fd/0",
            "//proc/9/exe",
        ] {
            assert!(names_proc_link(p.as_bytes()), "{p}");
        }
        for p in [
            "/proc/meminfo",
            "/proc/1/status",
            "/tmp/proc/1/cwd",
            "/proc",
        ] {
            assert!(!names_proc_link(p.as_bytes()), "{p}");
        }
    }
}
