//! BPF LSM enforcement backend: the policy compiled into kernel maps, the
//! LSM programs loaded and attached, and their decisions turned into trace
//! records.
//!
//! The kernel decides alone and synchronously (monitor-ebpf/src/probes/lsm.rs):
//! this module only fills the maps before the command starts, reads the
//! decision records afterwards, grants one-shot allowances (an approval of a
//! `confirm`, a finished copy for `preserve`) and writes the outcomes into
//! the trace. docs/lsm.md describes what compiles and what does not.
//!
//! - [`available`]: whether LSM programs load and attach on this kernel.
//! - [`compile`]: the policy's rules as kernel tables, with a report of
//!   what each rule became.
//! - [`LsmBackend`]: one enforcing `abm run`.
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
        decision, field, fnv1a, hook, treatment, EXEC_CLAUSES, MAX_EXEC_RULES, MAX_FILE_RULES,
        MAX_PROTECT, MAX_TOKEN, MAX_TOKENS,
    },
    AllowKey, Allowance, EventKind, ExecRule, InodeKey, LsmConfig, LsmDecision, PathRuleBits,
};
use serde_json::{json, Value};

use crate::{
    events::KernelEvent,
    policy::{Condition, Context, Field, Operator, Policy, Rule},
    probes::{Capability, Probes},
    record::{text_fields, Action, Op, Treatment},
    resolve,
    session::{monotonic_ns, Clock},
};

/// LSM programs: (program name, hook, required). `file_truncate` exists
/// since Linux 6.2; before that `path_truncate` sees ftruncate and O_TRUNC.
pub const PROGRAMS: [(&str, &str, bool); 9] = [
    ("lsm_path_unlink", "path_unlink", true),
    ("lsm_path_rmdir", "path_rmdir", true),
    ("lsm_path_rename", "path_rename", true),
    ("lsm_path_chmod", "path_chmod", true),
    ("lsm_path_chown", "path_chown", true),
    ("lsm_path_truncate", "path_truncate", true),
    ("lsm_file_truncate", "file_truncate", false),
    ("lsm_file_open", "file_open", true),
    ("lsm_bprm_check_security", "bprm_check_security", true),
];

/// The exec-rule matcher, a raw tracepoint attached only with this backend.
pub const EXEC_RULES_PROGRAM: &str = "sys_enter_exec_rules";

/// Kernel rule indices at or above this are exec rules.
pub const EXEC_INDEX_BASE: u32 = MAX_FILE_RULES;

/// How long an approval or a finished copy waits for the retry.
pub const ALLOW_TTL_NS: u64 = 300 * 1_000_000_000;

#[derive(Debug, thiserror::Error)]
pub enum LsmError {
    #[error("{0}")]
    Unavailable(String),
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
pub fn available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
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
            detail: e,
        },
    }
}

fn probe_available() -> Result<(), String> {
    crate::probes::preflight().map_err(|e| e.to_string())?;
    match crate::probes::lsm_list() {
        Some(l) if l.split(',').any(|x| x == "bpf") => {}
        Some(l) => {
            return Err(format!(
                "the BPF LSM is not active (active LSMs: {l}): boot with `lsm={l},bpf` (needs CONFIG_BPF_LSM=y)"
            ))
        }
        None => return Err("cannot read the active LSM list (/sys/kernel/security/lsm)".into()),
    }
    let btf = Btf::from_sys_fs().map_err(|e| format!("cannot read the kernel BTF: {e}"))?;
    let mut ebpf = load_object().map_err(|e| format!("loading the kernel object: {e}"))?;
    let (name, hook, _) = PROGRAMS[0];
    let prog: &mut Lsm = ebpf
        .program_mut(name)
        .ok_or_else(|| format!("program {name} missing from the kernel object"))?
        .try_into()
        .map_err(|e| format!("{name}: {e}"))?;
    prog.load(hook, &btf).map_err(|e| explain_load(&e))?;
    prog.attach().map_err(|e| explain_load(&e))?;
    Ok(())
}

fn load_object() -> Result<Ebpf, aya::EbpfError> {
    EbpfLoader::new()
        .map_max_entries("EVENTS", 64 * 1024)
        .map_max_entries("LSM_EVENTS", 64 * 1024)
        .load(crate::probes::OBJECT)
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

// ---------------------------------------------------------------------------
// Compilation

/// What one policy rule became in the kernel.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "fidelity", content = "note")]
pub enum Fidelity {
    /// The kernel decides exactly as the policy engine would (up to the
    /// notes in docs/lsm.md: inodes instead of path strings).
    Exact,
    /// Enforced; the kernel test is looser than the policy's (e.g. a
    /// subcommand word matched anywhere on the command line).
    Approximate(String),
    /// Enforced for part of its patterns; the rest is audited only.
    Partial(String),
    /// An accept/audit rule that the kernel over-approximates, so it never
    /// blocks what the policy would let through.
    Shadow(String),
    /// Not enforced by this backend: the verdict is still recorded in the
    /// trace by the policy engine, but the call is not blocked.
    AuditOnly(String),
    /// The rule's operations have no LSM hook (fork, exit, io_uring_setup)
    /// or it accepts without conditions.
    NotApplicable,
}

/// One line of the compile report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RuleReport {
    pub rule: String,
    pub treatment: Treatment,
    /// `file`, `exec`.
    pub part: &'static str,
    #[serde(flatten)]
    pub fidelity: Fidelity,
    /// Kernel rule index, when compiled.
    pub index: Option<u32>,
}

/// The kernel tables of one policy.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub config: LsmConfig,
    pub protect: HashMap<InodeKey, PathRuleBits>,
    pub exec_rules: Vec<ExecRule>,
    pub exec_programs: HashMap<u64, u32>,
    pub exec_tokens: HashMap<u64, u64>,
    /// Kernel rule index -> (rule id, treatment).
    pub rules: BTreeMap<u32, (String, Treatment)>,
    pub report: Vec<RuleReport>,
}

const FILE_OPS: [Op; 7] = [
    Op::Unlink,
    Op::Rmdir,
    Op::Rename,
    Op::Chmod,
    Op::Chown,
    Op::Truncate,
    Op::Write,
];

fn kind_of(op: Op) -> EventKind {
    match op {
        Op::Unlink => EventKind::Unlink,
        Op::Rmdir => EventKind::Rmdir,
        Op::Rename => EventKind::Rename,
        Op::Chmod => EventKind::Chmod,
        Op::Chown => EventKind::Chown,
        Op::Truncate => EventKind::Truncate,
        Op::Write => EventKind::Write,
        Op::Exec => EventKind::Exec,
        Op::Fork => EventKind::Fork,
        Op::Exit => EventKind::Exit,
        Op::IoUringSetup => EventKind::IoUringSetup,
    }
}

fn kernel_treatment(t: Treatment) -> u32 {
    match t {
        Treatment::Accept | Treatment::Audit => treatment::ALLOW,
        Treatment::Deny => treatment::DENY,
        Treatment::Confirm => treatment::CONFIRM,
        Treatment::Preserve => treatment::PRESERVE,
    }
}

