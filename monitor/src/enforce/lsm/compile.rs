//! The policy compiled into the kernel tables of the BPF LSM backend, with
//! a report of what each rule became.
use super::*;
use crate::{policy::FlagSpec, record::FILE_OPS};

pub use crate::core::sys::kernel_dev;

/// The operations the file hooks decide: [`FILE_OPS`] and the metadata
/// operations (`link`, `symlink`, `utimes`, `xattr`, `setflags`).
pub const LSM_FILE_OPS: [Op; 12] = [
    FILE_OPS[0],
    FILE_OPS[1],
    FILE_OPS[2],
    FILE_OPS[3],
    FILE_OPS[4],
    FILE_OPS[5],
    FILE_OPS[6],
    Op::Link,
    Op::Symlink,
    Op::Utimes,
    Op::Xattr,
    Op::Setflags,
];

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

pub(super) fn kernel_treatment(t: Treatment) -> u32 {
    match t {
        Treatment::Accept | Treatment::Audit => treatment::ALLOW,
        Treatment::Deny => treatment::DENY,
        Treatment::Confirm => treatment::CONFIRM,
        Treatment::Preserve => treatment::PRESERVE,
    }
}

/// Whether the kernel refuses calls under treatment `t`.
pub fn blocks(t: Treatment) -> bool {
    kernel_treatment(t) != treatment::ALLOW
}

pub(super) fn inode_of(p: &Path, follow: bool) -> Option<InodeKey> {
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
pub(super) type Entries = (Vec<(InodeKey, Reach)>, Option<String>);

/// Where a compiled path pattern points in the kernel walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// The object itself.
    Itself,
    /// Entries of the directory.
    Child,
    /// Everything below the directory.
    Desc,
}

pub(super) fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Replaces a leading `${root}`; `None` when the root is not set (the
/// pattern can never match), `Err` when unknown.
pub(super) fn substitute(pattern: &str, ctx: &Context) -> Result<Option<String>, NoKernelForm> {
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
        Err(NoKernelForm::NotAnchored(pattern.to_owned()))
    }
}

/// The kernel entries of one path glob: `Ok(entries)` (possibly empty when
/// the named object does not exist yet), `Err(why)` when its shape cannot
/// be expressed with inodes. `snapshot` allows expanding a wildcard in the
/// last component against the directory's current entries (an
/// under-approximation: only for rules that block).
pub(super) fn path_entries(
    pattern: &str,
    ctx: &Context,
    snapshot: bool,
) -> Result<Entries, NoKernelForm> {
    let Some(p) = substitute(pattern, ctx)? else {
        return Ok((vec![], None));
    };
    let (prefix, rest) = literal_prefix(&p);
    let rest = &rest[..];
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
                .map_err(|e| NoKernelForm::Glob(e.to_string()))?
                .compile_matcher();
            let Ok(dir) = std::fs::read_dir(&prefix) else {
                return Ok((vec![], missing(pattern)));
            };
            let mut out = Vec::new();
            for e in dir.flatten() {
                if glob.is_match(e.file_name()) {
                    if let Some(k) = inode_of(&e.path(), false) {
                        out.push((k, Reach::Itself));
                    }
                }
            }
            Ok((
                out,
                Some(format!("`{pattern}`: entries present at start only")),
            ))
        }
        _ => Err(NoKernelForm::PathShape(pattern.to_owned())),
    }
}

/// A substituted pattern split into its literal leading directories (as
/// an absolute path) and the components from the first one with a glob
/// metacharacter on.
fn literal_prefix(p: &str) -> (PathBuf, Vec<&str>) {
    let comps: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
    let first_meta = comps
        .iter()
        .position(|c| has_meta(c))
        .unwrap_or(comps.len());
    let prefix: PathBuf = std::iter::once("/")
        .chain(comps[..first_meta].iter().copied())
        .collect();
    (prefix, comps[first_meta..].to_vec())
}

