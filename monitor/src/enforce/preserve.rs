//! `preserve`: before an allowed destructive call, keep what it would
//! destroy in a per-run quarantine directory, and describe it in a
//! manifest that `abm undo` reads.
//!
//! Layout of a quarantine directory (mode 0700):
//!
//! ```text
//! manifest.jsonl   one JSON object per line: a `run` line, one entry per
//!                  kept thing, and `sealed` lines (the state of every
//!                  path the entries name, taken when the run ends)
//! data/000001      kept files, named by entry id
//! restored.jsonl   entries `abm undo` restored (written by undo)
//! displaced/       what `abm undo` moved aside to restore (written by undo)
//! ```
//!
//! The manifest is written before each call runs, so it cannot know the
//! call's result: `abm undo` joins each entry with the trace record of its
//! call (which lists the entry ids in `enforcement`) to learn the result
//! (a failed call's entries are void), the trace `seq` and the logical
//! action ([`super::history`]).
//!
//! What is kept, per operation:
//! - unlink: the file, as a hard link into `data/` when the quarantine is
//!   on the same file system (O(1), same inode, mode, owner and times),
//!   else a copy (reflink when the file system can, else a full copy);
//!   symlinks are kept as symlinks;
//! - rmdir: the directory's mode, owner and times (it is empty);
//! - rename: the rename itself (so undo can move it back), and the
//!   destination it replaces (hard link or copy);
//! - truncate, `O_TRUNC` opens and write opens of an existing non-empty
//!   file: a copy (a hard link would share the inode being truncated);
//! - chmod, chown: the old mode and owner.
//! - a write or truncating open with `O_CREAT` of a path that does not
//!   exist: a `created` entry (nothing to keep; undo removes the file only
//!   with `--remove-created`, and knows it as a temporary file when the
//!   same action renames it away).
//! - exec: nothing (there is nothing to keep).
//!
//! Calls the kernel will certainly refuse keep nothing: a
//! `RENAME_NOREPLACE` rename onto an existing name (EEXIST), rmdir of a
//! non-empty directory (ENOTEMPTY).
//!
//! Kept file data counts against a per-run limit (`--quarantine-limit`):
//! a call whose copy would exceed it gets an error from
//! [`Quarantine::preserve`], so the caller refuses the call (nothing is
//! destroyed without its copy), and one `quarantine_limit` note is queued
//! ([`Quarantine::take_notes`]).
use std::{
    ffi::OsStr,
    fs::{self, File, OpenOptions},
    io::{self, Read as _, Write as _},
    os::unix::{
        ffi::OsStrExt,
        fs::{MetadataExt, OpenOptionsExt, PermissionsExt},
    },
    path::{Path, PathBuf},
    time::SystemTime,
};

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::{
    core::rfc3339,
    record::{text_fields, Action, Op},
    trace::note::QuarantineLimit,
};

/// Files up to this size get a sha256 in the manifest.
const HASH_LIMIT: u64 = 64 * 1024;
const RENAME_NOREPLACE: u64 = 1;
const RENAME_EXCHANGE: u64 = 2;
use monitor_common::{at_flags::AT_SYMLINK_NOFOLLOW, open_flags::O_CREAT};
const FICLONE: libc::c_ulong = 0x4004_9409;

/// Default `--quarantine-limit`: 4 GiB of kept file data per run.
pub const DEFAULT_LIMIT: u64 = 4 << 30;

pub const MANIFEST: &str = "manifest.jsonl";
pub const RESTORED: &str = "restored.jsonl";

/// A per-run quarantine, created on first use.
pub struct Quarantine {
    dir: PathBuf,
    run_id: String,
    trace: PathBuf,
    workspace: PathBuf,
    manifest: Option<File>,
    next_id: u64,
    /// Bytes of file data the quarantine may hold (`--quarantine-limit`).
    limit: u64,
    /// Bytes of file data kept so far.
    used: u64,
    /// Whether the limit was reported already.
    limit_reported: bool,
    notes: Vec<QuarantineLimit>,
    /// The last copy of each inode (dev, ino): data file, and the file's
    /// size, times and sha256 then; a later copy of an unchanged file
    /// hard-links it instead of copying again.
    copies: std::collections::HashMap<(u64, u64), Copy>,
}

