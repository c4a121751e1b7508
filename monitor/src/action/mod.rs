//! The action model: records grouped into the logical actions a person
//! would name, each file effect measured for what it really destroys, one
//! decision per action.
//!
//! - [`group`]: which exec begins an action, which processes belong to it.
//! - [`recover`] and [`git`]: recoverability measured from the file
//!   system and the repository (index, object store, `.gitignore`).
//! - [`scope`]: workspace, scratch, shared, protected.
//! - [`blast`]: what a whole action destroys, previewed when it starts.
//!
//! [`Judge`] is used the same way by the trace pipeline (after the call)
//! and by the seccomp supervisor (before the call): it sets the record's
//! `action`, `measured` and `verdict`. Action ids are provisional keys
//! until [`Judge::bind`] maps them to the `seq` of the exec record that
//! began the action as it is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::policy::{Context, Facts, Policy};
use crate::record::{
    Action, ActionCounts, ActionNote, ActionStats, Measured, ObjectKind, Op, Recovery, Treatment,
    Verdict,
};

pub mod blast;
pub mod database;
pub mod git;
pub mod group;
pub mod pathset;
pub mod recover;
pub mod scope;
mod tips;

#[cfg(test)]
mod tests;

pub use blast::Blast;
use group::{ExecRole, Grouper};
use recover::Measurer;
use scope::Locator;

/// Rule id of verdicts given to execs that run inside another action.
pub const RULE_INSIDE: &str = "action.inside";

/// A preview taken when an exec record arrived, with the command line and
/// directory it was taken for, and the CPU time it took (ns), charged to
/// the action it begins when the record is judged.
#[derive(Debug)]
struct Early {
    argv: Vec<String>,
    cwd: String,
    blast: Blast,
    ns: u64,
}

/// What is known about one action.
#[derive(Debug, Default)]
struct Info {
    /// Previewed when the action began (tree deletions, git overwrites).
    preview: Option<Blast>,
    /// Accumulated from measured records.
    measured: Blast,
    records: u64,
    worst: Option<Verdict>,
    cost_ns: u64,
    seq: Option<u64>,
    /// The exec record that began the action, and the count of
    /// irreversible objects its verdict was last decided on: a git
    /// command's file effects are judged by its command line, and when
    /// they destroy more than its preview counted (after the call, the
    /// preview can come too late to see what the command removed), the
    /// command is judged again on what they destroyed
    /// ([`Judge::command_again`]).
    exec: Option<Box<Action>>,
    exec_irreversible: u64,
    /// A record of the action wrote, moved or removed a name under a git
    /// directory's `refs/` or its `packed-refs`: the branch tips may have
    /// changed ([`Judge::place`] reads them again when it ends).
    refs_touched: bool,
}

impl Info {
    fn blast(&self) -> Blast {
        let mut b = self.measured.clone();
        if let Some(p) = &self.preview {
            b.max(p);
        }
        b
    }
}

/// [`blast::preview`] of exec record `a`'s command in the caller's view:
/// a command run in another mount namespace or under another root (a
/// sandbox, a container: the record has a `container_path`) names the
/// files of that view, which abm reads through `/proc/PID/root` and
/// `/proc/PID/cwd` while the process lives; once it is gone there is no
/// preview, never one of abm's own files. A judge `ahead` of the call is
/// in the caller's view already.
fn preview_of(
    a: &Action,
    ahead: bool,
    argv: &[String],
    cwd: &Path,
    m: &mut Measurer,
) -> Option<Blast> {
    if ahead || a.container_path.is_none() {
        return blast::preview(argv, cwd, m);
    }
    let root = PathBuf::from(format!("/proc/{}/root", a.pid));
    let cwd = PathBuf::from(format!("/proc/{}/cwd", a.pid));
    std::fs::symlink_metadata(&root).ok()?;
    blast::preview_in(argv, &cwd, &root, m)
}

/// Whether record `a` wrote, moved or removed a name under a git
/// directory's `refs/` or its `packed-refs` (either of its paths).
fn touches_refs(a: &Action) -> bool {
    [&a.path, &a.path2]
        .into_iter()
        .flatten()
        .any(|p| p.contains("/refs/") || p.ends_with("/packed-refs") || p.contains("/packed-refs."))
}

