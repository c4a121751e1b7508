//! The running BPF LSM backend: maps filled, programs attached, decision
//! records turned into trace records.
use crate::enforce::notify::Outcome;
use crate::record::enforcement::{
    AllowedBy, Backend, CallDecision, DecisionKind, DecisionNote, Enforcement, REFUSED_BEFORE,
    RETRY_ALLOWED_ONCE,
};
use crate::trace::note::LsmSummary;

use super::*;

/// The BPF LSM backend of one enforcing `abm run`.
pub struct LsmBackend {
    pub(super) events: RingBuf<MapData>,
    pub(super) approvals: Approvals,
    pub(super) compiled: Compiled,
    pub(super) policy: Policy,
    pub(super) ctx: Context,
    pub(super) clock: Clock,
    pub(super) quarantine: crate::enforce::preserve::Quarantine,
    pub(super) held: Vec<Held>,
    pub attached: Vec<&'static str>,
    pub(super) quiet: bool,
    /// The reason line on a refused caller's stderr (enforce::notify).
    pub(crate) notify: Option<std::sync::Arc<crate::enforce::notify::Notifier>>,
    /// Decision records that could not be decoded since the last
    /// [`LsmBackend::take_undecodable`]: written as `lsm_decode_error` losses.
    pub(super) undecodable: u64,
    /// Exec decisions waiting for their command line (see
    /// [`LsmBackend::absorb_with`]), with the number of reads waited.
    pub(super) deferred: Vec<(Action, LsmDecision, u8)>,
}

/// Reads an exec decision waits at most for its command line.
const EXEC_LINE_WAIT: u8 = 8;

pub(super) fn take<T>(
    ebpf: &mut Ebpf,
    name: &'static str,
    conv: impl FnOnce(aya::maps::Map) -> Result<T, aya::maps::MapError>,
) -> Result<T, LsmError> {
    let m = ebpf.take_map(name).ok_or(LsmError::Map {
        name,
        detail: "missing from the kernel object".into(),
    })?;
    conv(m).map_err(|e| LsmError::Map {
        name,
        detail: e.to_string(),
    })
}

pub(super) fn borrow<'a, T>(
    ebpf: &'a mut Ebpf,
    name: &'static str,
    conv: impl FnOnce(&'a mut aya::maps::Map) -> Result<T, aya::maps::MapError>,
) -> Result<T, LsmError> {
    let m = ebpf.map_mut(name).ok_or(LsmError::Map {
        name,
        detail: "missing from the kernel object".into(),
    })?;
    conv(m).map_err(|e| LsmError::Map {
        name,
        detail: e.to_string(),
    })
}

pub(super) fn map_err(name: &'static str) -> impl Fn(aya::maps::MapError) -> LsmError {
    move |e| LsmError::Map {
        name,
        detail: e.to_string(),
    }
}

impl LsmBackend {
    /// Compiles the policy into the kernel maps of the loaded tracepoint
    /// backend, then loads and attaches the LSM programs and the exec-rule
    /// matcher, enforcing for `abm run`'s scope target ([`RUN_TARGET`]).
    /// Call before the command starts.
    pub fn start(
        probes: &mut Probes,
        policy: &Policy,
        ctx: &Context,
        quarantine: crate::enforce::preserve::Quarantine,
        quiet: bool,
    ) -> Result<LsmBackend, LsmError> {
        Self::start_for(probes, policy, ctx, quarantine, quiet, &[RUN_TARGET])
    }

