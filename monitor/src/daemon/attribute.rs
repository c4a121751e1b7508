//! Which target a kernel record belongs to.
//!
//! The kernel decides scope (`current_scope`: the pid table, then the
//! cgroup, then the nearest watched ancestor cgroup) but its records carry
//! the process's pid and cgroup id, not the target. This mirrors the
//! kernel's decision in userspace, in the same order:
//!
//! 1. processes that entered the pid table: the targets' root pids, and
//!    every child forked by an in-scope process (from fork records, which
//!    the kernel emits before the child runs; removed at exit records);
//! 2. the process's cgroup: a watched cgroup, or a descendant of one
//!    (descendants are found by walking the watched cgroups' subtrees when
//!    an unknown cgroup id shows up);
//! 3. the kernel's pid table itself (a fork record may have been lost).
use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    time::{Duration, Instant},
};

use monitor_common::{EventHeader, EventKind};

use crate::kernel::{cgroup, Probes};

/// Minimum time between two subtree walks triggered by unknown cgroups.
const RESCAN_EVERY: Duration = Duration::from_millis(200);

#[derive(Default)]
pub struct Attribution {
    pids: HashMap<u32, u32>,
    /// cgroup id -> target, for watched cgroups and their descendants.
    cgroups: HashMap<u64, u32>,
    /// Watched cgroups: target -> (id, path).
    watched: HashMap<u32, (u64, PathBuf)>,
    /// Cgroup ids known not to be in any watched subtree (since the last walk).
    outside: HashSet<u64>,
    last_scan: Option<Instant>,
    /// Records no target could be found for.
    pub unattributed: u64,
}

impl Attribution {
    pub fn watch_cgroup(&mut self, target: u32, id: u64, path: PathBuf) {
        self.cgroups.insert(id, target);
        self.watched.insert(target, (id, path));
        self.outside.clear();
    }

    pub fn watch_pid(&mut self, pid: u32, target: u32) {
        self.pids.insert(pid, target);
    }

    /// Forgets everything about a target.
    pub fn remove_target(&mut self, target: u32) {
        self.pids.retain(|_, t| *t != target);
        self.cgroups.retain(|_, t| *t != target);
        self.watched.remove(&target);
    }

    /// Pids currently attributed to a target.
    pub fn pids_of(&self, target: u32) -> Vec<u32> {
        self.pids
            .iter()
            .filter(|(_, t)| **t == target)
            .map(|(p, _)| *p)
            .collect()
    }

    /// The target of a process known by pid or cgroup, without
    /// bookkeeping (for decision records of the BPF LSM backend).
    pub fn owner(&self, pid: u32, cgroup_id: u64) -> Option<u32> {
        self.pids
            .get(&pid)
            .or_else(|| self.cgroups.get(&cgroup_id))
            .copied()
    }

    /// The target of a record, and the bookkeeping its kind implies.
    pub fn attribute(
        &mut self,
        hdr: &EventHeader,
        kind: EventKind,
        probes: &Probes,
    ) -> Option<u32> {
        let target = self.lookup(hdr, probes);
        match (kind, target) {
            (EventKind::Fork, Some(t)) if hdr.result > 0 => {
                self.pids.insert(hdr.result as u32, t);
            }
            (EventKind::Exit, _) => {
                self.pids.remove(&hdr.pid);
            }
            _ => {}
        }
        if target.is_none() {
            self.unattributed += 1;
        }
        target
    }

    fn lookup(&mut self, hdr: &EventHeader, probes: &Probes) -> Option<u32> {
        if let Some(t) = self.pids.get(&hdr.pid) {
            return Some(*t);
        }
        if let Some(t) = self.cgroups.get(&hdr.cgroup_id) {
            return Some(*t);
        }
        if let Ok(e) = probes.scope.get(&hdr.pid, 0) {
            if self.watched.contains_key(&e.target) || self.pids.values().any(|t| *t == e.target) {
                self.pids.insert(hdr.pid, e.target);
                return Some(e.target);
            }
        }
        if !self.outside.contains(&hdr.cgroup_id) && self.rescan() {
            if let Some(t) = self.cgroups.get(&hdr.cgroup_id) {
                return Some(*t);
            }
            self.outside.insert(hdr.cgroup_id);
        }
        None
    }

    /// Walks the watched cgroups' subtrees for cgroups made since the last
    /// walk. Deeper watched cgroups win (they are walked last).
    fn rescan(&mut self) -> bool {
        if self.last_scan.is_some_and(|t| t.elapsed() < RESCAN_EVERY) {
            return false;
        }
        self.last_scan = Some(Instant::now());
        let mut watched: Vec<(u32, PathBuf)> = self
            .watched
            .iter()
            .map(|(t, (_, p))| (*t, p.clone()))
            .collect();
        watched.sort_by_key(|(_, p)| p.components().count());
        for (target, path) in watched {
            for (id, _) in cgroup::descendants(&path) {
                self.cgroups.insert(id, target);
            }
        }
        for (target, (id, _)) in &self.watched {
            self.cgroups.insert(*id, *target);
        }
        self.outside.clear();
        true
    }
}
