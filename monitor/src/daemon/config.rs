//! The daemon's configuration file (TOML). Reference: docs/daemon.md.
use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

pub use crate::target_spec::{TargetSpec, DEFAULT_SOCKET};
/// Default trace directory; the daemon owns it (retention prunes it).
pub const DEFAULT_TRACE_DIR: &str = "/var/lib/abm/daemon";
pub const DEFAULT_ANCHOR_DIR: &str = "/var/lib/abm/anchors";

/// `abm daemon --config FILE`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Directory of the traces, one per target and daemon run. Created with
    /// mode 0700. The daemon owns it: retention deletes old `*.abmt` and `*.jsonl` traces here.
    #[serde(default = "default_trace_dir")]
    pub trace_dir: PathBuf,
    /// Directory of the anchors: for every trace file the daemon writes,
    /// `<anchor_dir>/<trace file name>.anchor` receives the chain head after
    /// every flush and the seal at the end, so that `abm verify TRACE
    /// --anchor FILE` rejects a trace rewritten after the daemon wrote it.
    /// Created with mode 0700; keep it out of every container's mounts (or
    /// on another machine's file system). An empty string turns anchors off.
    #[serde(default = "default_anchor_dir")]
    pub anchor_dir: PathBuf,
    /// Control socket (mode 0600; its directory is created with mode 0700).
    #[serde(default = "default_socket")]
    pub socket: PathBuf,
    /// Policy files merged in order; empty: the built-in default pack.
    /// Reloaded on SIGHUP.
    #[serde(default)]
    pub policy: Vec<PathBuf>,
    /// Key file: chain every trace with HMAC-SHA256 under this key.
    #[serde(default)]
    pub sign_key: Option<PathBuf>,
    /// Kernel ring buffer size in KiB (power of two, 4..=1048576).
    #[serde(default = "default_ringbuf_kib")]
    pub ringbuf_kib: u32,
    /// Also write every event as one JSON line to stdout (for a cluster's
    /// log pipeline). Diagnostics always go to stderr.
    #[serde(default)]
    pub stdout: bool,
    /// The cgroup v2 hierarchy as mounted for the daemon. Default: found
    /// in /proc/self/mountinfo.
    #[serde(default)]
    pub cgroup_root: Option<PathBuf>,
    /// How often cgroups are checked: targets waiting for their container,
    /// removed cgroups, the Kubernetes pod list. Default "1s".
    #[serde(default = "default_poll", with = "duration")]
    pub poll_interval: Duration,
    #[serde(default)]
    pub retention: Retention,
    /// Targets to watch from the start.
    #[serde(default, rename = "target")]
    pub targets: Vec<TargetSpec>,
    #[serde(default)]
    pub kubernetes: Option<Kubernetes>,
    /// Address of the Prometheus endpoint (`/metrics`) and the health
    /// checks (`/healthz`, `/readyz`), e.g. "127.0.0.1:9464". Off when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// Rotate a target's trace once it holds this many bytes on disk: the
    /// file is sealed and a new one continues it, naming the file and its
    /// seal, so that `abm verify FILE...` checks the sequence. Default
    /// 268435456 (256 MiB); 0 turns rotation off.
    #[serde(default = "default_rotate_bytes")]
    pub rotate_bytes: u64,
    /// Remote approvals of the enforcing targets' `confirm` requests: the
    /// signed HTTP(S) endpoint of `abm run --approvals-listen`. Off when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<super::approvals::RemoteApprovals>,
}

fn default_rotate_bytes() -> u64 {
    256 << 20
}

/// Which old traces are deleted (sealed or left by a crash; never the
/// traces being written). Checked at start, after every seal and hourly.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Retention {
    /// Delete traces last modified longer ago than this ("7d", "12h").
    #[serde(default, with = "opt_duration")]
    pub max_age: Option<Duration>,
    /// Keep at most this many traces (oldest deleted first).
    #[serde(default)]
    pub max_files: Option<usize>,
}

/// Kubernetes: watch the pods of this node that match a label selector.
///
/// The daemon does not talk to the API server. It writes `pod_selector`
/// to `selector_file`; a sidecar with read access to pods lists the
/// matching pods of the node and writes them to `pods_file`, one
/// `<pod uid> <namespace>/<name>` per line; the daemon finds each pod's
/// cgroup in the kubelet's layout (`kubepods*/…pod<uid>…`) and watches it
/// (all containers of the pod, through ancestor matching).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// Label selector, as `kubectl get pods -l` takes it.
    pub pod_selector: String,
    /// The pod list the sidecar writes.
    #[serde(default = "default_pods_file")]
    pub pods_file: PathBuf,
    /// Where the daemon publishes the selector for the sidecar.
    #[serde(default = "default_selector_file")]
    pub selector_file: PathBuf,
    /// `${workspace}` for pod targets (container view globs work too).
    #[serde(default)]
    pub workspace: Option<PathBuf>,
}

fn default_trace_dir() -> PathBuf {
    PathBuf::from(DEFAULT_TRACE_DIR)
}
fn default_anchor_dir() -> PathBuf {
    PathBuf::from(DEFAULT_ANCHOR_DIR)
}
fn default_socket() -> PathBuf {
    PathBuf::from(DEFAULT_SOCKET)
}
fn default_ringbuf_kib() -> u32 {
    16384
}
fn default_poll() -> Duration {
    Duration::from_secs(1)
}
fn default_pods_file() -> PathBuf {
    PathBuf::from("/run/abm/k8s/pods")
}
fn default_selector_file() -> PathBuf {
    PathBuf::from("/run/abm/k8s/selector")
}

