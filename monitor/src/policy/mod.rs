//! Policy engine: policy files and verdicts (the commands `abm policy`
//! and `abm replay` are in `crate::cmd::policy`).
//!
//! A policy is an ordered list of rules loaded from one or more TOML files
//! (format: docs/policy.md). [`Policy::evaluate`] gives each traced
//! [`Action`] a [`Verdict`]: the first rule whose operations and conditions
//! all match decides the treatment; scope and irreversibility come from the
//! rule when it names them and are derived from the action otherwise.
//!
//! The default pack (`policies/default.toml`) is compiled into the binary.
//! A built-in rule that protects the trace file always runs first, whatever
//! policy is loaded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sha2::{Digest as _, Sha256};

use crate::record::{Action, Blast, Irreversibility, Op, Scope, Treatment, Verdict};

mod build;
mod compile;
mod error;
mod format;
mod matcher;
mod paths;
mod select;
mod view;

#[cfg(test)]
pub(crate) mod pack_tests;
#[cfg(test)]
mod tests;

pub use error::{ErrorKind, PolicyError};
pub use format::{Severity, FORMAT_VERSION};
pub(crate) use matcher::FlagSpec;
pub use matcher::{Condition, Field, FieldKind, Operator, Root};

use compile::{compile, op_bit, Source};
use matcher::{PathGlobs, PathIndex, Roots, View};

/// The default pack's files, in load order: (name, text).
pub const DEFAULT_PACK: &[(&str, &str)] = &[(
    "policies/default.toml",
    include_str!("../../../policies/default.toml"),
)];

/// Rules abm applies before any policy's rules. They cannot be disabled.
const BUILTIN: &str = r#"
version = 1

[[rule]]
id = "builtin.trace-integrity"
reason = "the trace is the evidence of this session; monitored processes may not change it"
ops = ["unlink", "rmdir", "rename", "chmod", "chown", "truncate", "write", "link", "symlink", "utimes", "xattr", "setflags"]
paths = ["${trace}*"]
treatment = "deny"
scope = "protected"
irreversibility = "irreversible"
severity = "critical"
tags = ["surface:monitor"]
"#;

/// What the action model (crate::action) knows about the logical action a
/// record belongs to: its command line and its blast radius.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Shared with the action model's state: no copy per record.
    pub action_argv: Option<std::sync::Arc<[String]>>,
    /// What the action destroys, as far as measured and previewed.
    pub blast: Blast,
}

/// Where an action happens: the named roots policies anchor globs to.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The task's own directory (`${workspace}`).
    pub workspace: PathBuf,
    /// The agent user's home directory (`${home}`).
    pub home: PathBuf,
    /// The trace file being written (`${trace}`; always protected).
    pub trace_path: Option<PathBuf>,
}

/// One compiled rule. Rules are read-only once loaded; [`Policy::rules`]
/// lists them in the order they are tried.
#[derive(Clone, Debug)]
pub struct Rule {
    pub id: String,
    /// One-line human reason, copied into verdicts.
    pub reason: String,
    /// Operations the rule applies to.
    pub ops: Vec<Op>,
    pub treatment: Treatment,
    /// `None`: derived from the action (see [`Policy::evaluate`]).
    pub scope: Option<Scope>,
    /// `None`: derived from the operation.
    pub irreversibility: Option<Irreversibility>,
    pub severity: Severity,
    pub tags: Vec<String>,
    /// Higher runs first; ties keep load order.
    pub priority: i32,
    /// Where the rule is written: `file:line:column`.
    pub origin: String,
    /// All must hold for the rule to match.
    pub conditions: Vec<Condition>,
    pub(crate) op_mask: u32,
    /// Indices into `conditions`, cheapest test first.
    pub(crate) eval_order: Vec<usize>,
}

impl Rule {
    pub fn applies_to(&self, op: Op) -> bool {
        self.op_mask & op_bit(op) != 0
    }

    fn matches(&self, v: &View<'_>) -> bool {
        self.eval_order
            .iter()
            .all(|&i| self.conditions[i].matches(v))
    }
}

/// A loaded, compiled policy. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Policy {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Built-in rules first, then the policy's in precedence order.
    rules: Vec<Rule>,
    value_options: HashMap<String, Vec<String>>,
    protected: PathGlobs,
    protected_except: PathGlobs,
    /// `[scopes] sensitive` of every loaded file.
    sensitive: Vec<String>,
    /// The trace file and its siblings: protected whatever the policy says.
    always_protected: PathGlobs,
    /// Every path glob test above and in the rules, merged.
    index: PathIndex,
    /// The rules worth testing for an operation and program.
    select: select::Selector,
    sources: Vec<Source>,
    digest: String,
}

