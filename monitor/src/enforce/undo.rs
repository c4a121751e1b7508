//! `abm undo RUN [--action ID | --to SEQ | --entry N | --all]`: restores
//! what `preserve` kept in a run's quarantine.
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

use super::{
    history::History,
    preserve::{read_manifest, read_run, read_seals, Entry, MANIFEST, RESTORED},
    restore::{show, Origin, Outcome, St, World},
};
use crate::core::rfc3339;

#[derive(Debug, clap::Args)]
pub struct UndoArgs {
    /// The run: a quarantine directory, a trace file, or a run id (the trace
    /// file name without its extension).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Undo what this logical action destroyed or overwrote (repeatable).
    /// Action ids are listed by `abm undo RUN`: the trace `seq` of the exec
    /// that began the action.
    #[arg(long, value_name = "ID", conflicts_with_all = ["to", "entry", "all"])]
    pub action: Vec<u64>,
    /// Roll back to the state just before trace record SEQ: undo every
    /// preserved call recorded at SEQ or later, newest first.
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["entry", "all"])]
    pub to: Option<u64>,
    /// Undo this manifest entry (repeatable).
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub entry: Vec<u64>,
    /// Undo every entry of the run.
    #[arg(long)]
    pub all: bool,
    /// Print the plan (what each entry would do, and the conflicts) and
    /// change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Proceed where a path changed since the action: move what is there
    /// into the quarantine's displaced/ directory first.
    #[arg(long)]
    pub force: bool,
    /// Also remove files the undone actions created (moved into
    /// displaced/, not deleted).
    #[arg(long)]
    pub remove_created: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

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
struct Run {
    dir: PathBuf,
    trace: Option<PathBuf>,
    entries: Vec<Entry>,
    history: Option<History>,
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

    fn call(&self, e: &Entry) -> Option<&super::history::Call> {
        self.history.as_ref()?.calls.get(&e.id)
    }

    fn action(&self, e: &Entry) -> Option<u64> {
        self.call(e).map(|c| c.action)
    }

    fn void(&self, e: &Entry) -> Option<String> {
        let c = self.call(e)?;
        c.failed().then(|| {
            format!(
                "void: the call failed ({}), nothing was destroyed",
                c.errno.as_deref().unwrap_or("error")
            )
        })
    }

    fn temp_rename(&self, e: &Entry) -> bool {
        self.temp_renames.contains(&e.id)
    }

