//! `abm undo RUN [--seq N]... [--all] [--force]`: restores what `preserve`
//! kept in a run's quarantine.
//!
//! RUN is a quarantine directory, a trace file (its header names the
//! quarantine) or a run id (the trace file name without its extension, looked up
//! under /var/lib/abm/quarantine/). Without `--seq` or `--all` the entries
//! are listed and nothing changes.
//!
//! Entries are undone newest first, so a removed tree comes back parents
//! first (`rm -rf` removes children first). A file whose path is occupied
//! by something else is a conflict: it is reported, not overwritten, and
//! the exit status is 1. `--force` moves the occupant into the quarantine's
//! `displaced/` directory first, so nothing is lost either way (this is how
//! a truncated or overwritten file gets its old content back).
use std::{
    collections::BTreeSet,
    ffi::OsStr,
    fs::{self, OpenOptions},
    io::{self, Read as _, Write as _},
    os::unix::{
        ffi::OsStrExt,
        fs::{MetadataExt, OpenOptionsExt as _, PermissionsExt},
    },
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use super::preserve::{read_manifest, Entry, MANIFEST, RESTORED};
use crate::core::rfc3339;

#[derive(Debug, clap::Args)]
pub struct UndoArgs {
    /// The run: a quarantine directory, a trace file, or a run id (the trace
    /// file name without its extension).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Restore this manifest entry (repeatable). Entry ids are listed by
    /// `abm undo RUN` and appear in the trace's enforcement notes.
    #[arg(long = "seq", value_name = "N")]
    pub seq: Vec<u64>,
    /// Restore every entry.
    #[arg(long, conflicts_with = "seq")]
    pub all: bool,
    /// When a path is occupied by something else, move the occupant into
    /// the quarantine's displaced/ directory and restore anyway.
    #[arg(long)]
    pub force: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Finds the quarantine directory of RUN.
pub fn locate(run: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(run);
    if p.is_dir() {
        if p.join(MANIFEST).is_file() {
            return Ok(p.to_path_buf());
        }
        bail!("{run}: not a quarantine directory (no {MANIFEST}; nothing was preserved?)");
    }
    if p.is_file() {
        let header =
            crate::trace::read_header(p).with_context(|| format!("{run}: not a trace file"))?;
        let extra = Value::Object(header.header.extra);
        let Some(q) = extra["enforcement"]["quarantine"].as_str() else {
            bail!("{run}: this trace's run did not enforce (no quarantine in its header)");
        };
        let q = PathBuf::from(q);
        if !q.join(MANIFEST).is_file() {
            bail!(
                "{}: nothing was preserved in this run (no manifest)",
                q.display()
            );
        }
        return Ok(q);
    }
    let q = super::default_quarantine_root().join(run);
    if q.join(MANIFEST).is_file() {
        return Ok(q);
    }
    bail!("{run}: no such quarantine: give a quarantine directory, a trace file, or a run id found under {}", super::default_quarantine_root().display())
}

fn path_of(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

enum Outcome {
    Restored(String),
    Present,
    AlreadyRestored,
    Conflict(String),
    Failed(String),
}

/// Directories created by undo get their recorded mode, owner and times at
/// the end (children first), so a read-only directory can be refilled.
struct DirFix {
    path: PathBuf,
    meta: Value,
}

pub fn undo(a: UndoArgs) -> anyhow::Result<i32> {
    let dir = locate(&a.run)?;
    let entries =
        read_manifest(&dir).with_context(|| format!("reading {}", dir.join(MANIFEST).display()))?;
    let restored = read_restored(&dir);
    if !a.all && a.seq.is_empty() {
        list(&dir, &entries, &restored, a.json)?;
        return Ok(0);
    }
    let mut selected: Vec<&Entry> = if a.all {
        entries.iter().collect()
    } else {
        let mut v = Vec::new();
        for n in &a.seq {
            match entries.iter().find(|e| e.id == *n) {
                Some(e) => v.push(e),
                None => bail!("{}: no entry {n} (see `abm undo {}`)", dir.display(), a.run),
            }
        }
        v
    };
    selected.sort_by_key(|e| std::cmp::Reverse(e.id));
    selected.dedup_by_key(|e| e.id);
    let mut fixes = Vec::new();
    let mut results = Vec::new();
    let mut bad = 0;
    for e in selected {
        let out = if restored.contains(&e.id) {
            Outcome::AlreadyRestored
        } else {
            restore(&dir, e, &entries, a.force, &mut fixes)
                .unwrap_or_else(|err| Outcome::Failed(err.to_string()))
        };
        if matches!(out, Outcome::Restored(_) | Outcome::Present) {
            mark_restored(&dir, e.id)?;
        }
        if matches!(out, Outcome::Conflict(_) | Outcome::Failed(_)) {
            bad += 1;
        }
        results.push((e, out));
    }
    // Children before parents: longest paths first.
    fixes.sort_by_key(|f: &DirFix| std::cmp::Reverse(f.path.as_os_str().len()));
    for f in &fixes {
        apply_dir_meta(&f.path, &f.meta);
    }
    if a.json {
        let v: Vec<Value> = results
            .iter()
            .map(|(e, o)| {
                let (status, detail) = match o {
                    Outcome::Restored(d) => ("restored", d.clone()),
                    Outcome::Present => ("present", "already in place".into()),
                    Outcome::AlreadyRestored => ("already_restored", String::new()),
                    Outcome::Conflict(d) => ("conflict", d.clone()),
                    Outcome::Failed(d) => ("error", d.clone()),
                };
                json!({ "id": e.id, "kind": e.kind, "path": show(&e.path), "status": status, "detail": detail })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "quarantine": dir, "results": v, "problems": bad })
            )?
        );
    } else {
        for (e, o) in &results {
            let p = show(&e.path);
            match o {
                Outcome::Restored(d) => println!("restored  #{:<5} {:<8} {p} ({d})", e.id, e.kind),
                Outcome::Present => println!(
                    "present   #{:<5} {:<8} {p} (already in place)",
                    e.id, e.kind
                ),
                Outcome::AlreadyRestored => println!(
                    "skipped   #{:<5} {:<8} {p} (restored earlier)",
                    e.id, e.kind
                ),
                Outcome::Conflict(d) => println!("CONFLICT  #{:<5} {:<8} {p}: {d}", e.id, e.kind),
                Outcome::Failed(d) => println!("ERROR     #{:<5} {:<8} {p}: {d}", e.id, e.kind),
            }
        }
        if bad > 0 {
            eprintln!("abm: undo: {bad} entr{} not restored (conflicts are never overwritten; --force keeps the occupant in {}/displaced/ and restores)", if bad == 1 { "y" } else { "ies" }, dir.display());
        }
    }
    Ok(if bad > 0 { 1 } else { 0 })
}

fn list(
    dir: &Path,
    entries: &[Entry],
    restored: &BTreeSet<u64>,
    as_json: bool,
) -> anyhow::Result<()> {
    if as_json {
        let v: Vec<Value> = entries
            .iter()
            .map(|e| {
                let mut r = e.raw.clone();
                r["restored"] = json!(restored.contains(&e.id));
                r
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "quarantine": dir, "entries": v }))?
        );
        return Ok(());
    }
    println!("quarantine {} ({} entries)", dir.display(), entries.len());
    for e in entries {
        let mark = if restored.contains(&e.id) {
            " [restored]"
        } else {
            ""
        };
        let what = match &e.path2 {
            Some(p2) => format!("{} -> {}", show(&e.path), show(p2)),
            None => show(&e.path),
        };
        let size = e.meta["size"]
            .as_u64()
            .filter(|_| e.kind == "file")
            .map(|s| format!(", {s} bytes"))
            .unwrap_or_default();
        println!(
            "#{:<5} {:<8} {what} ({}{size}, {}){mark}",
            e.id,
            e.kind,
            e.method,
            e.raw["op"].as_str().unwrap_or("?")
        );
    }
    println!("restore with --seq N (repeatable) or --all");
    Ok(())
}