fn blocks(t: Treatment) -> bool {
    kernel_treatment(t) != treatment::ALLOW
}

/// The kernel's `dev_t` (`MKDEV`: major << 20 | minor) of a stat `st_dev`.
pub fn kernel_dev(st_dev: u64) -> u32 {
    let major = libc::major(st_dev) as u32;
    let minor = libc::minor(st_dev) as u32;
    (major << 20) | (minor & 0xfffff)
}

fn inode_of(p: &Path, follow: bool) -> Option<InodeKey> {
    let m = if follow {
        std::fs::metadata(p)
    } else {
        std::fs::symlink_metadata(p)
    }
    .ok()?;
    Some(InodeKey {
        ino: m.ino(),
        dev: kernel_dev(m.dev()),
        _pad: 0,
    })
}

/// Kernel entries of one pattern, and a note when they are partial.
type Entries = (Vec<(InodeKey, Reach)>, Option<String>);

/// Where a compiled path pattern points in the kernel walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// The object itself.
    Itself,
    /// Entries of the directory.
    Child,
    /// Everything below the directory.
    Desc,
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Replaces a leading `${root}`; `None` when the root is not set (the
/// pattern can never match), `Err` when unknown.
fn substitute(pattern: &str, ctx: &Context) -> Result<Option<String>, String> {
    let roots: [(&str, Option<&Path>); 3] = [
        (
            "${workspace}",
            Some(ctx.workspace.as_path()).filter(|p| !p.as_os_str().is_empty()),
        ),
        (
            "${home}",
            Some(ctx.home.as_path()).filter(|p| !p.as_os_str().is_empty()),
        ),
        ("${trace}", ctx.trace_path.as_deref()),
    ];
    for (var, val) in roots {
        if let Some(rest) = pattern.strip_prefix(var) {
            let Some(v) = val.and_then(Path::to_str) else {
                return Ok(None);
            };
            return Ok(Some(format!("{}{rest}", v.trim_end_matches('/'))));
        }
    }
    if pattern.starts_with('/') {
        Ok(Some(pattern.to_owned()))
    } else {
        Err(format!("`{pattern}` is not anchored"))
    }
}

/// The kernel entries of one path glob: `Ok(entries)` (possibly empty when
/// the named object does not exist yet), `Err(why)` when its shape cannot
/// be expressed with inodes. `snapshot` allows expanding a wildcard in the
/// last component against the directory's current entries (an
/// under-approximation: only for rules that block).
fn path_entries(pattern: &str, ctx: &Context, snapshot: bool) -> Result<Entries, String> {
    let Some(p) = substitute(pattern, ctx)? else {
        return Ok((vec![], None));
    };
    let comps: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
    let first_meta = comps
        .iter()
        .position(|c| has_meta(c))
        .unwrap_or(comps.len());
    let prefix: PathBuf = std::iter::once("/")
        .chain(comps[..first_meta].iter().copied())
        .collect();
    let rest = &comps[first_meta..];
    let missing = |what: &str| {
        Some(format!(
            "{} does not exist at start ({what})",
            prefix.display()
        ))
    };
    let one = |reach: Reach, follow: bool| match inode_of(&prefix, follow) {
        Some(k) => Ok((vec![(k, reach)], None)),
        None => Ok((vec![], missing(pattern))),
    };
    match rest {
        [] => one(Reach::Itself, false),
        ["**"] | ["**", "*"] => one(Reach::Desc, true),
        ["*"] => one(Reach::Child, true),
        [last] if snapshot && !last.contains("**") => {
            let glob = globset::GlobBuilder::new(last)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| e.to_string())?
                .compile_matcher();
            let Ok(dir) = std::fs::read_dir(&prefix) else { return Ok((vec![], missing(pattern))) };
            let mut out = Vec::new();
            for e in dir.flatten() {
                if glob.is_match(e.file_name()) {
                    if let Some(k) = inode_of(&e.path(), false) {
                        out.push((k, Reach::Itself));
                    }
                }
            }
            Ok((out, Some(format!("`{pattern}`: entries present at start only"))))
        }
        _ => Err(format!("`{pattern}`: only literal paths, DIR/*, DIR/** and (for blocking rules) DIR/NAME-GLOB compile")),
    }
}

/// Compiles the policy's rules into kernel tables. Errors only when the
/// blocking rules do not fit the kernel tables (the policy must then be
/// trimmed or the seccomp backend used).
pub fn compile(policy: &Policy, ctx: &Context) -> Result<Compiled, LsmError> {
    let mut c = Compiled::default();
    c.config.allow_ttl_ns = ALLOW_TTL_NS;
    let mut file_n = 0u32;
    for rule in policy.rules() {
        let file_ops: Vec<Op> = rule
            .ops
            .iter()
            .copied()
            .filter(|o| FILE_OPS.contains(o))
            .collect();
        if !file_ops.is_empty() {
            let r = compile_file_rule(&mut c, rule, &file_ops, file_n, ctx)?;
            if r.index.is_some() {
                file_n += 1;
            }
            c.report.push(r);
        }
        if rule.ops.contains(&Op::Exec) {
            let r = compile_exec_rule(&mut c, rule)?;
            c.report.push(r);
        }
        if file_ops.is_empty() && !rule.ops.contains(&Op::Exec) {
            c.report.push(RuleReport {
                rule: rule.id.clone(),
                treatment: rule.treatment,
                part: "none",
                fidelity: Fidelity::NotApplicable,
                index: None,
            });
        }
    }
    c.config.exec_rules = c.exec_rules.len() as u32;
    if c.protect.len() > MAX_PROTECT as usize {
        return Err(LsmError::Capacity(format!(
            "{} protected inodes, the kernel table holds {MAX_PROTECT}",
            c.protect.len()
        )));
    }
    if c.exec_tokens.len() > MAX_TOKENS as usize {
        return Err(LsmError::Capacity(format!(
            "{} exec argument tokens, the kernel table holds {MAX_TOKENS}",
            c.exec_tokens.len()
        )));
    }
    Ok(c)
}

/// Whether a path condition's operator is the positive (`paths`) or the
/// excluding (`not_paths`) form of a glob.
fn path_cond(cond: &Condition) -> Option<bool> {
    match (cond.field, cond.operator) {
        (Field::Path, Operator::Glob) => Some(true),
        (Field::Path, Operator::NotGlob) => Some(false),
        _ => None,
    }
}