/// Groups, measures and judges records.
#[derive(Debug)]
pub struct Judge {
    grouper: Grouper,
    pub measurer: Measurer,
    info: HashMap<u64, Info>,
    next_key: u64,
    run_start: SystemTime,
    ended: Vec<u64>,
    /// Role of the exec record being judged.
    role: Option<ExecRole>,
    /// Previews taken when exec records arrived, by thread and entry time
    /// (see [`Judge::preview_early`]).
    early: HashMap<(u32, u64), Early>,
    /// Judges calls before they run, in the caller's view (the seccomp
    /// supervisor, `abm hook`): paths resolve as the caller's already, and
    /// a name that is missing now will be missing for the call.
    ahead: bool,
    /// Re-judges a recorded trace (`abm replay`, [`Judge::rejudge`]): an
    /// action's preview is the one its exec record carries, never one
    /// taken now from a file system that has changed since.
    replaying: bool,
    /// Actions judged, and the time spent judging their records.
    pub actions_judged: u64,
    pub cost_ns: u64,
    /// Records judged since [`Judge::begin_batch`], with their wall time,
    /// charged to their actions by [`Judge::end_batch`].
    batch: Option<Batch>,
    /// The CPU time of the early preview of the record being judged.
    early_ns: u64,
}

/// A batch of records judged together: the thread's CPU and wall clocks
/// when it began, and each record's action and wall time.
#[derive(Debug)]
struct Batch {
    wall0: Instant,
    cpu0: u64,
    costs: Vec<(Option<u64>, u64)>,
}

impl Judge {
    pub fn new(ctx: &Context) -> Judge {
        Judge {
            grouper: Grouper::default(),
            measurer: Measurer::new(Locator::new(&ctx.workspace, &ctx.home)),
            info: HashMap::new(),
            // Provisional keys live far above any trace seq.
            next_key: 1 << 62,
            run_start: crate::core::clock::realtime_coarse(),
            ended: Vec::new(),
            role: None,
            early: HashMap::new(),
            ahead: false,
            replaying: false,
            actions_judged: 0,
            cost_ns: 0,
            batch: None,
            early_ns: 0,
        }
    }

    /// A judge for calls seen before they run (the seccomp supervisor):
    /// processes are placed through /proc, since forks are not seen.
    pub fn live(ctx: &Context) -> Judge {
        let mut j = Judge::ahead(ctx);
        j.grouper.ancestry = true;
        j
    }

    /// A judge for command lines and calls judged before they run in
    /// abm's own view, without /proc placement (`abm hook`).
    pub fn ahead(ctx: &Context) -> Judge {
        let mut j = Judge::new(ctx);
        j.ahead = true;
        j.measurer.late = false;
        j
    }

    /// Previews what an exec record's command would destroy as soon as the
    /// record arrives, before it waits out the reorder window behind the
    /// records of what the command does: by then `git restore .` or
    /// `rm -r` has often finished, and a preview would find nothing left to
    /// count. [`place`](Self::place) uses it when the exec begins an action.
    /// Only commands that [`blast::preview`] knows are kept. The attempts of
    /// one path search (`execvp` tries each `PATH` directory: an exec record
    /// each, the same command line) share one walk, as they share one
    /// action ([`ExecRole::Retry`]).
    pub fn preview_early(&mut self, a: &Action) {
        if a.op != Some(Op::Exec) {
            return;
        }
        let (Some(argv), Some(cwd)) = (&a.argv, &a.cwd) else {
            return;
        };
        let same = self
            .early
            .iter()
            .find(|((tid, _), e)| *tid == a.tid && e.argv == *argv && e.cwd == *cwd)
            .map(|(_, e)| (e.blast.clone(), 0));
        let ahead = self.ahead;
        if let Some((b, ns)) = same.or_else(|| {
            let cpu0 = crate::core::clock::thread_cpu_ns();
            let b = preview_of(a, ahead, argv, Path::new(cwd), &mut self.measurer)?;
            Some((b, crate::core::clock::thread_cpu_ns().saturating_sub(cpu0)))
        }) {
            let e = Early {
                argv: argv.clone(),
                cwd: cwd.clone(),
                blast: b,
                ns,
            };
            self.early.insert((a.tid, a.ktime_ns), e);
        }
    }

