//! The steps of `abm undo`: for one manifest entry, check that what is at
//! its path(s) now is what the run (or an earlier undo) left there, then
//! put back what the entry kept. Every step works on an overlay of the
//! file system so that `--dry-run` predicts later steps correctly.
//!
//! Nothing is ever deleted: whatever a step has to move out of the way
//! (the action's own output, or with `--force` a later change) goes to the
//! quarantine's `displaced/` directory, and the step says where.
use std::{
    collections::{HashMap, HashSet},
    ffi::{CString, OsStr},
    fs, io,
    os::unix::{
        ffi::OsStrExt,
        fs::{MetadataExt, PermissionsExt},
    },
    path::{Path, PathBuf},
    time::SystemTime,
};

use serde_json::Value;

use super::preserve::{copy_file, hash_file, Entry};

pub fn path_of(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}

pub fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What is at a path, as far as undo compares it (ctime and link count
/// are left out: the quarantine's own hard links change them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct St {
    pub typ: String,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl St {
    pub fn of(m: &fs::Metadata) -> St {
        let t = m.file_type();
        St {
            typ: if t.is_file() {
                "file"
            } else if t.is_dir() {
                "dir"
            } else if t.is_symlink() {
                "symlink"
            } else {
                "other"
            }
            .into(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        }
    }

    /// From a `meta` or sealed `state` object; `None` for `null` (absent).
    pub fn from_json(v: &Value) -> Option<St> {
        if v.is_null() {
            return None;
        }
        Some(St {
            typ: v["type"].as_str().unwrap_or("?").into(),
            dev: v["dev"].as_u64().unwrap_or(0),
            ino: v["ino"].as_u64().unwrap_or(0),
            size: v["size"].as_u64().unwrap_or(0),
            mtime_ns: v["mtime_ns"].as_i64().map(i128::from).unwrap_or(0),
            mode: v["mode"].as_u64().unwrap_or(0) as u32,
            uid: v["uid"].as_u64().unwrap_or(0) as u32,
            gid: v["gid"].as_u64().unwrap_or(0) as u32,
        })
    }
}

/// Why `now` is not `then`, in words; `None` when they match.
pub fn difference(then: &Option<St>, now: &Option<St>) -> Option<String> {
    match (then, now) {
        (None, None) => None,
        (None, Some(n)) => Some(format!("a {} was created there", n.typ)),
        (Some(t), None) => Some(format!("the {} was removed", t.typ)),
        (Some(t), Some(n)) => {
            if (t.dev, t.ino) != (n.dev, n.ino) {
                return Some(format!("it was replaced by another {}", n.typ));
            }
            let mut d = Vec::new();
            if t.size != n.size {
                d.push(format!("size {} -> {}", t.size, n.size));
            }
            if t.mtime_ns != n.mtime_ns {
                d.push("modification time changed".to_owned());
            }
            if t.mode != n.mode {
                d.push(format!("mode {:o} -> {:o}", t.mode, n.mode));
            }
            if (t.uid, t.gid) != (n.uid, n.gid) {
                d.push(format!("owner {}:{} -> {}:{}", t.uid, t.gid, n.uid, n.gid));
            }
            (!d.is_empty()).then(|| format!("it was modified ({})", d.join(", ")))
        }
    }
}

/// The outcome of one step.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Done (or, in a dry run, would be done): what happened.
    Restored(String),
    /// Already as the entry describes.
    Present,
    /// Nothing to do, and no problem: why.
    Skipped(String),
    /// Not done: what is in the way and why; `--force` would proceed.
    Conflict(String),
    /// Not done, and `--force` cannot help.
    Failed(String),
}

impl Outcome {
    pub fn is_problem(&self) -> bool {
        matches!(self, Outcome::Conflict(_) | Outcome::Failed(_))
    }
}

/// Where the state a path should have now comes from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// The `sealed` state at the end of the run.
    Run,
    /// What an earlier `abm undo` left (its time).
    Undo(String),
}