fn compile_file_rule(
    c: &mut Compiled,
    rule: &Rule,
    ops: &[Op],
    n: u32,
    ctx: &Context,
) -> Result<RuleReport, LsmError> {
    let blocking = blocks(rule.treatment);
    let report = |fidelity: Fidelity, index: Option<u32>| RuleReport {
        rule: rule.id.clone(),
        treatment: rule.treatment,
        part: "file",
        fidelity,
        index,
    };
    let mut positive: Option<&Condition> = None;
    let mut negative: Option<&Condition> = None;
    let mut dropped: Vec<String> = Vec::new();
    for cond in &rule.conditions {
        match path_cond(cond) {
            Some(true) if positive.is_none() => positive = Some(cond),
            Some(false) if negative.is_none() => negative = Some(cond),
            _ => dropped.push(cond.to_string()),
        }
    }
    if blocking && !dropped.is_empty() {
        return Ok(report(
            Fidelity::AuditOnly(format!(
                "conditions the kernel cannot test: {}",
                dropped.join("; ")
            )),
            None,
        ));
    }
    // Entries: (key, reach, excluded).
    let mut entries: Vec<(InodeKey, Reach, bool)> = Vec::new();
    let mut notes: Vec<String> = dropped.iter().map(|d| format!("ignores {d}")).collect();
    let mut any_path = positive.is_none();
    let mut partial: Vec<String> = Vec::new();
    if let Some(cond) = positive {
        for v in &cond.values {
            match path_entries(v, ctx, blocking) {
                Ok((es, note)) => {
                    entries.extend(es.into_iter().map(|(k, r)| (k, r, false)));
                    if let Some(n) = note {
                        if blocking {
                            partial.push(n);
                        }
                    }
                }
                Err(why) if blocking => partial.push(why),
                Err(why) => {
                    // An accept rule the kernel cannot bound matches any
                    // path: it may only ever let more through.
                    notes.push(why);
                    any_path = true;
                }
            }
        }
    }
    if let Some(cond) = negative {
        for v in &cond.values {
            match path_entries(v, ctx, false) {
                Ok((es, note)) => {
                    entries.extend(es.into_iter().map(|(k, r)| (k, r, true)));
                    if let (Some(n), true) = (note, blocking) {
                        // An exclusion that names nothing yet: a later file
                        // there would be blocked although the policy excludes it.
                        return Ok(report(Fidelity::AuditOnly(format!("exclusion {n}")), None));
                    }
                }
                Err(why) if blocking => {
                    return Ok(report(
                        Fidelity::AuditOnly(format!("exclusion {why}")),
                        None,
                    ));
                }
                Err(why) => notes.push(format!("exclusion ignored: {why}")),
            }
        }
    }
    if blocking && !any_path && entries.iter().all(|e| e.2) {
        return Ok(report(
            Fidelity::AuditOnly(format!(
                "no pattern names an existing object: {}",
                partial.join("; ")
            )),
            None,
        ));
    }
    if n >= MAX_FILE_RULES {
        if blocking {
            return Err(LsmError::Capacity(format!(
                "rule {} would be kernel file rule {}, the kernel holds {MAX_FILE_RULES}",
                rule.id,
                n + 1
            )));
        }
        return Ok(report(
            Fidelity::AuditOnly("kernel rule table full".into()),
            None,
        ));
    }
    let bit = 1u64 << n;
    for (k, reach, excl) in entries {
        let e = c.protect.entry(k).or_default();
        let slot = match (reach, excl) {
            (Reach::Itself, false) => &mut e.self_,
            (Reach::Child, false) => &mut e.child,
            (Reach::Desc, false) => &mut e.desc,
            (Reach::Itself, true) => &mut e.excl_self,
            (Reach::Child, true) => &mut e.excl_child,
            (Reach::Desc, true) => &mut e.excl_desc,
        };
        *slot |= bit;
    }
    if any_path {
        c.config.any_path |= bit;
    }
    for op in ops {
        c.config.op_rules[kind_of(*op) as usize] |= bit;
    }
    match kernel_treatment(rule.treatment) {
        treatment::DENY => c.config.deny |= bit,
        treatment::CONFIRM => c.config.confirm |= bit,
        treatment::PRESERVE => c.config.preserve |= bit,
        _ => {}
    }
    c.rules.insert(n, (rule.id.clone(), rule.treatment));
    let fidelity = if !partial.is_empty() {
        Fidelity::Partial(partial.join("; "))
    } else if !notes.is_empty() {
        Fidelity::Shadow(notes.join("; "))
    } else {
        Fidelity::Exact
    };
    Ok(report(fidelity, Some(n)))
}

/// The clauses of one condition, whether they are negated, and a note.
type Clauses = (Vec<Vec<Alt>>, bool, Option<String>);

/// One alternative of an exec clause.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Alt {
    Token(String),
    Letters(u128),
}

/// A flag as the policy spells it (see `policy::matcher::FlagSpec`).
fn flag_alts(spec: &str) -> Result<Vec<Vec<Alt>>, String> {
    let spec = spec.trim();
    if spec.contains(char::is_whitespace) {
        // `--delete --force`: all parts, i.e. one clause per part.
        let mut out = Vec::new();
        for part in spec.split_whitespace() {
            out.extend(flag_alts(part)?);
        }
        return Ok(out);
    }
    let body = &spec[1..];
    if !spec.starts_with("--")
        && (1..=3).contains(&body.len())
        && body.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        let mut mask = 0u128;
        for b in body.bytes() {
            mask |= 1u128 << b;
        }
        return Ok(vec![vec![Alt::Letters(mask)]]);
    }
    Ok(vec![vec![Alt::Token(spec.to_owned())]])
}

/// Clauses of one exec condition (each clause: alternatives, any may hold).
fn exec_clauses(cond: &Condition) -> Result<Clauses, String> {
    let literal = |v: &str| -> Result<(), String> {
        if has_meta(v) {
            Err(format!("`{v}` is a pattern"))
        } else if v.len() > MAX_TOKEN {
            Err(format!("`{v}` is longer than {MAX_TOKEN} bytes"))
        } else {
            Ok(())
        }
    };
    let anywhere = Some("words are matched anywhere on the command line".to_owned());
    match (cond.field, cond.operator) {
        (Field::Subcommand, Operator::Equal) => {
            let alts: Vec<Vec<&str>> = cond
                .values
                .iter()
                .map(|v| v.split_whitespace().collect())
                .collect();
            for w in alts.iter().flatten() {
                literal(w)?;
            }
            if alts.len() == 1 {
                Ok((
                    alts[0]
                        .iter()
                        .map(|w| vec![Alt::Token((*w).to_owned())])
                        .collect(),
                    false,
                    anywhere,
                ))
            } else if alts.iter().all(|a| a.len() == 1) {
                Ok((
                    vec![alts.iter().map(|a| Alt::Token(a[0].to_owned())).collect()],
                    false,
                    anywhere,
                ))
            } else {
                Err("several multi-word subcommands".into())
            }
        }
        (Field::Arg, Operator::Glob)
        | (Field::Argv, Operator::Equal)
        | (Field::Argv, Operator::Glob) => {
            for v in &cond.values {
                literal(v)?;
            }
            Ok((
                vec![cond.values.iter().map(|v| Alt::Token(v.clone())).collect()],
                false,
                anywhere,
            ))
        }
        (Field::Flag, op @ (Operator::Present | Operator::Absent)) => {
            let negated = op == Operator::Absent;
            let mut per_value = Vec::new();
            for v in &cond.values {
                let cl = flag_alts(v)?;
                for alt in cl.iter().flatten() {
                    if let Alt::Token(t) = alt {
                        literal(t)?;
                    }
                }
                per_value.push(cl);
            }
            let note = Some("`--opt=value` spellings are not recognised in the kernel".to_owned());
            if per_value.len() == 1 && !negated {
                Ok((per_value.remove(0), false, note))
            } else if per_value.iter().all(|cl| cl.len() == 1) {
                Ok((
                    vec![per_value
                        .into_iter()
                        .flat_map(|mut cl| cl.remove(0))
                        .collect()],
                    negated,
                    note,
                ))
            } else {
                Err("several multi-flag alternatives".into())
            }
        }
        _ => Err(format!("`{cond}` has no kernel form")),
    }
}

