//! The seccomp supervisor: a dedicated thread of the abm process that
//! answers every notification of the launched tree.
//!
//! Per notification: read the arguments from the caller's memory, resolve
//! the paths through /proc, build the [`Action`], check that the
//! notification is still valid (`SECCOMP_IOCTL_NOTIF_ID_VALID`, after the
//! reads and before acting), judge it with the run's policy and answer:
//! accept/audit continue the call; deny fails it with EPERM; preserve keeps
//! a copy and continues; confirm parks it until a human answers (other
//! calls keep flowing meanwhile). Nothing is written to the trace here:
//! records go to the session loop through a channel.
use std::{
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant, SystemTime},
};

pub(crate) use super::verdicts::{
    canonical_in_view, denied_enforcement, denied_record, fail_closed,
};
use super::{
    filter::nr,
    identity::Protected,
    notif::{Listener, Recv},
    target::{Reader, Unreadable},
    view::{through_proc, Switcher},
    Msg, Pending, State,
};
use crate::{
    core::{monotonic_ns, rfc3339},
    enforce::{answers, describe, notify, preserve::Quarantine, trace_guard::TraceGuard},
    kernel::sensitive::{ViewKey, Views},
    pipeline::resolve,
    policy::{Context, Policy},
    record::{
        enforcement::{
            Backend, CallDecision, DecisionKind, DecisionNote, Enforcement, GoneCall, PendingCall,
            REFUSED_BEFORE, WENT_AWAY,
        },
        Action, Irreversibility, Op, PathIssue, Scope, Treatment, Verdict,
    },
    trace::note::{EnforcementStats, Note},
};

/// Rule id of the monitor's own enforcement rules.
pub const RULE_INTEGRITY: &str = "builtin.enforce-integrity";
pub const RULE_IO_URING: &str = "builtin.enforce-io-uring";
pub const RULE_UNKNOWN_PATH: &str = "builtin.enforce-unknown-path";

pub(crate) struct Supervisor {
    pub shared: Arc<State>,
    pub policy: Policy,
    pub ctx: Context,
    pub quarantine: Quarantine,
    /// Paths the watched tree may not touch under --enforce (the
    /// quarantine, the control socket): prefixes.
    pub guarded: Vec<String>,
    /// The trace's inode and directories, abm's /proc entry (by identity).
    pub trace_guard: TraceGuard,
    pub reader: Reader,
    pub stats: Stats,
    /// Groups calls into actions and measures them before they run.
    pub judge: crate::action::Judge,
    /// The run's sensitive set, which each view the tree enters joins.
    pub sensitive: Option<Views>,
    /// The objects strict rules name, by identity (resolved when the
    /// supervisor starts, before the command).
    pub protected: Protected,
}

/// Supervisor timing: how long the thread spends per notification, from
/// NOTIF_RECV to the answer (not counting confirmation waits).
#[derive(Default)]
pub(crate) struct Stats {
    pub notifications: u64,
    pub busy_ns: u64,
    pub max_ns: u64,
}