fn read_restored(dir: &Path) -> BTreeSet<u64> {
    fs::read_to_string(dir.join(RESTORED))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["id"].as_u64())
        .collect()
}

fn mark_restored(dir: &Path, id: u64) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join(RESTORED))?;
    f.write_all(
        format!(
            "{}\n",
            json!({ "id": id, "time": rfc3339(SystemTime::now()) })
        )
        .as_bytes(),
    )
}

fn same_file_content(a: &Path, b: &Path) -> bool {
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
    let (Ok(mut fa), Ok(mut fb)) = (fs::File::open(a), fs::File::open(b)) else {
        return false;
    };
    let mut ba = vec![0u8; 65536];
    let mut bb = vec![0u8; 65536];
    loop {
        let na = match read_full(&mut fa, &mut ba) {
            Ok(n) => n,
            Err(_) => return false,
        };
        let nb = match read_full(&mut fb, &mut bb) {
            Ok(n) => n,
            Err(_) => return false,
        };
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}

fn read_full(f: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let r = f.read(&mut buf[n..])?;
        if r == 0 {
            break;
        }
        n += r;
    }
    Ok(n)
}

/// Moves whatever occupies `p` into the quarantine's displaced/ directory.
fn displace(dir: &Path, id: u64, p: &Path) -> io::Result<PathBuf> {
    let d = dir.join("displaced");
    fs::create_dir_all(&d)?;
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let to = d.join(format!("{id:06}-{stamp}"));
    match fs::rename(p, &to) {
        Ok(()) => Ok(to),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            let m = fs::symlink_metadata(p)?;
            if m.file_type().is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(p)?, &to)?;
            } else if m.is_file() {
                super::preserve::copy_file(p, &to, &m)?;
            } else {
                return Err(io::Error::other(
                    "cannot displace a directory across file systems",
                ));
            }
            fs::remove_file(p)?;
            Ok(to)
        }
        Err(e) => Err(e),
    }
}