fn compile_exec_rule(c: &mut Compiled, rule: &Rule) -> Result<RuleReport, LsmError> {
    let blocking = rule.treatment == Treatment::Deny || rule.treatment == Treatment::Confirm;
    let report = |fidelity: Fidelity, index: Option<u32>| RuleReport {
        rule: rule.id.clone(),
        treatment: rule.treatment,
        part: "exec",
        fidelity,
        index,
    };
    let mut programs: Option<Vec<String>> = None;
    let mut clauses: Vec<(Vec<Alt>, bool)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for cond in &rule.conditions {
        if cond.field == Field::Program && cond.operator == Operator::Glob && programs.is_none() {
            if cond.values.iter().any(|v| has_meta(v) || v.contains('/')) {
                dropped.push(format!("{cond} (program patterns)"));
            } else {
                programs = Some(cond.values.clone());
            }
            continue;
        }
        match exec_clauses(cond) {
            Ok((cl, negated, note)) => {
                clauses.extend(cl.into_iter().map(|a| (a, negated)));
                if let Some(n) = note {
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
            }
            Err(why) => dropped.push(format!("{cond} ({why})")),
        }
    }
    if blocking && !dropped.is_empty() {
        return Ok(report(
            Fidelity::AuditOnly(format!(
                "conditions the kernel cannot test: {}",
                dropped.join("; ")
            )),
            None,
        ));
    }
    // Letter alternatives: one per clause.
    let mut rule_letters = [[0u64; 2]; 4];
    let mut kept: Vec<(Vec<Alt>, bool)> = Vec::new();
    for (alts, neg) in clauses {
        let letters: Vec<u128> = alts
            .iter()
            .filter_map(|a| {
                if let Alt::Letters(m) = a {
                    Some(*m)
                } else {
                    None
                }
            })
            .collect();
        if letters.len() > 1 {
            if blocking {
                return Ok(report(
                    Fidelity::AuditOnly("a condition with several short-flag clusters".into()),
                    None,
                ));
            }
            continue;
        }
        kept.push((alts, neg));
    }
    if kept.len() > EXEC_CLAUSES as usize {
        if blocking {
            return Ok(report(
                Fidelity::AuditOnly(format!("more than {EXEC_CLAUSES} command-line conditions")),
                None,
            ));
        }
        kept.retain(|(_, neg)| !neg);
        kept.truncate(EXEC_CLAUSES as usize);
        notes.push("extra conditions ignored".into());
    }
    let j = c.exec_rules.len() as u32;
    if j >= MAX_EXEC_RULES {
        if blocking {
            return Err(LsmError::Capacity(format!(
                "rule {} would be kernel exec rule {}, the kernel holds {MAX_EXEC_RULES}",
                rule.id,
                j + 1
            )));
        }
        return Ok(report(
            Fidelity::AuditOnly("kernel exec rule table full".into()),
            None,
        ));
    }
    let index = EXEC_INDEX_BASE + j;
    let mut er = ExecRule {
        treatment: if blocking {
            kernel_treatment(rule.treatment)
        } else {
            treatment::ALLOW
        },
        index,
        ..Default::default()
    };
    for (ci, (alts, neg)) in kept.iter().enumerate() {
        er.used |= 1 << ci;
        if *neg {
            er.negated |= 1 << ci;
        }
        for a in alts {
            match a {
                Alt::Token(t) => {
                    *c.exec_tokens.entry(fnv1a(t.as_bytes())).or_default() |=
                        1u64 << (j * EXEC_CLAUSES + ci as u32);
                }
                Alt::Letters(m) => {
                    rule_letters[ci] = [*m as u64, (*m >> 64) as u64];
                }
            }
        }
    }
    er.letters = rule_letters;
    match &programs {
        Some(names) => {
            for n in names {
                *c.exec_programs.entry(fnv1a(n.as_bytes())).or_default() |= 1 << j;
            }
        }
        None => c.config.exec_any_program |= 1 << j,
    }
    c.exec_rules.push(er);
    c.rules.insert(index, (rule.id.clone(), rule.treatment));
    if !dropped.is_empty() {
        notes.push(format!("ignores {}", dropped.join("; ")));
    }
    if rule.treatment == Treatment::Preserve {
        notes.push("preserve has nothing to keep for exec: allowed".into());
    }
    let fidelity = if !blocking && !notes.is_empty() {
        Fidelity::Shadow(notes.join("; "))
    } else if notes.is_empty() {
        Fidelity::Exact
    } else {
        Fidelity::Approximate(notes.join("; "))
    };
    Ok(report(fidelity, Some(index)))
}

// ---------------------------------------------------------------------------
// Running

/// A request waiting for `abm approve`.
#[derive(Clone, Debug)]
pub struct Pending {
    pub id: u64,
    pub key: AllowKey,
    pub rule: String,
    pub what: String,
    pub action: Action,
    pub requested_ns: u64,
}

/// A decision record not yet matched to its syscall record.
struct Held {
    action: Action,
    enforcement: Value,
}

/// Requests and allowances, shared by the session loop (which records
/// decisions) and the control socket's thread (`abm approve|deny|pending`).
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Mutex<ApprovalState>>,
}

