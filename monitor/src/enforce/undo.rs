//! Restoring what `preserve` kept in a run's quarantine (`abm undo`, in
//! `crate::cmd::undo`, lists and selects; [`Run::restore`] restores).
//!
//! RUN is a quarantine directory, a trace file (its header names the
//! quarantine) or a run id (the trace file name without its extension, looked up
//! under /var/lib/abm/quarantine/). Without a selector the run's preserved
//! actions are listed with their entries and sizes, and nothing changes.
//!
//! Entries are joined with the trace ([`super::history`]): entries of calls
//! that failed are void, each entry belongs to a logical action, and later
//! changes of the same paths are known. Selected entries are undone newest
//! first ([`super::restore`]): a removed tree comes back parents first, a
//! chain of edits unwinds in order. A path changed since the action (by a
//! later action that is not being undone, or after the run) is a conflict:
//! reported with what changed, not overwritten, exit status 1; `--force`
//! moves the change into the quarantine's `displaced/` directory and
//! proceeds.
use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    fs::{self, OpenOptions},
    io::{self, Write as _},
    os::unix::fs::OpenOptionsExt as _,
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

pub use super::restore::{show, Outcome};
use super::{
    history::History,
    preserve::{read_manifest, read_run, read_seals, Entry, MANIFEST, RESTORED},
    restore::{Origin, St, World},
};
use crate::core::rfc3339;

/// Finds the quarantine directory of RUN, and the trace when RUN is one.
pub fn locate(run: &str) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    let p = Path::new(run);
    if p.is_dir() {
        if p.join(MANIFEST).is_file() {
            return Ok((p.to_path_buf(), None));
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
        return Ok((q, Some(p.to_path_buf())));
    }
    let q = super::default_quarantine_root().join(run);
    if q.join(MANIFEST).is_file() {
        return Ok((q, None));
    }
    bail!("{run}: no such quarantine: give a quarantine directory, a trace file, or a run id found under {}", super::default_quarantine_root().display())
}

/// What earlier undos did: restored entry ids, and the state each path
/// was left in (the latest).
struct Restored {
    ids: BTreeSet<u64>,
    left: HashMap<Vec<u8>, (Option<St>, String)>,
}

fn read_restored(dir: &Path) -> Restored {
    let mut r = Restored {
        ids: BTreeSet::new(),
        left: HashMap::new(),
    };
    let text = fs::read_to_string(dir.join(RESTORED)).unwrap_or_default();
    for v in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if let Some(id) = v["id"].as_u64() {
            r.ids.insert(id);
        }
        let time = v["time"].as_str().unwrap_or("?").to_owned();
        for l in v["left"].as_array().into_iter().flatten() {
            let p = l["path"].as_str().map(|s| s.as_bytes().to_vec());
            let p = match l["path_b64"].as_str() {
                Some(b) => {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(b).ok()
                }
                None => p,
            };
            if let Some(p) = p {
                r.left.insert(p, (St::from_json(&l["state"]), time.clone()));
            }
        }
    }
    r
}

fn st_json(s: &Option<St>) -> Value {
    match s {
        None => Value::Null,
        Some(s) => json!({
            "type": s.typ, "dev": s.dev, "ino": s.ino, "size": s.size,
            "mtime_ns": s.mtime_ns as i64, "mode": s.mode, "uid": s.uid, "gid": s.gid,
        }),
    }
}

fn mark_restored(dir: &Path, id: u64, left: &[(Vec<u8>, Option<St>)]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join(RESTORED))?;
    let left: Vec<Value> = left
        .iter()
        .map(|(p, s)| {
            let (text, b64) = crate::record::text_fields(p);
            let mut v = json!({ "path": text, "state": st_json(s) });
            if let Some(b) = b64 {
                v["path_b64"] = json!(b);
            }
            v
        })
        .collect();
    f.write_all(
        format!(
            "{}\n",
            json!({ "id": id, "time": rfc3339(SystemTime::now()), "left": left })
        )
        .as_bytes(),
    )
}

/// A quarantine read together with its trace, with what undo derives
/// from them computed once (runs can have tens of thousands of entries).
pub struct Run {
    /// The quarantine directory.
    pub dir: PathBuf,
    /// The run's trace, where it was looked for.
    pub trace: Option<PathBuf>,
    /// The manifest's entries.
    pub entries: Vec<Entry>,
    /// The trace joined with the entries, when the trace was found.
    pub history: Option<History>,
    restored: Restored,
    /// Renames whose source their own action created.
    temp_renames: BTreeSet<u64>,
    /// Entries about a temporary file of their action.
    temporaries: BTreeSet<u64>,
    /// Actions whose restorable entries were all restored already.
    undone: BTreeSet<u64>,
}