#[derive(Clone)]
struct Copy {
    rel: String,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    sha: Option<String>,
}

/// A size that [`parse_size`] does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?}: expected a size such as 500M, 4G or 1048576")]
    NotANumber(String),
    #[error("{size:?}: unknown unit {unit:?} (use K, M, G or T)")]
    Unit { size: String, unit: String },
    #[error("{0:?}: too large")]
    TooLarge(String),
}

/// Parses a size: a number of bytes with an optional `K`, `M`, `G` or `T`
/// suffix (powers of 1024; `KiB`, `MB`... are accepted).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| SizeError::NotANumber(s.to_owned()))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(SizeError::Unit {
                size: s.to_owned(),
                unit: unit.to_owned(),
            })
        }
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| SizeError::TooLarge(s.to_owned()))
}

/// Where a destroyed file's exact content already exists: a file tracked
/// by git whose content equals its index blob, with the blob in the
/// repository's object store. `preserve` records a `recoverable` entry
/// (the description and `git: {git_dir, blob}`) instead of a copy, and
/// `abm undo` writes the blob back. Repositories are read once per run
/// (the index and pack indexes are cached; a stale index only makes a
/// file look modified, so it is copied).
pub fn already_recoverable(path: &Path, meta: &fs::Metadata) -> Option<(String, Value)> {
    use crate::action::git::{file_blob_id, Repo};
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static REPOS: OnceLock<Mutex<HashMap<PathBuf, Option<Repo>>>> = OnceLock::new();
    if !meta.is_file() || meta.len() > HASH_LIMIT {
        return None;
    }
    let root = path.ancestors().skip(1).find(|d| d.join(".git").exists())?;
    let rel = path.strip_prefix(root).ok()?;
    let mut repos = REPOS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let repo = repos
        .entry(root.to_path_buf())
        .or_insert_with(|| Repo::open(root))
        .as_mut()?;
    let e = repo.entry(rel.as_os_str().as_bytes())?;
    if u64::from(e.size) != meta.len() & 0xffff_ffff
        || file_blob_id(path, HASH_LIMIT) != Some(e.sha)
        || !repo.has_object(&e.sha)
    {
        return None;
    }
    let blob = hex::encode(e.sha);
    Some((
        "identical to its git blob; undo writes the blob back".to_owned(),
        json!({"git_dir": repo.git_dir.to_string_lossy(), "blob": blob}),
    ))
}

/// The state of a path, as recorded in `sealed` lines and compared by
/// `abm undo` (ctime and link count are left out: the quarantine's own
/// hard links change them).
pub fn state_json(p: &Path) -> Value {
    match fs::symlink_metadata(p) {
        Ok(m) => {
            let mut v = meta_json(&m);
            if m.is_file() && m.len() <= HASH_LIMIT {
                if let Ok(h) = hash_file(p) {
                    v["sha256"] = json!(h);
                }
            }
            v
        }
        Err(_) => Value::Null,
    }
}

fn bytes_of(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}

fn path_of(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}

/// The exact bytes of an action's path (from `_b64` when not UTF-8).
pub(super) fn exact(s: &Option<String>, b64: &Option<String>) -> Option<Vec<u8>> {
    if let Some(b) = b64 {
        use base64::Engine as _;
        if let Ok(v) = base64::engine::general_purpose::STANDARD.decode(b) {
            return Some(v);
        }
    }
    s.as_ref().map(|s| s.as_bytes().to_vec())
}

fn file_type(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_file() {
        "file"
    } else if t.is_dir() {
        "dir"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "other"
    }
}

fn meta_json(m: &fs::Metadata) -> Value {
    json!({
        "type": file_type(m),
        "size": m.len(),
        "mode": m.mode() & 0o7777,
        "uid": m.uid(),
        "gid": m.gid(),
        "mtime_ns": m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        "atime_ns": m.atime() as i128 * 1_000_000_000 + m.atime_nsec() as i128,
        "dev": m.dev(),
        "ino": m.ino(),
    })
}

fn put_path(e: &mut Value, key: &str, p: &[u8]) {
    let (s, b) = text_fields(p);
    e[key] = json!(s);
    if let Some(b) = b {
        e[format!("{key}_b64")] = json!(b);
    }
}

