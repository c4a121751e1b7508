//! Reading a stopped caller: its syscall arguments in its memory, its
//! working directory, fds and root through /proc, and its identity. Turns
//! one seccomp notification into the same [`Action`] record the tracepoint
//! backend would produce for the call (without the result).
use std::{
    collections::HashMap,
    ffi::OsStr,
    io::Read as _,
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::PathBuf,
    time::{Duration, Instant},
};

use monitor_common::{
    at_flags::{AT_EMPTY_PATH, AT_FDCWD},
    call_kind, layout,
    open_flags::{self, O_CREAT, WRITE_FLAGS},
    EventKind,
};

use super::filter::nr;
use crate::{
    pipeline::resolve,
    record::{text_fields, Action, Op, PathIssue},
};

const PATH_MAX: usize = 4096;
/// exec arguments read from the caller (more than the tracepoint copies:
/// the decision should see the whole command line).
const MAX_ARGS: usize = 1024;
const MAX_ARG_LEN: usize = 4096;
const MAX_ARGV_BYTES: usize = 256 * 1024;

/// Why a call could not be described: answer the caller with this errno.
#[derive(Debug)]
pub struct Unreadable(pub i32);

/// Reads from the caller's memory with process_vm_readv; returns the bytes
/// read (short at an unmapped page).
pub fn read_mem(pid: u32, addr: u64, buf: &mut [u8]) -> usize {
    if buf.is_empty() {
        return 0;
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: local points to buf; remote memory is the target's.
    let n = unsafe { libc::process_vm_readv(pid as i32, &local, 1, &remote, 1, 0) };
    if n < 0 {
        0
    } else {
        n as usize
    }
}

/// Reads a NUL-terminated string of at most `max` bytes; `None` when the
/// first byte is unreadable. The bool says whether it was cut at `max`.
pub fn read_cstr(pid: u32, addr: u64, max: usize, out: &mut Vec<u8>) -> Option<bool> {
    out.clear();
    if addr == 0 {
        return None;
    }
    let mut chunk = [0u8; 512];
    let mut at = addr;
    while out.len() < max {
        // Never cross a page boundary in one read, so an unmapped page after
        // the string does not fail the read of the string itself.
        let to_page = 4096 - (at % 4096) as usize;
        let want = to_page.min(chunk.len()).min(max - out.len());
        let n = read_mem(pid, at, &mut chunk[..want]);
        if n == 0 {
            return if out.is_empty() { None } else { Some(true) };
        }
        if let Some(z) = chunk[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..z]);
            return Some(false);
        }
        out.extend_from_slice(&chunk[..n]);
        at += n as u64;
    }
    Some(true)
}

fn read_u64(pid: u32, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    (read_mem(pid, addr, &mut b) == 8).then(|| u64::from_ne_bytes(b))
}

fn readlink(p: &str) -> Option<Vec<u8>> {
    std::fs::read_link(p)
        .ok()
        .map(|l| l.into_os_string().as_bytes().to_vec())
}

/// What the kernel reports for a deleted file or directory.
fn strip_deleted(mut v: Vec<u8>, issues: &mut Vec<PathIssue>) -> Vec<u8> {
    const SUF: &[u8] = b" (deleted)";
    if v.ends_with(SUF) {
        v.truncate(v.len() - SUF.len());
        add_issue(issues, PathIssue::Disconnected);
    }
    v
}

fn add_issue(issues: &mut Vec<PathIssue>, i: PathIssue) {
    PathIssue::add(issues, i)
}

/// Identity of the calling thread (/proc/TID/status).
#[derive(Default, Debug, Clone)]
pub struct Identity {
    pub tgid: u32,
    pub ppid: u32,
    pub uid: u32,
    pub gid: u32,
    pub comm: String,
}

