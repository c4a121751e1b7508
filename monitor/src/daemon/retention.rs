//! Retention: old sealed traces in the trace directory are deleted (never
//! live ones).
use std::{
    path::PathBuf,
    time::{Instant, SystemTime},
};

use super::Daemon;

impl Daemon {
    /// Removes the anchor of a trace file retention removed.
    fn remove_anchor_of(&self, trace: &std::path::Path) {
        let (dir, Some(name)) = (&self.cfg.anchor_dir, trace.file_name()) else {
            return;
        };
        if dir.as_os_str().is_empty() {
            return;
        }
        let anchor = dir.join(format!("{}.anchor", name.to_string_lossy()));
        if anchor.exists() {
            crate::protect::release_trace(&anchor);
            if let Err(e) = std::fs::remove_file(&anchor) {
                tracing::warn!("retention: {}: {e}", anchor.display());
            }
        }
    }

    /// Deletes old traces in the trace directory (never live ones).
    pub(super) fn prune(&mut self) {
        self.last_retention = Instant::now();
        let r = &self.cfg.retention;
        if r.max_age.is_none() && r.max_files.is_none() {
            return;
        }
        let live: Vec<PathBuf> = self
            .targets
            .values()
            .filter(|t| t.recorder.is_some())
            .filter_map(|t| t.trace.clone())
            .collect();
        let Ok(rd) = std::fs::read_dir(&self.cfg.trace_dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "jsonl" || x == "abmt") && !live.contains(p)
            })
            .filter_map(|p| {
                let m = std::fs::metadata(&p).ok()?;
                Some((m.modified().ok()?, p))
            })
            .collect();
        files.sort();
        let now = SystemTime::now();
        let mut keep = files.len();
        for (mtime, p) in &files {
            let too_old = r
                .max_age
                .is_some_and(|a| now.duration_since(*mtime).unwrap_or_default() > a);
            let too_many = r.max_files.is_some_and(|n| keep + live.len() > n);
            if too_old || too_many {
                crate::protect::release_trace(p);
                match std::fs::remove_file(p) {
                    Ok(()) => {
                        tracing::info!("retention: removed {}", p.display());
                        keep -= 1;
                        self.remove_anchor_of(p);
                    }
                    Err(e) => tracing::warn!("retention: {}: {e}", p.display()),
                }
            }
        }
    }
}