struct ApprovalState {
    allow: BpfHashMap<MapData, AllowKey, Allowance>,
    pending: BTreeMap<u64, Pending>,
    next_request: u64,
    /// Approved and preserved requests, by key: id, how, what was kept;
    /// for the `allowed_once` record of the retry.
    granted: HashMap<AllowKey, (u64, &'static str, Value)>,
    counts: BTreeMap<String, u64>,
    /// Answers for the trace, written by the session loop.
    notes: Vec<(&'static str, Value)>,
}

impl ApprovalState {
    fn grant(&mut self, key: AllowKey) -> Result<(), String> {
        let a = Allowance {
            expires_ns: monotonic_ns() + ALLOW_TTL_NS,
            tid: 0,
            _pad: 0,
        };
        self.allow
            .insert(key, a, 0)
            .map_err(|e| format!("LSM_ALLOW: {e}"))
    }
}

impl Approvals {
    fn lock(&self) -> std::sync::MutexGuard<'_, ApprovalState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `id` is a request of this backend.
    pub fn owns(&self, id: u64) -> bool {
        self.lock().pending.contains_key(&id)
    }

    /// Answers a waiting request. Approving grants a one-shot allowance:
    /// the next identical call (same object, same rule) within
    /// [`ALLOW_TTL_NS`] goes through once; refusing only closes the request
    /// (the call already failed with EPERM).
    pub fn decide(&self, id: u64, approve: bool, by: &str) -> Result<(), String> {
        let mut st = self.lock();
        let p = st
            .pending
            .remove(&id)
            .ok_or_else(|| format!("no pending BPF LSM request {id}"))?;
        let decision = if approve {
            st.grant(p.key)?;
            st.granted.insert(p.key, (id, "approval", Value::Null));
            "approved"
        } else {
            "refused"
        };
        *st.counts.entry(decision.into()).or_default() += 1;
        let enf = json!({ "backend": "lsm", "decision": decision, "request": id, "rule": p.rule, "decided_by": by });
        let note = json!({ "enforcement": enf, "what": p.what, "op": p.action.op, "path": p.action.path, "pid": p.action.pid });
        st.notes.push(("enforcement", note));
        Ok(())
    }

    /// Waiting requests, for `abm pending`.
    pub fn pending_list(&self) -> Vec<Value> {
        let now = monotonic_ns();
        self.lock()
            .pending
            .values()
            .map(|p| {
                json!({
                    "id": p.id, "backend": "lsm", "what": p.what, "op": p.action.op, "path": p.action.path,
                    "path2": p.action.path2, "argv": p.action.argv, "pid": p.action.pid, "comm": p.action.comm,
                    "rule": p.rule, "waiting_secs": (now.saturating_sub(p.requested_ns)) as f64 / 1e9,
                    "retry": "the call was refused; approving lets the next identical call through once",
                })
            })
            .collect()
    }
}

/// The BPF LSM backend of one enforcing `abm run`.
pub struct LsmBackend {
    events: RingBuf<MapData>,
    approvals: Approvals,
    compiled: Compiled,
    policy: Policy,
    ctx: Context,
    clock: Clock,
    quarantine: crate::enforce::preserve::Quarantine,
    held: Vec<Held>,
    pub attached: Vec<&'static str>,
    quiet: bool,
}

fn take<T>(
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

fn borrow<'a, T>(
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

fn map_err(name: &'static str) -> impl Fn(aya::maps::MapError) -> LsmError {
    move |e| LsmError::Map {
        name,
        detail: e.to_string(),
    }
}

impl LsmBackend {
    /// Compiles the policy into the kernel maps of the loaded tracepoint
    /// backend, then loads and attaches the LSM programs and the exec-rule
    /// matcher. Call before the command starts.
    pub fn start(
        probes: &mut Probes,
        policy: &Policy,
        ctx: &Context,
        quarantine: crate::enforce::preserve::Quarantine,
        quiet: bool,
    ) -> Result<LsmBackend, LsmError> {
        available().map_err(LsmError::Unavailable)?;
        let compiled = compile(policy, ctx)?;
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
        // Taken (and kept alive by the backend): read and written during the run.
        let allow = take(ebpf, "LSM_ALLOW", BpfHashMap::try_from)?;
        let events = take(ebpf, "LSM_EVENTS", RingBuf::try_from)?;
        let btf = Btf::from_sys_fs()
            .map_err(|e| LsmError::Unavailable(format!("cannot read the kernel BTF: {e}")))?;
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
                Err(e) => return Err(perr(explain_load(&e))),
            }
            prog.attach().map_err(|e| perr(explain_load(&e)))?;
            tracing::info!(
                "LSM program {name} loaded and attached in {:.2?}",
                t.elapsed()
            );
            attached.push(hook);
        }
        let tp: &mut RawTracePoint = ebpf
            .program_mut(EXEC_RULES_PROGRAM)
            .ok_or_else(|| LsmError::Program {
                name: EXEC_RULES_PROGRAM,
                hook: "sys_enter",
                detail: "missing".into(),
            })?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| LsmError::Program {
                name: EXEC_RULES_PROGRAM,
                hook: "sys_enter",
                detail: e.to_string(),
            })?;
        tp.load()
            .and_then(|_| tp.attach("sys_enter").map(|_| ()))
            .map_err(|e| LsmError::Program {
                name: EXEC_RULES_PROGRAM,
                hook: "sys_enter",
                detail: e.to_string(),
            })?;
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
        let approvals = Approvals {
            inner: Arc::new(Mutex::new(ApprovalState {
                allow,
                pending: BTreeMap::new(),
                next_request: 1,
                granted: HashMap::new(),
                counts: BTreeMap::new(),
                notes: Vec::new(),
            })),
        };
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
        })
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

    fn rule_id(&self, index: u32) -> String {
        self.compiled
            .rules
            .get(&index)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| format!("#{index}"))
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
    pub fn absorb(&mut self) -> Vec<(&'static str, Value)> {
        let mut raw = Vec::new();
        while let Some(item) = self.events.next() {
            raw.push(item.to_vec());
        }
        for bytes in raw {
            match decode(&bytes) {
                Some((action, d)) => self.on_decision(action, d),
                None => tracing::warn!("undecodable LSM record ({} bytes)", bytes.len()),
            }
        }
        std::mem::take(&mut self.approvals.lock().notes)
    }

    fn on_decision(&mut self, mut a: Action, d: LsmDecision) {
        let rule = self.rule_id(d.rule);
        let key = AllowKey {
            ino: d.ino,
            dev: d.dev,
            op: a.op.map(|o| kind_of(o) as u16).unwrap_or(0),
            rule: d.rule as u16,
        };
        let treatment = self.compiled.rules.get(&d.rule).map(|(_, t)| *t);
        let mut enf = json!({
            "backend": "lsm",
            "rule": rule,
            "hook": hook::name(d.hook),
            "treatment": treatment,
        });
        let approvals = self.approvals.clone();
        let mut st = approvals.lock();
        let name = match d.decision {
            decision::DENIED => "denied",
            decision::CONFIRM_PENDING => {
                let id = match st.pending.values().find(|p| p.key == key) {
                    Some(p) => p.id,
                    None => {
                        let id = st.next_request;
                        st.next_request += 1;
                        let what = crate::enforce::describe(&a);
                        if !self.quiet {
                            eprintln!(
                                "abm: confirm request {id}: {what} was refused by rule {rule}; `abm approve {id}` lets a retry through"
                            );
                        }
                        let note = json!({
                            "enforcement": { "backend": "lsm", "decision": "confirm_requested", "request": id, "rule": rule },
                            "what": what, "op": a.op, "path": a.path, "pid": a.pid,
                        });
                        st.notes.push(("enforcement", note));
                        st.pending.insert(
                            id,
                            Pending {
                                id,
                                key,
                                rule: rule.clone(),
                                what,
                                action: a.clone(),
                                requested_ns: monotonic_ns(),
                            },
                        );
                        id
                    }
                };
                enf["request"] = json!(id);
                "pending_confirmation"
            }
            decision::PRESERVE_PENDING => {
                if let Some((id, _, kept)) = st.granted.get(&key) {
                    // A repeat before the retry: the copy exists already.
                    enf["request"] = json!(id);
                    enf["preserved"] = kept.clone();
                } else {
                    let id = st.next_request;
                    st.next_request += 1;
                    enf["request"] = json!(id);
                    match self.quarantine.preserve(&a, &rule) {
                        Ok(entries) => {
                            let kept = json!(entries);
                            enf["preserved"] = kept.clone();
                            match st.grant(key) {
                                Ok(()) => {
                                    enf["retry"] = json!("allowed once");
                                    st.granted.insert(key, (id, "preserved", kept));
                                }
                                Err(e) => enf["error"] = json!(e),
                            }
                        }
                        Err(e) => {
                            for n in self.quarantine.take_notes() {
                                st.notes.push(("quarantine_limit", n));
                            }
                            enf["error"] = json!(format!(
                                "could not keep a copy, the call stays refused: {e}"
                            ));
                        }
                    }
                }
                "preserve_pending"
            }
            decision::ALLOWED_ONCE => {
                if let Some((id, how, kept)) = st.granted.remove(&key) {
                    enf["request"] = json!(id);
                    enf["allowed_by"] = json!(how);
                    if how == "preserved" {
                        enf["preserved"] = kept;
                    }
                }
                "allowed_once"
            }
            _ => "unknown",
        };
        enf["decision"] = json!(name);
        *st.counts.entry(name.to_owned()).or_default() += 1;
        drop(st);
        a.enforcement = Some(enf.clone());
        self.held.push(Held {
            action: a,
            enforcement: enf,
        });
    }

    /// Attaches held decisions to the released syscall records of the same
    /// thread, and inserts (in time order) the decisions that have no
    /// syscall record (io_uring requests, which bypass the syscall
    /// tracepoints). `force`: the run is over, nothing more will come.
    pub fn fixup(&mut self, acts: &mut Vec<Action>, force: bool) {
        if self.held.is_empty() {
            return;
        }
        let newest = acts.iter().map(|a| a.ktime_ns).max().unwrap_or(0);
        let mut keep = Vec::new();
        let mut alone = Vec::new();
        for h in std::mem::take(&mut self.held) {
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
                t.enforcement = Some(h.enforcement);
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
                a.result_note = Some("denied_by_lsm".into());
            } else {
                a.result_note = Some("allowed_by_lsm".into());
            }
            a.verdict = Some(self.policy.evaluate(&a, &self.ctx));
            let at = acts.partition_point(|x| x.ktime_ns <= a.ktime_ns);
            acts.insert(at, a);
        }
    }

    /// Closes what still waits; returns the summary note.
    pub fn stop(&mut self) -> Value {
        self.quarantine.seal();
        let mut st = self.approvals.lock();
        let left: Vec<u64> = st.pending.keys().copied().collect();
        st.pending.clear();
        json!({ "backend": "lsm", "decisions": st.counts, "unanswered_requests": left,
                "quarantine": self.quarantine.dir().to_string_lossy() })
    }

    /// Decision counts so far, by decision name.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.approvals.lock().counts.clone()
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

