//! From kernel record to judged action record, the same way for `abm run`
//! and the daemon.
//!
//! One record goes through: [`Intake::decode`] (the wire format, counted as
//! a loss when undecodable) → [`Pipeline::accept`] (an action record with
//! resolved paths ([`resolve`]), mapped to the host view when it was made
//! in another mount namespace ([`mounts`]), then paired with its result
//! and held for ordering ([`order`])) → [`Pipeline::release`] (in kernel
//! timestamp order: wall time, executable, the policy's verdict), called
//! by [`Recorder::release`], which writes the records to the trace.
//! [`driver`] is the event loop both commands drive: it drains the ring
//! buffer into the pipeline and hands every other wake-up to the command.
//!
//! - [`resolve`]: paths, flags, errno and syscall names of one record.
//! - [`mounts`]: host and container views of paths in mount namespaces.
//! - [`order`]: pairing entries with results, timestamp order.
//! - [`driver`]: the shared event loop.
//! - [`recorder`]: the [`Recorder`], the sink of one trace file: releasing
//!   records to it bound to their actions, the notes of ended actions,
//!   losses by cause, new sensitive names; a guard joins as a [`Stage`].
//! - [`summary`]: the end-of-run summary of `abm run`.
use std::collections::HashMap;

use monitor_common::EventKind;

use crate::{
    core::{monotonic_ns, Clock},
    kernel::KernelEvent,
    policy::{Context, Policy},
    record::{Action, Op, PathIssue, Treatment},
};

pub mod driver;
pub mod mounts;
pub mod order;
pub mod recorder;
pub mod resolve;
pub mod summary;

pub use mounts::Views;
use order::Orderer;
pub use recorder::{Recorder, Stage};