/// Why a verdict came out the way it did (`abm policy explain`).
#[derive(Clone, Debug)]
pub struct Explanation {
    pub verdict: Verdict,
    /// Index into [`Policy::rules`] of the deciding rule.
    pub decided_by: Option<usize>,
    /// Every rule that matched, in precedence order (the first decided).
    pub matched: Vec<RuleCheck>,
    /// Rules that failed by exactly one test (the operation, or one
    /// condition) while some other positive condition matched.
    pub near_misses: Vec<RuleCheck>,
}

/// The outcome of each test of one rule.
#[derive(Clone, Debug)]
pub struct RuleCheck {
    pub rule: usize,
    pub op_matched: bool,
    /// One entry per condition of the rule.
    pub conditions: Vec<bool>,
}

static DEFAULT: OnceLock<Policy> = OnceLock::new();

impl Policy {
    /// The default pack embedded in the binary.
    pub fn default_pack() -> Policy {
        DEFAULT
            .get_or_init(|| {
                Policy::build(default_sources())
                    .expect("the embedded default pack compiles (tested)")
            })
            .clone()
    }

    /// Load and merge policy files, in order. Either every file loads or
    /// the error of the first problem is returned.
    pub fn load(paths: &[PathBuf]) -> Result<Policy, PolicyError> {
        if paths.is_empty() {
            return Err(PolicyError::NoFiles);
        }
        Policy::build(read_sources(Vec::new(), paths)?)
    }

    /// Load policy files on top of the embedded default pack: its files
    /// first, then `paths` in order (their lists, `disable` and priorities
    /// see the pack's).
    pub fn load_on_default(paths: &[PathBuf]) -> Result<Policy, PolicyError> {
        Policy::build(read_sources(default_sources(), paths)?)
    }

