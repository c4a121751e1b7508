//! The options of `abm run` and where its trace goes by default.
use std::{ffi::OsString, path::PathBuf, time::SystemTime};

use anyhow::Context as _;

/// Options of `abm run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Trace file to write (hash-chained). It must not exist yet.
    /// Default: /var/lib/abm/traces/run-<UTC time>-<pid>.abmt, outside any
    /// workspace so the watched command cannot reach it by accident.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Form of the trace file: `compact` (zstd frames, about 10x smaller)
    /// or `jsonl` (plain JSON lines). Default: jsonl when the --trace path
    /// ends in `.jsonl`, compact otherwise. Every abm command reads both;
    /// `abm trace cat` prints either as JSON lines.
    #[arg(long, value_enum, value_name = "FORM")]
    pub format: Option<crate::trace::TraceFormat>,
    /// The task's own directory: the `${workspace}` root of policies and the
    /// `workspace` scope. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Policy file(s) to judge actions with, merged in order. Default: the
    /// built-in default pack (see `abm policy show`).
    #[arg(long = "policy", value_name = "FILE")]
    pub policy: Vec<PathBuf>,
    /// Key file: chain the trace with HMAC-SHA256 under this key instead of
    /// plain SHA-256, so only key holders can produce a valid trace. `-`
    /// reads the key from stdin (to its end; the command then starts with
    /// its stdin at end of file). A key on a path is readable by a watched
    /// command running as root, which can then forge a trace: prefer
    /// `--sign-key-fd` or `-`.
    #[arg(long, value_name = "FILE", conflicts_with = "sign_key_fd")]
    pub sign_key: Option<PathBuf>,
    /// Read the signing key from descriptor N (to its end), then close it:
    /// the key is then only in abm's memory, never on a path the watched
    /// command could read.
    #[arg(long, value_name = "N")]
    pub sign_key_fd: Option<i32>,
    /// Send the trace's chain head to descriptor N (a file or pipe the
    /// caller holds): one JSON line `{"seq":..,"hash":..}` after each flush
    /// and a last one with `"seal":true`. `abm verify --anchor` then rejects
    /// a trace rewritten or sealed by someone else. The descriptor is closed
    /// for the command (close-on-exec).
    #[arg(long, value_name = "N")]
    pub anchor_fd: Option<i32>,
    /// Print each action as it is recorded (to stderr).
    #[arg(long, short)]
    pub verbose: bool,
    /// Print no summary at the end.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the end-of-run summary as JSON (to stderr) instead of text.
    #[arg(long)]
    pub summary_json: bool,
    /// Kernel ring buffer size in KiB (power of two, at least 4). A thread
    /// of its own empties it into memory; smaller buffers lose events under
    /// bursts that outpace that thread; losses are recorded in the trace.
    #[arg(long, default_value_t = 4096, value_name = "KIB")]
    pub ringbuf_kib: u32,
    /// After the command exits, keep watching its remaining descendants
    /// (e.g. daemons) for this many seconds, then terminate them.
    #[arg(long, default_value_t = 2.0, value_name = "SECS", value_parser = crate::core::parse_secs)]
    pub linger: f64,
    /// Leave descendants still running after --linger alive (untraced from
    /// then on) instead of terminating them.
    #[arg(long)]
    pub keep_orphans: bool,
    /// Leave CAP_SYS_PTRACE to the command. By default it is removed from
    /// the command's capability sets, bounding set included, so that even
    /// a root command cannot read or write abm's memory or descriptors
    /// through /proc/<pid>/ or attach to processes outside its own tree;
    /// debuggers and strace of its own descendants keep working
    /// (docs/security.md).
    #[arg(long)]
    pub allow_ptrace: bool,
    /// Let the command take BPF programs, maps and links by id (`bpf()`
    /// *_GET_FD_BY_ID), load or unload kernel modules and kexec a kernel.
    /// By default these calls fail with EPERM, so that even a root command
    /// cannot detach abm's programs or take itself out of scope. Only BPF
    /// tooling (bpftool, bpftrace listing others' programs) and module
    /// loaders need them (docs/security.md).
    #[arg(long)]
    pub allow_kernel_admin: bool,
    /// Also put CMD in a fresh cgroup v2 child (under the hierarchy found in
    /// /proc/self/mountinfo) and watch it by cgroup id, so a process that
    /// joins the cgroup from outside the tree is in scope too; everything
    /// in the cgroup is the command's (waited for, terminated). The cgroup
    /// is removed at the end.
    #[arg(long)]
    pub cgroup: bool,
    /// Containers the command starts through a runtime (`docker run`,
    /// `docker compose up`, `nerdctl run`): their processes are children of
    /// the runtime, not of the command, and are followed from their
    /// cgroup's creation. `tree`: containers created while a container
    /// client of the watched tree (docker, podman, nerdctl, ctr, crictl,
    /// docker-compose, kubectl) is running; `all`: every container created
    /// while the run lasts (a dedicated host); `off`: none
    /// (docs/harness.md).
    #[arg(long, value_enum, default_value_t = FollowContainers::Tree, value_name = "MODE")]
    pub follow_containers: FollowContainers,
    /// Also treat files matching this pattern as sensitive: their read-only
    /// opens are recorded as `read` (docs/trace.md). `${workspace}/...`,
    /// `${home}/...`, `~/...` or an absolute path; `*` stays within one
    /// component, `**` crosses them. Adds to the default set of
    /// credentials and keys and to the policy's `[scopes] sensitive`
    /// (docs/oracle.md, "Sensitive-data exposure"). Files the command
    /// creates under a pattern are added as it creates them.
    #[arg(long = "sensitive", value_name = "PATTERN")]
    pub sensitive: Vec<String>,
    /// Do not use the default sensitive set (only the policy's and
    /// --sensitive patterns).
    #[arg(long)]
    pub no_default_sensitive: bool,
    /// Enforcement: --enforce and its options (docs/enforcement.md).
    #[command(flatten)]
    pub enforce: crate::enforce::EnforceArgs,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Which new containers `abm run` follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FollowContainers {
    Tree,
    All,
    Off,
}

pub fn default_trace_dir() -> PathBuf {
    PathBuf::from("/var/lib/abm/traces")
}

pub(super) fn trace_path(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    let dir = default_trace_dir();
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create trace directory {}", dir.display()))?;
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    Ok(dir.join(format!(
        "run-{stamp}-{}.{}",
        std::process::id(),
        crate::trace::TraceFormat::Compact.extension()
    )))
}