    /// Group, measure and judge one record: sets `action` (a provisional
    /// key), `measured` (file effects) and `verdict` (effects and execs).
    pub fn judge(&mut self, a: &mut Action, policy: &Policy, ctx: &Context) {
        let t0 = Instant::now();
        let key = self.place(a);
        a.action = key;
        if a.op.is_some_and(Op::is_action) {
            let v = self.verdict(a, key, policy, ctx);
            if let Some(k) = key {
                let info = self.info.entry(k).or_default();
                info.records += 1;
                info.refs_touched |= touches_refs(a);
                if info
                    .worst
                    .as_ref()
                    .is_none_or(|w| v.treatment > w.treatment)
                {
                    info.worst = Some(v.clone());
                }
            }
            a.verdict = Some(v);
        }
        let dt = t0.elapsed().as_nanos() as u64;
        // Previewed when the record arrived: CPU time, charged as is.
        let early = std::mem::take(&mut self.early_ns);
        if early > 0 {
            self.charge(key, early);
        }
        match &mut self.batch {
            Some(b) => b.costs.push((key, dt)),
            None => self.charge(key, dt),
        }
    }

    fn charge(&mut self, key: Option<u64>, ns: u64) {
        self.cost_ns += ns;
        if let Some(k) = key {
            self.info.entry(k).or_default().cost_ns += ns;
        }
    }

    /// Starts a batch of records (one release of the pipeline, one seccomp
    /// notification): their cost is charged when it ends.
    pub fn begin_batch(&mut self) {
        self.end_batch();
        self.batch = Some(Batch {
            wall0: Instant::now(),
            cpu0: crate::core::clock::thread_cpu_ns(),
            costs: Vec::new(),
        });
    }

    /// Ends the batch: each record's judging time is its wall time scaled
    /// by the share of the batch's wall time the thread was running (its
    /// CPU time over its wall time), so that time the thread spent
    /// preempted by the workload on the same cores is not counted as the
    /// judge's cost.
    pub fn end_batch(&mut self) {
        let Some(b) = self.batch.take() else {
            return;
        };
        if b.costs.is_empty() {
            return;
        }
        let wall = b.wall0.elapsed().as_nanos() as f64;
        let cpu = crate::core::clock::thread_cpu_ns().saturating_sub(b.cpu0) as f64;
        let share = if wall > 0.0 && cpu > 0.0 {
            (cpu / wall).min(1.0)
        } else {
            1.0
        };
        for (key, ns) in b.costs {
            self.charge(key, (ns as f64 * share) as u64);
        }
    }

    fn place(&mut self, a: &mut Action) -> Option<u64> {
        match a.op {
            Some(Op::Exec) => {
                let key = self.next_key;
                let (k, role) = self.grouper.exec(a, key);
                self.role = Some(role);
                let early = self.early.remove(&(a.tid, a.ktime_ns)).map(|e| {
                    self.early_ns += e.ns;
                    e.blast
                });
                if role == ExecRole::Begins {
                    self.next_key += 1;
                    self.actions_judged += 1;
                    let st = &self.grouper.actions[&k];
                    let cwd = st.cwd.clone().map(PathBuf::from);
                    let argv = st.argv.clone();
                    let ahead = self.ahead;
                    // A preview taken when the exec record arrived ran
                    // ahead of the records before it: what they made is
                    // this run's own.
                    let early = early.map(|mut b| {
                        b.forget_own(&self.measurer.created, &self.measurer.built);
                        b
                    });
                    let preview = if self.replaying {
                        a.preview.as_deref().cloned()
                    } else {
                        let p = early.or_else(|| {
                            cwd.and_then(|c| preview_of(a, ahead, &argv, &c, &mut self.measurer))
                        });
                        // The record carries what its verdict is decided on.
                        a.preview = p.as_ref().map(|b| Box::new(b.counts()));
                        p
                    };
                    self.info.insert(
                        k,
                        Info {
                            preview,
                            ..Info::default()
                        },
                    );
                }
                Some(k)
            }
            Some(Op::Fork) => {
                if let Some(child) = a.result.filter(|r| *r > 0) {
                    self.grouper.fork(a.pid, child as u32);
                }
                self.grouper.of(a.pid)
            }
            Some(Op::Exit) => {
                let k = self.grouper.of(a.pid);
                // Only the thread-group leader's exit ends the process.
                if a.pid == a.tid {
                    if let Some(done) = self.grouper.exit(a.pid) {
                        // A git action may have made branches a later
                        // command deletes before its record is judged.
                        // One whose records changed nothing under the refs
                        // left the tips as the last read found them.
                        if let Some(cwd) = self
                            .grouper
                            .actions
                            .get(&done)
                            .filter(|st| st.is_git() && !self.ahead && !self.replaying)
                            .and_then(|st| st.cwd.clone())
                        {
                            let touched = self.info.get(&done).is_some_and(|i| i.refs_touched);
                            self.measurer.remember_tips_after(Path::new(&cwd), touched);
                        }
                        self.ended.push(done);
                    }
                }
                k
            }
            _ => self.grouper.place(a),
        }
    }

