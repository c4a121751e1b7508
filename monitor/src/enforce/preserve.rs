//! `preserve`: before an allowed destructive call, keep what it would
//! destroy in a per-run quarantine directory, and describe it in a
//! manifest that `abm undo` reads.
//!
//! Layout of a quarantine directory (mode 0700):
//!
//! ```text
//! manifest.jsonl   one JSON object per line: a `run` line, then one entry per kept thing
//! data/000001      kept files, named by entry id
//! restored.jsonl   entries `abm undo` restored (written by undo)
//! ```
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
//! - exec: nothing (there is nothing to keep).
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
};

/// Files up to this size get a sha256 in the manifest.
const HASH_LIMIT: u64 = 64 * 1024;
const RENAME_NOREPLACE: u64 = 1;
const RENAME_EXCHANGE: u64 = 2;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const FICLONE: libc::c_ulong = 0x4004_9409;

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
}

fn bytes_of(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}

fn path_of(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}

/// The exact bytes of an action's path (from `_b64` when not UTF-8).
fn exact(s: &Option<String>, b64: &Option<String>) -> Option<Vec<u8>> {
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
            self.next_id = read_manifest(&self.dir)
                .map(|m| m.iter().map(|e| e.id).max().unwrap_or(0) + 1)
                .unwrap_or(1);
        }
        self.manifest = Some(f);
        Ok(())
    }

    fn entry(&mut self, a: &Action, rule: &str, kind: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        json!({
            "id": id,
            "kind": kind,
            "time": rfc3339(SystemTime::now()),
            "op": a.op,
            "syscall": a.syscall,
            "rule": rule,
            "pid": a.pid,
            "comm": a.comm,
        })
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
                let mut e = self.entry(a, rule, "file");
                let id = e["id"].as_u64().unwrap_or(0);
                let rel = format!("data/{id:06}");
                let (method, sha) = copy_file(&source, &self.dir.join(&rel), &m)?;
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
            Op::Exec | Op::Fork | Op::Exit | Op::IoUringSetup => {}
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

/// One manifest entry, parsed.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: u64,
    pub kind: String,
    pub path: Vec<u8>,
    pub path2: Option<Vec<u8>>,
    pub quarantine: Option<String>,
    pub method: String,
    pub meta: Value,
    pub raw: Value,
}

fn exact_of(v: &Value, key: &str) -> Option<Vec<u8>> {
    let s = v[key].as_str().map(str::to_owned);
    let b = v[format!("{key}_b64")].as_str().map(str::to_owned);
    exact(&s, &b)
}

/// Reads a quarantine's manifest (entries only, in id order).
pub fn read_manifest(dir: &Path) -> io::Result<Vec<Entry>> {
    let text = fs::read_to_string(dir.join(MANIFEST))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}:{}: {e}", dir.join(MANIFEST).display(), i + 1),
            )
        })?;
        if v["kind"] == "run" {
            continue;
        }
        let Some(id) = v["id"].as_u64() else { continue };
        out.push(Entry {
            id,
            kind: v["kind"].as_str().unwrap_or("").to_owned(),
            path: exact_of(&v, "path").unwrap_or_default(),
            path2: exact_of(&v, "path2"),
            quarantine: v["quarantine"].as_str().map(str::to_owned),
            method: v["method"].as_str().unwrap_or("").to_owned(),
            meta: v["meta"].clone(),
            raw: v,
        });
    }
    out.sort_by_key(|e| e.id);
    Ok(out)
}
