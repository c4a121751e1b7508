//! BPF LSM enforcement backend: the policy compiled into kernel maps, the
//! LSM programs loaded and attached, and their decisions turned into trace
//! records.
//!
//! The kernel decides alone and synchronously (monitor-ebpf/src/probes/lsm/):
//! this module only fills the maps before the command starts, reads the
//! decision records afterwards, grants one-shot allowances (an approval of a
//! `confirm`, a finished copy for `preserve`) and writes the outcomes into
//! the trace. docs/lsm.md describes what compiles and what does not.
//!
//! - [`available`]: whether LSM programs load and attach on this kernel.
//! - [`compile`]: the policy's rules as kernel tables, with a report of
//!   what each rule became.
//! - [`LsmBackend`] (`backend`): one enforcing `abm run`.
//! - [`LsmGuard`] (`guard`): the backend behind [`crate::enforce::Guard`].
//! - `approvals`: requests waiting for a human, one-shot allowances.
//! - `holds`: callers held for a `confirm`, answered per process.
use std::{
    collections::{BTreeMap, HashMap},
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use aya::{
    maps::{Array, HashMap as BpfHashMap, MapData, RingBuf},
    programs::{Lsm, RawTracePoint},
    Btf, Ebpf, EbpfLoader,
};
use monitor_common::{
    lsm::{
        decision, field, fnv1a, hook, treatment, EXEC_CLAUSES, EXEC_INDEX_ARGV_UNREAD,
        EXEC_INDEX_UNDECIDED, MAX_EXEC_RULES, MAX_FILE_RULES, MAX_PROTECT, MAX_TOKEN, MAX_TOKENS,
    },
    ActionAnswers, AllowKey, Allowance, ExecRule, InodeKey, LsmConfig, LsmDecision, PathRuleBits,
};
use serde_json::{json, Value};

use crate::{
    core::{monotonic_ns, Clock},
    kernel::{Capability, KernelEvent, Probes},
    pipeline::resolve,
    policy::{Condition, Context, Field, Operator, Policy, Rule},
    record::{text_fields, Action, Op, ResultNote, Treatment},
    trace::note::Note,
};

mod approvals;
mod backend;
pub mod btf;
mod compile;
mod guard;
mod holds;
mod no_kernel_form;
#[cfg(test)]
mod tests;

pub use approvals::*;
pub use backend::*;
pub use compile::*;
pub use guard::LsmGuard;
pub(crate) use guard::{hold_refused, requests};
pub use holds::DEFAULT_HOLD_TIMEOUT;
pub use no_kernel_form::NoKernelForm;

/// LSM programs: (program name, hook, required). `file_truncate` exists
/// since Linux 6.2; before that `path_truncate` sees ftruncate and O_TRUNC.
/// `file_ioctl_compat` exists since 6.8; before that `file_ioctl` sees the
/// 32-bit compat ioctls too. A required hook that does not load stops the
/// backend with an error naming it.
pub const PROGRAMS: [(&str, &str, bool); 16] = [
    ("lsm_path_unlink", "path_unlink", true),
    ("lsm_path_rmdir", "path_rmdir", true),
    ("lsm_path_rename", "path_rename", true),
    ("lsm_path_chmod", "path_chmod", true),
    ("lsm_path_chown", "path_chown", true),
    ("lsm_path_truncate", "path_truncate", true),
    ("lsm_file_truncate", "file_truncate", false),
    ("lsm_file_open", "file_open", true),
    ("lsm_bprm_check_security", "bprm_check_security", true),
    ("lsm_path_link", "path_link", true),
    ("lsm_path_symlink", "path_symlink", true),
    ("lsm_inode_setattr", "inode_setattr", true),
    ("lsm_inode_setxattr", "inode_setxattr", true),
    ("lsm_inode_removexattr", "inode_removexattr", true),
    ("lsm_file_ioctl", "file_ioctl", true),
    ("lsm_file_ioctl_compat", "file_ioctl_compat", false),
];

/// Whether the running kernel's `inode_setattr` takes `(idmap, dentry,
/// attr)` (true) or `(dentry, attr)` (false): [`LsmConfig::setattr_idmap`].
pub fn setattr_idmap() -> Result<bool, LsmError> {
    match btf::hook_args("inode_setattr") {
        Ok(3) => Ok(true),
        Ok(2) => Ok(false),
        Ok(n) => Err(LsmError::Program {
            name: "lsm_inode_setattr",
            hook: "inode_setattr",
            detail: format!("the hook has {n} arguments in this kernel, abm reads (dentry, attr) or (idmap, dentry, attr)"),
        }),
        Err(e) => Err(LsmError::Program {
            name: "lsm_inode_setattr",
            hook: "inode_setattr",
            detail: e.to_string(),
        }),
    }
}

/// The exec-rule matcher, a raw tracepoint attached only with this backend.
pub const EXEC_RULES_PROGRAM: &str = "sys_enter_exec_rules";

/// The check of the new image's argv against the decision (kills the task
/// before its first instruction when they differ and a rule refuses it), a
/// raw tracepoint on `sched_process_exec` attached with the matcher.
pub const EXEC_CHECK_PROGRAM: &str = "sched_process_exec_verify";

/// `enforcement.reason` of a `killed` exec decision.
pub const KILLED_REASON: &str = "argv changed after the decision";

/// The scope target id of `abm run`'s command (`ScopeEntry::target`).
pub const RUN_TARGET: u32 = 1;

/// Kernel rule indices at or above this are exec rules.
pub const EXEC_INDEX_BASE: u32 = MAX_FILE_RULES;

/// How long an approval or a finished copy waits for the retry.
pub const ALLOW_TTL_NS: u64 = 300 * 1_000_000_000;

#[derive(Debug, thiserror::Error)]
pub enum LsmError {
    #[error("{0}")]
    Unavailable(#[from] Unavailable),
    #[error("the policy does not fit the BPF LSM backend: {0}")]
    Capacity(String),
    #[error("map {name}: {detail}")]
    Map { name: &'static str, detail: String },
    #[error("LSM program {name} on hook {hook}: {detail}")]
    Program {
        name: &'static str,
        hook: &'static str,
        detail: String,
    },
}

// ---------------------------------------------------------------------------
// Availability

/// Whether BPF LSM programs load and attach here; the error says why not
/// and what would fix it. The first call loads and attaches one program
/// (a no-op while no policy is loaded), later calls reuse the answer.
pub fn available() -> Result<(), Unavailable> {
    static ANSWER: OnceLock<Result<(), Unavailable>> = OnceLock::new();
    ANSWER.get_or_init(probe_available).clone()
}

/// `abm doctor`'s line for this backend.
pub fn capability() -> Capability {
    match available() {
        Ok(()) => Capability {
            name: "bpf_lsm",
            available: true,
            detail: format!("LSM programs load and attach ({} hooks)", PROGRAMS.len()),
        },
        Err(e) => Capability {
            name: "bpf_lsm",
            available: false,
            detail: e.to_string(),
        },
    }
}

fn probe_available() -> Result<(), Unavailable> {
    crate::kernel::probes::preflight().map_err(|e| Unavailable::Preflight(e.to_string()))?;
    match crate::kernel::probes::lsm_list() {
        Some(l) if l.split(',').any(|x| x == "bpf") => {}
        Some(l) => return Err(Unavailable::NotActive(l)),
        None => return Err(Unavailable::NoLsmList),
    }
    let btf = Btf::from_sys_fs().map_err(|e| Unavailable::Btf(e.to_string()))?;
    let mut ebpf = load_object().map_err(|e| Unavailable::Object(e.to_string()))?;
    let (name, hook, _) = PROGRAMS[0];
    let prog: &mut Lsm = ebpf
        .program_mut(name)
        .ok_or(Unavailable::Missing(name))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| Unavailable::Program {
            name,
            detail: e.to_string(),
        })?;
    prog.load(hook, &btf)
        .map_err(|e| Unavailable::Load(explain_load(&e)))?;
    prog.attach()
        .map_err(|e| Unavailable::Load(explain_load(&e)))?;
    Ok(())
}

/// Why BPF LSM programs do not load or attach here ([`available`]); the
/// text says what would fix it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    /// The tracing preflight failed (its error's text).
    #[error("{0}")]
    Preflight(String),
    /// The active LSMs, without `bpf`.
    #[error("the BPF LSM is not active (active LSMs: {0}): boot with `lsm={0},bpf` (needs CONFIG_BPF_LSM=y)")]
    NotActive(String),
    #[error("cannot read the active LSM list (/sys/kernel/security/lsm)")]
    NoLsmList,
    #[error("cannot read the kernel BTF: {0}")]
    Btf(String),
    #[error("loading the kernel object: {0}")]
    Object(String),
    #[error("program {0} missing from the kernel object")]
    Missing(&'static str),
    #[error("{name}: {detail}")]
    Program { name: &'static str, detail: String },
    /// A load or attach error in words, with the likely cause.
    #[error("{0}")]
    Load(String),
}

fn load_object() -> Result<Ebpf, aya::EbpfError> {
    EbpfLoader::new()
        .map_max_entries("EVENTS", 64 * 1024)
        .map_max_entries("LSM_EVENTS", 64 * 1024)
        .load(crate::kernel::probes::OBJECT)
}

/// A program load or attach error in words, with the likely cause.
fn explain_load(e: &aya::programs::ProgramError) -> String {
    use aya::programs::ProgramError;
    let (errno, what, log) = match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => (
            io_error.raw_os_error(),
            format!("BPF_PROG_LOAD: {io_error}"),
            Some(verifier_log.to_string()),
        ),
        ProgramError::SyscallError(s) => (
            s.io_error.raw_os_error(),
            format!("{}: {}", s.call, s.io_error),
            None,
        ),
        other => (None, other.to_string(), None),
    };
    match errno {
        Some(libc::EPERM) => format!(
            "the kernel refuses LSM programs ({what}): BPF LSM needs BPF trampolines, which this kernel does \
             not allow (e.g. a hardened or sandboxed kernel that forbids runtime text patching); the \
             tracepoint backend still works and `--enforce` falls back to seccomp"
        ),
        Some(libc::EINVAL) | Some(ENOTSUPP) | Some(libc::EOPNOTSUPP) if log.as_deref().is_none_or(str::is_empty) => {
            format!("the kernel does not support BPF LSM programs ({what}; CONFIG_BPF_LSM=y and BTF are needed)")
        }
        _ => match (e, log) {
            (ProgramError::Btf(b), _) => format!("the kernel BTF has no BPF LSM hooks (CONFIG_BPF_LSM is off?): {b}"),
            (_, Some(log)) => {
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(12)..].join("\n  ");
                format!("the verifier rejected an LSM program ({what}); end of its log:\n  {tail}")
            }
            _ => what,
        },
    }
}

/// `ENOTSUPP`: kernel-internal, not in libc.
const ENOTSUPP: i32 = 524;