    fn verdict(
        &mut self,
        a: &mut Action,
        key: Option<u64>,
        policy: &Policy,
        ctx: &Context,
    ) -> Verdict {
        // The action's state is looked up where it is used, not copied per
        // record (the grouper does not change while a record is judged).
        fn state(j: &Judge, key: Option<u64>) -> Option<&group::ActionState> {
            key.and_then(|k| j.grouper.actions.get(&k))
        }
        let by_git = state(self, key).is_some_and(|s| s.is_git());
        let builder = state(self, key).is_some_and(|s| s.is_builder());
        if a.op == Some(Op::Exec) {
            let inside = self.role == Some(ExecRole::Inside);
            let facts = self.facts(key, state(self, key));
            let v = policy.evaluate_with(a, ctx, &facts);
            if inside && v.treatment != Treatment::Deny {
                let st = state(self, key).expect("inside an action");
                return Verdict {
                    rule: RULE_INSIDE.to_owned(),
                    treatment: Treatment::Accept,
                    irreversibility: v.irreversibility,
                    scope: v.scope,
                    reason: format!(
                        "runs inside the action `{}`, judged as a whole",
                        st.argv.join(" ")
                    ),
                };
            }
            if by_git {
                if let Some(root) = a
                    .cwd
                    .as_deref()
                    .and_then(|c| self.measurer.repo_root(&Path::new(c).join("x")))
                {
                    self.measurer.invalidate(&root);
                }
                if let Some(info) = key.and_then(|k| self.info.get_mut(&k)) {
                    info.exec = Some(Box::new(a.clone()));
                    info.exec_irreversible = facts.blast.irreversible;
                }
            }
            return self.with_blast(v, key);
        }
        // File effects: measure what the call destroys.
        self.measurer.forget_lstat();
        let destroyed = destroyed_path(a);
        // Only a judge ahead of the call (`Judge::live`, `Judge::ahead`)
        // sees calls before they run.
        let before_call = self.ahead;
        // The commit of a change to a database's rows (its rollback journal
        // removed, or emptied in `journal_mode=TRUNCATE`): measured by what
        // the change took from its tables.
        let commit = match (a.op, &destroyed) {
            (Some(Op::Unlink | Op::Truncate), Some(p)) => {
                self.measurer.database_commit(p, key.unwrap_or(0))
            }
            _ => None,
        };
        let m = match &destroyed {
            _ if commit.is_some() => commit.expect("a commit"),
            Some(p) if a.created_by_call || creates_new(a, p) => self.measurer.created_by_call(p),
            Some(p) if names_nothing(a, p, before_call) => self.measurer.absent(p),
            // A rewrite in place: judged on what the judges before and
            // after the call both know (Measurer::measure_rewrite).
            Some(p) if matches!(a.op, Some(Op::Rename | Op::Write | Op::Truncate)) => {
                self.measurer.measure_rewrite(p, a.op, by_git)
            }
            Some(p) => {
                let m = self.measurer.measure_effect(p, a.op, by_git);
                // Already gone (after the call): what the action's preview
                // measured before the command ran, as the judge before
                // the call measures it.
                match key
                    .and_then(|k| self.info.get(&k))
                    .and_then(|i| i.preview.as_ref())
                    .and_then(|b| b.seen.get(p.as_str()))
                {
                    Some(seen)
                        if m.recovery == Recovery::Unmeasured
                            || m.why.starts_with("already gone") =>
                    {
                        seen.clone()
                    }
                    _ => m,
                }
            }
            None => {
                let p = a.path.clone().unwrap_or_default();
                let loc = self.measurer.locator.locate(&p, false);
                // sed -i's temporary file (chown/chmod to match the
                // original) was made in this run.
                let object = if a.created_by_call || self.measurer.created.contains(&p) {
                    ObjectKind::Created
                } else {
                    ObjectKind::None
                };
                Measured {
                    recovery: Recovery::Reversible,
                    location: loc,
                    object,
                    why: "adds or changes attributes; nothing is destroyed".into(),
                }
            }
        };
        self.note_effects(a, builder);
        if let Some(k) = key {
            if destroyed.is_some() {
                self.info.entry(k).or_default().measured.add(&m);
            }
        }
        a.measured = Some(m);
        let facts = self.facts(key, state(self, key));
        let v = policy.evaluate_with(a, ctx, &facts);
        let v = match by_git {
            true => self.command_again(v, key, policy, ctx, &facts),
            false => v,
        };
        self.with_blast(v, key)
    }