/// The file system as the steps see it: the real one, overlaid with what
/// earlier steps of this invocation did (or, in a dry run, would do).
pub struct World<'a> {
    pub dir: &'a Path,
    pub dry_run: bool,
    pub force: bool,
    overlay: HashMap<Vec<u8>, Option<St>>,
    /// Paths an earlier step of this invocation wrote: their state is ours.
    touched: HashSet<Vec<u8>>,
    /// What each path should hold if nobody changed it since the run (or
    /// the last undo).
    expected: HashMap<Vec<u8>, (Option<St>, Origin)>,
    /// Directories to fix up (mode, owner, times) at the end.
    dir_fixes: Vec<(PathBuf, Value)>,
    /// Per step: the paths it wrote and their states (restored.jsonl).
    pub left: Vec<(Vec<u8>, Option<St>)>,
}

impl<'a> World<'a> {
    pub fn new(
        dir: &'a Path,
        dry_run: bool,
        force: bool,
        expected: HashMap<Vec<u8>, (Option<St>, Origin)>,
    ) -> World<'a> {
        World {
            dir,
            dry_run,
            force,
            overlay: HashMap::new(),
            touched: HashSet::new(),
            expected,
            dir_fixes: Vec::new(),
            left: Vec::new(),
        }
    }

    pub fn state(&self, p: &[u8]) -> Option<St> {
        if let Some(s) = self.overlay.get(p) {
            return s.clone();
        }
        fs::symlink_metadata(path_of(p)).ok().map(|m| St::of(&m))
    }

    fn set(&mut self, p: &[u8], s: Option<St>) {
        self.overlay.insert(p.to_vec(), s.clone());
        self.touched.insert(p.to_vec());
        self.left.push((p.to_vec(), s));
    }

    /// Whether `p` changed since the run (or the last undo) left it: the
    /// reason when it did. Paths this invocation already wrote are ours.
    pub fn changed_since(&self, p: &[u8]) -> Option<String> {
        if self.touched.contains(p) {
            return None;
        }
        let (then, origin) = self.expected.get(p)?;
        let why = difference(then, &self.state(p))?;
        Some(match origin {
            Origin::Run => format!("{} changed after the run ended: {why}", show(p)),
            Origin::Undo(t) => format!(
                "{} changed after `abm undo` restored it at {t}: {why}",
                show(p)
            ),
        })
    }

    /// Moves what is at `p` into displaced/; returns where it went.
    pub fn displace(&mut self, id: u64, p: &[u8]) -> io::Result<PathBuf> {
        let d = self.dir.join("displaced");
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let to = d.join(format!("{id:06}-{stamp}"));
        if !self.dry_run {
            fs::create_dir_all(&d)?;
            let src = path_of(p);
            match fs::rename(src, &to) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                    let m = fs::symlink_metadata(src)?;
                    if m.file_type().is_symlink() {
                        std::os::unix::fs::symlink(fs::read_link(src)?, &to)?;
                    } else if m.is_file() {
                        copy_file(src, &to, &m)?;
                    } else {
                        return Err(io::Error::other(
                            "cannot move a directory aside across file systems",
                        ));
                    }
                    fs::remove_file(src)?;
                }
                Err(e) => return Err(e),
            }
        }
        self.set(p, None);
        Ok(to)
    }

    /// Creates the missing parents of `p` (recorded modes applied at the end).
    fn make_parents(&mut self, p: &[u8], entries: &[Entry]) -> io::Result<()> {
        let Some(parent) = path_of(p).parent() else {
            return Ok(());
        };
        let pb = parent.as_os_str().as_bytes().to_vec();
        if pb.is_empty() || self.state(&pb).is_some() {
            return Ok(());
        }
        self.make_parents(&pb, entries)?;
        if !self.dry_run {
            fs::create_dir(parent).or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        }
        let st = fs::symlink_metadata(parent).ok().map(|m| St::of(&m));
        self.set(&pb, st.or(Some(placeholder_dir())));
        if let Some(d) = entries
            .iter()
            .rev()
            .find(|e| e.kind == "dir" && e.path == pb)
        {
            self.dir_fixes.push((parent.to_path_buf(), d.meta.clone()));
        }
        Ok(())
    }

    /// Applies recorded directory modes, owners and times, deepest first.
    pub fn finish(&mut self) {
        if self.dry_run {
            return;
        }
        self.dir_fixes
            .sort_by_key(|(p, _)| std::cmp::Reverse(p.as_os_str().len()));
        for (p, m) in &self.dir_fixes {
            apply_meta(p, m, false);
        }
    }

    /// Undoes one entry. `temp_rename`: a rename whose source the same
    /// action created (undone by removing its result, not by renaming it
    /// back). `remove_created`: remove files the action created.
    pub fn step(
        &mut self,
        e: &Entry,
        entries: &[Entry],
        temp_rename: bool,
        remove_created: bool,
    ) -> io::Result<Outcome> {
        self.left.clear();
        match e.kind.as_str() {
            "created" if !remove_created => {
                return Ok(Outcome::Skipped(
                    "the action created this file; kept (--remove-created removes it)".into(),
                ))
            }
            "created" if self.state(&e.path).is_none() => {
                return Ok(Outcome::Skipped("created by the action, gone since".into()))
            }
            "recoverable" if e.raw["git"].is_null() => {
                return Ok(Outcome::Skipped(format!(
                    "not kept: {}",
                    e.raw["recover"].as_str().unwrap_or("recoverable elsewhere")
                )))
            }
            _ => {}
        }
        let force = self.force;
        // What changed since the run at the entry's paths: a conflict
        // unless --force (which moves it aside).
        let mut forced = Vec::new();
        for p in std::iter::once(&e.path).chain(e.path2.iter()) {
            if let Some(why) = self.changed_since(p) {
                if !force {
                    return Ok(Outcome::Conflict(format!(
                        "{why}; undoing would overwrite that change (--force moves it into {}/displaced/ first)",
                        self.dir.display()
                    )));
                }
                forced.push(why);
            }
        }
        let forced = if forced.is_empty() {
            String::new()
        } else {
            format!(" (forced: {})", forced.join("; "))
        };
        let p = e.path.clone();
        let out = match e.kind.as_str() {
            "dir" => match self.state(&p) {
                Some(s) if s.typ == "dir" => Outcome::Present,
                Some(s) => self.occupied(e, &s, "a directory")?,
                None => Outcome::Restored(String::new()),
            },
            "file" => self.file(e)?,
            "recoverable" => self.blob_target(e)?,
            "rename" | "exchange" => return self.rename(e, entries, temp_rename, &forced),
            "metadata" => self.metadata(e)?,
            "created" => {
                let to = self.displace(e.id, &p)?;
                return Ok(Outcome::Restored(format!(
                    "removed the file the action created (kept in {}){forced}",
                    to.display()
                )));
            }
            other => Outcome::Failed(format!("unknown entry kind `{other}`")),
        };
        // Finish dir and file restores (the checks above passed).
        let out = match out {
            Outcome::Restored(note) if e.kind == "dir" => {
                self.make_parents(&p, entries)?;
                if !self.dry_run {
                    fs::create_dir(path_of(&p))?;
                    fs::set_permissions(path_of(&p), fs::Permissions::from_mode(0o700))?;
                }
                self.set(&p, Some(placeholder_dir()));
                self.dir_fixes
                    .push((path_of(&p).to_path_buf(), e.meta.clone()));
                Outcome::Restored(format!("directory recreated{note}{forced}"))
            }
            Outcome::Restored(note) if e.kind == "file" => {
                let how = self.put_back(e, entries)?;
                Outcome::Restored(format!("{how}{note}{forced}"))
            }
            Outcome::Restored(note) if e.kind == "recoverable" => {
                match self.restore_from_git(e, entries)? {
                    Ok(how) => Outcome::Restored(format!("{how}{note}{forced}")),
                    Err(why) => Outcome::Failed(why.to_string()),
                }
            }
            o => o,
        };
        Ok(out)
    }

    /// `p` is occupied by `s`, where the entry wants something else:
    /// under --force it is moved aside (`Restored` with a note: go on),
    /// else a conflict.
    fn occupied(&mut self, e: &Entry, s: &St, want: &str) -> io::Result<Outcome> {
        if !self.force {
            return Ok(Outcome::Conflict(format!(
                "{} is occupied by a {} that is not {want}; undoing would overwrite it (--force moves it into {}/displaced/ first)",
                show(&e.path),
                s.typ,
                self.dir.display()
            )));
        }
        let to = self.displace(e.id, &e.path)?;
        Ok(Outcome::Restored(format!(
            "; what occupied the path is kept in {}",
            to.display()
        )))
    }

    fn file(&mut self, e: &Entry) -> io::Result<Outcome> {
        let Some(q) = &e.quarantine else {
            return Ok(Outcome::Failed(format!(
                "{} file: its content was not kept",
                e.meta["type"].as_str().unwrap_or("special")
            )));
        };
        let q = self.dir.join(q);
        if fs::symlink_metadata(&q).is_err() {
            return Ok(Outcome::Failed(format!(
                "{} is missing from the quarantine",
                q.display()
            )));
        }
        self.make_room(e, |p| same_content(p, &q), "the kept file")
    }

    /// The path an entry's content goes back to: free (`Restored`), already
    /// holding that content (`same`: `Present`), the action's own version
    /// of a file it overwrote in place (moved aside), or occupied.
    fn make_room(
        &mut self,
        e: &Entry,
        same: impl FnOnce(&Path) -> bool,
        want: &str,
    ) -> io::Result<Outcome> {
        let Some(now) = self.state(&e.path) else {
            return Ok(Outcome::Restored(String::new()));
        };
        let real = !self.dry_run || !self.touched.contains(&e.path);
        if real && same(path_of(&e.path)) {
            return Ok(Outcome::Present);
        }
        // The action overwrote the file in place (truncate, write open):
        // what is there is the action's own version; move it aside.
        if matches!(e.op(), "truncate" | "write") {
            let to = self.displace(e.id, &e.path)?;
            return Ok(Outcome::Restored(format!(
                "; the action's version is kept in {}",
                to.display()
            )));
        }
        self.occupied(e, &now, want)
    }

    /// A `recoverable` entry's path: free, already the blob's content, or
    /// occupied (as for a kept file).
    fn blob_target(&mut self, e: &Entry) -> io::Result<Outcome> {
        let blob = e.raw["git"]["blob"].as_str().unwrap_or("");
        let same = |p: &Path| {
            crate::action::git::file_blob_id(p, u64::MAX).is_some_and(|id| hex::encode(id) == blob)
        };
        self.make_room(e, same, "the file's git blob")
    }

    /// Writes a `recoverable` entry's git blob back to its path, with the
    /// file's mode. `Err` when the blob cannot be read any more (the
    /// repository was removed and not restored first).
    fn restore_from_git(
        &mut self,
        e: &Entry,
        entries: &[Entry],
    ) -> io::Result<Result<String, BlobUnreadable>> {
        let git_dir = e.raw["git"]["git_dir"].as_str().unwrap_or("");
        let blob = e.raw["git"]["blob"].as_str().unwrap_or("");
        if self.dry_run {
            return Ok(Ok(format!("would be written back from git blob {blob}")));
        }
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .args(["cat-file", "blob", blob])
            .output();
        let content = match out {
            Ok(o) if o.status.success() => o.stdout,
            Ok(o) => {
                return Ok(Err(BlobUnreadable::Git {
                    blob: blob.to_owned(),
                    git_dir: git_dir.to_owned(),
                    stderr: String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                }))
            }
            Err(source) => {
                return Ok(Err(BlobUnreadable::NoGit {
                    blob: blob.to_owned(),
                    source,
                }))
            }
        };
        self.make_parents(&e.path, entries)?;
        let dest = path_of(&e.path);
        fs::write(dest, content)?;
        if let Some(mode) = e.meta["mode"].as_u64() {
            fs::set_permissions(dest, fs::Permissions::from_mode(mode as u32 & 0o7777))?;
        }
        let st = fs::symlink_metadata(dest).ok().map(|m| St::of(&m));
        self.set(&e.path, st);
        Ok(Ok(format!("written back from git blob {blob}")))
    }

    /// Moves (or copies) the kept file back to its path.
    fn put_back(&mut self, e: &Entry, entries: &[Entry]) -> io::Result<String> {
        let q = self.dir.join(e.quarantine.as_deref().unwrap_or(""));
        self.make_parents(&e.path, entries)?;
        let dest = path_of(&e.path);
        let qm = fs::symlink_metadata(&q)?;
        let how = if self.dry_run {
            "would be put back from the quarantine"
        } else {
            match fs::rename(&q, dest) {
                Ok(()) => "moved back from the quarantine",
                Err(err) if err.raw_os_error() == Some(libc::EXDEV) => {
                    if qm.file_type().is_symlink() {
                        std::os::unix::fs::symlink(fs::read_link(&q)?, dest)?;
                    } else {
                        copy_file(&q, dest, &qm)?;
                    }
                    "copied back from the quarantine"
                }
                Err(err) => return Err(err),
            }
        };
        let st = fs::symlink_metadata(dest)
            .ok()
            .map(|m| St::of(&m))
            .or_else(|| Some(St::of(&qm)));
        self.set(&e.path, st);
        Ok(how.to_owned())
    }

    fn rename(
        &mut self,
        e: &Entry,
        entries: &[Entry],
        temp: bool,
        forced: &str,
    ) -> io::Result<Outcome> {
        let Some(p2) = e.path2.clone() else {
            return Ok(Outcome::Failed("no destination recorded".into()));
        };
        let Some(now) = self.state(&p2) else {
            return Ok(Outcome::Failed(format!(
                "{} (where it was renamed to) is gone: nothing to move back",
                show(&p2)
            )));
        };
        let (dev, ino) = (e.meta["dev"].as_u64(), e.meta["ino"].as_u64());
        let moved = dev != Some(now.dev) || ino != Some(now.ino);
        if moved && temp && self.force {
            let to = self.displace(e.id, &p2)?;
            return Ok(Outcome::Restored(format!(
                "{} holds a later version, not the action's result; kept in {}{forced}",
                show(&p2),
                to.display()
            )));
        }
        if moved {
            return Ok(Outcome::Failed(format!(
                "{} holds a different file now: the renamed file is no longer there",
                show(&p2)
            )));
        }
        if temp {
            let to = self.displace(e.id, &p2)?;
            return Ok(Outcome::Restored(format!(
                "the action wrote {} through a temporary file; its result is kept in {}{forced}",
                show(&p2),
                to.display()
            )));
        }
        if e.kind == "exchange" {
            if !self.dry_run {
                let a = CString::new(p2.clone()).unwrap_or_default();
                let b = CString::new(e.path.clone()).unwrap_or_default();
                // SAFETY: valid C strings.
                let r = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                if r != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let (s1, s2) = (self.state(&e.path), self.state(&p2));
            self.set(&e.path, s2);
            self.set(&p2, s1);
            return Ok(Outcome::Restored(format!(
                "exchanged back with {}{forced}",
                show(&p2)
            )));
        }
        let mut note = String::new();
        if let Some(s) = self.state(&e.path) {
            if !self.force {
                return Ok(Outcome::Conflict(format!(
                    "the original name is occupied by a {}; undoing would overwrite it (--force moves it into {}/displaced/ first)",
                    s.typ,
                    self.dir.display()
                )));
            }
            let to = self.displace(e.id, &e.path)?;
            note = format!(
                "; what occupied the original name is kept in {}",
                to.display()
            );
        }
        self.make_parents(&e.path, entries)?;
        if !self.dry_run {
            fs::rename(path_of(&p2), path_of(&e.path))?;
        }
        self.set(&e.path, Some(now));
        self.set(&p2, None);
        Ok(Outcome::Restored(format!(
            "renamed back from {}{note}{forced}",
            show(&p2)
        )))
    }

    fn metadata(&mut self, e: &Entry) -> io::Result<Outcome> {
        let Some(now) = self.state(&e.path) else {
            return Ok(Outcome::Failed("the file is gone".into()));
        };
        if e.meta["ino"].as_u64() != Some(now.ino) || e.meta["dev"].as_u64() != Some(now.dev) {
            return Ok(Outcome::Failed(
                "a different file is at the path now".into(),
            ));
        }
        let nofollow = e.raw["nofollow"].as_bool().unwrap_or(false);
        if !self.dry_run {
            apply_meta(path_of(&e.path), &e.meta, nofollow);
        }
        let mut st = now;
        st.mode = e.meta["mode"].as_u64().unwrap_or(u64::from(st.mode)) as u32;
        st.uid = e.meta["uid"].as_u64().unwrap_or(u64::from(st.uid)) as u32;
        st.gid = e.meta["gid"].as_u64().unwrap_or(u64::from(st.gid)) as u32;
        if !self.dry_run {
            st = self.state(&e.path).unwrap_or(st);
        }
        self.set(&e.path, Some(st));
        Ok(Outcome::Restored(format!(
            "mode {:o}, owner {}:{}",
            e.meta["mode"].as_u64().unwrap_or(0),
            e.meta["uid"].as_u64().unwrap_or(0),
            e.meta["gid"].as_u64().unwrap_or(0)
        )))
    }
}