impl Quarantine {
    pub fn new(dir: PathBuf, run_id: String, trace: PathBuf, workspace: PathBuf) -> Quarantine {
        Quarantine {
            dir,
            run_id,
            trace,
            workspace,
            manifest: None,
            next_id: 1,
            limit: DEFAULT_LIMIT,
            used: 0,
            limit_reported: false,
            notes: Vec::new(),
            copies: std::collections::HashMap::new(),
        }
    }

    /// Sets the limit on kept file data (bytes).
    pub fn with_limit(mut self, limit: u64) -> Quarantine {
        self.limit = limit;
        self
    }

    /// Notes for the trace queued since the last call (`quarantine_limit`).
    pub fn take_notes(&mut self) -> Vec<QuarantineLimit> {
        std::mem::take(&mut self.notes)
    }

    /// Checks that `size` more bytes fit under the limit, and counts them.
    fn reserve(&mut self, path: &[u8], size: u64) -> io::Result<()> {
        if self.used.saturating_add(size) <= self.limit {
            self.used += size;
            return Ok(());
        }
        let msg = format!(
            "quarantine limit reached: keeping {} ({size} bytes) would exceed --quarantine-limit {} bytes ({} used in {}); the call is refused because nothing is destroyed without its copy; restore or remove kept data, or run with a larger --quarantine-limit",
            String::from_utf8_lossy(path),
            self.limit,
            self.used,
            self.dir.display()
        );
        if !self.limit_reported {
            self.limit_reported = true;
            eprintln!("abm: {msg}");
            self.notes.push(QuarantineLimit {
                quarantine: self.dir.to_string_lossy().into_owned(),
                limit_bytes: self.limit,
                used_bytes: self.used,
                path: String::from_utf8_lossy(path).into_owned(),
                size,
                rule: QuarantineLimit::RULE,
            });
        }
        Err(io::Error::new(io::ErrorKind::StorageFull, msg))
    }

    /// Records the state of every path the manifest names, as the run
    /// leaves them (`sealed` lines): `abm undo` compares against it to tell
    /// what changed after the run. Call when the watched tree is done.
    pub fn seal(&mut self) {
        if self.manifest.is_none() {
            return;
        }
        let Ok(entries) = read_manifest(&self.dir) else {
            return;
        };
        let mut paths = std::collections::BTreeSet::new();
        for e in &entries {
            paths.insert(e.path.clone());
            if let Some(p2) = &e.path2 {
                paths.insert(p2.clone());
            }
        }
        let time = rfc3339(SystemTime::now());
        for p in paths {
            let mut line =
                json!({ "kind": "sealed", "time": time, "state": state_json(path_of(&p)) });
            put_path(&mut line, "path", &p);
            if let Err(e) = self.write(&line) {
                tracing::warn!("quarantine {}: writing the seal: {e}", self.dir.display());
                return;
            }
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn ensure(&mut self) -> io::Result<()> {
        if self.manifest.is_some() {
            return Ok(());
        }
        fs::create_dir_all(self.dir.join("data"))?;
        fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))?;
        let path = self.dir.join(MANIFEST);
        let fresh = !path.exists();
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
        if fresh {
            let line = json!({
                "kind": "run",
                "run_id": self.run_id,
                "trace": self.trace.to_string_lossy(),
                "workspace": self.workspace.to_string_lossy(),
                "created": rfc3339(SystemTime::now()),
            });
            f.write_all(format!("{line}\n").as_bytes())?;
        } else {
            // Continue numbering after an earlier run that used this dir.
            let old = read_manifest(&self.dir).unwrap_or_default();
            self.next_id = old.iter().map(|e| e.id).max().unwrap_or(0) + 1;
            self.used = old.iter().map(Entry::kept_bytes).sum();
        }
        self.manifest = Some(f);
        Ok(())
    }

    fn entry(&mut self, a: &Action, rule: &str, kind: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut e = json!({
            "id": id,
            "kind": kind,
            "time": rfc3339(SystemTime::now()),
            "op": a.op,
            "syscall": a.syscall,
            "rule": rule,
            "pid": a.pid,
            "comm": a.comm,
        });
        // The caller's own view, when it has its own root (rootview).
        if let Some(c) = &a.container_path {
            e["container_path"] = json!(c);
        }
        e
    }