    /// [`LsmBackend::start`] for the scope targets `targets` (more can be
    /// added and removed with [`set_target`]).
    pub fn start_for(
        probes: &mut Probes,
        policy: &Policy,
        ctx: &Context,
        quarantine: crate::enforce::preserve::Quarantine,
        quiet: bool,
        targets: &[u32],
    ) -> Result<LsmBackend, LsmError> {
        available().map_err(LsmError::Unavailable)?;
        let mut compiled = compile(policy, ctx)?;
        compiled.config.setattr_idmap = setattr_idmap()? as u32;
        compiled.config.hold_confirm = 1;
        let ebpf = &mut probes.ebpf;
        // Filled in place: the maps stay owned by the object, whose program
        // instructions refer to their fds (a taken and dropped map would
        // close the fd before the LSM programs load).
        {
            let mut cfg: Array<&mut MapData, LsmConfig> =
                borrow(ebpf, "LSM_CONFIG", Array::try_from)?;
            cfg.set(0, compiled.config, 0)
                .map_err(map_err("LSM_CONFIG"))?;
        }
        {
            let mut protect: BpfHashMap<&mut MapData, InodeKey, PathRuleBits> =
                borrow(ebpf, "LSM_PROTECT", BpfHashMap::try_from)?;
            for (k, v) in &compiled.protect {
                protect.insert(k, v, 0).map_err(map_err("LSM_PROTECT"))?;
            }
        }
        {
            let mut rules: Array<&mut MapData, ExecRule> =
                borrow(ebpf, "LSM_EXEC_RULES", Array::try_from)?;
            for (i, r) in compiled.exec_rules.iter().enumerate() {
                rules
                    .set(i as u32, r, 0)
                    .map_err(map_err("LSM_EXEC_RULES"))?;
            }
        }
        {
            let mut progs: BpfHashMap<&mut MapData, u64, u32> =
                borrow(ebpf, "LSM_EXEC_PROGRAMS", BpfHashMap::try_from)?;
            for (k, v) in &compiled.exec_programs {
                progs
                    .insert(k, v, 0)
                    .map_err(map_err("LSM_EXEC_PROGRAMS"))?;
            }
        }
        {
            let mut tokens: BpfHashMap<&mut MapData, u64, u64> =
                borrow(ebpf, "LSM_EXEC_TOKENS", BpfHashMap::try_from)?;
            for (k, v) in &compiled.exec_tokens {
                tokens.insert(k, v, 0).map_err(map_err("LSM_EXEC_TOKENS"))?;
            }
        }
        for t in targets {
            set_target(probes, *t, true)?;
        }
        let ebpf = &mut probes.ebpf;
        // Taken (and kept alive by the backend): read and written during the run.
        let allow = take(ebpf, "LSM_ALLOW", BpfHashMap::try_from)?;
        let answer_map = take(ebpf, "LSM_ANSWERS", BpfHashMap::try_from)?;
        let events = take(ebpf, "LSM_EVENTS", RingBuf::try_from)?;
        let btf = Btf::from_sys_fs()
            .map_err(|e| LsmError::Unavailable(Unavailable::Btf(e.to_string())))?;
        let mut attached = Vec::new();
        for (name, hook, required) in PROGRAMS {
            let perr = |detail: String| LsmError::Program { name, hook, detail };
            let prog: &mut Lsm = ebpf
                .program_mut(name)
                .ok_or_else(|| perr("missing from the kernel object".into()))?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| perr(e.to_string()))?;
            let t = std::time::Instant::now();
            match prog.load(hook, &btf) {
                Ok(()) => {}
                Err(aya::programs::ProgramError::Btf(e)) if !required => {
                    tracing::info!("LSM hook {hook} not in this kernel ({e}); skipped");
                    continue;
                }
                Err(aya::programs::ProgramError::Btf(e)) => {
                    return Err(perr(format!(
                        "this kernel has no LSM hook {hook} ({e}), which the backend needs; \
                         use `--enforce-backend seccomp`"
                    )))
                }
                Err(e) => return Err(perr(explain_load(&e))),
            }
            prog.attach().map_err(|e| perr(explain_load(&e)))?;
            tracing::info!(
                "LSM program {name} loaded and attached in {:.2?}",
                t.elapsed()
            );
            attached.push(hook);
        }
        for (name, tracepoint) in [
            (EXEC_RULES_PROGRAM, "sys_enter"),
            (EXEC_CHECK_PROGRAM, "sched_process_exec"),
        ] {
            let perr = |detail: String| LsmError::Program {
                name,
                hook: tracepoint,
                detail,
            };
            let tp: &mut RawTracePoint = ebpf
                .program_mut(name)
                .ok_or_else(|| perr("missing".into()))?
                .try_into()
                .map_err(|e: aya::programs::ProgramError| perr(e.to_string()))?;
            tp.load()
                .and_then(|_| tp.attach(tracepoint).map(|_| ()))
                .map_err(|e| perr(e.to_string()))?;
        }
        for r in &compiled.report {
            match &r.fidelity {
                Fidelity::AuditOnly(why) if blocks(r.treatment) => {
                    tracing::warn!(
                        "rule {} ({:?}) is not enforced by BPF LSM, only audited: {why}",
                        r.rule,
                        r.treatment
                    )
                }
                Fidelity::Partial(why) => {
                    tracing::info!("rule {} is partly enforced by BPF LSM: {why}", r.rule)
                }
                _ => {}
            }
        }
        let approvals = Approvals::new(Some(allow), Default::default());
        approvals.set_answer_map(answer_map);
        Ok(LsmBackend {
            events,
            approvals,
            compiled,
            policy: policy.clone(),
            ctx: ctx.clone(),
            clock: Clock::new(),
            quarantine,
            held: Vec::new(),
            attached,
            quiet,
            notify: None,
            undecodable: 0,
            deferred: Vec::new(),
        })
    }

    /// Puts a new policy (or context) in force: compiles it, then rewrites
    /// the kernel tables in place (entries that stay are overwritten, the
    /// others removed). On an error nothing was changed. Decision records
    /// made under the old tables must be absorbed before (their rule
    /// indices name the old rules).
    pub fn recompile(
        &mut self,
        probes: &mut Probes,
        policy: &Policy,
        ctx: &Context,
    ) -> Result<(), LsmError> {
        let mut new = compile(policy, ctx)?;
        new.config.setattr_idmap = self.compiled.config.setattr_idmap;
        new.config.hold_confirm = self.compiled.config.hold_confirm;
        let ebpf = &mut probes.ebpf;
        {
            let mut protect: BpfHashMap<&mut MapData, InodeKey, PathRuleBits> =
                borrow(ebpf, "LSM_PROTECT", BpfHashMap::try_from)?;
            for k in self.compiled.protect.keys() {
                if !new.protect.contains_key(k) {
                    let _ = protect.remove(k);
                }
            }
            for (k, v) in &new.protect {
                protect.insert(k, v, 0).map_err(map_err("LSM_PROTECT"))?;
            }
        }
        {
            let mut rules: Array<&mut MapData, ExecRule> =
                borrow(ebpf, "LSM_EXEC_RULES", Array::try_from)?;
            for i in 0..MAX_EXEC_RULES {
                let r = new.exec_rules.get(i as usize).copied().unwrap_or_default();
                rules.set(i, r, 0).map_err(map_err("LSM_EXEC_RULES"))?;
            }
        }
        sync_map(
            ebpf,
            "LSM_EXEC_PROGRAMS",
            &self.compiled.exec_programs,
            &new.exec_programs,
        )?;
        sync_map(
            ebpf,
            "LSM_EXEC_TOKENS",
            &self.compiled.exec_tokens,
            &new.exec_tokens,
        )?;
        {
            let mut cfg: Array<&mut MapData, LsmConfig> =
                borrow(ebpf, "LSM_CONFIG", Array::try_from)?;
            // Turned on in the kernel's copy alone (guard::hold_refused):
            // a new policy keeps the reason-line hold.
            let old = cfg.get(&0, 0).map_err(map_err("LSM_CONFIG"))?;
            new.config.hold_refused = old.hold_refused;
            cfg.set(0, new.config, 0).map_err(map_err("LSM_CONFIG"))?;
        }
        self.compiled = new;
        self.policy = policy.clone();
        self.ctx = ctx.clone();
        Ok(())
    }

    /// Drops held decisions `stray` says belong to no one (a process whose
    /// target ended); returns how many.
    pub fn drop_held(&mut self, stray: impl Fn(&Action) -> bool) -> usize {
        let before = self.held.len();
        self.held.retain(|h| !stray(&h.action));
        before - self.held.len()
    }

    /// Undecodable decision records since the last call (a loss each: the
    /// decision they carried, a refusal or an allowance, is unknown).
    pub fn take_undecodable(&mut self) -> u64 {
        std::mem::take(&mut self.undecodable)
    }

    /// The compile report (for the trace header and `abm doctor`).
    pub fn report(&self) -> &[RuleReport] {
        &self.compiled.report
    }

    /// Fields for the trace header's `extra.enforcement`.
    pub fn header_extra(&self) -> Value {
        json!({
            "backend": "lsm",
            "hooks": self.attached,
            "rules": self.compiled.report,
            "quarantine": self.quarantine.dir().to_string_lossy(),
        })
    }

    pub(super) fn rule_id(&self, index: u32) -> String {
        self.compiled
            .rules
            .get(&index)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| format!("#{index}"))
    }

    /// The reason line on refused callers' stderr (enforce::notify).
    pub fn set_notify(&mut self, n: std::sync::Arc<crate::enforce::notify::Notifier>) {
        self.approvals.lock().notify = Some(n.clone());
        self.notify = Some(n);
    }

    /// The reason of rule `id`.
    fn reason_of(&self, id: &str) -> String {
        self.policy
            .rules()
            .iter()
            .find(|r| r.id == id)
            .map_or(String::new(), |r| r.reason.clone())
    }

    /// The shared request table (for the control socket).
    pub fn approvals(&self) -> Approvals {
        self.approvals.clone()
    }

    /// Reads the kernel's decision records: refusals become held records
    /// (matched to their syscall records by [`LsmBackend::fixup`]),
    /// `preserve` copies are made and allowed, `confirm` requests wait for
    /// [`Approvals::decide`]. Returns notes for the trace (including the
    /// answers given on the control socket since the last call).
    pub fn absorb(&mut self) -> Vec<Note> {
        self.absorb_with(&|_| None)
    }

    /// [`LsmBackend::absorb`] with the command lines of exec decisions:
    /// `exec_of` finds the exec syscall record (argv, cwd) a decision of
    /// the same thread belongs to. The answer to a `confirm` is kept per
    /// command line (enforce::answers), so a decision whose record is not
    /// there yet waits for up to [`EXEC_LINE_WAIT`] reads (its caller is
    /// stopped meanwhile when it was held), then goes on without it.
    pub fn absorb_with(&mut self, exec_of: &dyn Fn(&Action) -> Option<Action>) -> Vec<Note> {
        self.approvals.sweep();
        let mut raw = Vec::new();
        while let Some(item) = self.events.next() {
            raw.push(item.to_vec());
        }
        let mut todo = std::mem::take(&mut self.deferred);
        for bytes in raw {
            match decode(&bytes) {
                Some((action, d)) => todo.push((action, d, 0)),
                None => {
                    tracing::warn!("undecodable LSM record ({} bytes)", bytes.len());
                    self.undecodable += 1;
                }
            }
        }
        for (mut a, d, waited) in todo {
            if a.op == Some(Op::Exec) && a.argv.as_ref().is_none_or(Vec::is_empty) {
                match exec_of(&a) {
                    Some(e) => {
                        a.argv = e.argv;
                        a.argv_b64 = e.argv_b64;
                        a.argv_truncated = e.argv_truncated;
                        a.cwd = e.cwd;
                    }
                    None if waited < EXEC_LINE_WAIT => {
                        self.deferred.push((a, d, waited + 1));
                        continue;
                    }
                    None => {}
                }
            }
            self.on_decision(a, d);
        }
        std::mem::take(&mut self.approvals.lock().notes)
    }

    pub(super) fn on_decision(&mut self, mut a: Action, d: LsmDecision) {
        let rule = self.rule_id(d.rule);
        let key = AllowKey {
            ino: d.ino,
            dev: d.dev,
            op: a.op.map(|o| o.kind() as u16).unwrap_or(0),
            rule: d.rule as u16,
        };
        let treatment = self.compiled.rules.get(&d.rule).map(|(_, t)| *t);
        let mut enf = Enforcement {
            rule: Some(rule.clone()),
            hook: Some(hook::name(d.hook).to_owned()),
            treatment: Some(treatment),
            ..Enforcement::new(Backend::Lsm, DecisionKind::Unknown)
        };
        let approvals = self.approvals.clone();
        let mut st = approvals.lock();
        let mut told = None;
        let name = match d.decision & decision::MASK {
            decision::DENIED => DecisionKind::Denied,
            decision::CONFIRM_HELD => {
                let reason = self.reason_of(&rule);
                match st.hold(&a, &rule, d.rule, key, reason) {
                    Confirm::Asked(id) => {
                        self.asked(&mut st, &a, &rule, id, true);
                        enf.request = Some(id);
                    }
                    Confirm::Joined(id) => {
                        enf.request = Some(id);
                        enf.same_as_request = Some(id);
                    }
                    Confirm::RefusedBefore(id) => {
                        enf.request = Some(id);
                        enf.decided_by = Some(format!("request:{id}"));
                        enf.answer = Some(REFUSED_BEFORE.to_owned());
                    }
                    Confirm::ApprovedBefore(id) => {
                        enf.request = Some(id);
                        enf.approved_before = Some(id);
                    }
                }
                DecisionKind::Held
            }
            decision::ALLOWED_BY_ANSWER => {
                enf.request = st.answered_by(a.pid, d.rule);
                enf.allowed_by = Some(AllowedBy::Approval);
                DecisionKind::Allowed
            }
            decision::REFUSED_BY_ANSWER => {
                if let Some(id) = st.answered_by(a.pid, d.rule) {
                    enf.request = Some(id);
                    enf.decided_by = Some(format!("request:{id}"));
                }
                DecisionKind::Denied
            }
            decision::CONFIRM_PENDING => match st.confirm(&a, &rule, key) {
                Confirm::Asked(id) => {
                    self.asked(&mut st, &a, &rule, id, false);
                    enf.request = Some(id);
                    DecisionKind::PendingConfirmation
                }
                Confirm::Joined(id) => {
                    enf.request = Some(id);
                    enf.same_as_request = Some(id);
                    DecisionKind::PendingConfirmation
                }
                Confirm::RefusedBefore(id) => {
                    enf.request = Some(id);
                    enf.decided_by = Some(format!("request:{id}"));
                    enf.answer = Some(REFUSED_BEFORE.to_owned());
                    told = Some(Outcome::Refused);
                    DecisionKind::Denied
                }
                Confirm::ApprovedBefore(id) => {
                    enf.request = Some(id);
                    enf.approved_before = Some(id);
                    enf.retry = Some(RETRY_ALLOWED_ONCE.to_owned());
                    told = Some(Outcome::ApprovedBefore);
                    DecisionKind::PendingConfirmation
                }
            },
            decision::PRESERVE_PENDING => {
                if let Some((id, _, kept)) = st.granted.get(&key) {
                    // A repeat before the retry: the copy exists already.
                    enf.request = Some(*id);
                    enf.preserved = Some(kept.clone());
                } else {
                    let id = st.next_request;
                    st.next_request += 1;
                    enf.request = Some(id);
                    // A caller with its own root named the object by its
                    // container path: the copy reads it through the host's.
                    let seen = crate::enforce::rootview::host_view(&a, d.dev, d.ino);
                    match seen.and_then(|h| self.quarantine.preserve(&h, &rule)) {
                        Ok(entries) => {
                            let kept = Value::Array(entries);
                            enf.preserved = Some(kept.clone());
                            match st.grant(key) {
                                Ok(()) => {
                                    enf.retry = Some(RETRY_ALLOWED_ONCE.to_owned());
                                    st.granted.insert(key, (id, AllowedBy::Preserved, kept));
                                }
                                Err(e) => enf.error = Some(e.to_string()),
                            }
                        }
                        Err(e) => {
                            for n in self.quarantine.take_notes() {
                                st.notes.push(Note::QuarantineLimit(n));
                            }
                            enf.error = Some(format!(
                                "could not keep a copy, the call stays refused: {e}"
                            ));
                        }
                    }
                }
                DecisionKind::PreservePending
            }
            decision::ALLOWED_ONCE => {
                if let Some((id, how, kept)) = st.granted.remove(&key) {
                    enf.request = Some(id);
                    enf.allowed_by = Some(how);
                    if how == AllowedBy::Preserved {
                        enf.preserved = Some(kept);
                    }
                }
                DecisionKind::AllowedOnce
            }
            decision::KILLED => {
                enf.reason = Some(KILLED_REASON.to_owned());
                DecisionKind::Killed
            }
            _ => DecisionKind::Unknown,
        };
        enf.decision = name;
        *st.counts.entry(name).or_default() += 1;
        drop(st);
        self.tell(&a, d.decision & decision::MASK, told, &rule, &enf);
        if d.decision & decision::HELD != 0 {
            // The kernel stopped the caller after the refusal, for the line
            // above to come before its own error message.
            super::holds::cont(a.pid);
        }
        a.enforcement = Some(Box::new(enf.clone()));
        self.held.push(Held {
            action: a,
            enforcement: enf,
        });
    }

    /// A new question `id` about `a` (rule `rule`): the line on abm's
    /// stderr and the `confirm_requested` note. `held`: its caller waits.
    fn asked(&self, st: &mut ApprovalState, a: &Action, rule: &str, id: u64, held: bool) {
        let what = crate::enforce::describe(a);
        if !self.quiet {
            if held {
                eprintln!(
                    "abm: confirm request {id}: {what} is held by rule {rule}; `abm approve {id}` lets it and the rest of its action go on, `abm deny {id}` refuses them"
                );
            } else {
                eprintln!(
                    "abm: confirm request {id}: {what} was refused by rule {rule}; `abm approve {id}` lets a retry through"
                );
            }
        }
        let asked = Enforcement {
            request: Some(id),
            rule: Some(rule.to_owned()),
            ..Enforcement::new(Backend::Lsm, DecisionKind::ConfirmRequested)
        };
        let note = CallDecision {
            what: Some(what),
            op: Some(a.op),
            path: Some(a.path.clone()),
            argv: Some(a.argv.clone()),
            cwd: Some(a.cwd.clone()),
            ..CallDecision::of(asked)
        };
        st.notes
            .push(Note::decision(Some(a.pid), DecisionNote::Call(note)));
    }

    /// Tells the refused caller why (enforce::notify): `told` when an
    /// earlier answer decided, else by the kernel's decision `d`. The
    /// kernel stopped the caller for this when it could (`HELD`);
    /// otherwise the caller may have exited, then its parent is told.
    fn tell(&self, a: &Action, d: u32, told: Option<Outcome>, rule: &str, enf: &Enforcement) {
        let Some(n) = &self.notify else { return };
        let outcome = match (told, d) {
            (Some(o), _) => o,
            (None, decision::DENIED) => Outcome::Denied,
            (None, decision::CONFIRM_PENDING) => Outcome::AwaitingApproval,
            (None, decision::PRESERVE_PENDING) if enf.error.is_some() => Outcome::Denied,
            _ => return,
        };
        let reason = self
            .policy
            .rules()
            .iter()
            .find(|r| r.id == rule)
            .map_or("", |r| r.reason.as_str());
        let request = (outcome != Outcome::Denied)
            .then_some(enf.request)
            .flatten();
        n.tell(outcome, a, rule, reason, request);
    }

    /// Attaches held decisions to the released syscall records of the same
    /// thread, and inserts (in time order) the decisions that have no
    /// syscall record (io_uring requests, which bypass the syscall
    /// tracepoints). `force`: the run is over, nothing more will come.
    pub fn fixup(&mut self, acts: &mut Vec<Action>, force: bool) {
        self.fixup_for(acts, force, |_| true)
    }

    /// [`LsmBackend::fixup`] with the held decisions of which `mine` says
    /// they belong to `acts` (the daemon releases each target's records
    /// on their own); the others stay held.
    pub fn fixup_for(
        &mut self,
        acts: &mut Vec<Action>,
        force: bool,
        mine: impl Fn(&Action) -> bool,
    ) {
        if self.held.is_empty() {
            return;
        }
        let newest = acts.iter().map(|a| a.ktime_ns).max().unwrap_or(0);
        let mut keep = Vec::new();
        let mut alone = Vec::new();
        for h in std::mem::take(&mut self.held) {
            if !mine(&h.action) {
                keep.push(h);
                continue;
            }
            let target = acts
                .iter_mut()
                .filter(|a| {
                    a.tid == h.action.tid
                        && a.op == h.action.op
                        && a.ktime_ns <= h.action.ktime_ns
                        && a.enforcement.is_none()
                })
                .max_by_key(|a| a.ktime_ns);
            if let Some(t) = target {
                t.enforcement = Some(Box::new(h.enforcement));
                continue;
            }
            let stale = monotonic_ns().saturating_sub(h.action.ktime_ns) > 30_000_000_000;
            if force || newest > h.action.ktime_ns || stale {
                alone.push(h.action);
            } else {
                keep.push(h);
            }
        }
        self.held = keep;
        for mut a in alone {
            a.time = self.clock.wall(a.ktime_ns);
            if a.result.is_some_and(|r| r < 0) {
                a.result_note = Some(ResultNote::DeniedByLsm);
            } else {
                a.result_note = Some(ResultNote::AllowedByLsm);
            }
            a.verdict = Some(self.policy.evaluate(&a, &self.ctx));
            let at = acts.partition_point(|x| x.ktime_ns <= a.ktime_ns);
            acts.insert(at, a);
        }
    }

    /// The run is over: the next read handles the exec decisions still
    /// waiting for their command line without it.
    pub fn expire_deferred(&mut self) {
        for d in &mut self.deferred {
            d.2 = EXEC_LINE_WAIT;
        }
    }

    /// Closes what still waits; returns the summary note.
    pub fn stop(&mut self) -> LsmSummary {
        self.quarantine.seal();
        let mut st = self.approvals.lock();
        let left: Vec<u64> = st.pending.keys().copied().collect();
        st.pending.clear();
        LsmSummary {
            backend: Backend::Lsm,
            decisions: st.counts.clone(),
            unanswered_requests: left,
            quarantine: self.quarantine.dir().to_string_lossy().into_owned(),
        }
    }

    /// Decision counts so far, by decision name.
    pub fn counts(&self) -> BTreeMap<DecisionKind, u64> {
        self.approvals.lock().counts.clone()
    }
}