mod duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!("{s:?}: {e} (e.g. \"500ms\", \"2s\", \"7d\")"))
        })
    }
}

mod opt_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("{s:?}: {e} (e.g. \"12h\", \"7d\")")))
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses and validates config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Config> {
        let cfg: Config = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            anyhow::anyhow!("{origin}:{line}:{col}: {}", e.message())
        })?;
        cfg.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(cfg)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if !(4..=1 << 20).contains(&self.ringbuf_kib) || !self.ringbuf_kib.is_power_of_two() {
            bail!(
                "ringbuf_kib = {}: must be a power of two between 4 and 1048576",
                self.ringbuf_kib
            );
        }
        if self.rotate_bytes != 0 && self.rotate_bytes < 4096 {
            bail!(
                "rotate_bytes = {}: 0 (no rotation) or at least 4096",
                self.rotate_bytes
            );
        }
        if !self.anchor_dir.as_os_str().is_empty() {
            if !self.anchor_dir.is_absolute() {
                bail!(
                    "anchor_dir = {:?}: give an absolute path (or \"\" for no anchors)",
                    self.anchor_dir
                );
            }
            if crate::core::absolute(&self.anchor_dir) == crate::core::absolute(&self.trace_dir) {
                bail!(
                    "anchor_dir = {:?} is the trace directory: whoever can rewrite a trace could \
                     then rewrite its anchor too; give a directory of its own (default {})",
                    self.anchor_dir,
                    DEFAULT_ANCHOR_DIR
                );
            }
        }
        if self.poll_interval < Duration::from_millis(100) {
            bail!("poll_interval must be at least 100ms");
        }
        if let Some(a) = &self.metrics {
            if let Err(e) = a.parse::<std::net::SocketAddr>() {
                bail!("metrics = {a:?}: not an address such as \"127.0.0.1:9464\": {e}");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for t in &self.targets {
            t.validate()?;
            if t.pod_uid.is_some() {
                bail!(
                    "target {:?}: pod_uid is set by the Kubernetes pod list, not in the config",
                    t.name
                );
            }
            if !seen.insert(t.name.as_str()) {
                bail!("target name {:?} is used twice", t.name);
            }
        }
        if let Some(k) = &self.kubernetes {
            if k.pod_selector.trim().is_empty() {
                bail!("kubernetes.pod_selector is empty");
            }
        }
        Ok(())
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_parses() {
        let text = include_str!("../../../deploy/abm.toml");
        let c = Config::parse(text, "deploy/abm.toml").unwrap();
        assert!(!c.targets.is_empty());
        assert_eq!(c.socket, PathBuf::from(DEFAULT_SOCKET));
        assert!(c.retention.max_age.is_some());
    }

    #[test]
    fn defaults_and_durations() {
        let c = Config::parse(
            "poll_interval = \"250ms\"\n[retention]\nmax_age = \"7d\"\nmax_files = 3\n",
            "x",
        )
        .unwrap();
        assert_eq!(c.poll_interval, Duration::from_millis(250));
        assert_eq!(c.retention.max_age, Some(Duration::from_secs(7 * 86400)));
        assert_eq!(c.retention.max_files, Some(3));
        assert_eq!(c.ringbuf_kib, 16384);
        assert!(c.targets.is_empty());
        assert!(!c.stdout);
    }

    #[test]
    fn enforce_is_a_target_key_off_by_default() {
        let c = Config::parse(
            "[[target]]\nname = \"a\"\ncgroup = \"x\"\nenforce = true\n[[target]]\nname = \"b\"\npid = 3\n",
            "x",
        )
        .unwrap();
        assert!(c.targets[0].enforce);
        assert!(!c.targets[1].enforce);
        let text = toml::to_string_pretty(&c).unwrap();
        assert_eq!(text.matches("enforce = true").count(), 1, "{text}");
        let e = Config::parse(
            "[[target]]\nname = \"a\"\npid = 3\nenforce = \"yes\"\n",
            "c",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("c:4:"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = Config::parse("stdout = true\nbogus = 1\n", "cfg.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cfg.toml:2:1:"), "{e}");
        let e = Config::parse("[[target]]\nname = \"a\"\n", "cfg.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly one of cgroup, container, pid"), "{e}");
        let e = Config::parse(
            "[[target]]\nname = \"a\"\npid = 3\n[[target]]\nname = \"a\"\npid = 4\n",
            "cfg.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("used twice"), "{e}");
        let e = Config::parse("[[target]]\nname = \"a\"\ncontainer = \"a b\"\n", "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("12 hex digits"), "{e}");
        let e = Config::parse("ringbuf_kib = 1000\n", "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("power of two"), "{e}");
        let e = Config::parse("poll_interval = \"soon\"\n", "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c:1:"), "{e}");
        let e = Config::parse("anchor_dir = \"anchors\"\n", "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("anchor_dir") && e.contains("absolute"), "{e}");
        let e = Config::parse("trace_dir = \"/srv/t\"\nanchor_dir = \"/srv/t/\"\n", "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the trace directory"), "{e}");
        let c = Config::parse("anchor_dir = \"\"\n", "c").unwrap();
        assert!(c.anchor_dir.as_os_str().is_empty());
        assert_eq!(
            Config::parse("", "c").unwrap().anchor_dir,
            PathBuf::from(DEFAULT_ANCHOR_DIR)
        );
    }
}
