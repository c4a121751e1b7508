//! The BPF LSM backend as the run's [`Guard`]: the kernel decides alone, so
//! nothing runs beside the session loop; the loop absorbs the decision
//! records, and `abm approve|deny` answers through [`Approvals`].
use crate::{
    enforce::{Backend, Guard, Requests, Shared, Start},
    pipeline::{Pipeline, Recorder},
    trace::{Cause, Loss},
};

use super::*;

/// The BPF LSM guard of one enforcing `abm run`.
pub struct LsmGuard {
    backend: LsmBackend,
    /// Decision counts, by decision name, as of the last absorb.
    counts: BTreeMap<crate::record::enforcement::DecisionKind, u64>,
    /// Start of the window of the next `lsm_decode_error` loss record.
    losses_ns: u64,
    /// The last exec records released, for decisions read after their
    /// exec record left the pipeline (at most [`RECENT_EXECS`]).
    execs: std::collections::VecDeque<Action>,
}

/// Exec records kept for [`LsmGuard::exec_of`].
const RECENT_EXECS: usize = 256;

impl LsmGuard {
    /// The exec record (argv, cwd) a decision of thread `a.tid` at
    /// `a.ktime_ns` is about: the thread's latest exec entered before it,
    /// still in the pipeline or released recently.
    fn exec_of(
        pipeline: &Pipeline,
        execs: &std::collections::VecDeque<Action>,
        a: &Action,
    ) -> Option<Action> {
        pipeline
            .orderer
            .exec_entry(a.tid, a.ktime_ns)
            .or_else(|| {
                execs
                    .iter()
                    .rev()
                    .find(|e| e.tid == a.tid && e.ktime_ns <= a.ktime_ns)
            })
            .cloned()
    }
}

/// The requests of the BPF LSM backend `approvals`, for the endpoints that
/// answer through `core` (the control socket, remote approvals).
pub(crate) fn requests(approvals: Approvals, core: Arc<Shared>) -> Arc<dyn Requests> {
    Arc::new(LsmRequests { approvals, core })
}

/// The requests of the BPF LSM backend, for the control socket.
struct LsmRequests {
    approvals: Approvals,
    core: Arc<Shared>,
}

impl Requests for LsmRequests {
    fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), crate::enforce::DecideError> {
        if !self.approvals.owns(id) {
            return Err(self.core.no_request(id));
        }
        self.approvals.decide(id, approve, by)
    }

    fn pending_list(&self) -> Vec<Value> {
        self.approvals.pending_list()
    }
}

impl Guard for LsmGuard {
    /// Compiles the policy into the maps of the loaded tracepoint object
    /// and attaches the LSM programs.
    fn start(s: Start<'_>) -> anyhow::Result<LsmGuard> {
        let Start {
            args,
            info,
            probes,
            quarantine,
            shared: core,
        } = s;
        let s_timeout = args.confirm_timeout;
        let (policy, ctx, quiet) = (info.policy, info.ctx, info.quiet);
        precreate_trace(info.trace);
        let mut b = LsmBackend::start(probes, policy, ctx, quarantine, quiet)
            .map_err(|err| anyhow::anyhow!("--enforce (BPF LSM backend): {err}"))?;
        if !quiet {
            let enforced = b
                .report()
                .iter()
                .filter(|r| r.index.is_some() && blocks(r.treatment))
                .count();
            eprintln!(
                "abm: BPF LSM hooks attached: {} ({enforced} blocking rules in the kernel)",
                b.attached.join(", ")
            );
        }
        b.set_notify(core.notify.clone());
        b.approvals()
            .set_timeout(std::time::Duration::from_secs_f64(s_timeout));
        b.approvals().share_answers(core.answers.clone());
        if core.notify.enabled() {
            hold_refused(probes)
                .map_err(|err| anyhow::anyhow!("--enforce (BPF LSM backend): {err}"))?;
        }
        core.set_requests(Arc::new(LsmRequests {
            approvals: b.approvals(),
            core: core.clone(),
        }));
        Ok(LsmGuard {
            backend: b,
            counts: BTreeMap::new(),
            losses_ns: monotonic_ns(),
            execs: Default::default(),
        })
    }

    fn backend(&self) -> Backend {
        Backend::Lsm
    }

    fn header_extra(&self, extra: &mut serde_json::Map<String, Value>) {
        extra.insert("lsm".into(), self.backend.header_extra());
    }

    /// The kernel's decision records and the answers given since the last
    /// call; undecodable records are written as `lsm_decode_error` losses.
    fn absorb(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        let l = &mut self.backend;
        let execs = &self.execs;
        let exec_of = |a: &Action| LsmGuard::exec_of(pipeline, execs, a);
        for note in l.absorb_with(&exec_of) {
            trace.note(&note)?;
        }
        let undecodable = l.take_undecodable();
        if undecodable > 0 {
            let now = monotonic_ns();
            trace.loss(&Loss::new(
                Cause::LsmDecodeError,
                undecodable,
                None,
                (self.losses_ns, now),
            ))?;
            self.losses_ns = now;
        }
        self.counts = l.counts();
        Ok(())
    }

    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool) {
        for a in acts.iter().filter(|a| a.op == Some(Op::Exec)) {
            if self.execs.len() == RECENT_EXECS {
                self.execs.pop_front();
            }
            self.execs.push_back(a.clone());
        }
        self.backend.fixup(acts, force);
    }

    fn stop(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()> {
        self.backend.release_held();
        self.backend.expire_deferred();
        self.absorb(pipeline, trace)?;
        trace.note(&Note::LsmSummary(self.backend.stop()))?;
        Ok(())
    }

    fn counts(&self) -> &BTreeMap<crate::record::enforcement::DecisionKind, u64> {
        &self.counts
    }
}

/// Creates the trace file empty when it does not exist yet, so that the
/// tables compiled before the command starts name its inode for the
/// built-in `${trace}*` rule (the trace writer opens this same empty
/// file: trace::writer accepts an empty regular file of abm's user).
/// Without it the rule would name no existing object and only the trace's
/// append-only flag would stand between the command and its trace.
fn precreate_trace(path: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        // The writer reports the error that matters when it opens the trace.
        Err(e) => tracing::warn!(
            "cannot create the trace {} before compiling the BPF LSM tables: {e}",
            path.display()
        ),
    }
}

/// Turns on `hold_refused` in the kernel's configuration: a caller refused
/// by a deny or confirm rule stops until its reason line is written
/// (enforce::notify), so the line reaches its own stderr before it prints
/// its error and exits. Only with reason lines on (`--no-notify` off, and
/// always in the daemon).
pub(crate) fn hold_refused(probes: &mut crate::kernel::Probes) -> Result<(), LsmError> {
    let mut cfg: Array<&mut MapData, LsmConfig> =
        borrow(&mut probes.ebpf, "LSM_CONFIG", Array::try_from)?;
    let mut c = cfg.get(&0, 0).map_err(map_err("LSM_CONFIG"))?;
    c.hold_refused = 1;
    cfg.set(0, c, 0).map_err(map_err("LSM_CONFIG"))
}