    fn temporary(&self, e: &Entry) -> bool {
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

pub fn undo(a: UndoArgs) -> anyhow::Result<i32> {
    let (dir, trace_arg) = locate(&a.run)?;
    let entries =
        read_manifest(&dir).with_context(|| format!("reading {}", dir.join(MANIFEST).display()))?;
    let trace = trace_arg.or_else(|| read_run(&dir)["trace"].as_str().map(PathBuf::from));
    let history = match &trace {
        Some(t) if t.is_file() => Some(
            History::load(t).with_context(|| format!("reading the run's trace {}", t.display()))?,
        ),
        _ => None,
    };
    let run = Run::new(dir, trace, entries, history);
    let selecting = a.all || a.to.is_some() || !a.action.is_empty() || !a.entry.is_empty();
    if !selecting {
        list(&run, a.json)?;
        return Ok(0);
    }
    if run.history.is_none() && (a.to.is_some() || !a.action.is_empty()) {
        bail!(
            "{}: --action and --to need the run's trace, which was not found{}; pass the trace file as RUN",
            run.dir.display(),
            run.trace
                .as_ref()
                .map(|t| format!(" at {}", t.display()))
                .unwrap_or_default()
        );
    }
    let mut selected: Vec<&Entry> = if a.all {
        run.entries.iter().collect()
    } else if let Some(to) = a.to {
        run.entries
            .iter()
            .filter(|e| run.call(e).is_some_and(|c| c.seq >= to))
            .collect()
    } else if !a.action.is_empty() {
        for id in &a.action {
            if !run.entries.iter().any(|e| run.action(e) == Some(*id)) {
                bail!(
                    "{}: no preserved entry belongs to action {id}; `abm undo {}` lists the actions",
                    run.dir.display(),
                    a.run
                );
            }
        }
        run.entries
            .iter()
            .filter(|e| run.action(e).is_some_and(|x| a.action.contains(&x)))
            .collect()
    } else {
        let mut v = Vec::new();
        for n in &a.entry {
            match run.entries.iter().find(|e| e.id == *n) {
                Some(e) => v.push(e),
                None => bail!(
                    "{}: no entry {n} (see `abm undo {}`)",
                    run.dir.display(),
                    a.run
                ),
            }
        }
        v
    };
    selected.sort_by_key(|e| std::cmp::Reverse(e.id));
    selected.dedup_by_key(|e| e.id);
    // Files recoverable from git come last: the repository they are read
    // from may itself be among what is restored (`rm -rf project`).
    selected.sort_by_key(|e| !e.raw["git"].is_null());
    // Later changes by actions outside the selection are conflicts
    // (--all and --to undo everything after the point, so none is).
    let chosen: BTreeSet<u64> = selected.iter().filter_map(|e| run.action(e)).collect();
    let foreign =
        |x: u64| !(a.all || a.to.is_some() || chosen.contains(&x) || run.undone.contains(&x));
    // What each path should hold now: what the last undo left, else the
    // state at the end of the run.
    let mut expected = HashMap::new();
    for (p, s) in read_seals(&run.dir) {
        expected.insert(p, (St::from_json(&s), Origin::Run));
    }
    for (p, (s, t)) in &run.restored.left {
        expected.insert(p.clone(), (s.clone(), Origin::Undo(t.clone())));
    }
    let mut world = World::new(&run.dir, a.dry_run, a.force, expected);
    let mut results: Vec<(&Entry, Outcome)> = Vec::new();
    for e in selected {
        let out = if run.restored.ids.contains(&e.id) {
            Outcome::Skipped("restored earlier".into())
        } else if let Some(why) = run.void(e) {
            Outcome::Skipped(why)
        } else if run.temporary(e) {
            Outcome::Skipped("temporary file of the action (created and renamed away by it)".into())
        } else if let Some(c) = later_change(&run, e, &foreign).filter(|_| !a.force) {
            Outcome::Conflict(c)
        } else {
            world
                .step(e, &run.entries, run.temp_rename(e), a.remove_created)
                .unwrap_or_else(|err| Outcome::Failed(err.to_string()))
        };
        if !a.dry_run && matches!(out, Outcome::Restored(_) | Outcome::Present) {
            mark_restored(&run.dir, e.id, &world.left)?;
        }
        results.push((e, out));
    }
    world.finish();
    let bad = results.iter().filter(|(_, o)| o.is_problem()).count();
    report(&run, &a, &results, bad)?;
    Ok(if bad > 0 { 1 } else { 0 })
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

fn status(o: &Outcome, dry: bool) -> (&'static str, String) {
    match o {
        Outcome::Restored(d) => (if dry { "would" } else { "restored" }, d.clone()),
        Outcome::Present => ("present", "already in place".into()),
        Outcome::Skipped(d) => ("skipped", d.clone()),
        Outcome::Conflict(d) => ("conflict", d.clone()),
        Outcome::Failed(d) => ("error", d.clone()),
    }
}

fn what(e: &Entry) -> String {
    match &e.path2 {
        Some(p2) => format!("{} -> {}", show(&e.path), show(p2)),
        None => show(&e.path),
    }
}

fn report(
    run: &Run,
    a: &UndoArgs,
    results: &[(&Entry, Outcome)],
    bad: usize,
) -> anyhow::Result<()> {
    if a.json {
        let v: Vec<Value> = results
            .iter()
            .map(|(e, o)| {
                let (status, detail) = status(o, a.dry_run);
                json!({
                    "id": e.id, "kind": e.kind, "op": e.op(), "path": show(&e.path),
                    "path2": e.path2.as_deref().map(show), "action": run.action(e),
                    "seq": run.call(e).map(|c| c.seq), "status": status, "detail": detail,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "quarantine": run.dir, "dry_run": a.dry_run, "results": v, "problems": bad
            }))?
        );
        return Ok(());
    }
    if a.dry_run {
        println!("plan (dry run, nothing changes):");
    }
    for (e, o) in results {
        let (st, d) = status(o, a.dry_run);
        let label = match o {
            Outcome::Conflict(_) => "CONFLICT".to_owned(),
            Outcome::Failed(_) => "ERROR".to_owned(),
            _ => st.to_owned(),
        };
        let sep = if d.starts_with(';') { "" } else { ": " };
        let d = d.trim_start_matches("; ");
        println!("{label:<9} #{:<4} {:<8} {}{sep}{d}", e.id, e.kind, what(e));
    }
    if bad > 0 {
        eprintln!(
            "abm: undo: {bad} entr{} not restored: a path changed since the action is never overwritten without --force (which keeps what it replaces in {}/displaced/)",
            if bad == 1 { "y" } else { "ies" },
            run.dir.display()
        );
    }
    Ok(())
}

fn human(n: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn list(run: &Run, as_json: bool) -> anyhow::Result<()> {
    // Group by action (entries without a known call: their own group).
    let mut groups: BTreeMap<(u64, u64), Vec<&Entry>> = BTreeMap::new();
    for e in &run.entries {
        let key = match (run.action(e), run.call(e)) {
            (Some(x), _) => (0, x),
            _ => (1, e.id),
        };
        groups.entry(key).or_default().push(e);
    }
    let note = |e: &Entry| -> Option<String> {
        if run.restored.ids.contains(&e.id) {
            return Some("restored".into());
        }
        if let Some(v) = run.void(e) {
            return Some(v);
        }
        if run.temporary(e) {
            return Some("temporary file of the action: not restored".into());
        }
        if run.temp_rename(e) {
            return Some("from a temporary file: undo removes the result".into());
        }
        if e.kind == "created" {
            return Some("created by the action: removed only with --remove-created".into());
        }
        None
    };
    if as_json {
        let acts: Vec<Value> = groups
            .iter()
            .map(|((known, id), es)| {
                let entries: Vec<Value> = es
                    .iter()
                    .map(|e| {
                        let mut r = e.raw.clone();
                        r["seq"] = json!(run.call(e).map(|c| c.seq));
                        r["restored"] = json!(run.restored.ids.contains(&e.id));
                        r["void"] = json!(run.void(e).is_some());
                        r["note"] = json!(note(e));
                        r
                    })
                    .collect();
                json!({
                    "action": (*known == 0).then_some(*id),
                    "argv": run.history.as_ref().and_then(|h| h.actions.get(id)).map(|x| x.argv.clone()),
                    "kept_bytes": es.iter().map(|e| e.kept_bytes()).sum::<u64>(),
                    "entries": entries,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "quarantine": run.dir, "trace": run.trace, "actions": acts,
                "kept_bytes": run.entries.iter().map(Entry::kept_bytes).sum::<u64>(),
            }))?
        );
        return Ok(());
    }
    let total: u64 = run.entries.iter().map(Entry::kept_bytes).sum();
    println!(
        "quarantine {}: {} entries, {} kept",
        run.dir.display(),
        run.entries.len(),
        human(total)
    );
    match (&run.trace, &run.history) {
        (Some(t), Some(_)) => println!("trace {}", t.display()),
        (t, _) => println!(
            "trace not found{}: actions and results unknown, --action and --to unavailable",
            t.as_ref()
                .map(|t| format!(" at {}", t.display()))
                .unwrap_or_default()
        ),
    }
    for ((known, id), es) in &groups {
        let bytes: u64 = es.iter().map(|e| e.kept_bytes()).sum();
        let live = es.iter().filter(|e| run.void(e).is_none()).count();
        if *known == 0 {
            let h = run
                .history
                .as_ref()
                .expect("known actions come from the trace");
            println!(
                "\naction {id}: {}  ({live} entr{}, {} kept)",
                h.describe(*id),
                if live == 1 { "y" } else { "ies" },
                human(bytes)
            );
        } else {
            println!("\nentry {id} (no trace record)");
        }
        for e in es {
            let seq = run
                .call(e)
                .map(|c| format!("seq {}", c.seq))
                .unwrap_or_else(|| "seq ?".into());
            let size = if e.kept_bytes() > 0 || (e.kind == "file" && e.quarantine.is_some()) {
                format!(", {}", human(e.kept_bytes()))
            } else {
                String::new()
            };
            let n = note(e).map(|n| format!("  [{n}]")).unwrap_or_default();
            println!(
                "  #{:<4} {seq:<8} {:<8} {:<8} {} ({}{size}){n}",
                e.id,
                e.op(),
                e.kind,
                what(e),
                e.method
            );
        }
    }
    println!(
        "\nundo with --action ID, --to SEQ (everything from SEQ on), --entry N or --all; --dry-run shows the plan"
    );
    Ok(())
}