    /// A git command's file effect `v`, when the effects so far destroyed
    /// more irreversible objects than the command's verdict was decided on:
    /// the command judged again on them, if that treats it more severely.
    /// After the call, the preview taken when the exec record arrives can
    /// be too late (a fast `git clean -fdx` has removed the untracked
    /// files by then, and its preview counts nothing); the judge before the
    /// call counted them and asked. Judged again when the count first
    /// grows and each time it doubles, until the command is treated more
    /// severely than accept.
    fn command_again(
        &mut self,
        v: Verdict,
        key: Option<u64>,
        policy: &Policy,
        ctx: &Context,
        facts: &Facts,
    ) -> Verdict {
        let Some(info) = key.and_then(|k| self.info.get_mut(&k)) else {
            return v;
        };
        let seen = info.exec_irreversible;
        let due = facts.blast.irreversible > seen
            && (seen == 0 || facts.blast.irreversible >= seen.saturating_mul(2));
        if seen == u64::MAX || !due {
            return v;
        }
        let Some(exec) = &info.exec else {
            return v;
        };
        info.exec_irreversible = facts.blast.irreversible;
        let again = policy.evaluate_with(exec, ctx, facts);
        if again.treatment > Treatment::Accept {
            info.exec_irreversible = u64::MAX;
        }
        if again.treatment > v.treatment {
            again
        } else {
            v
        }
    }

    fn facts(&self, key: Option<u64>, st: Option<&group::ActionState>) -> Facts {
        Facts {
            action_argv: st.map(|s| std::sync::Arc::clone(&s.argv)),
            blast: key
                .and_then(|k| self.info.get(&k))
                .map(Info::blast)
                .unwrap_or_default(),
        }
    }

    /// Name what the action would destroy in the reason of a question.
    fn with_blast(&self, mut v: Verdict, key: Option<u64>) -> Verdict {
        if v.treatment >= Treatment::Confirm {
            if let Some((st, info)) =
                key.and_then(|k| Some((self.grouper.actions.get(&k)?, self.info.get(&k)?)))
            {
                let b = info.blast();
                if b.files > 0 {
                    v.reason = format!("{} — {}: {}", v.reason, st.argv.join(" "), b.describe());
                }
            }
        }
        v
    }