/// Starts the BPF LSM backend when `--enforce` chose it: compiles the
/// policy into the maps of the loaded tracepoint object and attaches the
/// LSM programs. Call after [`crate::enforce::Enforcer::start`], before the
/// command is spawned.
pub fn attach(
    enf: &mut Option<crate::enforce::Enforcer>,
    probes: &mut Probes,
    policy: &Policy,
    ctx: &Context,
    quiet: bool,
) -> anyhow::Result<()> {
    let Some(e) = enf.as_mut() else { return Ok(()) };
    if e.backend() != crate::enforce::Backend::Lsm {
        return Ok(());
    }
    let quarantine = crate::enforce::preserve::Quarantine::new(
        e.quarantine_dir.clone(),
        e.run_id.clone(),
        ctx.trace_path.clone().unwrap_or_default(),
        ctx.workspace.clone(),
    )
    .with_limit(e.quarantine_limit);
    let b = LsmBackend::start(probes, policy, ctx, quarantine, quiet)
        .map_err(|err| anyhow::anyhow!("--enforce (BPF LSM backend): {err}"))?;
    if !quiet {
        let enforced = b
            .report()
            .iter()
            .filter(|r| r.index.is_some() && blocks(r.treatment))
            .count();
        eprintln!(
            "abm: BPF LSM hooks attached: {} ({enforced} blocking rules in the kernel)",
            b.attached.join(", ")
        );
    }
    e.set_lsm(b);
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The compiled tables are checked against the policy engine itself: a
    //! userspace model of the kernel's decision (the same walk, on real
    //! inodes) must give the verdict `Policy::evaluate` gives.
    use std::fs;

    use super::*;

    struct Ws {
        dir: tempfile::TempDir,
    }

    impl Ws {
        fn new() -> Ws {
            let dir = tempfile::tempdir().unwrap();
            for d in ["protected/allowed", "protected/sub/deep", "scratch", "keep"] {
                fs::create_dir_all(dir.path().join(d)).unwrap();
            }
            for f in [
                "protected/a",
                "protected/allowed/x",
                "protected/sub/deep/y",
                "scratch/a",
                "keep/k",
                "trace.jsonl",
            ] {
                fs::write(dir.path().join(f), "x").unwrap();
            }
            Ws { dir }
        }
        fn p(&self, rel: &str) -> String {
            self.dir.path().join(rel).to_string_lossy().into_owned()
        }
        fn ctx(&self) -> Context {
            Context {
                workspace: self.dir.path().to_path_buf(),
                home: PathBuf::from("/nonexistent-home"),
                trace_path: Some(self.dir.path().join("trace.jsonl")),
            }
        }
    }

    /// The kernel's file decision, modelled: bits from the target (lstat),
    /// its parent and ancestors (stat), lowest bit decides.
    fn model_file(c: &Compiled, op: Op, paths: &[&str]) -> Option<(u32, u32)> {
        let cand = c.config.op_rules[kind_of(op) as usize];
        if cand == 0 {
            return None;
        }
        let (mut m, mut x) = (cand & c.config.any_path, 0u64);
        for p in paths {
            let mut cur = PathBuf::from(p);
            let mut level = 0;
            loop {
                if let Some(k) = inode_of(&cur, level > 0) {
                    if let Some(e) = c.protect.get(&k) {
                        if level == 0 {
                            m |= e.self_;
                            x |= e.excl_self;
                        } else {
                            m |= e.desc;
                            x |= e.excl_desc;
                            if level == 1 {
                                m |= e.child;
                                x |= e.excl_child;
                            }
                        }
                    }
                }
                if !cur.pop() {
                    break;
                }
                level += 1;
            }
        }
        let bits = m & !x & cand;
        if bits == 0 {
            return None;
        }
        let low = bits & bits.wrapping_neg();
        let t = if low & c.config.deny != 0 {
            treatment::DENY
        } else if low & c.config.confirm != 0 {
            treatment::CONFIRM
        } else if low & c.config.preserve != 0 {
            treatment::PRESERVE
        } else {
            treatment::ALLOW
        };
        Some((low.trailing_zeros(), t))
    }

    /// The kernel's exec decision, modelled (sys_enter_exec_rules).
    fn model_exec(c: &Compiled, argv: &[&str]) -> Option<(u32, u32)> {
        let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
        let mut progs = c.config.exec_any_program;
        progs |= c
            .exec_programs
            .get(&fnv1a(base(argv[0]).as_bytes()))
            .copied()
            .unwrap_or(0);
        let (mut seen, mut letters) = (0u64, 0u128);
        for a in &argv[1..] {
            seen |= c
                .exec_tokens
                .get(&fnv1a(a.as_bytes()))
                .copied()
                .unwrap_or(0);
            let b = a.as_bytes();
            if b.len() >= 2
                && b[0] == b'-'
                && b[1] != b'-'
                && b[1..].iter().all(u8::is_ascii_alphanumeric)
            {
                for ch in &b[1..] {
                    letters |= 1u128 << ch;
                }
            }
        }
        for (j, r) in c.exec_rules.iter().enumerate() {
            if progs & (1 << j) == 0 {
                continue;
            }
            let ok = (0..EXEC_CLAUSES)
                .filter(|ci| r.used & (1 << ci) != 0)
                .all(|ci| {
                    let l = r.letters[ci as usize][0] as u128
                        | (r.letters[ci as usize][1] as u128) << 64;
                    let sat = seen & (1 << (j as u32 * EXEC_CLAUSES + ci)) != 0
                        || (l != 0 && letters & l == l);
                    sat != (r.negated & (1 << ci) != 0)
                });
            if ok {
                return Some((r.index, r.treatment));
            }
        }
        None
    }

    fn file_action(op: Op, path: &str, path2: Option<&str>) -> Action {
        Action {
            op: Some(op),
            path: Some(path.into()),
            path2: path2.map(Into::into),
            ..Default::default()
        }
    }

    /// The policy engine's verdict as (rule id, kernel treatment), `None`
    /// for the default verdict.
    fn engine(policy: &Policy, ctx: &Context, a: &Action) -> Option<(String, u32)> {
        let v = policy.evaluate(a, ctx);
        (v.rule != "default").then(|| (v.rule, kernel_treatment(v.treatment)))
    }

    const FILE_POLICY: &str = r#"
version = 1

[[rule]]
id = "t.accept-allowed"
reason = "an earlier accept wins"
ops = ["unlink"]
paths = ["${workspace}/protected/allowed/**"]
treatment = "accept"

[[rule]]
id = "t.protect"
reason = "protected tree"
paths = ["${workspace}/protected/**"]
not_paths = ["${workspace}/protected/sub/deep/**"]
treatment = "deny"

[[rule]]
id = "t.children"
reason = "direct entries of keep"
ops = ["unlink", "truncate"]
paths = ["${workspace}/keep/*"]
treatment = "preserve"

[[rule]]
id = "t.confirm-self"
reason = "one file"
ops = ["chmod"]
paths = ["${workspace}/scratch/a"]
treatment = "confirm"
"#;

    #[test]
    fn file_rules_decide_like_the_policy_engine() {
        let ws = Ws::new();
        let ctx = ws.ctx();
        let policy = Policy::from_str(FILE_POLICY, "test.toml").unwrap();
        let c = compile(&policy, &ctx).unwrap();
        let cases: Vec<(Op, String, Option<String>)> = vec![
            (Op::Unlink, ws.p("protected/a"), None),
            (Op::Unlink, ws.p("protected/allowed/x"), None),
            (Op::Unlink, ws.p("protected/sub/deep/y"), None),
            (Op::Rmdir, ws.p("protected/sub"), None),
            (Op::Rmdir, ws.p("protected"), None),
            (Op::Write, ws.p("protected/new-file"), None),
            (Op::Chmod, ws.p("protected/a"), None),
            (Op::Rename, ws.p("scratch/a"), Some(ws.p("protected/b"))),
            (Op::Rename, ws.p("protected/a"), Some(ws.p("scratch/b"))),
            (Op::Rename, ws.p("scratch/a"), Some(ws.p("scratch/b"))),
            (Op::Unlink, ws.p("keep/k"), None),
            (Op::Truncate, ws.p("keep/k"), None),
            (Op::Chmod, ws.p("keep/k"), None),
            (Op::Chmod, ws.p("scratch/a"), None),
            (Op::Unlink, ws.p("scratch/a"), None),
            (Op::Write, ws.p("trace.jsonl"), None),
        ];
        for (op, p, p2) in cases {
            let a = file_action(op, &p, p2.as_deref());
            let want = engine(&policy, &ctx, &a);
            let mut paths = vec![p.as_str()];
            paths.extend(p2.as_deref());
            let got = model_file(&c, op, &paths).map(|(bit, t)| (c.rules[&bit].0.clone(), t));
            // Accept verdicts and no verdict both let the call through.
            let norm = |v: Option<(String, u32)>| v.filter(|(_, t)| *t != treatment::ALLOW);
            assert_eq!(norm(got), norm(want), "{op:?} {p} {p2:?}");
        }
        // The model is not trivially permissive.
        let rule_of =
            |op, p: &str| model_file(&c, op, &[p]).map(|(bit, t)| (c.rules[&bit].0.as_str(), t));
        assert_eq!(
            rule_of(Op::Unlink, &ws.p("protected/a")),
            Some(("t.protect", treatment::DENY))
        );
        assert_eq!(
            rule_of(Op::Unlink, &ws.p("protected/allowed/x")),
            Some(("t.accept-allowed", treatment::ALLOW))
        );
        assert_eq!(rule_of(Op::Unlink, &ws.p("protected/sub/deep/y")), None);
        assert_eq!(
            rule_of(Op::Truncate, &ws.p("keep/k")),
            Some(("t.children", treatment::PRESERVE))
        );
        assert_eq!(
            rule_of(Op::Write, &ws.p("trace.jsonl")),
            Some(("builtin.trace-integrity", treatment::DENY))
        );
        let fid: HashMap<&str, &Fidelity> = c
            .report
            .iter()
            .map(|r| (r.rule.as_str(), &r.fidelity))
            .collect();
        assert_eq!(fid["t.protect"], &Fidelity::Exact);
        assert_eq!(fid["t.children"], &Fidelity::Exact);
        assert!(
            matches!(fid["builtin.trace-integrity"], Fidelity::Partial(_)),
            "{:?}",
            fid["builtin.trace-integrity"]
        );
    }

    const EXEC_POLICY: &str = r#"
version = 1

[[rule]]
id = "t.lease-ok"
reason = "force-with-lease is fine"
program = ["git"]
subcommand = ["push"]
flags = ["--force-with-lease"]
treatment = "accept"

[[rule]]
id = "t.force-push"
reason = "rewrites history"
program = ["git"]
subcommand = ["push"]
flags = ["--force", "-f"]
treatment = "deny"

[[rule]]
id = "t.kubectl"
reason = "deletes resources"
program = ["kubectl"]
subcommand = ["delete", "drain"]
treatment = "confirm"

[[rule]]
id = "t.rm-rf"
reason = "recursive forced delete"
program = ["rm"]
flags = ["-rf"]
not_flags = ["--interactive"]
treatment = "deny"
"#;

    #[test]
    fn exec_rules_decide_like_the_policy_engine() {
        let ws = Ws::new();
        let ctx = ws.ctx();
        let policy = Policy::from_str(EXEC_POLICY, "test.toml").unwrap();
        let c = compile(&policy, &ctx).unwrap();
        let cases: &[&[&str]] = &[
            &["git", "push", "--force", "origin", "main"],
            &["/usr/bin/git", "push", "-f"],
            &["git", "push", "-fq"],
            &["git", "push", "origin", "main"],
            &["git", "push", "--force-with-lease"],
            &["git", "push", "--force-with-lease", "--force"],
            &["kubectl", "delete", "pod", "x"],
            &["kubectl", "drain", "node-1"],
            &["kubectl", "get", "pods"],
            &["rm", "-rf", "/tmp/x"],
            &["rm", "-r", "-f", "/tmp/x"],
            &["rm", "-fr", "--interactive", "/tmp/x"],
            &["rm", "-r", "/tmp/x"],
            &["ls", "-rf"],
        ];
        for argv in cases {
            let a = Action {
                op: Some(Op::Exec),
                path: Some(format!("/usr/bin/{}", argv[0].rsplit('/').next().unwrap())),
                argv: Some(argv.iter().map(|s| s.to_string()).collect()),
                cwd: Some(ws.p("")),
                ..Default::default()
            };
            let want = engine(&policy, &ctx, &a).filter(|(_, t)| *t != treatment::ALLOW);
            let got = model_exec(&c, argv)
                .filter(|(_, t)| *t != treatment::ALLOW)
                .map(|(i, t)| (c.rules[&i].0.clone(), t));
            assert_eq!(got, want, "{argv:?}");
        }
        let rule_of =
            |argv: &[&str]| model_exec(&c, argv).map(|(i, t)| (c.rules[&i].0.as_str(), t));
        assert_eq!(
            rule_of(&["git", "push", "-f"]),
            Some(("t.force-push", treatment::DENY))
        );
        assert_eq!(
            rule_of(&["kubectl", "drain", "n"]),
            Some(("t.kubectl", treatment::CONFIRM))
        );
        assert_eq!(
            rule_of(&["rm", "-r", "-f", "x"]),
            Some(("t.rm-rf", treatment::DENY))
        );
        assert_eq!(rule_of(&["git", "push"]), None);
    }

    #[test]
    fn what_the_kernel_cannot_test_is_audited_not_blocked() {
        let ws = Ws::new();
        let src = r#"
version = 1

[[rule]]
id = "t.by-comm"
reason = "only some processes"
ops = ["unlink"]
paths = ["${workspace}/protected/**"]
when = [{ field = "comm", operator = "equal", values = ["python3"] }]
treatment = "deny"

[[rule]]
id = "t.regex"
reason = "regex paths"
ops = ["unlink"]
when = [{ field = "path", operator = "regex", values = ["\\.env$"] }]
treatment = "deny"

[[rule]]
id = "t.accept-regex"
reason = "accepts by regex"
ops = ["rmdir"]
when = [{ field = "path", operator = "regex", values = ["^/tmp/"] }]
treatment = "accept"

[[rule]]
id = "t.deep-glob"
reason = "any .git"
paths = ["/**/.git/**"]
treatment = "deny"

[[rule]]
id = "t.prog-glob"
reason = "terraform-ish"
program = ["terraform*"]
subcommand = ["destroy"]
treatment = "deny"
"#;
        let policy = Policy::from_str(src, "t.toml").unwrap();
        let c = compile(&policy, &ws.ctx()).unwrap();
        let fid: HashMap<&str, &Fidelity> = c
            .report
            .iter()
            .map(|r| (r.rule.as_str(), &r.fidelity))
            .collect();
        assert!(matches!(fid["t.by-comm"], Fidelity::AuditOnly(_)));
        assert!(matches!(fid["t.regex"], Fidelity::AuditOnly(_)));
        assert!(matches!(fid["t.accept-regex"], Fidelity::Shadow(_)));
        assert!(matches!(
            fid["t.deep-glob"],
            Fidelity::AuditOnly(_) | Fidelity::Partial(_)
        ));
        assert!(matches!(fid["t.prog-glob"], Fidelity::AuditOnly(_)));
        // Nothing audit-only reached the kernel's blocking tables.
        for r in c
            .report
            .iter()
            .filter(|r| matches!(r.fidelity, Fidelity::AuditOnly(_)))
        {
            assert!(r.index.is_none(), "{}", r.rule);
        }
        // The shadow accept rule matches any rmdir (it can only let more through).
        let bit = c
            .report
            .iter()
            .find(|r| r.rule == "t.accept-regex")
            .unwrap()
            .index
            .unwrap();
        assert_ne!(c.config.any_path & (1 << bit), 0);
        assert_eq!(c.config.deny & (1 << bit), 0);
    }

    #[test]
    fn kernel_dev_is_mkdev() {
        assert_eq!(kernel_dev(libc::makedev(8, 1)), (8 << 20) | 1);
        assert_eq!(kernel_dev(libc::makedev(259, 300)), (259 << 20) | 300);
    }

    #[test]
    fn decision_records_decode() {
        use monitor_common::{field_tag, EventHeader, FieldHeader};
        let hdr = EventHeader {
            kind: EventKind::Rename as u32,
            syscall: 0,
            ktime_ns: 5,
            tid: 7,
            pid: 7,
            ppid: 1,
            uid: 0,
            gid: 0,
            payload_len: 0,
            cgroup_id: 1,
            comm: *b"mv\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            result: -1,
            flags: 0,
            mode: u32::MAX,
            owner_uid: u32::MAX,
            owner_gid: u32::MAX,
            fd: 0,
            hflags: 0,
            _pad: 0,
        };
        let d = LsmDecision {
            rule: 3,
            decision: decision::DENIED,
            hook: hook::PATH_RENAME,
            dev: 9,
            ino: 42,
        };
        // SAFETY: plain repr(C) data.
        let dbytes = unsafe {
            std::slice::from_raw_parts(
                &d as *const LsmDecision as *const u8,
                std::mem::size_of::<LsmDecision>(),
            )
        };
        let f = |tag, data: &[u8]| crate::events::Field {
            tag,
            flags: 0,
            data: data.to_vec(),
        };
        let bytes = crate::events::encode(
            &hdr,
            &[
                f(field::DECISION, dbytes),
                f(field_tag::FD_PATH, b"a\0protected\0ws\0tmp\0"),
                f(field::TARGET2, b"b\0scratch\0ws\0tmp\0"),
                f(field_tag::ROOT, b""),
            ],
        );
        let _ = std::mem::size_of::<FieldHeader>();
        let (a, got) = decode(&bytes).unwrap();
        assert_eq!(got, d);
        assert_eq!(a.op, Some(Op::Rename));
        assert_eq!(a.path.as_deref(), Some("/tmp/ws/protected/a"));
        assert_eq!(a.path2.as_deref(), Some("/tmp/ws/scratch/b"));
        assert_eq!(a.errno.as_deref(), Some("EPERM"));
    }
}