    fn write(&mut self, e: &Value) -> io::Result<()> {
        let f = self.manifest.as_mut().expect("ensured");
        f.write_all(format!("{e}\n").as_bytes())
    }

    /// Keeps what the action would destroy; returns the manifest entries
    /// written (empty: nothing to keep). An error means nothing could be
    /// kept: the caller refuses the call.
    pub fn preserve(&mut self, a: &Action, rule: &str) -> io::Result<Vec<Value>> {
        let Some(op) = a.op else { return Ok(vec![]) };
        let Some(path) = exact(&a.path, &a.path_b64) else {
            return Ok(vec![]);
        };
        let mut out = Vec::new();
        match op {
            Op::Unlink => {
                let Ok(m) = fs::symlink_metadata(path_of(&path)) else {
                    return Ok(out);
                };
                if m.is_dir() {
                    return Ok(out);
                }
                self.ensure()?;
                out.push(self.keep_entry(a, rule, &path, &m)?);
            }
            Op::Rmdir => {
                let Ok(m) = fs::symlink_metadata(path_of(&path)) else {
                    return Ok(out);
                };
                if !m.is_dir() {
                    return Ok(out);
                }
                let empty = fs::read_dir(path_of(&path)).map(|mut d| d.next().is_none());
                if matches!(empty, Ok(false)) {
                    return Ok(out); // ENOTEMPTY: the call will fail
                }
                self.ensure()?;
                let mut e = self.entry(a, rule, "dir");
                put_path(&mut e, "path", &path);
                e["meta"] = meta_json(&m);
                e["method"] = json!("none");
                self.write(&e)?;
                out.push(e);
            }
            Op::Rename => {
                let Some(dst) = exact(&a.path2, &a.path2_b64) else {
                    return Ok(out);
                };
                let Ok(src_meta) = fs::symlink_metadata(path_of(&path)) else {
                    return Ok(out);
                };
                let dst_exists = fs::symlink_metadata(path_of(&dst)).is_ok();
                if a.flags & RENAME_NOREPLACE != 0 && dst_exists {
                    return Ok(out); // EEXIST: the call will fail
                }
                self.ensure()?;
                if a.flags & RENAME_EXCHANGE == 0 && a.flags & RENAME_NOREPLACE == 0 {
                    if let Ok(dm) = fs::symlink_metadata(path_of(&dst)) {
                        if dm.is_dir() {
                            let mut e = self.entry(a, rule, "dir");
                            put_path(&mut e, "path", &dst);
                            e["meta"] = meta_json(&dm);
                            e["method"] = json!("none");
                            self.write(&e)?;
                            out.push(e);
                        } else {
                            out.push(self.keep_entry(a, rule, &dst, &dm)?);
                        }
                    }
                }
                let kind = if a.flags & RENAME_EXCHANGE != 0 {
                    "exchange"
                } else {
                    "rename"
                };
                let mut e = self.entry(a, rule, kind);
                put_path(&mut e, "path", &path);
                put_path(&mut e, "path2", &dst);
                e["meta"] = meta_json(&src_meta);
                e["method"] = json!("none");
                self.write(&e)?;
                out.push(e);
            }
            Op::Truncate | Op::Write => {
                // Opens and truncate follow symlinks; ftruncate acts on the
                // open file (read through /proc so a renamed or deleted file
                // is still found).
                let fd_based = a.syscall == "ftruncate";
                let source: PathBuf = if fd_based {
                    PathBuf::from(format!("/proc/{}/fd/{}", a.tid, a.fd.unwrap_or(-1)))
                } else {
                    path_of(&path).to_path_buf()
                };
                let Ok(m) = fs::metadata(&source) else {
                    if !fd_based && !a.syscall.contains("truncate") && a.flags & O_CREAT != 0 {
                        // The open creates the file: nothing to keep, but undo
                        // must know the action made it.
                        self.ensure()?;
                        let mut e = self.entry(a, rule, "created");
                        put_path(&mut e, "path", &path);
                        e["method"] = json!("none");
                        self.write(&e)?;
                        out.push(e);
                    }
                    return Ok(out);
                };
                if !m.is_file() || m.len() == 0 {
                    return Ok(out);
                }
                if a.syscall.contains("truncate") && a.flags >= m.len() {
                    return Ok(out); // growing: nothing is lost
                }
                let real = if fd_based {
                    path.clone()
                } else {
                    fs::canonicalize(&source)
                        .map(|p| bytes_of(&p).to_vec())
                        .unwrap_or(path.clone())
                };
                self.ensure()?;
                if let Some(how) = already_recoverable(path_of(&real), &m) {
                    out.push(self.recoverable_entry(a, rule, &real, &m, how)?);
                    return Ok(out);
                }
                // Unchanged since its last copy (a write open, then
                // ftruncate): share that copy instead of copying again.
                let key = (m.dev(), m.ino());
                let (mtime_ns, ctime_ns) = (
                    m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
                    m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
                );
                let unchanged = self.copies.get(&key).cloned().filter(|c| {
                    c.size == m.len()
                        && c.mtime_ns == mtime_ns
                        && c.ctime_ns == ctime_ns
                        && (m.len() > HASH_LIMIT || c.sha == hash_file(&source).ok())
                });
                let mut e = self.entry(a, rule, "file");
                let id = e["id"].as_u64().unwrap_or(0);
                let rel = format!("data/{id:06}");
                let shared = unchanged
                    .filter(|c| fs::hard_link(self.dir.join(&c.rel), self.dir.join(&rel)).is_ok());
                let (method, sha) = match &shared {
                    Some(c) => {
                        e["shares"] = json!(c.rel);
                        ("hardlink", c.sha.clone())
                    }
                    None => {
                        self.reserve(&real, m.len())?;
                        copy_file(&source, &self.dir.join(&rel), &m)?
                    }
                };
                self.copies.insert(
                    key,
                    Copy {
                        rel: rel.clone(),
                        size: m.len(),
                        mtime_ns,
                        ctime_ns,
                        sha: sha.clone(),
                    },
                );
                put_path(&mut e, "path", &real);
                e["quarantine"] = json!(rel);
                e["method"] = json!(method);
                e["meta"] = meta_json(&m);
                if let Some(h) = sha {
                    e["sha256"] = json!(h);
                }
                self.write(&e)?;
                out.push(e);
            }
            Op::Chmod | Op::Chown => {
                let fd_based = a.syscall == "fchmod" || a.syscall == "fchown";
                let source: PathBuf = if fd_based {
                    PathBuf::from(format!("/proc/{}/fd/{}", a.tid, a.fd.unwrap_or(-1)))
                } else {
                    path_of(&path).to_path_buf()
                };
                let nofollow = a.syscall == "lchown" || a.flags & AT_SYMLINK_NOFOLLOW != 0;
                let m = if nofollow {
                    fs::symlink_metadata(&source)
                } else {
                    fs::metadata(&source)
                };
                let Ok(m) = m else { return Ok(out) };
                let real = if nofollow || fd_based {
                    path.clone()
                } else {
                    fs::canonicalize(&source)
                        .map(|p| bytes_of(&p).to_vec())
                        .unwrap_or(path.clone())
                };
                self.ensure()?;
                let mut e = self.entry(a, rule, "metadata");
                put_path(&mut e, "path", &real);
                e["meta"] = meta_json(&m);
                e["method"] = json!("none");
                e["nofollow"] = json!(nofollow);
                self.write(&e)?;
                out.push(e);
            }
            // New names fail on an existing one (EEXIST); times, attributes
            // and inode flags destroy no content: nothing to keep.
            Op::Link | Op::Symlink | Op::Utimes | Op::Xattr | Op::Setflags => {}
            Op::Exec | Op::Fork | Op::Exit | Op::IoUringSetup | Op::CompatSyscall | Op::Read => {}
        }
        Ok(out)
    }

