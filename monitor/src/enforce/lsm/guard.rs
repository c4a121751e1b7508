//! The BPF LSM backend as the run's [`Guard`]: the kernel decides alone, so
//! nothing runs beside the session loop; the loop absorbs the decision
//! records, and `abm approve|deny` answers through [`Approvals`].
use crate::{
    enforce::{Backend, Guard, Requests, Shared, Start},
    pipeline::Pipeline,
    trace::TraceWriter,
};

use super::*;

/// The BPF LSM guard of one enforcing `abm run`.
pub struct LsmGuard {
    backend: LsmBackend,
    /// Decision counts, by decision name, as of the last absorb.
    counts: BTreeMap<String, u64>,
    /// Start of the window of the next `lsm_decode_error` loss record.
    losses_ns: u64,
}

/// The requests of the BPF LSM backend, for the control socket.
struct LsmRequests {
    approvals: Approvals,
    core: Arc<Shared>,
}

impl Requests for LsmRequests {
    fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), String> {
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
            info,
            probes,
            quarantine,
            shared: core,
            ..
        } = s;
        let (policy, ctx, quiet) = (info.policy, info.ctx, info.quiet);
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
        b.notify = Some(core.notify.clone());
        core.set_requests(Arc::new(LsmRequests {
            approvals: b.approvals(),
            core: core.clone(),
        }));
        Ok(LsmGuard {
            backend: b,
            counts: BTreeMap::new(),
            losses_ns: monotonic_ns(),
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
    fn absorb(&mut self, _pipeline: &mut Pipeline, writer: &mut TraceWriter) -> anyhow::Result<()> {
        let l = &mut self.backend;
        for note in l.absorb() {
            note.append_to(writer)?;
        }
        let undecodable = l.take_undecodable();
        if undecodable > 0 {
            let now = monotonic_ns();
            writer.append_loss(&crate::trace::Loss {
                cause: "lsm_decode_error".into(),
                count: undecodable,
                cpu: None,
                window_start_ns: self.losses_ns,
                window_end_ns: now,
            })?;
            self.losses_ns = now;
        }
        self.counts = l.counts();
        Ok(())
    }

    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool) {
        self.backend.fixup(acts, force);
    }

    fn stop(&mut self, pipeline: &mut Pipeline, writer: &mut TraceWriter) -> anyhow::Result<()> {
        self.absorb(pipeline, writer)?;
        Note::LsmSummary(self.backend.stop()).append_to(writer)?;
        Ok(())
    }

    fn counts(&self) -> &BTreeMap<String, u64> {
        &self.counts
    }
}