/// The decoded call, before path resolution.
struct Plan {
    op: Op,
    path1: Option<(i32, u64)>,
    path2: Option<(i32, u64)>,
    target_fd: Option<i32>,
    flags: u64,
    mode: Option<u32>,
    owner: Option<(u32, u32)>,
    argv: Option<u64>,
    /// AT_EMPTY_PATH allowed: an empty path means the dirfd itself.
    empty_path: bool,
    /// Address of an extended attribute's name.
    xattr: Option<u64>,
    /// Issues known from the arguments alone (`by_handle`, `flags_unread`).
    issues: Vec<PathIssue>,
}

/// The plan of call `nrr`: the argument registers come from the one table
/// of traced syscalls ([`monitor_common::layout`], which the kernel
/// programs read too); only what no register says is decided here (flags
/// in user memory, `creat`'s fixed flags, a null `utimensat` path), and
/// what this backend adds: modes masked to permission bits (an open's only
/// when it creates), open flags cut to 32 bits, `AT_EMPTY_PATH`.
fn plan(nrr: u32, a: &[u64; 6], pid: u32) -> Result<Option<Plan>, Unreadable> {
    let Some((kind, l)) = layout(nrr) else {
        return Ok(None);
    };
    if kind == EventKind::IoUringSetup {
        // Refused by the filter itself under --enforce.
        return Ok(None);
    }
    let arg = |r: u8| a[usize::from(r)];
    let dirfd = |r: Option<u8>| r.map_or(AT_FDCWD, |r| arg(r) as i32);
    let mut p = Plan {
        op: Op::Unlink,
        path1: l.path1.map(|r| (dirfd(l.dirfd1), arg(r))),
        path2: l.path2.map(|r| (dirfd(l.dirfd2), arg(r))),
        target_fd: l.fd.map(|r| arg(r) as i32),
        flags: l.flags.map_or(0, arg),
        mode: l.mode.map(|r| arg(r) as u32 & 0o7777),
        owner: l.owner.map(|r| (arg(r) as u32, arg(r + 1) as u32)),
        argv: l.argv.map(arg),
        empty_path: false,
        xattr: l.xattr.map(arg),
        issues: Vec::new(),
    };
    let is_open = kind == EventKind::Write;
    if is_open {
        p.flags &= 0xffff_ffff;
    }
    match nrr {
        nr::CREAT => p.flags = open_flags::CREAT,
        nr::OPENAT2 => {
            // struct open_how { u64 flags; u64 mode; u64 resolve; }
            if a[3] < 24 {
                return Ok(None); // the kernel rejects it (EINVAL)
            }
            let Some(flags) = read_u64(pid, a[2]) else {
                return Err(Unreadable(libc::EFAULT));
            };
            if flags & WRITE_FLAGS == 0 {
                return Ok(None); // read-only open
            }
            p.flags = flags;
            p.mode = Some(read_u64(pid, a[2] + 8).unwrap_or(0) as u32 & 0o7777);
        }
        nr::OPEN_BY_HANDLE_AT => {
            // Named by a handle: the path is unknown (fails closed).
            p.issues.push(PathIssue::ByHandle);
        }
        nr::FUTIMESAT | nr::UTIMENSAT if a[1] == 0 => {
            p.path1 = None;
            p.target_fd = Some(a[0] as i32); // futimens(fd)
        }
        nr::IOCTL => {
            if !monitor_common::ioctl_cmd::is_traced(a[1] as u32) {
                return Ok(None);
            }
            let mut b = [0u8; 4];
            if read_mem(pid, a[2], &mut b) == 4 {
                p.flags = u64::from(u32::from_ne_bytes(b));
            } else {
                p.issues.push(PathIssue::FlagsUnread);
            }
        }
        _ => {}
    }
    if is_open && p.flags & O_CREAT == 0 {
        p.mode = None;
    }
    // `*at` calls whose flags allow AT_EMPTY_PATH: an empty path means
    // the dirfd itself.
    p.empty_path = matches!(
        nrr,
        nr::FCHMODAT2 | nr::FCHOWNAT | nr::LINKAT | nr::UTIMENSAT | nr::EXECVEAT
    ) && p.flags & AT_EMPTY_PATH != 0;
    let kind = call_kind(nrr, kind, p.flags);
    let Some(op) = Op::from_kind(kind) else {
        return Ok(None);
    };
    p.op = op;
    Ok(Some(p))
}