impl Supervisor {
    /// Runs until `stop` or until no process uses the filter any more.
    pub fn run(mut self, sock: std::os::fd::OwnedFd) {
        // This thread enters callers' views (its own root and cwd).
        let switcher = Switcher::for_this_thread();
        self.protected = Protected::resolve(&self.policy, &self.ctx);
        // Build this thread's automata before the first call waits on them.
        crate::action::warm(&self.policy, &self.ctx);
        if let Some(why) = &switcher.unusable {
            tracing::warn!(
                "seccomp supervisor: calls made in another mount namespace or root are refused: {why}"
            );
        }
        let stop = || self.shared.core.stop.load(Ordering::Relaxed);
        let fd = match super::notif::recv_fd(&sock, &stop, 100) {
            Ok(Some(fd)) => fd,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("seccomp supervisor: receiving the listener fd: {e}");
                return;
            }
        };
        drop(sock);
        let shared = self.shared.clone();
        let listener = shared.listener.get_or_init(|| Listener::new(fd));
        let mut last_sweep = Instant::now();
        loop {
            if self.shared.core.stop.load(Ordering::Relaxed) {
                break;
            }
            let mut pfd = libc::pollfd {
                fd: listener.raw(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, 50) };
            if r > 0 && pfd.revents & libc::POLLIN != 0 {
                match listener.recv() {
                    Ok(Recv::Got(n)) => {
                        let t0 = monotonic_ns();
                        self.handle(listener, &switcher, &n);
                        let dt = monotonic_ns().saturating_sub(t0);
                        self.stats.notifications += 1;
                        self.stats.busy_ns += dt;
                        self.stats.max_ns = self.stats.max_ns.max(dt);
                    }
                    Ok(Recv::Nothing) => {}
                    Err(e) => {
                        tracing::error!("seccomp supervisor: NOTIF_RECV: {e}");
                        break;
                    }
                }
            } else if r > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                // Every process that had the filter has exited.
                break;
            }
            if last_sweep.elapsed() >= Duration::from_millis(50) {
                self.sweep(listener);
                last_sweep = Instant::now();
            }
        }
        self.quarantine.seal();
        let st = &self.stats;
        let _ = self
            .shared
            .tx
            .send(Msg::Note(Note::EnforcementStats(EnforcementStats {
                backend: Backend::Seccomp,
                notifications: st.notifications,
                mean_handling_us: if st.notifications > 0 {
                    st.busy_ns as f64 / st.notifications as f64 / 1000.0
                } else {
                    0.0
                },
                max_handling_us: st.max_ns as f64 / 1000.0,
            })));
        // Whatever still waits is refused: nobody is left to answer it.
        let ids: Vec<u64> = self.shared.pending().keys().copied().collect();
        for id in ids {
            let _ = self
                .shared
                .decide_as(id, false, "shutdown", DecisionKind::Denied);
        }
    }

    /// Times out confirmations and forgets those whose caller went away.
    fn sweep(&self, listener: &Listener) {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut gone = Vec::new();
        {
            let pending = self.shared.pending();
            for (id, p) in pending.iter() {
                if now >= p.deadline {
                    expired.push(*id);
                } else if !listener.id_valid(p.notif_id) {
                    gone.push(*id);
                }
            }
        }
        for id in expired {
            let _ = self
                .shared
                .decide_as(id, false, "timeout", DecisionKind::Timeout);
        }
        for id in gone {
            if let Some(p) = self.shared.pending().remove(&id) {
                // Nobody answered: the action is asked again next time; a
                // follower still waiting becomes the question.
                for f in self.shared.core.answers.abandoned(id) {
                    self.reask(f);
                }
                let gone = GoneCall {
                    enforcement: Enforcement {
                        request: Some(id),
                        rule: Some(p.verdict.rule.clone()),
                        decided_at: Some(rfc3339(SystemTime::now())),
                        reason: Some(WENT_AWAY.to_owned()),
                        ..Enforcement::new(Backend::Seccomp, DecisionKind::Abandoned)
                    },
                    op: p.action.op,
                    path: p.action.path.clone(),
                    tid: p.action.tid,
                };
                let _ = self.shared.tx.send(Msg::Note(Note::decision(
                    Some(p.action.pid),
                    DecisionNote::Gone(gone),
                )));
            }
        }
    }

    fn handle(&mut self, l: &Listener, sw: &Switcher, n: &libc::seccomp_notif) {
        let ktime = monotonic_ns();
        let tid = n.pid;
        let nrr = n.data.nr as u32;
        if nrr == nr::CHROOT {
            self.chrooting(sw, tid, n.data.args[0]);
            let _ = l.allow(n.id);
            return;
        }
        // The caller's view, read for every call (a chroot or setns
        // changes it at any time); unreadable: the caller is gone.
        let Ok(foreign) = sw.foreign(tid) else {
            let _ = l.refuse(n.id, libc::EPERM);
            return;
        };
        if nrr == nr::IO_URING_SETUP {
            let mut a = Action {
                op: Some(Op::IoUringSetup),
                syscall: "io_uring_setup".into(),
                tid,
                ..Default::default()
            };
            let id = self.reader.identity(tid);
            a.pid = id.tgid;
            a.ppid = id.ppid;
            a.uid = id.uid;
            a.gid = id.gid;
            a.comm = id.comm;
            let v = Verdict {
                rule: RULE_IO_URING.into(),
                treatment: Treatment::Deny,
                irreversibility: Irreversibility::Reversible,
                scope: Scope::Protected,
                reason: "io_uring operations would bypass the seccomp guardrail".into(),
            };
            if l.id_valid(n.id) {
                self.deny(l, n.id, a, v, ktime, "policy", None);
            }
            return;
        }
        let mut action = match self
            .reader
            .action(tid, nrr, &n.data.args, foreign.is_some())
        {
            Ok(Some(a)) => a,
            Ok(None) => {
                let _ = l.allow(n.id);
                return;
            }
            Err(Unreadable(errno)) => {
                // The kernel would fail the call the same way.
                let _ = l.refuse(n.id, errno);
                return;
            }
        };
        // TOCTOU: everything above was read from a process that may have
        // died (and its pid been reused) meanwhile. Only act on a live call.
        if !l.id_valid(n.id) {
            return;
        }
        action.ktime_ns = ktime;
        let mut verdict = match foreign {
            None => self.judge(&mut action),
            Some(key) => match self.judge_in_view(sw, tid, key, &mut action) {
                Ok(Some(v)) => v,
                // An exec of a program the caller's view does not have.
                Ok(None) => {
                    let _ = l.allow(n.id);
                    return;
                }
                Err(why) => self.undecided(&mut action, &why.to_string()),
            },
        };
        if foreign.is_some() && verdict.treatment == Treatment::Preserve {
            // The quarantine is in abm's view; the caller's files are not.
            verdict.reason = format!(
                "{} (not kept: the caller is in another mount namespace or root, whose files the quarantine cannot copy)",
                verdict.reason
            );
            return self.deny(
                l,
                n.id,
                action,
                verdict,
                ktime,
                "policy",
                Some("the caller is in another mount namespace or root".into()),
            );
        }
        // One decision per logical action (crate::action).
        match self.shared.core.answers.prior(&action, &verdict) {
            Some((false, request)) => {
                let by = format!("request:{request}");
                return self.deny(l, n.id, action, verdict, ktime, &by, None);
            }
            Some((true, _)) if verdict.treatment == Treatment::Confirm => {
                let _ = l.allow(n.id);
                return;
            }
            _ => {}
        }
        match verdict.treatment {
            Treatment::Accept | Treatment::Audit => {
                let _ = l.allow(n.id);
            }
            Treatment::Deny => self.deny(l, n.id, action, verdict, ktime, "policy", None),
            Treatment::Preserve => self.preserve(l, n.id, action, verdict, ktime),
            Treatment::Confirm => self.park(l, n.id, action, verdict, ktime, foreign.is_none()),
        }
    }

    /// A `chroot` about to run: the sensitive files of the root it enters
    /// join the watched set before it returns.
    fn chrooting(&mut self, sw: &Switcher, tid: u32, ptr: u64) {
        let Some(views) = &self.sensitive else { return };
        if !views.active() {
            return;
        }
        let mut buf = Vec::new();
        if super::target::read_cstr(tid, ptr, 4096, &mut buf) != Some(false) {
            return;
        }
        let target = std::path::PathBuf::from(
            <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(buf),
        );
        // The new root's identity, in the caller's current view.
        let id = {
            let Ok(_in) = sw.enter(tid) else { return };
            std::fs::metadata(&target).ok()
        };
        let (Some(m), Ok(now)) = (id, ViewKey::of(tid)) else {
            return;
        };
        use std::os::unix::fs::MetadataExt as _;
        let key = ViewKey {
            mnt_ns: now.mnt_ns,
            root_dev: m.dev(),
            root_ino: m.ino(),
        };
        if let Some(v) = views.enter(tid, key, Some(&target)) {
            self.note_view(&v);
        }
    }

    fn note_view(&self, v: &crate::kernel::sensitive::View) {
        for path in v.paths() {
            let _ = self
                .shared
                .tx
                .send(Msg::Note(Note::SensitiveAdded { path, full: false }));
        }
    }

    /// Judges a call made in another mount namespace or root from inside
    /// that view ([`super::view`]): the program an exec runs, the parent
    /// directories, a followed symlink, what `rm -rf` would destroy and
    /// identities are the caller's. `Ok(None)`: an exec of a program that
    /// is not there (a PATH-search miss). `Err`: the view could not be
    /// entered or the path is not in it.
    fn judge_in_view(
        &mut self,
        sw: &Switcher,
        tid: u32,
        key: ViewKey,
        a: &mut Action,
    ) -> Result<Option<Verdict>, super::view::ViewError> {
        if let Some(v) = self.integrity(a) {
            return Ok(Some(v));
        }
        if let Some(views) = &self.sensitive {
            if views.active() && !views.known(&key) {
                if let Some(v) = views.enter(tid, key, None) {
                    self.note_view(&v);
                }
            }
        }
        let root = self.reader.last_root.clone();
        let host_root = root == b"/";
        // A path in the caller's own terms: the host string itself when its
        // root is `/`, else the part under its root.
        let inside = |host: &Option<String>, cont: &Option<String>| match host {
            None => Ok(None),
            Some(h) if host_root => Ok(Some(h.clone())),
            Some(h) => cont
                .clone()
                .map(Some)
                .ok_or_else(|| super::view::ViewError::OutsideRoot {
                    path: h.clone(),
                    root: String::from_utf8_lossy(&root).into_owned(),
                }),
        };
        let p1 = inside(&a.path, &a.container_path)?;
        let p2 = inside(&a.path2, &a.container_path2)?;
        if [&a.raw_path, &a.raw_path2]
            .into_iter()
            .flatten()
            .any(|r| through_proc(r))
        {
            // `/proc/self` inside the view would be abm's own thread.
            PathIssue::add(&mut a.path_issues, PathIssue::ProcMagicLink);
        }
        let follows = self.reader.last_follows;
        let exec = a.op == Some(Op::Exec);
        let mut va = a.clone();
        let entered = sw.enter(tid)?;
        let canon1 = p1.map(|p| {
            if a.path_b64.is_some() {
                p
            } else {
                canonical_in_view(&p, follows && !exec)
            }
        });
        if exec
            && a.raw_path.as_deref().is_some_and(|r| !r.is_empty())
            && canon1
                .as_deref()
                .is_none_or(|p| std::fs::symlink_metadata(p).is_err())
        {
            // execvp tries each PATH entry: nothing runs, nothing to judge.
            return Ok(None);
        }
        let canon2 = p2.map(|p| {
            if a.path2_b64.is_some() {
                p
            } else {
                canonical_in_view(&p, false)
            }
        });
        va.path.clone_from(&canon1);
        va.path2.clone_from(&canon2);
        va.container_path.clone_from(&a.path);
        va.container_path2.clone_from(&a.path2);
        va.cwd = match &a.cwd {
            Some(c) if host_root => Some(c.clone()),
            Some(c) => resolve::strip_root(c.as_bytes(), &root)
                .map(|c| String::from_utf8_lossy(&c).into_owned()),
            None => None,
        };
        let v = self.judge(&mut va);
        drop(entered);
        a.action = va.action;
        a.measured = va.measured.take();
        // The paths as resolved in the view, under the caller's root.
        let back = |c: &Option<String>, host: &mut Option<String>, cont: &mut Option<String>| {
            let Some(c) = c else { return };
            if host_root {
                *host = Some(c.clone());
            } else {
                *host =
                    Some(String::from_utf8_lossy(&resolve::join(&root, c.as_bytes())).into_owned());
                *cont = Some(c.clone());
            }
        };
        back(&canon1, &mut a.path, &mut a.container_path);
        back(&canon2, &mut a.path2, &mut a.container_path2);
        Ok(Some(v))
    }

    /// The verdict of a call the supervisor could not judge in its
    /// caller's view: refused when any rule stricter than audit could match
    /// it on some path (fail closed), else judged on its recorded strings.
    fn undecided(&mut self, a: &mut Action, why: &str) -> Verdict {
        match self.policy.could_match_any_path(a, &self.ctx) {
            Some(r) => Verdict {
                rule: RULE_UNKNOWN_PATH.into(),
                treatment: Treatment::Deny,
                irreversibility: crate::policy::default_irreversibility(
                    a.op.unwrap_or(Op::Unlink),
                ),
                scope: Scope::Protected,
                reason: format!(
                    "the call could not be judged in its caller's view ({why}) and rule {} could match it",
                    r.id
                ),
            },
            None => self.judge(a),
        }
    }

    /// abm's own paths (the quarantine, the control socket), by their
    /// strings in abm's view.
    fn integrity(&self, a: &Action) -> Option<Verdict> {
        let guarded = |p: &Option<String>| {
            p.as_deref().is_some_and(|p| {
                self.guarded
                    .iter()
                    .any(|g| p == g.trim_end_matches('/') || p.starts_with(g.as_str()))
            })
        };
        (a.op != Some(Op::Exec) && (guarded(&a.path) || guarded(&a.path2))).then(|| Verdict {
            rule: RULE_INTEGRITY.into(),
            treatment: Treatment::Deny,
            irreversibility: Irreversibility::Irreversible,
            scope: Scope::Protected,
            reason: "the quarantine and the control socket belong to the monitor".into(),
        })
    }

    fn judge(&mut self, a: &mut Action) -> Verdict {
        if let Some(v) = self.trace_guard.check(a) {
            return v;
        }
        if let Some(v) = self.integrity(a) {
            return v;
        }
        self.judge.begin_batch();
        self.judge.judge(a, &self.policy, &self.ctx);
        self.judge.end_batch();
        let v = a
            .verdict
            .take()
            .unwrap_or_else(|| self.policy.evaluate(a, &self.ctx));
        let v = fail_closed(v, a, &self.policy, &self.ctx);
        // The same call on the protected object it reaches by identity (a
        // hard link, a moved ancestor, a bind mount), when stricter.
        let follows = self.reader.last_follows;
        let v = self
            .protected
            .check(a, &v, follows, &self.policy, &self.ctx)
            .unwrap_or(v);
        if !matches!(v.treatment, Treatment::Deny) {
            self.protected.linking(a);
        }
        v
    }

    #[allow(clippy::too_many_arguments)]
    fn deny(
        &self,
        l: &Listener,
        id: u64,
        mut a: Action,
        v: Verdict,
        ktime: u64,
        by: &str,
        preserve_error: Option<String>,
    ) {
        let mut enf = denied_enforcement(&v, by);
        enf.preserve_error = preserve_error;
        // Tell the caller why, while it is stopped in the call (before
        // its own error message). A call an earlier answer refused can
        // still be approved through that request.
        let (outcome, request) = match by.strip_prefix("request:").and_then(|r| r.parse().ok()) {
            Some(r) => (notify::Outcome::Refused, Some(r)),
            None => (notify::Outcome::Denied, None),
        };
        self.shared
            .core
            .notify
            .tell(outcome, &a, &v.rule, &v.reason, request);
        denied_record(&mut a, v, ktime, enf);
        // Record first, then answer: the record is never missing for a
        // call the caller saw fail.
        let _ = self.shared.tx.send(Msg::Denied(Box::new(a)));
        let _ = l.refuse(id, libc::EPERM);
    }

    fn preserve(&mut self, l: &Listener, id: u64, a: Action, v: Verdict, ktime: u64) {
        match self.quarantine.preserve(&a, &v.rule) {
            Ok(entries) if entries.is_empty() => {
                let _ = l.allow(id);
            }
            Ok(entries) => {
                let mut enf = super::verdicts::decided(DecisionKind::Preserved, &v, "policy");
                enf.quarantine = Some(self.quarantine.dir().to_string_lossy().into_owned());
                enf.entries = Some(entries.iter().filter_map(|e| e["id"].as_u64()).collect());
                let note = CallDecision {
                    preserved: Some(entries),
                    ..super::verdicts::let_through(&a, ktime, enf.clone())
                };
                let note = (a.pid, DecisionNote::Call(note));
                let _ = self.shared.tx.send(Msg::Decision {
                    tid: a.tid,
                    syscall: a.syscall.to_string(),
                    ktime_ns: monotonic_ns(),
                    enforcement: Box::new(enf),
                    note: Box::new(note),
                });
                let _ = l.allow(id);
            }
            Err(e) => {
                for n in self.quarantine.take_notes() {
                    let _ = self.shared.tx.send(Msg::Note(Note::QuarantineLimit(n)));
                }
                // No copy, no destruction: fail closed.
                self.deny(l, id, a, v, ktime, "policy", Some(e.to_string()));
            }
        }
    }

    /// `own_view`: the caller is in abm's view (a git preview of what the
    /// command would change reads the caller's files).
    fn park(
        &mut self,
        l: &Listener,
        notif_id: u64,
        a: Action,
        v: Verdict,
        ktime: u64,
        own_view: bool,
    ) {
        let id = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
        // One question per action (enforce::answers): an identical call
        // gets the answer already given, or waits for the one asked.
        let key = answers::key(&a, &v.rule);
        let leader = match self.shared.core.answers.lookup(&key) {
            Some(answers::Answer::Approved(first)) => {
                self.remembered(l, notif_id, a, v, ktime, first, true);
                return;
            }
            Some(answers::Answer::Refused(first, _)) => {
                self.remembered(l, notif_id, a, v, ktime, first, false);
                return;
            }
            Some(answers::Answer::Waiting(first)) => {
                self.shared.core.answers.follow(first, id);
                Some(first)
            }
            None => {
                self.shared.core.answers.ask(key, id);
                None
            }
        };
        let would = if leader.is_none() && own_view {
            answers::preview(&a)
        } else {
            None
        };
        let requested_at = rfc3339(SystemTime::now());
        let timeout = self.shared.timeout;
        let what = describe(&a);
        let note = PendingCall {
            enforcement: Enforcement {
                request: Some(id),
                rule: Some(v.rule.clone()),
                reason: Some(v.reason.clone()),
                requested_at: Some(requested_at.clone()),
                ..Enforcement::new(Backend::Seccomp, DecisionKind::Pending)
            },
            op: a.op,
            syscall: a.syscall.to_string(),
            path: a.path.clone(),
            path2: a.path2.clone(),
            argv: a.argv.clone(),
            tid: a.tid,
            comm: a.comm.clone(),
            would: would.clone(),
            same_as_request: leader,
            timeout_secs: timeout.as_secs_f64(),
            control_socket: self.shared.core.socket_path.to_string_lossy().into_owned(),
        };
        let _ = self.shared.tx.send(Msg::Note(Note::decision(
            Some(a.pid),
            DecisionNote::Pending(note),
        )));
        if !self.shared.quiet && leader.is_none() {
            eprintln!(
                "abm: request #{id} waits for confirmation: {what} (rule {}: {}){}; answer with `abm approve {id}` or `abm deny {id}` (denied after {}s)",
                v.rule,
                v.reason,
                would.as_ref().map(|w| format!("; {w}")).unwrap_or_default(),
                timeout.as_secs_f64()
            );
        }
        self.shared.pending().insert(
            id,
            Pending {
                notif_id,
                action: a,
                verdict: v,
                ktime_ns: ktime,
                requested_at,
                requested: Instant::now(),
                deadline: Instant::now() + timeout,
                would,
                follows: leader,
            },
        );
        if leader.is_some() {
            // The question is already asked: no second prompt.
            return;
        }
        self.shared.prompt(id);
    }

    /// Answers a call with the answer already given to request `first` for
    /// the same action.
    #[allow(clippy::too_many_arguments)]
    fn remembered(
        &self,
        l: &Listener,
        notif_id: u64,
        a: Action,
        v: Verdict,
        ktime: u64,
        first: u64,
        approved: bool,
    ) {
        let by = format!("request:{first}");
        if approved {
            let mut enf = super::verdicts::decided(DecisionKind::Approved, &v, &by);
            enf.request = Some(first);
            let note = CallDecision {
                argv: Some(a.argv.clone()),
                ..super::verdicts::let_through(&a, ktime, enf.clone())
            };
            let note = (a.pid, DecisionNote::Call(note));
            let _ = self.shared.tx.send(Msg::Decision {
                tid: a.tid,
                syscall: a.syscall.to_string(),
                ktime_ns: monotonic_ns(),
                enforcement: Box::new(enf),
                note: Box::new(note),
            });
            let _ = l.allow(notif_id);
        } else {
            self.shared.core.notify.tell(
                notify::Outcome::Refused,
                &a,
                &v.rule,
                &v.reason,
                Some(first),
            );
            let mut enf = denied_enforcement(&v, &by);
            enf.request = Some(first);
            enf.answer = Some(REFUSED_BEFORE.to_owned());
            let mut rec = a;
            denied_record(&mut rec, v, ktime, enf);
            let _ = self.shared.tx.send(Msg::Denied(Box::new(rec)));
            let _ = l.refuse(notif_id, libc::EPERM);
        }
    }
}

