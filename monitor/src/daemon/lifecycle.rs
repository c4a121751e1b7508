//! The targets' lifecycle in the daemon: adding a target, finding its
//! cgroup or process tree, activating it (scope in the kernel, its trace
//! opened), claiming new container cgroups for targets that wait for their
//! container, and ending targets whose cgroup or processes are gone.

use super::*;

/// Target id of new container cgroups in the kernel's scope until a
/// waiting target claims them.
pub(super) const PENDING_TARGET: u32 = u32::MAX;
/// How long a new container cgroup's records are kept while its runtime
/// metadata cannot be read.
pub(super) const PENDING_FOR: Duration = Duration::from_secs(10);
/// Records kept per pending cgroup.
pub(super) const PENDING_RECORDS: usize = 4096;

/// A new container cgroup whose container is not known yet.
pub(super) struct Pending {
    pub(super) cgroup: cgroup::NewCgroup,
    pub(super) since: Instant,
    pub(super) records: Vec<crate::kernel::KernelEvent>,
    /// Records beyond [`PENDING_RECORDS`] (a loss if it is claimed).
    pub(super) dropped: u64,
}

impl Daemon {
    /// Adds a target; it starts at once, or waits for its cgroup.
    pub(super) fn add_target(&mut self, spec: TargetSpec) -> anyhow::Result<u32> {
        spec.validate()?;
        if self
            .targets
            .values()
            .any(|t| t.spec.name == spec.name && matches!(t.state, State::Active | State::Waiting))
        {
            anyhow::bail!("a target named {:?} is already watched", spec.name);
        }
        if spec.pid.is_none() && self.hier.is_none() {
            anyhow::bail!("no cgroup v2 hierarchy: only pid targets can be watched");
        }
        self.prepare_enforcement(&spec)?;
        let id = self.next_id;
        self.next_id += 1;
        // A name reused after its target ended replaces the old entry.
        self.targets.retain(|_, t| {
            t.spec.name != spec.name || matches!(t.state, State::Active | State::Waiting)
        });
        let enforce = spec.enforce;
        self.targets.insert(id, {
            let mut t = Target::new(id, spec, self.policy.clone());
            t.anchor_dir = Some(self.cfg.anchor_dir.clone()).filter(|d| !d.as_os_str().is_empty());
            t
        });
        // Before the target enters the kernel's scope: enforced from its
        // first call.
        if enforce {
            if let Err(e) = self.set_enforced(id, true) {
                self.targets.remove(&id);
                return Err(e);
            }
        }
        if let Err(e) = self.try_activate(id) {
            if self.targets[&id].state == State::Waiting {
                self.targets.remove(&id);
                let _ = self.set_enforced(id, false);
            }
            return Err(e);
        }
        self.trim_ended();
        self.arm_following();
        Ok(id)
    }

    /// Where a waiting target's cgroup is, if it exists now.
    pub(super) fn locate(&self, spec: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
        let Some(h) = &self.hier else { return Ok(None) };
        if let Some(c) = &spec.cgroup {
            let p = h.resolve(c);
            return Ok(p.is_dir().then_some(p));
        }
        if let Some(c) = &spec.container {
            return match runtime::Selector::parse(c)? {
                runtime::Selector::Id(id) => Ok(h.find_container(&id)?),
                sel => {
                    for c in runtime::all().iter().filter(|c| sel.matches(c)) {
                        if let Some(p) = h.find_container(&c.id)? {
                            return Ok(Some(p));
                        }
                    }
                    Ok(None)
                }
            };
        }
        if let Some(u) = &spec.pod_uid {
            return Ok(h.find_pod(u)?);
        }
        Ok(None)
    }