/// How long a thread's identity (status, exe, cgroup) is reused: a burst
/// of calls (`rm -rf`) reads /proc once. An exec drops the entry at once.
const IDENTITY_TTL: Duration = Duration::from_millis(100);

struct Known {
    at: Instant,
    id: Identity,
    exe: Option<String>,
    cgroup_id: u64,
}

/// Builds actions from notifications, reusing its buffers.
pub struct Reader {
    buf: Vec<u8>,
    status: Vec<u8>,
    cgroup2_root: Option<PathBuf>,
    cgroup_ids: HashMap<Vec<u8>, u64>,
    known: HashMap<u32, Known>,
    /// Whether the last action's call follows a final symlink (opens,
    /// truncate, chmod, ...): its target is what is judged.
    pub last_follows: bool,
    /// The caller of the call being read is in another view.
    foreign: bool,
    /// Its root, as abm reads `/proc/TID/root` (`/` in abm's view).
    pub last_root: Vec<u8>,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    pub fn new() -> Reader {
        Reader {
            buf: Vec::with_capacity(PATH_MAX),
            status: Vec::with_capacity(4096),
            cgroup2_root: cgroup2_mount(),
            cgroup_ids: HashMap::new(),
            known: HashMap::new(),
            last_follows: false,
            foreign: false,
            last_root: b"/".to_vec(),
        }
    }