/// The directories whose rename moves what `pattern` names: the parents of
/// a literal path, a pattern's directory (`DIR/**`, `DIR/*`,
/// `DIR/NAME-GLOB`) and its parents, up to `/`, as the kernel names them
/// (stat after resolving symlinks). Empty when nothing exists there yet.
pub(super) fn ancestors(pattern: &str, ctx: &Context) -> Vec<InodeKey> {
    let Ok(Some(p)) = substitute(pattern, ctx) else {
        return vec![];
    };
    let (prefix, rest) = literal_prefix(&p);
    if std::fs::symlink_metadata(&prefix).is_err() {
        return vec![];
    }
    let dir = if rest.is_empty() {
        match prefix.parent() {
            Some(d) => d.to_path_buf(),
            None => return vec![],
        }
    } else {
        prefix
    };
    let Ok(dir) = std::fs::canonicalize(&dir) else {
        return vec![];
    };
    dir.ancestors().filter_map(|a| inode_of(a, true)).collect()
}

/// Rule id of the kernel's refusal of an exec whose arguments it could not
/// all read (more than `MAX_EXEC_ARGS`) while an exec rule naming the
/// program could still match on them.
pub const RULE_ARGV_UNREAD: &str = "builtin.enforce-argv-unread";

/// Rule id of the kernel's refusal (or kill) of an enforced exec that has
/// no decision from execve entry: its per-thread entry could not be stored
/// or read, or it is a 32-bit compat execve, which the matcher does not read.
pub const RULE_EXEC_UNDECIDED: &str = "builtin.enforce-exec-undecided";

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
            .filter(|o| LSM_FILE_OPS.contains(o))
            .collect();
        if !file_ops.is_empty() {
            let r = compile_file_rule(&mut c, rule, &file_ops, file_n, ctx)?;
            if let (Some(n), true) = (
                r.index,
                rule.ops.contains(&Op::Rename) && blocks(rule.treatment),
            ) {
                // Renaming a directory above a protected object moves it.
                for cond in rule
                    .conditions
                    .iter()
                    .filter(|cond| path_cond(cond) == Some(true))
                {
                    for v in &cond.values {
                        for k in ancestors(v, ctx) {
                            c.protect.entry(k).or_default().anc |= 1u64 << n;
                        }
                    }
                }
            }
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
    if !c.exec_rules.is_empty() {
        // The kernel's refusal of an exec with more arguments than it reads
        // while a rule could still match on the rest.
        c.rules.insert(
            EXEC_INDEX_ARGV_UNREAD,
            (RULE_ARGV_UNREAD.to_owned(), Treatment::Deny),
        );
        c.rules.insert(
            EXEC_INDEX_UNDECIDED,
            (RULE_EXEC_UNDECIDED.to_owned(), Treatment::Deny),
        );
    }
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
pub(super) fn path_cond(cond: &Condition) -> Option<bool> {
    match (cond.field, cond.operator) {
        (Field::Path, Operator::Glob) => Some(true),
        (Field::Path, Operator::NotGlob) => Some(false),
        _ => None,
    }
}

/// The report of `rule`'s `part` (`file` or `exec`) compiled with
/// `fidelity`, at kernel rule `index`.
fn rule_report(
    rule: &Rule,
    part: &'static str,
    fidelity: Fidelity,
    index: Option<u32>,
) -> RuleReport {
    RuleReport {
        rule: rule.id.clone(),
        treatment: rule.treatment,
        part,
        fidelity,
        index,
    }
}

/// Audit only, for a rule that blocks and has conditions the kernel
/// cannot test (`dropped`); `None` otherwise.
fn untestable(blocking: bool, dropped: &[String]) -> Option<Fidelity> {
    (blocking && !dropped.is_empty()).then(|| {
        Fidelity::AuditOnly(format!(
            "conditions the kernel cannot test: {}",
            dropped.join("; ")
        ))
    })
}

/// `rule` as kernel `part` rule `n` (from 0) of a table of `max`: `None`
/// while the table has room; when it is full, an error for a rule that
/// blocks, audit only (`full` says why) for any other.
fn no_room(
    rule: &Rule,
    part: &'static str,
    blocking: bool,
    n: u32,
    max: u32,
    full: &str,
) -> Option<Result<RuleReport, LsmError>> {
    if n < max {
        return None;
    }
    if blocking {
        return Some(Err(LsmError::Capacity(format!(
            "rule {} would be kernel {part} rule {}, the kernel holds {max}",
            rule.id,
            n + 1
        ))));
    }
    Some(Ok(rule_report(
        rule,
        part,
        Fidelity::AuditOnly(full.into()),
        None,
    )))
}

pub(super) fn compile_file_rule(
    c: &mut Compiled,
    rule: &Rule,
    ops: &[Op],
    n: u32,
    ctx: &Context,
) -> Result<RuleReport, LsmError> {
    let blocking = blocks(rule.treatment);
    let report =
        |fidelity: Fidelity, index: Option<u32>| rule_report(rule, "file", fidelity, index);
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
    if let Some(f) = untestable(blocking, &dropped) {
        return Ok(report(f, None));
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
                Err(why) if blocking => partial.push(why.to_string()),
                Err(why) => {
                    // An accept rule the kernel cannot bound matches any
                    // path: it may only ever let more through.
                    notes.push(why.to_string());
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
    if let Some(r) = no_room(
        rule,
        "file",
        blocking,
        n,
        MAX_FILE_RULES,
        "kernel rule table full",
    ) {
        return r;
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
        c.config.op_rules[Op::kind(*op) as usize] |= bit;
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
pub(super) type Clauses = (Vec<Vec<Alt>>, bool, Option<String>);

/// One alternative of an exec clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Alt {
    Token(String),
    Letters(u128),
}

/// A flag as the policy spells it, parsed by the policy's own parser
/// (`FlagSpec`): one clause per part.
pub(super) fn flag_alts(spec: &str) -> Result<Vec<Vec<Alt>>, NoKernelForm> {
    fn clauses(f: FlagSpec, out: &mut Vec<Vec<Alt>>) {
        match f {
            FlagSpec::Word(w) => out.push(vec![Alt::Token(w)]),
            FlagSpec::Letters(mask) => out.push(vec![Alt::Letters(mask)]),
            FlagSpec::All(parts) => parts.into_iter().for_each(|p| clauses(p, out)),
        }
    }
    let mut out = Vec::new();
    let f = FlagSpec::parse(spec).map_err(|e| NoKernelForm::Flag(e.to_string()))?;
    clauses(f, &mut out);
    Ok(out)
}

/// Clauses of one exec condition (each clause: alternatives, any may hold).
pub(super) fn exec_clauses(cond: &Condition) -> Result<Clauses, NoKernelForm> {
    let literal = |v: &str| -> Result<(), NoKernelForm> {
        if has_meta(v) {
            Err(NoKernelForm::Pattern(v.to_owned()))
        } else if v.len() > MAX_TOKEN {
            Err(NoKernelForm::TooLong(v.to_owned()))
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
                Err(NoKernelForm::MultiWordSubcommands)
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
                Err(NoKernelForm::MultiFlagAlternatives)
            }
        }
        _ => Err(NoKernelForm::Condition(cond.to_string())),
    }
}

pub(super) fn compile_exec_rule(c: &mut Compiled, rule: &Rule) -> Result<RuleReport, LsmError> {
    let blocking = rule.treatment == Treatment::Deny || rule.treatment == Treatment::Confirm;
    let report =
        |fidelity: Fidelity, index: Option<u32>| rule_report(rule, "exec", fidelity, index);
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
    if let Some(f) = untestable(blocking, &dropped) {
        return Ok(report(f, None));
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
    if let Some(r) = no_room(
        rule,
        "exec",
        blocking,
        j,
        MAX_EXEC_RULES,
        "kernel exec rule table full",
    ) {
        return r;
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