/// Rewrites hash map `name` from the entries `old` to `new`.
fn sync_map<V: aya::Pod + PartialEq>(
    ebpf: &mut Ebpf,
    name: &'static str,
    old: &HashMap<u64, V>,
    new: &HashMap<u64, V>,
) -> Result<(), LsmError> {
    let mut m: BpfHashMap<&mut MapData, u64, V> = borrow(ebpf, name, BpfHashMap::try_from)?;
    for k in old.keys().filter(|k| !new.contains_key(k)) {
        let _ = m.remove(k);
    }
    for (k, v) in new {
        if old.get(k) != Some(v) {
            m.insert(k, v, 0).map_err(map_err(name))?;
        }
    }
    Ok(())
}

/// Makes the rules apply (`on`) or stop applying to the processes of scope
/// target `target` (`LSM_TARGETS`).
pub fn set_target(probes: &mut Probes, target: u32, on: bool) -> Result<(), LsmError> {
    let mut m: BpfHashMap<&mut MapData, u32, u32> =
        borrow(&mut probes.ebpf, "LSM_TARGETS", BpfHashMap::try_from)?;
    if on {
        m.insert(target, 0, 0).map_err(map_err("LSM_TARGETS"))
    } else if m.get(&target, 0).is_ok() {
        m.remove(&target).map_err(map_err("LSM_TARGETS"))
    } else {
        Ok(())
    }
}

/// Decodes one `LSM_EVENTS` record into an action and its decision.
pub fn decode(bytes: &[u8]) -> Option<(Action, LsmDecision)> {
    let ev = KernelEvent::decode(bytes).ok()?;
    let df = ev.field(field::DECISION)?;
    if df.data.len() != std::mem::size_of::<LsmDecision>() {
        return None;
    }
    // SAFETY: LsmDecision is repr(C) plain data of exactly this size.
    let d: LsmDecision = unsafe { std::ptr::read_unaligned(df.data.as_ptr().cast()) };
    let mut a = resolve::action_from_event(&ev);
    a.result = Some(ev.hdr.result);
    if ev.hdr.result < 0 {
        a.errno = Some(resolve::errno_name(ev.hdr.result));
    }
    if let Some(t2) = ev.field(field::TARGET2) {
        let p = resolve::components_to_path(&t2.data);
        let (s, b) = text_fields(&p);
        a.path2 = Some(s);
        a.path2_b64 = b;
    }
    Some((a, d))
}