fn placeholder_dir() -> St {
    St {
        typ: "dir".into(),
        dev: 0,
        ino: 0,
        size: 0,
        mtime_ns: 0,
        mode: 0o700,
        uid: 0,
        gid: 0,
    }
}

/// Sets owner, mode (not through a symlink) and times from a `meta` object.
fn apply_meta(p: &Path, m: &Value, nofollow: bool) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap_or_default();
    if let (Some(uid), Some(gid)) = (m["uid"].as_u64(), m["gid"].as_u64()) {
        // SAFETY: valid C string.
        unsafe {
            if nofollow {
                libc::lchown(c.as_ptr(), uid as u32, gid as u32);
            } else {
                libc::chown(c.as_ptr(), uid as u32, gid as u32);
            }
        }
    }
    let is_link = fs::symlink_metadata(p).is_ok_and(|x| x.file_type().is_symlink());
    if let Some(mode) = m["mode"].as_u64() {
        if !(nofollow && is_link) {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode as u32));
        }
    }
    if m["type"] == "dir" && !m["mtime_ns"].is_null() {
        let ts = |k: &str| {
            let ns = m[k].as_i64().unwrap_or(0);
            libc::timespec {
                tv_sec: ns.div_euclid(1_000_000_000),
                tv_nsec: ns.rem_euclid(1_000_000_000),
            }
        };
        let t = [ts("atime_ns"), ts("mtime_ns")];
        // SAFETY: valid C string and timespec array.
        unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), 0) };
    }
}

