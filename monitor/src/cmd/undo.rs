//! `abm undo RUN [--action ID | --to SEQ | --entry N | --all]`: lists a
//! run's preserved actions, or restores the ones selected
//! ([`crate::enforce::undo`] does the restoring).
use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::enforce::preserve::Entry;
use crate::enforce::undo::{show, Outcome, Restore, Run, Selection};

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

pub fn undo(a: UndoArgs) -> anyhow::Result<i32> {
    let run = Run::open(&a.run)?;
    let selection = if a.all {
        Selection::All
    } else if let Some(to) = a.to {
        Selection::To(to)
    } else if !a.action.is_empty() {
        Selection::Actions(a.action.clone())
    } else if !a.entry.is_empty() {
        Selection::Entries(a.entry.clone())
    } else {
        list(&run, a.json)?;
        return Ok(0);
    };
    let how = Restore {
        dry_run: a.dry_run,
        force: a.force,
        remove_created: a.remove_created,
    };
    let results = run.restore(&selection, &a.run, how)?;
    let bad = results.iter().filter(|(_, o)| o.is_problem()).count();
    report(&run, &a, &results, bad)?;
    Ok(if bad > 0 { 1 } else { 0 })
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
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "quarantine": run.dir, "dry_run": a.dry_run, "results": v, "problems": bad
            }))?
        )?;
        return Ok(());
    }
    if a.dry_run {
        crate::outln!("plan (dry run, nothing changes):")?;
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
        crate::outln!("{label:<9} #{:<4} {:<8} {}{sep}{d}", e.id, e.kind, what(e))?;
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
        if run.is_restored(e.id) {
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
                        r["restored"] = json!(run.is_restored(e.id));
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
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "quarantine": run.dir, "trace": run.trace, "actions": acts,
                "kept_bytes": run.entries.iter().map(Entry::kept_bytes).sum::<u64>(),
            }))?
        )?;
        return Ok(());
    }
    let total: u64 = run.entries.iter().map(Entry::kept_bytes).sum();
    crate::outln!(
        "quarantine {}: {} entries, {} kept",
        run.dir.display(),
        run.entries.len(),
        human(total)
    )?;
    match (&run.trace, &run.history) {
        (Some(t), Some(_)) => crate::outln!("trace {}", t.display())?,
        (t, _) => crate::outln!(
            "trace not found{}: actions and results unknown, --action and --to unavailable",
            t.as_ref()
                .map(|t| format!(" at {}", t.display()))
                .unwrap_or_default()
        )?,
    }
    for ((known, id), es) in &groups {
        let bytes: u64 = es.iter().map(|e| e.kept_bytes()).sum();
        let live = es.iter().filter(|e| run.void(e).is_none()).count();
        if *known == 0 {
            let h = run
                .history
                .as_ref()
                .expect("known actions come from the trace");
            crate::outln!(
                "\naction {id}: {}  ({live} entr{}, {} kept)",
                h.describe(*id),
                if live == 1 { "y" } else { "ies" },
                human(bytes)
            )?;
        } else {
            crate::outln!("\nentry {id} (no trace record)")?;
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
            crate::outln!(
                "  #{:<4} {seq:<8} {:<8} {:<8} {} ({}{size}){n}",
                e.id,
                e.op(),
                e.kind,
                what(e),
                e.method
            )?;
        }
    }
    crate::outln!(
        "\nundo with --action ID, --to SEQ (everything from SEQ on), --entry N or --all; --dry-run shows the plan"
    )?;
    Ok(())
}