impl Supervisor {
    /// A request that waited on an abandoned one becomes the question.
    fn reask(&self, id: u64) {
        let key = {
            let pending = self.shared.pending();
            let Some(p) = pending.get(&id) else { return };
            answers::key(&p.action, &p.verdict.rule)
        };
        self.shared.core.answers.ask(key, id);
        self.shared.prompt(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
version = 1
[[rule]]
id = "t.keys"
reason = "keys"
ops = ["unlink"]
paths = ["/keys/**"]
treatment = "deny"

[[rule]]
id = "t.rm-ok"
reason = "rm is fine"
ops = ["unlink"]
when = [{ field = "comm", operator = "equal", values = ["trusted"] }]
treatment = "accept"
"#;

    fn unlink(path: &str, comm: &str, issues: &[PathIssue]) -> Action {
        Action {
            op: Some(Op::Unlink),
            syscall: "unlinkat".into(),
            path: Some(path.into()),
            comm: comm.into(),
            path_issues: issues.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn an_inexact_path_fails_closed_when_a_strict_rule_could_match() {
        let policy = Policy::from_str(POLICY, "test").unwrap();
        let ctx = Context::default();
        let judge = |a: &Action| fail_closed(policy.evaluate(a, &ctx), a, &policy, &ctx);
        // Exact path outside the rule: accepted.
        assert_eq!(
            judge(&unlink("/w/f", "sh", &[])).treatment,
            Treatment::Accept
        );
        // The same recorded path, but not known exactly: the deny rule
        // could match the real one.
        let v = judge(&unlink("/w/f", "sh", &[PathIssue::BadFd]));
        assert_eq!(
            (v.treatment, v.rule.as_str()),
            (Treatment::Deny, RULE_UNKNOWN_PATH)
        );
        // The first strict rule that could match is the built-in trace
        // protection: the trace itself could be the real target.
        assert!(
            v.reason.contains("builtin.trace-integrity") && v.reason.contains("bad_fd"),
            "{}",
            v.reason
        );
        // An accepting rule without path conditions after them does not help.
        let v = judge(&unlink("/w/f", "trusted", &[PathIssue::ReadFailed]));
        assert_eq!(v.treatment, Treatment::Deny);
        // A deleted file behind an fd has no name a rule could match.
        assert_eq!(
            judge(&unlink("/w/f", "sh", &[PathIssue::Disconnected])).treatment,
            Treatment::Accept
        );
        // No strict rule applies to the operation: nothing to fail closed on.
        let mut exec = unlink("/w/f", "sh", &[PathIssue::BadFd]);
        exec.op = Some(Op::Exec);
        assert_eq!(judge(&exec).treatment, Treatment::Accept);
    }
}