    /// Keeps a file (or symlink, or special file) that is about to go away.
    fn keep_entry(
        &mut self,
        a: &Action,
        rule: &str,
        path: &[u8],
        m: &fs::Metadata,
    ) -> io::Result<Value> {
        if m.is_file() {
            if let Some(how) = already_recoverable(path_of(path), m) {
                return self.recoverable_entry(a, rule, path, m, how);
            }
            self.reserve(path, m.len())?;
        }
        let mut e = self.entry(a, rule, "file");
        let id = e["id"].as_u64().unwrap_or(0);
        let rel = format!("data/{id:06}");
        let dest = self.dir.join(&rel);
        let src = path_of(path);
        let (method, sha) = if m.file_type().is_file() || m.file_type().is_symlink() {
            match fs::hard_link(src, &dest) {
                // link(2) does not follow a symlink: the link itself is kept.
                Ok(()) => (
                    "hardlink",
                    if m.is_file() && m.len() <= HASH_LIMIT {
                        hash_file(&dest).ok()
                    } else {
                        None
                    },
                ),
                Err(err)
                    if matches!(
                        err.raw_os_error(),
                        Some(libc::EXDEV) | Some(libc::EPERM) | Some(libc::EMLINK)
                    ) =>
                {
                    if m.file_type().is_symlink() {
                        std::os::unix::fs::symlink(fs::read_link(src)?, &dest)?;
                        ("copy", None)
                    } else {
                        copy_file(src, &dest, m)?
                    }
                }
                Err(err) => return Err(err),
            }
        } else {
            // FIFOs, sockets, devices: nothing to copy; undo recreates
            // FIFOs and reports the others.
            ("none", None)
        };
        put_path(&mut e, "path", path);
        if method != "none" {
            e["quarantine"] = json!(rel);
        }
        e["method"] = json!(method);
        e["meta"] = meta_json(m);
        if let Some(h) = sha {
            e["sha256"] = json!(h);
        }
        self.write(&e)?;
        Ok(e)
    }
}