/// Same inode, or same type, mode and bytes.
pub fn same_content(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (fs::symlink_metadata(a), fs::symlink_metadata(b)) else {
        return false;
    };
    if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
        return true;
    }
    if ma.file_type().is_symlink() && mb.file_type().is_symlink() {
        return fs::read_link(a).ok() == fs::read_link(b).ok();
    }
    if !ma.is_file()
        || !mb.is_file()
        || ma.len() != mb.len()
        || ma.mode() & 0o7777 != mb.mode() & 0o7777
    {
        return false;
    }
    if ma.len() <= 64 * 1024 {
        return fs::read(a).ok() == fs::read(b).ok();
    }
    matches!((hash_file(a), hash_file(b)), (Ok(x), Ok(y)) if x == y)
}

/// Why a `recoverable` entry's git blob cannot be read back.
#[derive(Debug, thiserror::Error)]
enum BlobUnreadable {
    #[error("git blob {blob} cannot be read from {git_dir}: {stderr}")]
    Git {
        blob: String,
        git_dir: String,
        stderr: String,
    },
    #[error("cannot run git to read blob {blob}: {source}")]
    NoGit { blob: String, source: io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(ino: u64, size: u64, mode: u32) -> Option<St> {
        Some(St {
            typ: "file".into(),
            dev: 1,
            ino,
            size,
            mtime_ns: 5,
            mode,
            uid: 0,
            gid: 0,
        })
    }

    #[test]
    fn differences_are_named() {
        assert_eq!(difference(&None, &None), None);
        assert_eq!(difference(&st(1, 2, 0o644), &st(1, 2, 0o644)), None);
        assert_eq!(
            difference(&None, &st(1, 2, 0o644)).unwrap(),
            "a file was created there"
        );
        assert_eq!(
            difference(&st(1, 2, 0o644), &None).unwrap(),
            "the file was removed"
        );
        assert_eq!(
            difference(&st(1, 2, 0o644), &st(9, 2, 0o644)).unwrap(),
            "it was replaced by another file"
        );
        assert_eq!(
            difference(&st(1, 2, 0o644), &st(1, 7, 0o600)).unwrap(),
            "it was modified (size 2 -> 7, mode 644 -> 600)"
        );
    }
}