/// Creates missing parents of `p`, using recorded modes where the
/// manifest has the directory.
fn make_parents(p: &Path, entries: &[Entry], fixes: &mut Vec<DirFix>) -> io::Result<()> {
    let Some(parent) = p.parent() else {
        return Ok(());
    };
    if parent.as_os_str().is_empty() || parent.exists() {
        return Ok(());
    }
    make_parents(parent, entries, fixes)?;
    fs::create_dir(parent).or_else(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    if let Some(d) = entries
        .iter()
        .rev()
        .find(|e| e.kind == "dir" && path_of(&e.path) == parent)
    {
        fixes.push(DirFix {
            path: parent.to_path_buf(),
            meta: d.meta.clone(),
        });
    }
    Ok(())
}

fn apply_dir_meta(p: &Path, m: &Value) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap_or_default();
    if let (Some(uid), Some(gid)) = (m["uid"].as_u64(), m["gid"].as_u64()) {
        // SAFETY: valid C string.
        unsafe { libc::lchown(c.as_ptr(), uid as u32, gid as u32) };
    }
    if let Some(mode) = m["mode"].as_u64() {
        let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode as u32));
    }
    set_times(&c, m, 0);
}

fn set_times(c: &std::ffi::CStr, m: &Value, flags: i32) {
    let ts = |k: &str| {
        let ns = m[k].as_i64().unwrap_or(0);
        libc::timespec {
            tv_sec: ns.div_euclid(1_000_000_000),
            tv_nsec: ns.rem_euclid(1_000_000_000),
        }
    };
    if m["mtime_ns"].is_null() {
        return;
    }
    let t = [ts("atime_ns"), ts("mtime_ns")];
    // SAFETY: valid C string and timespec array.
    unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), flags) };
}

