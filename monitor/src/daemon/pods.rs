//! Kubernetes: the pod list the selector sidecar writes, one target per
//! selected pod.
use std::{collections::HashMap, path::Path, time::SystemTime};

use super::{config::TargetSpec, target::State, Daemon};
use crate::trace::note::Note;

pub(super) struct K8s {
    pub(super) pods_mtime: Option<SystemTime>,
    /// pod uid -> target name.
    pub(super) pods: HashMap<String, String>,
}

impl Daemon {
    /// Kubernetes: follows the pod list the selector sidecar writes.
    pub(super) fn poll_pods(&mut self) {
        let Some(k) = self.cfg.kubernetes.clone() else {
            return;
        };
        let mtime = std::fs::metadata(&k.pods_file)
            .and_then(|m| m.modified())
            .ok();
        let state = self.k8s.as_mut().expect("k8s state");
        if mtime == state.pods_mtime {
            return;
        }
        state.pods_mtime = mtime;
        let text = std::fs::read_to_string(&k.pods_file).unwrap_or_default();
        let listed: HashMap<String, String> = parse_pods(&text);
        let old = std::mem::take(&mut state.pods);
        for (uid, name) in &old {
            if !listed.contains_key(uid) {
                if let Some(id) = self.id_of(name) {
                    let _ = self.end_target(id, State::Removed, Note::PodDeselected, &mut None);
                }
            }
        }
        let mut now = HashMap::new();
        for (uid, name) in listed {
            if !old.contains_key(&uid) {
                let spec = TargetSpec {
                    name: name.clone(),
                    pod_uid: Some(uid.clone()),
                    workspace: k.workspace.clone(),
                    ..Default::default()
                };
                if let Err(e) = self.add_target(spec) {
                    tracing::warn!("pod {name} ({uid}): {e:#}");
                }
            }
            now.insert(uid, name);
        }
        self.k8s.as_mut().expect("k8s state").pods = now;
    }
}

/// `<uid> <namespace>/<name>` lines (blank lines and `#` comments skipped).
pub fn parse_pods(text: &str) -> HashMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let uid = it.next()?;
            let name = it.next().unwrap_or(uid);
            let ok = uid.len() >= 8 && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
            ok.then(|| (uid.to_owned(), name.to_owned()))
        })
        .collect()
}

pub(super) fn publish_selector(path: &Path, selector: &str) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(path, format!("{selector}\n")) {
        tracing::warn!("cannot write the pod selector to {}: {e}", path.display());
    }
}