impl Run {
    fn new(
        dir: PathBuf,
        trace: Option<PathBuf>,
        entries: Vec<Entry>,
        history: Option<History>,
    ) -> Run {
        let mut r = Run {
            restored: read_restored(&dir),
            dir,
            trace,
            entries,
            history,
            temp_renames: BTreeSet::new(),
            temporaries: BTreeSet::new(),
            undone: BTreeSet::new(),
        };
        r.derive();
        r
    }

    /// Whether an earlier undo restored entry `id`.
    pub fn is_restored(&self, id: u64) -> bool {
        self.restored.ids.contains(&id)
    }

    pub fn call(&self, e: &Entry) -> Option<&super::history::Call> {
        self.history.as_ref()?.calls.get(&e.id)
    }

    pub fn action(&self, e: &Entry) -> Option<u64> {
        self.call(e).map(|c| c.action)
    }

    pub fn void(&self, e: &Entry) -> Option<String> {
        let c = self.call(e)?;
        c.failed().then(|| {
            format!(
                "void: the call failed ({}), nothing was destroyed",
                c.errno.as_deref().unwrap_or("error")
            )
        })
    }

    pub fn temp_rename(&self, e: &Entry) -> bool {
        self.temp_renames.contains(&e.id)
    }

    pub fn temporary(&self, e: &Entry) -> bool {
        self.temporaries.contains(&e.id)
    }

    /// A rename whose source its own action created earlier (a `created`
    /// entry or a successful `O_CREAT|O_EXCL` open) wrote through a
    /// temporary file (sed -i, an editor's write-then-rename); entries of
    /// that action about the source before the rename are about the
    /// temporary file. An action is undone when all its restorable
    /// entries were restored.
    fn derive(&mut self) {
        // (path, action) -> earliest creation: entry id and trace seq.
        let mut created: HashMap<(&[u8], u64), (u64, u64)> = HashMap::new();
        for e in &self.entries {
            if e.kind == "created" && self.void(e).is_none() {
                if let (Some(a), Some(c)) = (self.action(e), self.call(e)) {
                    created.entry((&e.path, a)).or_insert((e.id, c.seq));
                }
            }
        }
        if let Some(h) = &self.history {
            for (seq, a, p) in &h.exclusive_creates {
                created.entry((p, *a)).or_insert((0, *seq));
            }
        }
        // (path, action) -> latest temp rename id.
        let mut temp_src: HashMap<(&[u8], u64), u64> = HashMap::new();
        for e in &self.entries {
            if e.kind != "rename" || self.void(e).is_some() {
                continue;
            }
            let (Some(a), Some(c)) = (self.action(e), self.call(e)) else {
                continue;
            };
            if created
                .get(&(e.path.as_slice(), a))
                .is_some_and(|(id, seq)| *id < e.id && *seq <= c.seq)
            {
                self.temp_renames.insert(e.id);
                let t = temp_src.entry((&e.path, a)).or_insert(e.id);
                *t = (*t).max(e.id);
            }
        }
        for e in &self.entries {
            if e.kind == "rename" || e.kind == "exchange" {
                continue;
            }
            if let Some(a) = self.action(e) {
                if temp_src
                    .get(&(e.path.as_slice(), a))
                    .is_some_and(|r| *r > e.id)
                {
                    self.temporaries.insert(e.id);
                }
            }
        }
        let mut pending: BTreeMap<u64, bool> = BTreeMap::new();
        for e in &self.entries {
            let Some(a) = self.action(e) else { continue };
            let counts = self.void(e).is_none()
                && !matches!(e.kind.as_str(), "created" | "recoverable")
                && !self.temporaries.contains(&e.id);
            if counts {
                let left = !self.restored.ids.contains(&e.id);
                *pending.entry(a).or_default() |= left;
            }
        }
        self.undone = pending
            .into_iter()
            .filter(|(_, left)| !left)
            .map(|(a, _)| a)
            .collect();
    }
}

/// Which preserved entries to restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every entry of the run.
    All,
    /// Every preserved call recorded at this trace seq or later.
    To(u64),
    /// What these logical actions destroyed or overwrote.
    Actions(Vec<u64>),
    /// These manifest entries.
    Entries(Vec<u64>),
}

/// How to restore.
#[derive(Clone, Copy, Debug, Default)]
pub struct Restore {
    /// Plan only: change nothing.
    pub dry_run: bool,
    /// Move a path changed since the action into `displaced/` and proceed.
    pub force: bool,
    /// Also remove (into `displaced/`) files the undone actions created.
    pub remove_created: bool,
}

impl Run {
    /// Reads the quarantine of RUN (see [`locate`]) and the run's trace
    /// when it is found.
    pub fn open(run: &str) -> anyhow::Result<Run> {
        let (dir, trace_arg) = locate(run)?;
        let entries = read_manifest(&dir)
            .with_context(|| format!("reading {}", dir.join(MANIFEST).display()))?;
        let trace = trace_arg.or_else(|| read_run(&dir)["trace"].as_str().map(PathBuf::from));
        let history = match &trace {
            Some(t) if t.is_file() => Some(
                History::load(t)
                    .with_context(|| format!("reading the run's trace {}", t.display()))?,
            ),
            _ => None,
        };
        Ok(Run::new(dir, trace, entries, history))
    }