    /// The action a call would perform, as the tracepoint backend records
    /// it (no result yet). `Ok(None)`: nothing to judge (a read-only
    /// `openat2`, or an exec of a file that does not exist). `foreign`:
    /// the caller is in another mount namespace or root
    /// ([`super::view`]): its paths are read here as strings (the host
    /// string under its root, and `container_path`), and what exists or
    /// where symlinks lead is left to the judgement inside its view.
    pub fn action(
        &mut self,
        tid: u32,
        nrr: u32,
        args: &[u64; 6],
        foreign: bool,
    ) -> Result<Option<Action>, Unreadable> {
        let Some(p) = plan(nrr, args, tid)? else {
            return Ok(None);
        };
        let fresh = self
            .known
            .get(&tid)
            .is_some_and(|k| k.at.elapsed() < IDENTITY_TTL);
        if !fresh {
            if self.known.len() >= 4096 {
                self.known.clear();
            }
            let id = self.identity(tid);
            let exe = std::fs::read_link(format!("/proc/{tid}/exe"))
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
            let cgroup_id = self.cgroup_id(tid);
            self.known.insert(
                tid,
                Known {
                    at: Instant::now(),
                    id,
                    exe,
                    cgroup_id,
                },
            );
        }
        let mut a = Action {
            op: Some(p.op),
            syscall: resolve::syscall_name(nrr).into(),
            tid,
            ..Default::default()
        };
        // The root is read for every call: `chroot` changes it at any time.
        let root = if foreign {
            readlink(&format!("/proc/{tid}/root")).ok_or(Unreadable(libc::EPERM))?
        } else {
            b"/".to_vec()
        };
        let mut issues = Vec::new();
        self.last_follows = false;
        self.foreign = foreign;
        self.last_root.clone_from(&root);
        if let Some(fd) = p.target_fd {
            let host = self.fd_path(tid, fd, &mut issues);
            set(&host, &mut a.path, &mut a.path_b64);
            if root != b"/" {
                a.container_path = resolve::strip_root(&host, &root).map(|c| text_fields(&c).0);
            }
        }
        if let Some((dirfd, ptr)) = p.path1 {
            let raw = self.read_path(tid, ptr, &mut issues)?;
            let mut host = self.resolve(tid, dirfd, &raw, &root, p.empty_path, &mut issues)?;
            // Calls that follow a final symlink (opens, truncate, chmod,
            // chown, times, attributes, flags, a link's source with
            // AT_SYMLINK_FOLLOW aside) act on its target: judge the target,
            // so `: > link` to a protected file is judged as that file.
            let nofollow = p.flags & (0x100 | 0o400000) != 0; // AT_SYMLINK_NOFOLLOW, O_NOFOLLOW
            let follows = matches!(
                p.op,
                Op::Write | Op::Truncate | Op::Chmod | Op::Chown | Op::Utimes | Op::Setflags
            ) || (p.op == Op::Xattr && matches!(nrr, nr::SETXATTR | nr::REMOVEXATTR));
            self.last_follows = follows && !nofollow;
            if follows && !nofollow && !foreign {
                if let Ok(real) = std::fs::canonicalize(OsStr::from_bytes(&host)) {
                    host = real.into_os_string().into_vec();
                }
            }
            set(&host, &mut a.path, &mut a.path_b64);
            if root != b"/" {
                a.container_path = resolve::strip_root(&host, &root).map(|c| text_fields(&c).0);
            }
            set(&raw, &mut a.raw_path, &mut a.raw_path_b64);
            if p.op == Op::Exec
                && !foreign
                && !raw.is_empty()
                && std::fs::symlink_metadata(OsStr::from_bytes(&host)).is_err()
            {
                // execvp tries each PATH entry: a program that is not there
                // cannot run, so there is nothing to judge (the kernel
                // answers ENOENT and the tracepoints record it).
                return Ok(None);
            }
        }
        if let Some((dirfd, ptr)) = p.path2 {
            let raw = self.read_path(tid, ptr, &mut issues)?;
            let host = self.resolve(tid, dirfd, &raw, &root, false, &mut issues)?;
            set(&host, &mut a.path2, &mut a.path2_b64);
            if root != b"/" {
                a.container_path2 = resolve::strip_root(&host, &root).map(|c| text_fields(&c).0);
            }
            set(&raw, &mut a.raw_path2, &mut a.raw_path2_b64);
        }
        if let Some(ptr) = p.xattr {
            match read_cstr(tid, ptr, 256, &mut self.buf) {
                Some(false) => a.xattr = Some(text_fields(&self.buf).0),
                // The kernel fails an unreadable or over-long name too.
                None => return Err(Unreadable(libc::EFAULT)),
                Some(true) => return Err(Unreadable(libc::ERANGE)),
            }
        }
        if p.op == Op::Symlink {
            // The target is relative to the new link's directory.
            if let (Some(raw), Some(link)) = (&a.raw_path, &a.path2) {
                if !raw.starts_with('/') {
                    let dir = std::path::Path::new(link)
                        .parent()
                        .unwrap_or(std::path::Path::new("/"));
                    let j = resolve::join(dir.as_os_str().as_bytes(), raw.as_bytes());
                    set(&j, &mut a.path, &mut a.path_b64);
                }
            }
        }
        for i in &p.issues {
            add_issue(&mut issues, *i);
        }
        a.path_issues = issues;
        a.flags = p.flags;
        a.flag_names = flag_names(p.op, &a.syscall, p.flags);
        a.fd = Some(p.target_fd.unwrap_or(p.path1.map_or(AT_FDCWD, |x| x.0)));
        a.mode = p.mode;
        if let Some((u, g)) = p.owner {
            a.owner_uid = (u != u32::MAX).then_some(u);
            a.owner_gid = (g != u32::MAX).then_some(g);
        }
        if let Some(argv_ptr) = p.argv {
            let (argv, truncated) = self.read_argv(tid, argv_ptr);
            let mut any_b64 = false;
            let mut texts = Vec::with_capacity(argv.len());
            let mut b64s = Vec::with_capacity(argv.len());
            for arg in &argv {
                let (s, b) = text_fields(arg);
                any_b64 |= b.is_some();
                b64s.push(b.unwrap_or_else(|| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.encode(arg)
                }));
                texts.push(s);
            }
            a.argv = Some(texts);
            a.argv_b64 = any_b64.then_some(b64s);
            a.argv_truncated = truncated;
            if let Some(cwd) = readlink(&format!("/proc/{tid}/cwd")) {
                let mut iss = Vec::new();
                a.cwd = Some(text_fields(&strip_deleted(cwd, &mut iss)).0);
            }
        }
        let k = &self.known[&tid];
        a.pid = k.id.tgid;
        a.ppid = k.id.ppid;
        a.uid = k.id.uid;
        a.gid = k.id.gid;
        a.comm = k.id.comm.clone();
        a.exe = k.exe.clone();
        a.cgroup_id = k.cgroup_id;
        if p.op == Op::Exec {
            // The exec changes comm and exe (and may change credentials).
            self.known.remove(&tid);
        }
        Ok(Some(a))
    }

    fn read_path(
        &mut self,
        tid: u32,
        ptr: u64,
        issues: &mut Vec<PathIssue>,
    ) -> Result<Vec<u8>, Unreadable> {
        match read_cstr(tid, ptr, PATH_MAX, &mut self.buf) {
            None => Err(Unreadable(libc::EFAULT)),
            Some(true) => {
                add_issue(issues, PathIssue::Truncated);
                // The kernel would fail the call with ENAMETOOLONG.
                Err(Unreadable(libc::ENAMETOOLONG))
            }
            Some(false) => Ok(self.buf.clone()),
        }
    }

    fn fd_path(&self, tid: u32, fd: i32, issues: &mut Vec<PathIssue>) -> Vec<u8> {
        match readlink(&format!("/proc/{tid}/fd/{fd}")) {
            Some(p) => strip_deleted(p, issues),
            None => {
                add_issue(issues, PathIssue::BadFd);
                Vec::new()
            }
        }
    }

    /// Joins a raw path to the directory it is relative to, as the kernel
    /// would, and canonicalises the parent like the tracepoint resolver.
    fn resolve(
        &self,
        tid: u32,
        dirfd: i32,
        raw: &[u8],
        root: &[u8],
        empty_path: bool,
        issues: &mut Vec<PathIssue>,
    ) -> Result<Vec<u8>, Unreadable> {
        if raw.is_empty() && empty_path {
            return if dirfd == AT_FDCWD {
                readlink(&format!("/proc/{tid}/cwd"))
                    .map(|c| strip_deleted(c, issues))
                    .ok_or(Unreadable(libc::EPERM))
            } else {
                Ok(self.fd_path(tid, dirfd, issues))
            };
        }
        // `/proc/self`, `/dev/fd` ... are the caller's, not abm's: resolve
        // them through the caller's /proc entry.
        if !self.foreign {
            if let Some(p) = resolve::caller_proc_path(raw, tid) {
                return Ok(resolve::resolve_raw(b"/", &p, true));
            }
        }
        let base = if raw.first() == Some(&b'/') {
            root.to_vec()
        } else if dirfd == AT_FDCWD {
            match readlink(&format!("/proc/{tid}/cwd")) {
                Some(c) => strip_deleted(c, issues),
                // Never guess `/`: a relative path with an unknown base is
                // refused (fail closed).
                None => return Err(Unreadable(libc::EPERM)),
            }
        } else {
            let b = self.fd_path(tid, dirfd, issues);
            if b.first() == Some(&b'/') {
                b
            } else {
                // The kernel fails a relative path on a bad dirfd too.
                return Err(Unreadable(libc::EBADF));
            }
        };
        // In another view, the parent is made canonical inside that view.
        Ok(resolve::resolve_raw(&base, raw, !self.foreign))
    }

    fn read_argv(&mut self, tid: u32, ptr: u64) -> (Vec<Vec<u8>>, bool) {
        let mut out = Vec::new();
        if ptr == 0 {
            return (out, false);
        }
        let mut total = 0usize;
        let mut truncated = false;
        for i in 0..=MAX_ARGS {
            let Some(p) = read_u64(tid, ptr + 8 * i as u64) else {
                break;
            };
            if p == 0 {
                break;
            }
            if i == MAX_ARGS || total >= MAX_ARGV_BYTES {
                truncated = true;
                break;
            }
            match read_cstr(tid, p, MAX_ARG_LEN, &mut self.buf) {
                Some(cut) => {
                    truncated |= cut;
                    total += self.buf.len();
                    out.push(self.buf.clone());
                }
                None => break,
            }
        }
        (out, truncated)
    }

    pub fn identity(&mut self, tid: u32) -> Identity {
        let mut id = Identity {
            tgid: tid,
            ..Default::default()
        };
        self.status.clear();
        if let Ok(mut f) = std::fs::File::open(format!("/proc/{tid}/status")) {
            let _ = f.read_to_end(&mut self.status);
        }
        for line in self.status.split(|&b| b == b'\n') {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (k, v) = (&line[..colon], &line[colon + 1..]);
            let first = || {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.split_whitespace().next())
                    .and_then(|x| x.parse::<u32>().ok())
            };
            match k {
                b"Name" => id.comm = String::from_utf8_lossy(v.trim_ascii()).into_owned(),
                b"Tgid" => id.tgid = first().unwrap_or(tid),
                b"PPid" => id.ppid = first().unwrap_or(0),
                b"Uid" => id.uid = first().unwrap_or(0),
                b"Gid" => {
                    id.gid = first().unwrap_or(0);
                    break;
                }
                _ => {}
            }
        }
        id
    }

    /// The cgroup v2 id (inode of the cgroup directory), as
    /// bpf_get_current_cgroup_id reports it; 0 when unknown.
    fn cgroup_id(&mut self, tid: u32) -> u64 {
        let Some(root) = &self.cgroup2_root else {
            return 0;
        };
        let Ok(text) = std::fs::read(format!("/proc/{tid}/cgroup")) else {
            return 0;
        };
        let Some(line) = text.split(|&b| b == b'\n').find(|l| l.starts_with(b"0::")) else {
            return 0;
        };
        let rel = &line[3..];
        if let Some(id) = self.cgroup_ids.get(rel) {
            return *id;
        }
        use std::os::unix::fs::MetadataExt as _;
        let p = root.join(OsStr::from_bytes(rel.strip_prefix(b"/").unwrap_or(rel)));
        let id = std::fs::metadata(p).map(|m| m.ino()).unwrap_or(0);
        if self.cgroup_ids.len() < 4096 {
            self.cgroup_ids.insert(rel.to_vec(), id);
        }
        id
    }
}

fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for line in text.lines() {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next() == Some("cgroup2") {
            return left.split_whitespace().nth(4).map(PathBuf::from);
        }
    }
    None
}

fn set(bytes: &[u8], s: &mut Option<String>, b64: &mut Option<String>) {
    let (t, b) = text_fields(bytes);
    *s = Some(t);
    *b64 = b;
}

/// Symbolic flag names, as the tracepoint resolver writes them.
pub use crate::pipeline::resolve::flag_names;

#[cfg(test)]
mod tests {
    use monitor_common::{
        open_flags::{O_TRUNC, O_WRONLY},
        SYSCALLS,
    };

    use super::*;

    /// Every traced syscall is read where the table says: a call whose
    /// argument `i` is `100 + i` (and whose flags create and truncate)
    /// gives back those values in the fields the table names.
    #[test]
    fn plan_reads_the_table() {
        let flags = O_CREAT | O_TRUNC | O_WRONLY;
        for s in SYSCALLS {
            if matches!(s.nr, nr::OPENAT2 | nr::IOCTL) || s.kind == EventKind::IoUringSetup {
                continue; // flags in user memory; never planned
            }
            let l = s.layout;
            let mut a: [u64; 6] = std::array::from_fn(|i| 100 + i as u64);
            if let Some(r) = l.flags {
                a[usize::from(r)] = flags;
            }
            let p = plan(s.nr, &a, 0).unwrap().unwrap();
            let at = |d: Option<u8>, r: Option<u8>| {
                r.map(|r| {
                    (
                        d.map_or(AT_FDCWD, |d| a[usize::from(d)] as i32),
                        a[usize::from(r)],
                    )
                })
            };
            assert_eq!(p.path1, at(l.dirfd1, l.path1), "{}", s.name);
            assert_eq!(p.path2, at(l.dirfd2, l.path2), "{}", s.name);
            assert_eq!(
                p.target_fd,
                l.fd.map(|r| a[usize::from(r)] as i32),
                "{}",
                s.name
            );
            assert_eq!(p.argv, l.argv.map(|r| a[usize::from(r)]), "{}", s.name);
            assert_eq!(p.xattr, l.xattr.map(|r| a[usize::from(r)]), "{}", s.name);
            let owner = l
                .owner
                .map(|r| (a[usize::from(r)] as u32, a[usize::from(r) + 1] as u32));
            assert_eq!(p.owner, owner, "{}", s.name);
            let want = if s.nr == nr::CREAT {
                open_flags::CREAT
            } else {
                l.flags.map_or(0, |_| flags)
            };
            assert_eq!(p.flags, want, "{}", s.name);
            let mode = l.mode.map(|r| a[usize::from(r)] as u32 & 0o7777);
            assert_eq!(p.mode, mode, "{}", s.name);
            assert_eq!(
                Some(p.op.kind()),
                Some(call_kind(s.nr, s.kind, p.flags)),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn reads_own_strings_across_pages() {
        let me = std::process::id();
        let s = b"/tmp/some/path\0".to_vec();
        let mut out = Vec::new();
        assert_eq!(
            read_cstr(me, s.as_ptr() as u64, 4096, &mut out),
            Some(false)
        );
        assert_eq!(out, b"/tmp/some/path");
        assert_eq!(read_cstr(me, s.as_ptr() as u64, 4, &mut out), Some(true));
        assert_eq!(read_cstr(me, 0, 4096, &mut out), None);
        // A string ending exactly at a page boundary followed by more text.
        let big = vec![b'a'; 10000];
        let mut z = big.clone();
        z.push(0);
        assert_eq!(
            read_cstr(me, z.as_ptr() as u64, 20000, &mut out),
            Some(false)
        );
        assert_eq!(out.len(), 10000);
    }

    #[test]
    fn canonical_parent_resolves_symlinked_directories() {
        let d = std::env::temp_dir().join(format!("abm-canon-{}", std::process::id()));
        std::fs::create_dir_all(d.join("real")).unwrap();
        let _ = std::fs::remove_file(d.join("link"));
        std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
        let real = std::fs::canonicalize(d.join("real")).unwrap();
        let got =
            crate::pipeline::resolve::canonical_parent(d.join("link/file").as_os_str().as_bytes())
                .unwrap();
        assert_eq!(got, real.join("file").as_os_str().as_bytes());
        assert_eq!(
            crate::pipeline::resolve::canonical_parent(b"/no/such/dir/file"),
            None
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn plans_match_the_kernel_side() {
        let me = std::process::id();
        let p = plan(nr::UNLINKAT, &[5, 0x1000, 0x200, 0, 0, 0], me)
            .unwrap()
            .unwrap();
        assert_eq!(p.op, Op::Rmdir);
        assert_eq!(p.path1, Some((5, 0x1000)));
        let p = plan(
            nr::OPENAT,
            &[AT_FDCWD as u64, 0x1000, 0o1101, 0o644, 0, 0],
            me,
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.op, Op::Truncate);
        assert_eq!(p.mode, Some(0o644));
        let p = plan(nr::OPEN, &[0x1000, 0o2001, 0o644, 0, 0, 0], me)
            .unwrap()
            .unwrap();
        assert_eq!(p.op, Op::Write);
        assert_eq!(p.mode, None);
        let how: [u64; 3] = [0, 0, 0];
        assert!(
            plan(nr::OPENAT2, &[0, 0x1000, how.as_ptr() as u64, 24, 0, 0], me)
                .unwrap()
                .is_none()
        );
        let how: [u64; 3] = [O_TRUNC | O_WRONLY, 0, 0];
        let p = plan(nr::OPENAT2, &[0, 0x1000, how.as_ptr() as u64, 24, 0, 0], me)
            .unwrap()
            .unwrap();
        assert_eq!(p.op, Op::Truncate);
    }
}