    /// Remember files this run creates and builds write.
    fn note_effects(&mut self, a: &Action, builder: bool) {
        // A write open with O_CREAT (an O_TRUNC one is recorded as
        // `truncate`) of a path that did not exist before the run.
        let creates = matches!(a.op, Some(Op::Write | Op::Truncate))
            && a.flag_names.iter().any(|f| f == "O_CREAT");
        if let (true, Some(p)) = (creates, &a.path) {
            // The kernel said the call created it (no stat needed), or the
            // measurement's lstat of this path, when it has one and it is
            // not a symbolic link, is what a stat would say.
            let meta = (!a.created_by_call).then(|| match self.measurer.take_lstat(p) {
                Some(m) => Ok(m),
                None => std::fs::metadata(p),
            });
            // A device, pipe or socket written through (`cc -o /dev/null`,
            // `> /dev/tty`) is nobody's creation or output.
            let special = meta
                .as_ref()
                .is_some_and(|m| m.as_ref().is_ok_and(|m| !m.is_file()));
            let new = a.created_by_call
                || match meta.map(|m| m.and_then(|m| m.created())) {
                    Some(Ok(born)) => born >= self.run_start,
                    _ => true,
                };
            if !special && (new || a.result.is_none() && !Path::new(p).exists()) {
                self.measurer.created.insert(p);
            }
            if builder && !special {
                self.measurer.built.insert(p);
            }
        }
        // A new name (`link`, `symlink`) is this run's: setuptools' sdist
        // release tree is hard links to the sources, removed afterwards.
        if matches!(a.op, Some(Op::Link | Op::Symlink)) && a.result.is_none_or(|r| r >= 0) {
            if let Some(new) = &a.path2 {
                self.measurer.created.insert(new);
            }
        }
        if a.op == Some(Op::Rename) {
            if let (Some(src), Some(dst)) = (&a.path, &a.path2) {
                if self.measurer.created.remove(src) {
                    self.measurer.created.insert(dst);
                }
                if builder || self.measurer.built.remove(src) {
                    self.measurer.built.insert(dst);
                }
            }
        }
    }

    /// Judge a recorded record again (`abm replay`): grouping as in the
    /// run, but the file system is not measured again (it has changed
    /// since); the recorded `measured` is used. Returns whether the record
    /// had the measurement a file effect needs.
    pub fn rejudge(&mut self, a: &mut Action, policy: &Policy, ctx: &Context) -> bool {
        self.replaying = true;
        let key = self.place(a);
        if !a.op.is_some_and(Op::is_action) {
            return true;
        }
        let state = key.and_then(|k| self.grouper.actions.get(&k)).cloned();
        let complete =
            a.op == Some(Op::Exec) || a.measured.is_some() || destroyed_path(a).is_none();
        if let (Some(k), Some(m)) = (key, &a.measured) {
            if destroyed_path(a).is_some() {
                self.info.entry(k).or_default().measured.add(m);
            }
        }
        let facts = self.facts(key, state.as_ref());
        let mut v = policy.evaluate_with(a, ctx, &facts);
        let by_git = state.as_ref().is_some_and(|s| s.is_git());
        if by_git && a.op == Some(Op::Exec) && self.role != Some(ExecRole::Inside) {
            if let Some(info) = key.and_then(|k| self.info.get_mut(&k)) {
                info.exec = Some(Box::new(a.clone()));
                info.exec_irreversible = facts.blast.irreversible;
            }
        } else if by_git && a.op != Some(Op::Exec) {
            v = self.command_again(v, key, policy, ctx, &facts);
        }
        if a.op == Some(Op::Exec)
            && self.role == Some(ExecRole::Inside)
            && v.treatment != Treatment::Deny
        {
            v = Verdict {
                rule: RULE_INSIDE.to_owned(),
                treatment: Treatment::Accept,
                reason: format!(
                    "runs inside the action `{}`, judged as a whole",
                    state.map(|s| s.argv.join(" ")).unwrap_or_default()
                ),
                ..v
            };
        }
        a.verdict = Some(self.with_blast(v, key));
        complete
    }

    /// Replace a record's provisional action key by the trace seq of the
    /// exec that began it; `next_seq` is the seq the record will get.
    pub fn bind(&mut self, a: &mut Action, next_seq: u64) {
        let Some(k) = a.action else { return };
        let info = self.info.entry(k).or_default();
        if info.seq.is_none() {
            info.seq = Some(next_seq);
        }
        a.action = info.seq;
    }