    /// Restores the selected entries newest first (`run`: how the user
    /// named the run, for messages) and returns each with its outcome.
    pub fn restore(
        &self,
        selection: &Selection,
        run: &str,
        how: Restore,
    ) -> anyhow::Result<Vec<(&Entry, Outcome)>> {
        if self.history.is_none() && matches!(selection, Selection::To(_) | Selection::Actions(_)) {
            bail!(
                "{}: --action and --to need the run's trace, which was not found{}; pass the trace file as RUN",
                self.dir.display(),
                self.trace
                    .as_ref()
                    .map(|t| format!(" at {}", t.display()))
                    .unwrap_or_default()
            );
        }
        let mut selected: Vec<&Entry> = match selection {
            Selection::All => self.entries.iter().collect(),
            Selection::To(to) => self
                .entries
                .iter()
                .filter(|e| self.call(e).is_some_and(|c| c.seq >= *to))
                .collect(),
            Selection::Actions(actions) => {
                for id in actions {
                    if !self.entries.iter().any(|e| self.action(e) == Some(*id)) {
                        bail!(
                        "{}: no preserved entry belongs to action {id}; `abm undo {}` lists the actions",
                        self.dir.display(),
                        run
                    );
                    }
                }
                self.entries
                    .iter()
                    .filter(|e| self.action(e).is_some_and(|x| actions.contains(&x)))
                    .collect()
            }
            Selection::Entries(ids) => {
                let mut v = Vec::new();
                for n in ids {
                    match self.entries.iter().find(|e| e.id == *n) {
                        Some(e) => v.push(e),
                        None => bail!(
                            "{}: no entry {n} (see `abm undo {}`)",
                            self.dir.display(),
                            run
                        ),
                    }
                }
                v
            }
        };
        selected.sort_by_key(|e| std::cmp::Reverse(e.id));
        selected.dedup_by_key(|e| e.id);
        // Files recoverable from git come last: the repository they are read
        // from may itself be among what is restored (`rm -rf project`).
        selected.sort_by_key(|e| !e.raw["git"].is_null());
        // Later changes by actions outside the selection are conflicts
        // (--all and --to undo everything after the point, so none is).
        let chosen: BTreeSet<u64> = selected.iter().filter_map(|e| self.action(e)).collect();
        let foreign = |x: u64| {
            !(matches!(selection, Selection::All | Selection::To(_))
                || chosen.contains(&x)
                || self.undone.contains(&x))
        };
        // What each path should hold now: what the last undo left, else the
        // state at the end of the run.
        let mut expected = HashMap::new();
        for (p, s) in read_seals(&self.dir) {
            expected.insert(p, (St::from_json(&s), Origin::Run));
        }
        for (p, (s, t)) in &self.restored.left {
            expected.insert(p.clone(), (s.clone(), Origin::Undo(t.clone())));
        }
        let mut world = World::new(&self.dir, how.dry_run, how.force, expected);
        let mut results: Vec<(&Entry, Outcome)> = Vec::new();
        for e in selected {
            let out = if self.restored.ids.contains(&e.id) {
                Outcome::Skipped("restored earlier".into())
            } else if let Some(why) = self.void(e) {
                Outcome::Skipped(why)
            } else if self.temporary(e) {
                Outcome::Skipped(
                    "temporary file of the action (created and renamed away by it)".into(),
                )
            } else if let Some(c) = later_change(self, e, &foreign).filter(|_| !how.force) {
                Outcome::Conflict(c)
            } else {
                world
                    .step(e, &self.entries, self.temp_rename(e), how.remove_created)
                    .unwrap_or_else(|err| Outcome::Failed(err.to_string()))
            };
            if !how.dry_run && matches!(out, Outcome::Restored(_) | Outcome::Present) {
                mark_restored(&self.dir, e.id, &world.left)?;
            }
            results.push((e, out));
        }
        world.finish();
        Ok(results)
    }
}

/// A change of the entry's paths after its call by an action that is not
/// being undone: the conflict message.
fn later_change(run: &Run, e: &Entry, foreign: &dyn Fn(u64) -> bool) -> Option<String> {
    let h = run.history.as_ref()?;
    let c = run.call(e)?;
    for p in std::iter::once(&e.path).chain(e.path2.iter()) {
        if let Some(ch) = h.later_changes(p, c.seq, foreign).next() {
            return Some(format!(
                "{} was changed after this action by action {} (`{}`, {} at seq {}); undoing would discard that change: undo action {} first, roll back past it with --to, or use --force",
                show(p),
                ch.action,
                h.describe(ch.action),
                ch.op,
                ch.seq,
                ch.action
            ));
        }
    }
    None
}