    /// Starts watching a waiting target if its cgroup or process exists.
    pub(super) fn try_activate(&mut self, id: u32) -> anyhow::Result<()> {
        let spec = self.targets[&id].spec.clone();
        let mut header = self.header();
        self.enforcement_header(&spec, &mut header);
        if let Some(pid) = spec.pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                anyhow::bail!("no process {pid}");
            }
            let t = self.targets.get_mut(&id).expect("target");
            t.open_trace(&self.cfg.trace_dir, self.key.clone(), header)?;
            let mut pids = vec![pid];
            pids.extend(descendants_of(pid));
            for p in pids {
                if let Err(e) = self.probes.add_pid(p, id) {
                    tracing::warn!("target {}: pid {p}: {e}", spec.name);
                    continue;
                }
                self.attr.watch_pid(p, id);
            }
            self.guard(id);
            self.announce(id);
            return Ok(());
        }
        let Some(path) = self.locate(&spec)? else {
            if self.targets[&id].state == State::Waiting {
                tracing::debug!("target {}: waiting for its cgroup", spec.name);
            }
            return Ok(());
        };
        let cgid = cgroup::cgroup_id(&path)?;
        let level = self.hier.as_ref().map_or(0, |h| h.level(&path));
        let t = self.targets.get_mut(&id).expect("target");
        t.cgroup = Some((path.clone(), cgid));
        t.open_trace(&self.cfg.trace_dir, self.key.clone(), header)?;
        if let Err(e) = self.probes.add_cgroup(cgid, id) {
            let _ = self.end_target(
                id,
                State::Gone(format!("cannot watch: {e}")),
                Note::WatchFailed,
                &mut None,
            );
            return Err(e.into());
        }
        *self.levels.entry(level).or_default() += 1;
        self.write_levels();
        // Found on a poll or when added: if processes are already there,
        // what they did before now is not in the trace, and the trace says so.
        let running = cgroup::procs_recursive(&path);
        self.attr.watch_cgroup(id, cgid, path);
        self.guard(id);
        if !running.is_empty() {
            let t = self.targets.get_mut(&id).expect("target");
            let reason = format!(
                "the {} was already running ({} processes) when it was found: its earlier actions are not recorded",
                t.spec.kind(),
                running.len()
            );
            t.note(&Note::CoverageLate(crate::trace::note::CoverageLate {
                target: t.spec.name.clone(),
                from: rfc3339(SystemTime::now()),
                reason,
            }))?;
        }
        self.announce(id);
        Ok(())
    }

    /// Arms the kernel to put every new container cgroup in scope while a
    /// container target waits for its container.
    pub(super) fn arm_following(&mut self) {
        let waiting = self
            .targets
            .values()
            .any(|t| t.state == State::Waiting && t.spec.container.is_some());
        if waiting && !self.following {
            match cgroup::arm_follow(&mut self.probes, PENDING_TARGET) {
                Ok(()) => self.following = true,
                Err(e) => tracing::warn!(
                    "cannot follow new containers ({e:#}): waiting container targets are found on the next poll, and their traces say from when"
                ),
            }
        } else if !waiting && self.following {
            cgroup::disarm_follow(&mut self.probes);
            self.following = false;
        }
        // Fail closed while an enforcing container target waits: a new
        // container cgroup is enforced from its first process, before the
        // daemon knows whose it is (the policy then applies for the
        // milliseconds until an unnamed container leaves the scope).
        let enforce_pending = self.following
            && self
                .targets
                .values()
                .any(|t| t.state == State::Waiting && t.spec.container.is_some() && t.spec.enforce);
        if self
            .lsm
            .as_ref()
            .is_some_and(|e| e.pending != enforce_pending)
        {
            match self.set_enforced(PENDING_TARGET, enforce_pending) {
                Ok(()) => {
                    if let Some(e) = self.lsm.as_mut() {
                        e.pending = enforce_pending;
                    }
                }
                Err(e) => tracing::error!("new container cgroups: {e:#}"),
            }
        }
    }

    /// A new container cgroup (the kernel put it in scope already): the
    /// waiting target that names its container gets it from its first
    /// process; unknown containers wait for their metadata; others leave
    /// the scope.
    pub(super) fn new_cgroup(&mut self, ev: &crate::kernel::KernelEvent) {
        let cg = cgroup::NewCgroup::from_event(ev);
        if !cg.in_scope {
            return;
        }
        let Some(cid) = cg.container.clone() else {
            self.probes.remove_cgroup(cg.id);
            return;
        };
        match runtime::by_id(&cid) {
            Some(c) => self.claim(cg, &c, Vec::new(), 0),
            None => {
                self.pending.insert(
                    cg.id,
                    Pending {
                        cgroup: cg,
                        since: Instant::now(),
                        records: Vec::new(),
                        dropped: 0,
                    },
                );
            }
        }
    }

    /// Gives a new container cgroup to the waiting target whose selector
    /// matches the container, replaying the records kept meanwhile; takes
    /// it out of scope when none does.
    pub(super) fn claim(
        &mut self,
        cg: cgroup::NewCgroup,
        c: &runtime::Container,
        records: Vec<crate::kernel::KernelEvent>,
        dropped: u64,
    ) {
        let id = self.targets.iter().find_map(|(id, t)| {
            let sel = runtime::Selector::parse(t.spec.container.as_deref()?).ok()?;
            (t.state == State::Waiting && sel.matches(c)).then_some(*id)
        });
        let Some(id) = id else {
            self.probes.remove_cgroup(cg.id);
            return;
        };
        let Some(h) = &self.hier else { return };
        let rel = Path::new(cg.path.trim_start_matches('/'));
        let rel = rel
            .strip_prefix(h.root.strip_prefix("/").unwrap_or(&h.root))
            .unwrap_or(rel);
        let path = h.mount.join(rel);
        let mut header = self.header();
        self.enforcement_header(&self.targets[&id].spec, &mut header);
        let t = self.targets.get_mut(&id).expect("target");
        t.cgroup = Some((path.clone(), cg.id));
        if let Err(e) = t.open_trace(&self.cfg.trace_dir, self.key.clone(), header) {
            tracing::error!("target {}: {e:#}", t.name());
            self.probes.remove_cgroup(cg.id);
            return;
        }
        if let Err(e) = self.probes.add_cgroup(cg.id, id) {
            tracing::error!("target {id}: {e}");
        }
        // Processes forked while the cgroup was pending inherited the
        // pending entry in the pid table: they are the target's now.
        for p in cgroup::procs_recursive(&path) {
            if self
                .probes
                .scope
                .get(&p, 0)
                .is_ok_and(|e| e.target == PENDING_TARGET)
            {
                let _ = self.probes.add_pid(p, id);
            }
        }
        *self.levels.entry(cg.level).or_default() += 1;
        self.write_levels();
        self.attr.watch_cgroup(id, cg.id, path);
        self.guard(id);
        self.announce(id);
        if dropped > 0 {
            let l = self.losses.userspace(Cause::PendingOverflow, dropped);
            if let Some(t) = self.targets.get_mut(&id) {
                let _ = t.append_loss(&l);
            }
        }
        for ev in records {
            self.accept(ev);
        }
        self.arm_following();
    }

    /// Pending cgroups whose container metadata has appeared, or that
    /// waited too long.
    pub(super) fn poll_pending(&mut self) {
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for cgid in ids {
            let p = &self.pending[&cgid];
            let cid = p.cgroup.container.clone().unwrap_or_default();
            if let Some(c) = runtime::by_id(&cid) {
                let p = self.pending.remove(&cgid).expect("pending");
                self.claim(p.cgroup, &c, p.records, p.dropped);
            } else if p.since.elapsed() > PENDING_FOR {
                self.pending.remove(&cgid);
                self.probes.remove_cgroup(cgid);
            }
        }
    }

    pub(super) fn announce(&mut self, id: u32) {
        let t = &self.targets[&id];
        tracing::info!(
            "watching {} ({}{}) -> {}",
            t.name(),
            t.spec.kind(),
            t.cgroup
                .as_ref()
                .map(|(p, i)| format!(" {} id {i}", p.display()))
                .unwrap_or_else(|| t.spec.pid.map(|p| format!(" {p}")).unwrap_or_default()),
            t.trace
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        let line =
            json!({ "type": "target", "target": t.name(), "state": "active", "trace": t.trace });
        let name = t.name().to_owned();
        self.emit(Some(&name), line);
    }

    /// Keeps the kernel's ancestor-level mask in step with the watched cgroups.
    pub(super) fn write_levels(&mut self) {
        let levels: Vec<u32> = self
            .levels
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(l, _)| *l)
            .collect();
        cgroup::set_watched_levels(&mut self.probes, levels);
    }

    /// Stops watching a target: drains its records, writes a note, seals
    /// its trace.
    pub(super) fn end_target(
        &mut self,
        id: u32,
        state: State,
        note: fn(TargetEnd) -> Note,
        ring: &mut Option<&mut Ring>,
    ) -> anyhow::Result<()> {
        if let Some(r) = ring.as_mut() {
            drain(r, self);
        }
        let Some(t) = self.targets.get(&id) else {
            return Ok(());
        };
        if !matches!(t.state, State::Active | State::Waiting) {
            return Ok(());
        }
        // Out of the kernel's tables first, so nothing new arrives.
        if let Some((_, cgid)) = t.cgroup.clone() {
            self.probes.remove_cgroup(cgid);
            let level = self
                .hier
                .as_ref()
                .zip(t.cgroup.as_ref())
                .map_or(0, |(h, (p, _))| h.level(p));
            if let Some(n) = self.levels.get_mut(&level) {
                *n = n.saturating_sub(1);
            }
            self.write_levels();
        }
        self.unguard(id);
        self.purge_scope(id);
        if let Err(e) = self.set_enforced(id, false) {
            tracing::error!("target {id}: {e:#}");
        }
        self.absorb_decisions()?;
        self.release_one(id, true)?;
        let t = self.targets.get_mut(&id).expect("target");
        let target = t.spec.name.clone();
        let reason = match &state {
            State::Gone(r) => r.clone(),
            // The reason of a removal is the note's kind.
            _ => note(TargetEnd {
                target: target.clone(),
                reason: String::new(),
            })
            .kind(),
        };
        t.note(&note(TargetEnd {
            target,
            reason: reason.clone(),
        }))?;
        let was_live = t.is_live();
        t.seal(state)?;
        let name = t.name().to_owned();
        let st = t.state.name();
        if was_live {
            tracing::info!(
                "{name}: {reason}; trace {} sealed ({} events)",
                t.trace
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                t.events
            );
        }
        let line = json!({ "type": "target", "target": name, "state": st, "reason": reason });
        self.emit(Some(&name), line);
        self.attr.remove_target(id);
        self.intake.views.forget_target(id);
        Ok(())
    }

    /// Removes a target's processes from the kernel's pid table.
    pub(super) fn purge_scope(&mut self, id: u32) {
        let pids: Vec<u32> = self
            .probes
            .scope
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, e)| e.target == id)
            .map(|(p, _)| p)
            .collect();
        for p in pids {
            let _ = self.probes.scope.remove(&p);
        }
    }

    pub(super) fn trim_ended(&mut self) {
        let ended: Vec<u32> = self
            .targets
            .iter()
            .filter(|(_, t)| matches!(t.state, State::Gone(_) | State::Removed))
            .map(|(id, _)| *id)
            .collect();
        if ended.len() > KEEP_ENDED {
            for id in &ended[..ended.len() - KEEP_ENDED] {
                self.targets.remove(id);
            }
        }
    }
}

/// Processes descending from `pid` now (from /proc).
fn descendants_of(pid: u32) -> Vec<u32> {
    // Processes that exit during the walk are skipped.
    let parent: Vec<(u32, u32)> = procfs::process::all_processes()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|p| {
            let st = p.stat().ok()?;
            Some((u32::try_from(st.pid).ok()?, u32::try_from(st.ppid).ok()?))
        })
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, pp) in &parent {
            if *pp == p && !out.contains(c) {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}
