//! What a daemon target is, as config files, `abm watch add` and the
//! daemon's control socket give it: [`TargetSpec`], with the container
//! [`Selector`] it may name, and the daemon's default control socket.
//! Shared by the daemon (`crate::daemon`) and its clients (`crate::cmd`).
use std::path::PathBuf;

use anyhow::bail;
use serde::{Deserialize, Serialize};

/// Default control socket.
pub const DEFAULT_SOCKET: &str = "/run/abm/daemon.sock";

/// One thing to watch. Exactly one of `cgroup`, `container`, `pid`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Unique name: in the trace header, each event's `target` and the
    /// trace's file name.
    pub name: String,
    /// A cgroup v2 directory: absolute, or relative to the cgroup root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
    /// A container id (or a unique prefix of at least 12 hex digits), a
    /// container name, or a label `KEY=VALUE`. The container need not
    /// exist yet: it is watched from its first process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// A process and every process it forks from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Kubernetes pod uid (set by the pod list, not in config files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// `${workspace}` for policies (host path). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// `${home}` for policies. Default: /root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<PathBuf>,
    /// Block what the policy denies in this target, with the BPF LSM
    /// backend (deny, confirm through the control socket, preserve). A
    /// target asking for it where BPF LSM programs cannot load is refused.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enforce: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TargetSpec {
    pub fn validate(&self) -> anyhow::Result<()> {
        let n = &self.name;
        if n.is_empty() || n.len() > 128 {
            bail!("target name {n:?}: must have 1 to 128 characters");
        }
        if !n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@'))
            || n.starts_with('.')
        {
            bail!(
                "target name {n:?}: use letters, digits and . _ - / : @ (not starting with a dot)"
            );
        }
        let kinds = [
            self.cgroup.is_some(),
            self.container.is_some(),
            self.pid.is_some(),
            self.pod_uid.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if kinds != 1 {
            bail!("target {n:?}: give exactly one of cgroup, container, pid");
        }
        if let Some(c) = &self.container {
            if let Err(e) = Selector::parse(c) {
                bail!("target {n:?}: {e}");
            }
        }
        if self.pid == Some(0) {
            bail!("target {n:?}: pid 0");
        }
        for (what, p) in [("workspace", &self.workspace), ("home", &self.home)] {
            if p.as_ref().is_some_and(|p| !p.is_absolute()) {
                bail!("target {n:?}: {what} must be an absolute path");
            }
        }
        Ok(())
    }

    /// What the target selects, for status and headers.
    pub fn kind(&self) -> &'static str {
        if self.cgroup.is_some() {
            "cgroup"
        } else if self.container.is_some() {
            "container"
        } else if self.pid.is_some() {
            "pid"
        } else {
            "pod"
        }
    }
}

/// How a target names containers (`container = ...` / `--container`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// A container id or a prefix of at least 12 hex digits.
    Id(String),
    /// A label `KEY=VALUE`.
    Label(String, String),
    /// A container name.
    Name(String),
}

/// A `container` value that names no container.
#[derive(Debug, thiserror::Error)]
pub enum SelectorError {
    #[error("container {0:?}: a label selector is KEY=VALUE")]
    EmptyKey(String),
    #[error(
        "container {0:?}: give a container name, an id (or a prefix of at least 12 hex digits), or a label KEY=VALUE"
    )]
    BadName(String),
}

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        if let Some((k, v)) = s.split_once('=') {
            if k.is_empty() {
                return Err(SelectorError::EmptyKey(s.to_owned()));
            }
            return Ok(Selector::Label(k.to_owned(), v.to_owned()));
        }
        if s.len() >= 12 && s.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(Selector::Id(s.to_ascii_lowercase()));
        }
        let name_ok = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !name_ok {
            return Err(SelectorError::BadName(s.to_owned()));
        }
        Ok(Selector::Name(s.to_owned()))
    }
}