    /// Compile one policy from text; `origin` names it in error messages.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(src: &str, origin: &str) -> Result<Policy, PolicyError> {
        Policy::build(vec![Source {
            origin: origin.to_owned(),
            text: src.to_owned(),
        }])
    }

    fn build(sources: Vec<Source>) -> Result<Policy, PolicyError> {
        let builtin_src = [Source {
            origin: "builtin".to_owned(),
            text: BUILTIN.to_owned(),
        }];
        let builtin = compile(&builtin_src, true).expect("built-in rules compile (tested)");
        let compiled = compile(&sources, false)?;
        let mut rules = builtin.rules;
        rules.extend(compiled.rules);
        let mut always_protected =
            PathGlobs::compile(&["${trace}*".to_owned()]).expect("static glob compiles");
        let mut protected = compiled.protected;
        let mut protected_except = compiled.protected_except;
        let mut tests: Vec<&mut PathGlobs> =
            vec![&mut always_protected, &mut protected, &mut protected_except];
        for r in &mut rules {
            for c in &mut r.conditions {
                if let matcher::Test::Path(matcher::PathTest::Glob(g)) = &mut c.test {
                    tests.push(g);
                }
            }
        }
        let index = PathIndex::build(&mut tests);
        for t in tests {
            t.release();
        }
        let digest = digest_of(&sources);
        let select = select::Selector::build(&rules);
        Ok(Policy {
            inner: Arc::new(Inner {
                select,
                rules,
                value_options: compiled.value_options,
                protected,
                protected_except,
                sensitive: compiled.sensitive,
                always_protected,
                index,
                sources,
                digest,
            }),
        })
    }

    /// Hex SHA-256 of the policy's sources: for each file in load order,
    /// its length in bytes, a newline, and its text (UTF-8 BOM removed,
    /// CRLF line ends turned into LF). File names are not part of it.
    pub fn digest(&self) -> String {
        self.inner.digest.clone()
    }

    /// The rules in the order they are tried: built-in rules, then by
    /// descending priority, then in load order.
    pub fn rules(&self) -> &[Rule] {
        &self.inner.rules
    }

    /// The loaded sources: (origin, text).
    pub fn sources(&self) -> impl Iterator<Item = (&str, &str)> {
        self.inner
            .sources
            .iter()
            .map(|s| (s.origin.as_str(), s.text.as_str()))
    }

    /// Options that take a separate value, for a program (`[cli.NAME]`).
    pub fn value_options(&self, program: &str) -> &[String] {
        self.inner
            .value_options
            .get(program)
            .map_or(&[], Vec::as_slice)
    }

    /// Judge one action. The first rule (see [`Policy::rules`]) that applies
    /// to the action's operation and whose conditions all hold decides.
    /// With no match the verdict is `accept` with rule id `default`.
    /// Scope, when the deciding rule does not set it: `protected` if a path
    /// is protected (`[scopes]`, and always the trace file), else
    /// `workspace` if every path is in the workspace (for exec: the working
    /// directory), else `shared`. Irreversibility, when not set: unlink,
    /// rmdir and truncate are irreversible; everything else is reversible.
    pub fn evaluate(&self, action: &Action, ctx: &Context) -> Verdict {
        self.evaluate_in(action, ctx, None)
    }

    /// [`Policy::evaluate`] with what the action model knows about the
    /// record's action (its command line, its blast radius); the record's
    /// `measured` field carries its own measurement.
    pub fn evaluate_with(&self, action: &Action, ctx: &Context, facts: &Facts) -> Verdict {
        self.evaluate_in(action, ctx, Some(facts))
    }

    fn evaluate_in(&self, action: &Action, ctx: &Context, facts: Option<&Facts>) -> Verdict {
        let Some(op) = action.op else {
            return Verdict {
                rule: "default".to_owned(),
                treatment: Treatment::Accept,
                irreversibility: Irreversibility::Reversible,
                scope: Scope::Workspace,
                reason: "no operation recorded".to_owned(),
            };
        };
        let mut view = self.view(action, op, ctx);
        view.facts = facts;
        let bit = op_bit(op);
        let programs = view.exec.as_ref().map_or([None; 2], |e| e.programs);
        let rules = &self.inner.rules;
        let rule = self
            .inner
            .select
            .candidates(op, &programs)
            .map(|i| &rules[i])
            .find(|r| r.op_mask & bit != 0 && r.matches(&view));
        self.verdict(rule, &view)
    }

    /// The rule that could decide `action` more strictly than accept or
    /// audit if its paths were other than recorded, for an action whose
    /// paths are not known exactly (`path_issues`): in precedence order, a
    /// rule that applies to the operation and whose conditions that do not
    /// depend on a path all hold. A rule without path conditions that holds
    /// decides for certain (`None` when it accepts or audits).
    pub fn could_match_any_path(&self, action: &Action, ctx: &Context) -> Option<&Rule> {
        let op = action.op?;
        let view = self.view(action, op, ctx);
        let path_dependent = |c: &Condition| {
            c.field.kind() == FieldKind::Path
                || matches!(c.field, Field::Location | Field::Object | Field::Recovery)
        };
        for r in &self.inner.rules {
            if !r.applies_to(op)
                || !r
                    .conditions
                    .iter()
                    .all(|c| path_dependent(c) || c.matches(&view))
            {
                continue;
            }
            let strict = !matches!(r.treatment, Treatment::Accept | Treatment::Audit);
            if strict {
                return Some(r);
            }
            if !r.conditions.iter().any(path_dependent) {
                return None;
            }
        }
        None
    }

    /// Like [`Policy::evaluate`], and also say which tests of which rules
    /// matched.
    pub fn explain(&self, action: &Action, ctx: &Context) -> Explanation {
        self.explain_with(action, ctx, None)
    }

    /// [`Policy::explain`] with the action model's facts.
    pub fn explain_with(
        &self,
        action: &Action,
        ctx: &Context,
        facts: Option<&Facts>,
    ) -> Explanation {
        let verdict = self.evaluate_in(action, ctx, facts);
        let mut matched = Vec::new();
        let mut near_misses = Vec::new();
        if let Some(op) = action.op {
            let mut view = self.view(action, op, ctx);
            view.facts = facts;
            for (i, r) in self.inner.rules.iter().enumerate() {
                let check = RuleCheck {
                    rule: i,
                    op_matched: r.applies_to(op),
                    conditions: r.conditions.iter().map(|c| c.matches(&view)).collect(),
                };
                let failed = usize::from(!check.op_matched)
                    + check.conditions.iter().filter(|m| !**m).count();
                // A near miss needs some positive evidence: a matched
                // condition that is not a negation or the result filter
                // (those hold for most actions).
                let evidence = r
                    .conditions
                    .iter()
                    .zip(&check.conditions)
                    .any(|(c, ok)| *ok && !c.operator.is_negated() && c.field != Field::Result);
                match failed {
                    0 => matched.push(check),
                    1 if evidence => near_misses.push(check),
                    _ => {}
                }
            }
        }
        Explanation {
            decided_by: matched.first().map(|c| c.rule),
            verdict,
            matched,
            near_misses,
        }
    }

    fn view<'a>(&'a self, action: &'a Action, op: Op, ctx: &'a Context) -> View<'a> {
        let roots = Roots::new(&ctx.workspace, &ctx.home, ctx.trace_path.as_deref());
        View::new(action, op, roots, |p| self.value_options(p)).with_index(&self.inner.index)
    }

    fn verdict(&self, rule: Option<&Rule>, v: &View<'_>) -> Verdict {
        match rule {
            Some(r) => Verdict {
                rule: r.id.clone(),
                treatment: r.treatment,
                irreversibility: r
                    .irreversibility
                    .unwrap_or_else(|| derived_irreversibility(v)),
                scope: r.scope.unwrap_or_else(|| self.derive_scope(v)),
                reason: r.reason.clone(),
            },
            None => {
                let scope = self.derive_scope(v);
                Verdict {
                    rule: "default".to_owned(),
                    treatment: Treatment::Accept,
                    irreversibility: derived_irreversibility(v),
                    scope,
                    reason: match scope {
                        Scope::Workspace => "no rule matched; the action stays in the workspace",
                        Scope::Shared => "no rule matched; the action is outside the workspace",
                        Scope::Protected => "no rule matched; the action touches a protected path",
                        Scope::Production => "no rule matched",
                    }
                    .to_owned(),
                }
            }
        }
    }

    /// The sensitive patterns of `[scopes] sensitive`, as written
    /// (`${home}/...`, `${workspace}/...`, `~/...` or absolute).
    pub fn sensitive_patterns(&self) -> &[String] {
        &self.inner.sensitive
    }

    /// Whether a path is protected by the policy's `[scopes]` or is the
    /// trace file.
    pub fn is_protected(&self, path: &str, ctx: &Context) -> bool {
        let roots = Roots::new(&ctx.workspace, &ctx.home, ctx.trace_path.as_deref());
        self.protected_in(path, &roots)
    }

    fn protected_in(&self, path: &str, roots: &Roots<'_>) -> bool {
        let i = &self.inner;
        i.always_protected.is_match(path, roots)
            || (i.protected.is_match(path, roots) && !i.protected_except.is_match(path, roots))
    }

    /// [`Policy::protected_in`] for a subject of the view, through the
    /// merged index.
    fn protected_at(&self, v: &View<'_>, i: usize) -> bool {
        let p = &self.inner;
        v.globs_match(i, &p.always_protected)
            || (v.globs_match(i, &p.protected) && !v.globs_match(i, &p.protected_except))
    }

    fn derive_scope(&self, v: &View<'_>) -> Scope {
        if !v.op.is_action() {
            return Scope::Workspace;
        }
        if v.op == Op::Exec {
            return match v.cwd {
                Some(cwd) if v.roots.contains(Root::Workspace, cwd) => Scope::Workspace,
                _ => Scope::Shared,
            };
        }
        if (0..4).any(|i| self.protected_at(v, i)) {
            return Scope::Protected;
        }
        let mut any = false;
        for p in v.host_paths() {
            any = true;
            if !v.roots.contains(Root::Workspace, p) {
                return Scope::Shared;
            }
        }
        if any {
            Scope::Workspace
        } else {
            Scope::Shared
        }
    }
}