/// The policy files given, merged in order; none: the built-in default pack.
pub fn load_policy(files: &[std::path::PathBuf]) -> anyhow::Result<Policy> {
    if files.is_empty() {
        Ok(Policy::default_pack())
    } else {
        Policy::load(files).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

/// The first stage, shared by all targets: decoding, and the mount
/// namespaces of the processes seen.
pub struct Intake {
    pub views: Views,
    /// Records that could not be decoded (reported as `decode_error` losses).
    pub decode_errors: u64,
}

impl Intake {
    pub fn new(views: Views) -> Intake {
        Intake {
            views,
            decode_errors: 0,
        }
    }

    /// Decodes one kernel record; an undecodable one is counted.
    pub fn decode(&mut self, bytes: &[u8]) -> Option<KernelEvent> {
        match KernelEvent::decode(bytes) {
            Ok(ev) => {
                match ev.kind {
                    EventKind::Exit => self.views.forget(ev.hdr.pid),
                    // A mount table captured by the kernel: for the views only.
                    EventKind::MountInfo => {
                        self.views.captured_mount(&ev);
                        return None;
                    }
                    _ => {}
                }
                Some(ev)
            }
            Err(e) => {
                tracing::warn!("undecodable kernel record: {e}");
                self.decode_errors += 1;
                None
            }
        }
    }
}

/// The rule id of a verdict on a call whose object the kernel could not
/// vouch for.
pub const RULE_UNVOUCHED: &str = "builtin.unvouched-object";

/// A call the kernel could not vouch acted on the object its record names
/// (`argument_raced`: it acted on another; `unconfirmed`: it could not
/// tell) is judged as a call on an unknown object, never as one on the
/// named file: when a rule stricter than audit could match it on some
/// path, that is the verdict (refused, as `--enforce` refuses a call it
/// cannot judge exactly); otherwise the named file's verdict stands, with
/// the issue in the reason.
pub fn unvouched(a: &mut Action, policy: &Policy, ctx: &Context) {
    let Some(issue) = a
        .path_issues
        .iter()
        .copied()
        .find(|i| matches!(i, PathIssue::ArgumentRaced | PathIssue::Unconfirmed))
    else {
        return;
    };
    if !a
        .verdict
        .as_ref()
        .is_some_and(|v| matches!(v.treatment, Treatment::Accept | Treatment::Audit))
    {
        return;
    }
    let stricter = policy.could_match_any_path(a, ctx).map(|r| r.id.clone());
    let Some(v) = a.verdict.as_mut() else {
        return;
    };
    match stricter {
        Some(id) => {
            v.rule = RULE_UNVOUCHED.into();
            v.treatment = Treatment::Deny;
            v.reason = format!(
                "the call did not act on the object its path names, or the kernel could not confirm it did ({issue}); rule {id} could match the object it acted on"
            );
        }
        None => {
            v.reason = format!("{} (object unconfirmed: {issue})", v.reason);
        }
    }
}

/// Turns one target's kernel records into ordered, judged action records.
pub struct Pipeline {
    pub orderer: Orderer,
    pub clock: Clock,
    /// Executable per process, from exec events (inherited at fork).
    exes: HashMap<u32, String>,
    pub policy: Policy,
    pub ctx: Context,
    /// Groups records into actions, measures and judges them; driven by
    /// the pipeline and its [`Recorder`] only.
    judge: crate::action::Judge,
    /// Results whose entry record was not there (lost).
    pub unpaired_exits: u64,
    /// The daemon's target whose records these are (their `target`).
    pub target: Option<String>,
    /// Directories canonicalised for recent records.
    dirs: resolve::DirCache,
}

impl Pipeline {
    pub fn new(policy: Policy, ctx: Context) -> Pipeline {
        crate::action::warm(&policy, &ctx);
        let mut judge = crate::action::Judge::new(&ctx);
        // The branches the run starts with: this judge sees a deletion
        // only after it ran (see `Measurer::tips`).
        judge.measurer.remember_tips(&ctx.workspace);
        // And the databases: a change committed to one is judged by what
        // it took from the tables it had.
        judge.measurer.remember_databases(&ctx.workspace);
        Pipeline {
            orderer: Orderer::default(),
            clock: Clock::new(),
            exes: HashMap::new(),
            judge,
            policy,
            ctx,
            unpaired_exits: 0,
            target: None,
            dirs: resolve::DirCache::default(),
        }
    }

    /// One decoded record of `target`: pairs a result with its entry, or
    /// makes an action record (host and container views of its paths) and
    /// holds it for ordering.
    pub fn accept(&mut self, ev: KernelEvent, views: &mut Views, target: u32) {
        if resolve::DirCache::invalidates(&ev) {
            if resolve::DirCache::only_unlinks(&ev) {
                self.dirs.forget_indirect();
            } else {
                self.dirs.clear();
            }
        }
        match ev.kind {
            EventKind::SyscallExit => {
                match self.orderer.exit(ev.hdr.tid, ev.hdr.result, &ev.fields) {
                    // An open whose result did not name its file exactly (it
                    // failed, or the walk was inexact): its directory is
                    // canonicalised now, as it would have been at entry.
                    Some(a) => resolve::settle_path(a, Some(&mut self.dirs)),
                    None => self.unpaired_exits += 1,
                }
            }
            EventKind::Fork | EventKind::Exit | EventKind::IoUringSetup => {
                self.orderer.ready(resolve::action_from_event(&ev))
            }
            // Recorded at syscall exit: complete, with its result.
            EventKind::Read => {
                let mut action = resolve::action_from_event(&ev);
                views.fix(&mut action, &ev, target);
                self.orderer.ready(action);
            }
            // Records for the intake and the commands, not actions.
            EventKind::MountInfo | EventKind::CgroupMkdir => {}
            _ => {
                let mut action = resolve::action_from_event_with(&ev, Some(&mut self.dirs));
                views.fix(&mut action, &ev, target);
                self.judge.preview_early(&action);
                // Keep the entry record when an argument must be re-read at exit.
                let reread = action.path_issues.contains(&PathIssue::ReadFailed);
                self.orderer.enter(action, reread.then_some(ev));
            }
        }
    }

    /// Finishes released records, at most `max` (the oldest; the rest
    /// wait for the next call): process details, wall time, verdict.
    pub fn release(&mut self, force: bool, max: usize) -> Vec<Action> {
        let mut out = Vec::new();
        self.orderer.release(monotonic_ns(), force, max, &mut out);
        if out.is_empty() {
            return out;
        }
        self.judge.begin_batch();
        for a in &mut out {
            // Its result was lost: canonicalised now.
            resolve::settle_path(a, None);
            if self.target.is_some() {
                a.target.clone_from(&self.target);
            }
            a.time = self.clock.wall(a.ktime_ns);
            match a.op {
                Some(Op::Fork) => {
                    if let (Some(child), Some(exe)) = (a.result, self.exe_of(a.pid)) {
                        self.exes.insert(child as u32, exe);
                    }
                }
                Some(Op::Exec) if a.succeeded() => {
                    if let Some(p) = &a.path {
                        self.exes.insert(a.pid, p.clone());
                    }
                }
                _ => {}
            }
            a.exe = self.exe_of(a.pid);
            if a.op == Some(Op::Exit) {
                self.exes.remove(&a.pid);
            }
            self.judge.judge(a, &self.policy, &self.ctx);
            unvouched(a, &self.policy, &self.ctx);
        }
        self.judge.end_batch();
        out
    }

    fn exe_of(&mut self, pid: u32) -> Option<String> {
        if let Some(e) = self.exes.get(&pid) {
            return Some(e.clone());
        }
        let e = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let e = e.to_string_lossy().into_owned();
        self.exes.insert(pid, e.clone());
        Some(e)
    }
}