fn restore(
    dir: &Path,
    e: &Entry,
    entries: &[Entry],
    force: bool,
    fixes: &mut Vec<DirFix>,
) -> io::Result<Outcome> {
    let dest = path_of(&e.path);
    match e.kind.as_str() {
        "dir" => match fs::symlink_metadata(dest) {
            Ok(m) if m.is_dir() => Ok(Outcome::Present),
            Ok(_) => Ok(Outcome::Conflict(
                "a non-directory occupies the path".into(),
            )),
            Err(_) => {
                make_parents(dest, entries, fixes)?;
                fs::create_dir(dest)?;
                fs::set_permissions(dest, fs::Permissions::from_mode(0o700))?;
                fixes.push(DirFix {
                    path: dest.to_path_buf(),
                    meta: e.meta.clone(),
                });
                Ok(Outcome::Restored("directory recreated".into()))
            }
        },
        "file" => {
            let Some(q) = &e.quarantine else {
                return Ok(Outcome::Failed(format!(
                    "{} file: its content was not kept",
                    e.meta["type"].as_str().unwrap_or("special")
                )));
            };
            let q = dir.join(q);
            if fs::symlink_metadata(&q).is_err() {
                return Ok(Outcome::Failed(format!(
                    "{} is missing from the quarantine",
                    q.display()
                )));
            }
            let mut note = String::new();
            if fs::symlink_metadata(dest).is_ok() {
                if same_file_content(dest, &q) {
                    return Ok(Outcome::Present);
                }
                if !force {
                    return Ok(Outcome::Conflict(
                        "the path exists and differs from the kept version".into(),
                    ));
                }
                let to = displace(dir, e.id, dest)?;
                note = format!("; the version found there is in {}", to.display());
            }
            make_parents(dest, entries, fixes)?;
            match fs::rename(&q, dest) {
                Ok(()) => Ok(Outcome::Restored(format!(
                    "moved back from the quarantine{note}"
                ))),
                Err(err) if err.raw_os_error() == Some(libc::EXDEV) => {
                    let m = fs::symlink_metadata(&q)?;
                    if m.file_type().is_symlink() {
                        std::os::unix::fs::symlink(fs::read_link(&q)?, dest)?;
                    } else {
                        super::preserve::copy_file(&q, dest, &m)?;
                    }
                    Ok(Outcome::Restored(format!(
                        "copied back from the quarantine{note}"
                    )))
                }
                Err(err) => Err(err),
            }
        }
        "rename" | "exchange" => {
            let Some(p2) = &e.path2 else {
                return Ok(Outcome::Failed("no destination recorded".into()));
            };
            let now = path_of(p2);
            let Ok(m) = fs::symlink_metadata(now) else {
                return Ok(Outcome::Conflict(format!(
                    "{} (where it was renamed to) is gone",
                    show(p2)
                )));
            };
            let (dev, ino) = (e.meta["dev"].as_u64(), e.meta["ino"].as_u64());
            if dev != Some(m.dev()) || ino != Some(m.ino()) {
                return Ok(Outcome::Conflict(format!(
                    "{} holds a different file now",
                    show(p2)
                )));
            }
            if e.kind == "exchange" {
                let a = std::ffi::CString::new(p2.clone()).unwrap_or_default();
                let b = std::ffi::CString::new(e.path.clone()).unwrap_or_default();
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
                return Ok(Outcome::Restored(format!(
                    "exchanged back with {}",
                    show(p2)
                )));
            }
            if fs::symlink_metadata(dest).is_ok() {
                return Ok(Outcome::Conflict("the original name is occupied".into()));
            }
            make_parents(dest, entries, fixes)?;
            fs::rename(now, dest)?;
            Ok(Outcome::Restored(format!("renamed back from {}", show(p2))))
        }
        "metadata" => {
            let nofollow = e.raw["nofollow"].as_bool().unwrap_or(false);
            let m = if nofollow {
                fs::symlink_metadata(dest)
            } else {
                fs::metadata(dest)
            };
            let Ok(m) = m else {
                return Ok(Outcome::Conflict("the file is gone".into()));
            };
            if e.meta["ino"].as_u64() != Some(m.ino()) || e.meta["dev"].as_u64() != Some(m.dev()) {
                return Ok(Outcome::Conflict(
                    "a different file is at the path now".into(),
                ));
            }
            let c = std::ffi::CString::new(e.path.clone()).unwrap_or_default();
            let (uid, gid) = (
                e.meta["uid"].as_u64().unwrap_or(u64::from(m.uid())) as u32,
                e.meta["gid"].as_u64().unwrap_or(u64::from(m.gid())) as u32,
            );
            // SAFETY: valid C string.
            let r = unsafe {
                if nofollow {
                    libc::lchown(c.as_ptr(), uid, gid)
                } else {
                    libc::chown(c.as_ptr(), uid, gid)
                }
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            if !(nofollow && m.file_type().is_symlink()) {
                if let Some(mode) = e.meta["mode"].as_u64() {
                    fs::set_permissions(dest, fs::Permissions::from_mode(mode as u32))?;
                }
            }
            Ok(Outcome::Restored(format!(
                "mode {:o}, owner {uid}:{gid}",
                e.meta["mode"].as_u64().unwrap_or(0)
            )))
        }
        other => Ok(Outcome::Failed(format!("unknown entry kind `{other}`"))),
    }
}