/// Irreversibility of a record when the deciding rule does not say: what
/// its call was measured to destroy ([`crate::record::Measured`]), so the
/// verdict never contradicts the record's own measurement; by operation
/// when the call was not measured.
fn derived_irreversibility(v: &View<'_>) -> Irreversibility {
    use crate::record::Recovery;
    match v.action.measured.as_ref().map(|m| m.recovery) {
        Some(Recovery::Reversible) => Irreversibility::Reversible,
        Some(Recovery::Recoverable) => Irreversibility::Recoverable,
        Some(Recovery::Irreversible) => Irreversibility::Irreversible,
        Some(Recovery::Unmeasured) | None => default_irreversibility(v.op),
    }
}

/// Irreversibility of an operation when the deciding rule does not say and
/// nothing was measured.
pub fn default_irreversibility(op: Op) -> Irreversibility {
    match op {
        Op::Unlink | Op::Rmdir | Op::Truncate => Irreversibility::Irreversible,
        _ => Irreversibility::Reversible,
    }
}

fn default_sources() -> Vec<Source> {
    DEFAULT_PACK
        .iter()
        .map(|(origin, text)| Source {
            origin: (*origin).to_owned(),
            text: (*text).to_owned(),
        })
        .collect()
}

fn read_sources(mut sources: Vec<Source>, paths: &[PathBuf]) -> Result<Vec<Source>, PolicyError> {
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|source| PolicyError::Read {
            path: p.clone(),
            source,
        })?;
        sources.push(Source {
            origin: p.display().to_string(),
            text,
        });
    }
    Ok(sources)
}

fn digest_of(sources: &[Source]) -> String {
    let mut h = Sha256::new();
    for s in sources {
        let text = s.text.strip_prefix('\u{feff}').unwrap_or(&s.text);
        let text = text.replace("\r\n", "\n");
        h.update(text.len().to_string().as_bytes());
        h.update(b"\n");
        h.update(text.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Home directory from `$HOME`, for commands run outside a monitored session.
pub(crate) fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// An absolute form of a path without touching the file system beyond the
/// current directory (the path need not exist).
pub(crate) fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