    /// Summary records of the actions that ended (their process trees
    /// exited), or of all remaining actions when `all`.
    pub fn ended(&mut self, all: bool) -> Vec<ActionNote> {
        let mut keys = std::mem::take(&mut self.ended);
        if all {
            let mut rest: Vec<u64> = self
                .info
                .keys()
                .copied()
                .filter(|k| !keys.contains(k))
                .collect();
            rest.sort_unstable();
            keys.extend(rest);
        }
        let mut out = Vec::new();
        for k in keys {
            let Some(info) = self.info.remove(&k) else {
                continue;
            };
            let Some(seq) = info.seq else { continue };
            let st = self.grouper.actions.remove(&k).unwrap_or_default();
            out.push(summary(seq, &st, &info));
        }
        out
    }
}

/// Judges a few made-up records with a judge of its own and throws it
/// away, before a run's first real record: the first time the code and
/// the policy's glob automata meet a path they build what they need (a
/// lazy DFA's states, pages of code), which would otherwise be charged to
/// the run's first actions. The records name files that do not exist
/// (under a directory name no run uses) and `/dev/null`, all with an
/// ENOENT result, so nothing is looked up but names (and `.git` above
/// them); nothing is written and the real judge's caches are untouched.
pub fn warm(policy: &Policy, ctx: &Context) {
    const NOWHERE: &str = ".abm-warm-nonexistent";
    let mut j = Judge::new(ctx);
    let ws = ctx.workspace.join(NOWHERE);
    let home = ctx.home.join(NOWHERE);
    let paths: Vec<String> = [
        ws.join("src/main.rs"),
        ws.join("build/out.o"),
        ws.join(".git/index.lock"),
        home.join(".cache/x"),
        home.join(".config/app/settings.json"),
        PathBuf::from("/tmp").join(NOWHERE).join("x"),
        PathBuf::from("/usr/lib").join(NOWHERE),
        PathBuf::from("/dev/null"),
    ]
    .iter()
    .map(|p| p.to_string_lossy().into_owned())
    .collect();
    let cwd = ws.to_string_lossy().into_owned();
    let script = format!(
        "cd {NOWHERE} && git status --short && make -j2 test >/dev/null 2>&1; rm -f build/*.o"
    );
    let commands = [
        &["bash", "-c", script.as_str()][..],
        &["git", "status", "--short"],
        &["git", "commit", "-q", "-am", "x"],
        &["rm", "-rf", NOWHERE],
        &["make"],
    ];
    for (i, argv) in commands.into_iter().enumerate() {
        let pid = (1u32 << 30) + i as u32;
        let mut exec = Action {
            op: Some(Op::Exec),
            pid,
            tid: pid,
            path: Some(format!("/usr/bin/{}", argv[0])),
            argv: Some(argv.iter().map(|s| s.to_string()).collect()),
            cwd: Some(cwd.clone()),
            result: Some(0),
            ..Action::default()
        };
        j.judge(&mut exec, policy, ctx);
        for p in &paths {
            for (op, flags) in [
                (Op::Write, &["O_WRONLY", "O_CREAT", "O_TRUNC"][..]),
                (Op::Unlink, &[][..]),
            ] {
                let mut a = Action {
                    op: Some(op),
                    pid,
                    tid: pid,
                    path: Some(p.clone()),
                    cwd: Some(cwd.clone()),
                    flag_names: flags.iter().map(|f| (*f).into()).collect(),
                    result: Some(-2),
                    ..Action::default()
                };
                j.judge(&mut a, policy, ctx);
            }
        }
    }
}

/// One record judged on its own (`abm policy explain`): a file effect's
/// path is measured now, an exec's blast radius previewed now. Sets
/// `measured` and returns the facts to judge with.
pub fn standalone(a: &mut Action, ctx: &Context) -> (Facts, Option<Blast>) {
    let mut j = Judge::new(ctx);
    let key = j.place(a);
    if a.op != Some(Op::Exec) {
        if let Some(p) = destroyed_path(a) {
            let m = j.measurer.measure_effect(&p, a.op, false);
            if let Some(k) = key {
                j.info.entry(k).or_default().measured.add(&m);
            }
            a.measured = Some(m);
        }
    }
    let st = key.and_then(|k| j.grouper.actions.get(&k)).cloned();
    let blast = key
        .and_then(|k| j.info.get(&k))
        .and_then(|i| i.preview.clone());
    (j.facts(key, st.as_ref()), blast)
}