impl Quarantine {
    /// A file that can be recovered without a copy: described, not kept.
    fn recoverable_entry(
        &mut self,
        a: &Action,
        rule: &str,
        path: &[u8],
        m: &fs::Metadata,
        (how, git): (String, Value),
    ) -> io::Result<Value> {
        let mut e = self.entry(a, rule, "recoverable");
        put_path(&mut e, "path", path);
        e["method"] = json!("git");
        e["meta"] = meta_json(m);
        e["recover"] = json!(how);
        e["git"] = git;
        self.write(&e)?;
        Ok(e)
    }
}

pub fn hash_file(p: &Path) -> io::Result<String> {
    let mut f = File::open(p)?;
    let mut h = Sha256::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Copies a regular file with its mode, owner and times: a reflink when
/// the file systems can share extents, else a full copy. Returns the
/// method and, for small files, the sha256 of the content.
pub fn copy_file(
    src: &Path,
    dest: &Path,
    m: &fs::Metadata,
) -> io::Result<(&'static str, Option<String>)> {
    let mut from = File::open(src)?;
    let mut to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)?;
    use std::os::fd::AsRawFd as _;
    // SAFETY: FICLONE takes the source fd by value.
    let cloned = unsafe { libc::ioctl(to.as_raw_fd(), FICLONE, from.as_raw_fd()) } == 0;
    let method = if cloned {
        "reflink"
    } else {
        io::copy(&mut from, &mut to)?;
        "copy"
    };
    set_meta(&to, m)?;
    drop(to);
    let sha = if m.len() <= HASH_LIMIT {
        hash_file(dest).ok()
    } else {
        None
    };
    Ok((method, sha))
}

/// Applies mode, owner and times to an open file.
pub fn set_meta(f: &File, m: &fs::Metadata) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let fd = f.as_raw_fd();
    // SAFETY: plain syscalls on an open fd.
    unsafe {
        let _ = libc::fchown(fd, m.uid(), m.gid());
        if libc::fchmod(fd, m.mode() & 0o7777) != 0 {
            return Err(io::Error::last_os_error());
        }
        let ts = [
            libc::timespec {
                tv_sec: m.atime(),
                tv_nsec: m.atime_nsec(),
            },
            libc::timespec {
                tv_sec: m.mtime(),
                tv_nsec: m.mtime_nsec(),
            },
        ];
        libc::futimens(fd, ts.as_ptr());
    }
    Ok(())
}

pub use super::manifest::{read_manifest, read_run, read_seals, Entry};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_refuse_garbage() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("2KiB"), Ok(2048));
        assert_eq!(
            parse_size("lots").unwrap_err().to_string(),
            r#""lots": expected a size such as 500M, 4G or 1048576"#
        );
        assert_eq!(
            parse_size("3X").unwrap_err().to_string(),
            r#""3X": unknown unit "X" (use K, M, G or T)"#
        );
        assert_eq!(
            parse_size("99999999999T").unwrap_err().to_string(),
            r#""99999999999T": too large"#
        );
    }
}