/// The `action` notes of ended actions (of all remaining ones, and the
/// run's decision cost, when `all`, at the end of the run), for the
/// trace.
pub fn ended_notes(judge: &mut Judge, all: bool) -> (Vec<ActionNote>, Option<ActionStats>) {
    let notes = judge.ended(all);
    let stats = all.then(|| ActionStats {
        actions: judge.actions_judged,
        decision_us_total: judge.cost_ns as f64 / 1000.0,
        decision_us_per_action: if judge.actions_judged > 0 {
            judge.cost_ns as f64 / 1000.0 / judge.actions_judged as f64
        } else {
            0.0
        },
    });
    (notes, stats)
}

/// The `action` note that closes an action (docs/trace.md).
fn summary(seq: u64, st: &group::ActionState, info: &Info) -> ActionNote {
    let b = info.blast();
    let (treatment, rule, reason) = match &info.worst {
        Some(v) => (v.treatment, v.rule.clone(), v.reason.clone()),
        None => (Treatment::Accept, "default".into(), "no effects".into()),
    };
    ActionNote {
        action: seq,
        argv: st.argv.to_vec(),
        cwd: st.cwd.clone(),
        counts: ActionCounts {
            records: info.records,
            blast: b.counts(),
        },
        previewed: info.preview.is_some(),
        treatment,
        rule,
        reason,
        decision_us: info.cost_ns as f64 / 1000.0,
    }
}

/// Before the call (`result` unknown), a creating open of a name where
/// nothing is: it destroys nothing, as the kernel's `FMODE_CREATED` says
/// after it (`created_by_call`). One `lstat`.
fn creates_new(a: &Action, p: &str) -> bool {
    a.result.is_none()
        && matches!(a.op, Some(Op::Write | Op::Truncate))
        && a.flag_names.iter().any(|f| f == "O_CREAT")
        && std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// A removal or rewrite of a name that does not exist destroys nothing,
/// and both judges know it: after the call the kernel said so (`ENOENT`,
/// `ENOTDIR`); before it (`before_call`: the seccomp supervisor) the name
/// is missing, and the call will fail the same way (`rm -f core` in a
/// `make clean`, `rm -rf build` when there is none). Only the judge before
/// the call looks at the file system here: after it, a file that is gone
/// may have been removed by this very call.
fn names_nothing(a: &Action, p: &str, before_call: bool) -> bool {
    const ENOENT: i64 = libc::ENOENT as i64;
    const ENOTDIR: i64 = libc::ENOTDIR as i64;
    match a.result {
        Some(r) => r == -ENOENT || r == -ENOTDIR,
        None => {
            before_call
                && matches!(
                    a.op,
                    Some(Op::Unlink | Op::Rmdir | Op::Truncate | Op::Write)
                )
                && std::fs::symlink_metadata(p).is_err_and(|e| {
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    )
                })
        }
    }
}

/// The path whose content a call destroys: the unlinked/truncated file,
/// the file an `O_TRUNC` open empties, the destination a rename replaces
/// (a rewrite of that file: `sed -i`, editors, `install`).
pub fn destroyed_path(a: &Action) -> Option<String> {
    match a.op? {
        Op::Unlink | Op::Rmdir | Op::Truncate => a.path.clone(),
        Op::Write if a.flag_names.iter().any(|f| f == "O_TRUNC") => a.path.clone(),
        Op::Rename => {
            let dst = a.path2.as_ref()?;
            // Before the call (enforcement) the destination still holds
            // the old content; after it, the source's.
            if a.result.is_none() && !Path::new(dst).exists() {
                return None;
            }
            // After it, the kernel's record says whether the destination
            // named something at the call's entry (its identity), unless
            // the lookup gave no answer.
            if a.result.is_some()
                && a.dst_dir_ino.is_some()
                && a.dst_ino.is_none()
                && a.dst_identity_gap.is_none()
            {
                return None;
            }
            Some(dst.clone())
        }
        _ => None,
    }
}
