//! Task specifications: the TOML file that describes one task's world, and
//! its validation into matchers.
//!
//! The format is documented in `docs/oracle.md`. Every error names the file,
//! line and column of the offending value and says how to fix it.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::condition::{Cond, Section};

mod rule;
use super::pattern::{PathSet, PatternError, Side, TextGlob};
use crate::record::Op;

/// The spec format version this build reads.
pub const SPEC_VERSION: i64 = 1;

/// Where to read about the format (used in hints).
const FORMAT_DOC: &str = "docs/oracle.md";

/// A malformed task spec: file, 1-based line and column, what is wrong and
/// how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecError {}

/// 1-based line and column (in characters) of byte offset `at` in `src`.
fn line_col(src: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// A string or a list of strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct StrList(Vec<String>);

impl<'de> Deserialize<'de> for StrList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StrList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StrList, E> {
                Ok(StrList(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrList, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s);
                }
                Ok(StrList(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[routes]`: name = patterns, in file order.
#[derive(Debug, Default)]
struct RouteList(Vec<(Spanned<String>, Spanned<StrList>)>);

impl<'de> Deserialize<'de> for RouteList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RouteList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RouteList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of route names to path patterns")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RouteList, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Spanned<String>, Spanned<StrList>>()? {
                    out.push((k, v));
                }
                Ok(RouteList(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    version: Option<Spanned<i64>>,
    id: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    labels: Option<Spanned<toml::Table>>,
    #[serde(default)]
    world: RawWorld,
    #[serde(default)]
    protected: RawProtected,
    #[serde(default)]
    intended: Vec<Spanned<RawIntended>>,
    #[serde(default)]
    over_scope: Vec<Spanned<RawRule>>,
    #[serde(default)]
    allowed: Vec<Spanned<RawRule>>,
    #[serde(default)]
    constraints: Vec<Spanned<RawRule>>,
    #[serde(default)]
    routes: Option<Spanned<RouteList>>,
    #[serde(default)]
    owners: Vec<Spanned<RawOwner>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOwner {
    name: Option<Spanned<String>>,
    #[serde(default)]
    description: String,
    program: Option<Spanned<StrList>>,
    paths: Option<Spanned<StrList>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    objects: Option<Spanned<StrList>>,
    ignore: Option<Spanned<StrList>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProtected {
    paths: Option<Spanned<StrList>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIntended {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    evidence: Vec<Spanned<RawRule>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<Spanned<String>>,
    #[serde(default)]
    description: String,
    ops: Option<Spanned<StrList>>,
    paths: Option<Spanned<StrList>>,
    side: Option<Spanned<String>>,
    program: Option<Spanned<StrList>>,
    argv_regex: Option<Spanned<String>>,
    argv_glob: Option<Spanned<String>>,
    args_include: Option<Spanned<StrList>>,
    args_exclude: Option<Spanned<StrList>>,
    cwd: Option<Spanned<StrList>>,
    objects: Option<Spanned<StrList>>,
    covers: Option<Spanned<StrList>>,
    require_effect: Option<Spanned<bool>>,
    when: Option<Spanned<toml::Value>>,
}

/// Which paths of a rename a file rule looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenameSide {
    Either,
    Source,
    Destination,
}

impl RenameSide {
    pub fn accepts(self, side: Side) -> bool {
        match self {
            RenameSide::Either => true,
            RenameSide::Source => side == Side::Source,
            RenameSide::Destination => side == Side::Destination,
        }
    }
}

/// What a rule matches: file operations on paths, or program executions.
#[derive(Clone, Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "a spec holds a few dozen rules, built once per run"
)]
pub enum Matcher {
    Files {
        /// Operations; never empty.
        ops: Vec<Op>,
        /// Empty: any path.
        paths: PathSet,
        side: RenameSide,
    },
    Exec {
        program: Vec<TextGlob>,
        argv_regex: Option<Regex>,
        argv_glob: Option<TextGlob>,
        args_include: Vec<TextGlob>,
        args_exclude: Vec<TextGlob>,
        cwd: PathSet,
        /// Command objects (see [`super::command`]); when given, the rule
        /// matches only commands that change one of them.
        objects: PathSet,
    },
    /// No matcher: the rule matches when its `when` condition holds.
    Condition,
}

/// One matcher with its name and attribution settings.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The rule's name (evidence rules: `evidence N` when unnamed).
    pub name: String,
    pub description: String,
    pub matcher: Matcher,
    /// Objects whose changes by the matched action's process (and the
    /// processes it starts) are explained by this rule.
    pub covers: PathSet,
    /// Count the rule only when its process changed a covered object.
    pub require_effect: bool,
    /// Count the rule only when this condition holds (see
    /// [`super::condition`]).
    pub when: Option<Cond>,
}

/// One object the safe action must change, with alternative evidences.
#[derive(Clone, Debug)]
pub struct Intended {
    pub name: String,
    pub description: String,
    pub evidence: Vec<Rule>,
}

/// A named set of files used to label which route a change took.
#[derive(Clone, Debug)]
pub struct Route {
    pub name: String,
    pub paths: PathSet,
}

/// State that a command owns: files that only that command should change
/// (`[[owners]]`). A change by any other process is a change of the state
/// without its owner; a read of the files by the owner is the tool reading
/// its own state, not exposure.
#[derive(Clone, Debug)]
pub struct StateOwner {
    /// `owner N` when unnamed.
    pub name: String,
    pub description: String,
    /// Globs for the owning program's name (as an exec rule's `program`).
    pub program: Vec<TextGlob>,
    /// The files it owns.
    pub paths: PathSet,
}

/// A validated task specification.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    /// Where the spec was read from (for messages).
    pub source: PathBuf,
    pub id: String,
    pub description: String,
    /// Free labels copied into every verdict.
    pub labels: BTreeMap<String, String>,
    /// Objects of the task's kind: an unexplained change to one of them is a
    /// wrong target.
    pub world: PathSet,
    /// Incidental churn: changes here are not actions on the world.
    pub ignore: PathSet,
    /// Must stay untouched: any change is a wrong target.
    pub protected: PathSet,
    pub intended: Vec<Intended>,
    pub over_scope: Vec<Rule>,
    pub allowed: Vec<Rule>,
    pub constraints: Vec<Rule>,
    pub routes: Vec<Route>,
    pub owners: Vec<StateOwner>,
}

/// File operations that change the world.
pub use crate::record::FILE_OPS;

struct Ctx<'a> {
    file: &'a Path,
    src: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, message: String, hint: Option<String>) -> SpecError {
        let (line, column) = line_col(self.src, span.start);
        SpecError {
            file: self.file.to_owned(),
            line,
            column,
            message,
            hint,
        }
    }

    fn pat_err(&self, span: Range<usize>, field: &str, e: PatternError) -> SpecError {
        self.err(span, format!("`{field}`: {}", e.message), e.hint)
    }

    fn paths(&self, field: &str, v: &Option<Spanned<StrList>>) -> Result<PathSet, SpecError> {
        let Some(v) = v else {
            return Ok(PathSet::default());
        };
        PathSet::parse(&v.get_ref().0).map_err(|e| self.pat_err(v.span(), field, e))
    }

    fn text_globs(
        &self,
        field: &str,
        v: &Option<Spanned<StrList>>,
    ) -> Result<Vec<TextGlob>, SpecError> {
        let Some(v) = v else {
            return Ok(Vec::new());
        };
        v.get_ref()
            .0
            .iter()
            .map(|s| TextGlob::parse(s).map_err(|e| self.pat_err(v.span(), field, e)))
            .collect()
    }
}

/// A label whose value is not a string, number, boolean or table.
#[derive(Debug, thiserror::Error)]
#[error("label `{0}` is not a string, number, boolean or table")]
struct NotALabel(String);

fn flatten_labels(
    prefix: &str,
    t: &toml::Table,
    out: &mut BTreeMap<String, String>,
) -> Result<(), NotALabel> {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::String(s) => {
                out.insert(key, s.clone());
            }
            toml::Value::Integer(i) => {
                out.insert(key, i.to_string());
            }
            toml::Value::Float(f) => {
                out.insert(key, f.to_string());
            }
            toml::Value::Boolean(b) => {
                out.insert(key, b.to_string());
            }
            toml::Value::Table(sub) => flatten_labels(&key, sub, out)?,
            _ => return Err(NotALabel(key)),
        }
    }
    Ok(())
}

impl TaskSpec {
    /// Reads and validates a task spec file.
    pub fn load(path: impl AsRef<Path>) -> Result<TaskSpec, SpecError> {
        let path = path.as_ref();
        let src = crate::core::open_regular(path)
            .and_then(|mut f| {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut f, &mut s).map(|_| s)
            })
            .map_err(|e| SpecError {
                file: path.to_owned(),
                line: 0,
                column: 0,
                message: format!("cannot read task spec: {e}"),
                hint: None,
            })?;
        TaskSpec::parse(path, &src)
    }

    /// Parses and validates spec text; `file` is used in messages.
    pub fn parse(file: &Path, src: &str) -> Result<TaskSpec, SpecError> {
        let cx = Ctx { file, src };
        let raw: RawSpec = toml::from_str(src).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(src, s.start)).unwrap_or((1, 1));
            let msg = e.message().trim_end().to_owned();
            let hint = if msg.contains("unknown field") {
                Some(format!(
                    "check the spelling; the task spec format is in {FORMAT_DOC}"
                ))
            } else if msg.contains("missing field `id`") {
                Some("add `id = \"family-name\"` at the top of the file".into())
            } else if msg.contains("missing field `name`") {
                Some("every `[[intended]]` entry needs `name = \"...\"`".into())
            } else {
                Some(format!("the task spec format is in {FORMAT_DOC}"))
            };
            SpecError {
                file: file.to_owned(),
                line,
                column,
                message: msg,
                hint,
            }
        })?;

        if let Some(v) = &raw.version {
            if *v.get_ref() != SPEC_VERSION {
                return Err(cx.err(
                    v.span(),
                    format!(
                        "spec version {} is not supported (this abm reads version {SPEC_VERSION})",
                        v.get_ref()
                    ),
                    Some(format!("write `version = {SPEC_VERSION}` or upgrade abm")),
                ));
            }
        }
        let id = raw.id.get_ref().trim().to_owned();
        if id.is_empty() {
            return Err(cx.err(
                raw.id.span(),
                "`id` is empty".into(),
                Some("give the task family a stable identifier, e.g. `git-branch-stale`".into()),
            ));
        }

        let mut labels = BTreeMap::new();
        if let Some(l) = &raw.labels {
            flatten_labels("", l.get_ref(), &mut labels).map_err(|e| {
                cx.err(
                    l.span(),
                    e.to_string(),
                    Some("labels are flat key = \"value\" pairs".into()),
                )
            })?;
        }

        let world = cx.paths("world.objects", &raw.world.objects)?;
        let ignore = cx.paths("world.ignore", &raw.world.ignore)?;
        let protected = cx.paths("protected.paths", &raw.protected.paths)?;

        if raw.intended.is_empty() {
            return Err(cx.err(
                0..0,
                "the task has no `[[intended]]` entry".into(),
                Some(
                    "describe the object the safe action must change, e.g.\n\
                     \x20   [[intended]]\n\
                     \x20   name = \"cache removed\"\n\
                     \x20   [[intended.evidence]]\n\
                     \x20   ops = [\"rmdir\"]\n\
                     \x20   paths = [\"${workspace}/build/cache\"]"
                        .into(),
                ),
            ));
        }
        let mut intended = Vec::new();
        for it in &raw.intended {
            let r = it.get_ref();
            if r.evidence.is_empty() {
                return Err(cx.err(
                    it.span(),
                    format!(
                        "intended `{}` has no `[[intended.evidence]]`",
                        r.name.get_ref()
                    ),
                    Some(
                        "add at least one evidence rule (file operation or command) after \
                         this entry"
                            .into(),
                    ),
                ));
            }
            let mut evidence = Vec::new();
            for (i, e) in r.evidence.iter().enumerate() {
                evidence.push(cx.rule(
                    e,
                    "intended.evidence",
                    Some(format!("evidence {}", i + 1)),
                )?);
            }
            intended.push(Intended {
                name: r.name.get_ref().clone(),
                description: r.description.clone(),
                evidence,
            });
        }
        check_unique(
            &cx,
            "intended",
            raw.intended.iter().map(|i| &i.get_ref().name),
        )?;

        let rules = |list: &Vec<Spanned<RawRule>>, section: &str| -> Result<Vec<Rule>, SpecError> {
            let out = list
                .iter()
                .map(|r| cx.rule(r, section, None))
                .collect::<Result<Vec<_>, _>>()?;
            check_unique(
                &cx,
                section,
                list.iter().filter_map(|r| r.get_ref().name.as_ref()),
            )?;
            Ok(out)
        };
        let over_scope = rules(&raw.over_scope, "over_scope")?;
        let allowed = list_allowed(&cx, &raw.allowed)?;
        let constraints = rules(&raw.constraints, "constraints")?;

        let mut routes = Vec::new();
        if let Some(rl) = &raw.routes {
            for (name, pats) in &rl.get_ref().0 {
                let key = name.get_ref();
                if key == "none" || key.contains('+') || key.is_empty() {
                    return Err(cx.err(
                        name.span(),
                        format!("route name `{key}` is reserved or contains `+`"),
                        Some(
                            "`none` is the label of a run that took no route, and labels join \
                             route names with `+`; pick another name"
                                .into(),
                        ),
                    ));
                }
                let paths = cx.paths(&format!("routes.{key}"), &Some(pats.clone()))?;
                if paths.is_empty() {
                    return Err(cx.err(
                        pats.span(),
                        format!("route `{key}` has no path patterns"),
                        None,
                    ));
                }
                routes.push(Route {
                    name: key.clone(),
                    paths,
                });
            }
        }

        let mut owners = Vec::new();
        for (i, o) in raw.owners.iter().enumerate() {
            let r = o.get_ref();
            let name = r
                .name
                .as_ref()
                .map(|n| n.get_ref().clone())
                .unwrap_or_else(|| format!("owner {}", i + 1));
            let program = cx.text_globs("owners.program", &r.program)?;
            let paths = cx.paths("owners.paths", &r.paths)?;
            if program.is_empty() || paths.is_empty() {
                return Err(cx.err(
                    o.span(),
                    format!("owner `{name}` needs both `program` and `paths`"),
                    Some(
                        "name the command that owns the state and its files, e.g.\n\
                         \x20   [[owners]]\n\
                         \x20   program = \"systemctl\"\n\
                         \x20   paths = [\"/run/systemd/units/**\"]"
                            .into(),
                    ),
                ));
            }
            owners.push(StateOwner {
                name,
                description: r.description.clone(),
                program,
                paths,
            });
        }
        check_unique(
            &cx,
            "owners",
            raw.owners.iter().filter_map(|o| o.get_ref().name.as_ref()),
        )?;

        let spec = TaskSpec {
            source: file.to_owned(),
            id,
            description: raw.description.trim().to_owned(),
            labels,
            world,
            ignore,
            protected,
            intended,
            over_scope,
            allowed,
            constraints,
            routes,
            owners,
        };
        check_references(&cx, &raw, &spec)?;
        Ok(spec)
    }

    /// Every rule of the spec with its section and, for evidence, the
    /// intended entry's name.
    pub fn all_rules(&self) -> impl Iterator<Item = (Section, &str, &Rule)> {
        let ev = self.intended.iter().flat_map(|i| {
            i.evidence
                .iter()
                .map(move |r| (Section::Intended, i.name.as_str(), r))
        });
        fn sec(s: Section, v: &[Rule]) -> impl Iterator<Item = (Section, &str, &Rule)> {
            v.iter().map(move |r| (s, r.name.as_str(), r))
        }
        ev.chain(sec(Section::OverScope, &self.over_scope))
            .chain(sec(Section::Allowed, &self.allowed))
            .chain(sec(Section::Constraint, &self.constraints))
    }
}

/// Conditions may only name rules that exist and have a matcher of their
/// own (references see matcher matches, before conditions).
fn check_references(cx: &Ctx, raw: &RawSpec, spec: &TaskSpec) -> Result<(), SpecError> {
    let whens = raw
        .intended
        .iter()
        .flat_map(|i| i.get_ref().evidence.iter())
        .chain(&raw.over_scope)
        .chain(&raw.allowed)
        .chain(&raw.constraints)
        .filter_map(|r| r.get_ref().when.as_ref());
    let rules = spec.all_rules().map(|(_, _, r)| r);
    for (w, rule) in whens.zip(rules.filter(|r| r.when.is_some())) {
        let mut refs = Vec::new();
        if let Some(c) = &rule.when {
            c.references(&mut refs);
        }
        for (sec, name) in refs {
            let targets: Vec<&Rule> = spec
                .all_rules()
                .filter(|(s, n, _)| *s == sec && *n == name)
                .map(|(_, _, r)| r)
                .collect();
            if targets.is_empty() {
                return Err(cx.err(
                    w.span(),
                    format!(
                        "`when`: `{}:{name}` names no {} entry",
                        sec.name(),
                        sec.name()
                    ),
                    Some("check the name; references use the entry's `name`".into()),
                ));
            }
            if targets
                .iter()
                .all(|r| matches!(r.matcher, Matcher::Condition))
            {
                return Err(cx.err(
                    w.span(),
                    format!(
                        "`when`: `{}:{name}` has no matcher of its own, only a condition",
                        sec.name()
                    ),
                    Some(
                        "references see what rules' matchers matched; combine the two \
                         conditions in one `when` instead"
                            .into(),
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn list_allowed(cx: &Ctx, list: &[Spanned<RawRule>]) -> Result<Vec<Rule>, SpecError> {
    list.iter()
        .enumerate()
        .map(|(i, r)| cx.rule(r, "allowed", Some(format!("allowed {}", i + 1))))
        .collect()
}

fn check_unique<'a>(
    cx: &Ctx,
    section: &str,
    names: impl Iterator<Item = &'a Spanned<String>>,
) -> Result<(), SpecError> {
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        if !seen.insert(n.get_ref().as_str()) {
            return Err(cx.err(
                n.span(),
                format!("`{section}` name `{}` is used twice", n.get_ref()),
                Some("names identify entries in verdicts; make them unique".into()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<TaskSpec, SpecError> {
        TaskSpec::parse(Path::new("task.toml"), src)
    }

    const MINIMAL: &str = r#"
id = "cache"
[[intended]]
name = "cache removed"
[[intended.evidence]]
ops = ["rmdir"]
paths = ["${workspace}/build/cache"]
"#;

    #[test]
    fn minimal_spec_loads_with_defaults() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.id, "cache");
        assert_eq!(s.intended.len(), 1);
        assert_eq!(s.intended[0].evidence[0].name, "evidence 1");
        match &s.intended[0].evidence[0].matcher {
            Matcher::Files { ops, side, .. } => {
                assert_eq!(ops, &vec![Op::Rmdir]);
                assert_eq!(*side, RenameSide::Either);
            }
            m => panic!("expected a file matcher, got {m:?}"),
        }
        assert!(s.world.is_empty() && s.protected.is_empty() && s.routes.is_empty());
    }

    #[test]
    fn unknown_field_is_located() {
        let src = format!("{MINIMAL}pahts = [\"x\"]\n");
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("unknown field `pahts`"), "{e}");
        assert_eq!(e.line, 8, "{e}");
        assert!(e.hint.is_some());
    }

    #[test]
    fn bad_glob_points_at_its_line() {
        let src = MINIMAL.replace("${workspace}/build/cache", "${workspace}/build/{cache");
        let e = parse(&src).unwrap_err();
        assert_eq!((e.line, e.column), (7, 9), "{e}");
        assert!(e.message.starts_with("`paths`: invalid glob"), "{e}");
        assert!(e.to_string().starts_with("task.toml:7:9: "), "{e}");
    }

    #[test]
    fn bad_regex_and_unknown_op_are_located() {
        let src = format!(
            "{MINIMAL}[[over_scope]]\nname = \"x\"\nprogram = \"git\"\nargv_regex = 'stash@{{1'\n"
        );
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, 11, "{e}");
        assert!(e.message.contains("invalid regular expression"), "{e}");

        let src = MINIMAL.replace("\"rmdir\"", "\"remove\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("unknown operation `remove`"), "{e}");
        assert!(e.hint.unwrap().contains("unlink, rmdir"));
    }

    #[test]
    fn relative_path_gets_an_anchoring_hint() {
        let src = MINIMAL.replace("${workspace}/build/cache", "build/cache");
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("relative"), "{e}");
        assert!(e.hint.unwrap().contains("${workspace}/build/cache"));
    }

    #[test]
    fn rules_must_match_something_and_not_mix_kinds() {
        let e = parse(&format!("{MINIMAL}[[over_scope]]\nname = \"empty\"\n")).unwrap_err();
        assert!(e.message.contains("matches nothing"), "{e}");
        assert_eq!(e.line, 8, "{e}");

        let e = parse(&format!(
            "{MINIMAL}[[over_scope]]\nname = \"mixed\"\nprogram = \"rm\"\npaths = [\"/x\"]\n"
        ))
        .unwrap_err();
        assert!(e.message.contains("`paths` cannot be combined"), "{e}");

        let e = parse(&format!(
            "{MINIMAL}[[over_scope]]\nname = \"mixed\"\nops = [\"exec\", \"unlink\"]\n"
        ))
        .unwrap_err();
        assert!(e.message.contains("`exec` and file operations"), "{e}");

        let e = parse(&format!("{MINIMAL}[[over_scope]]\nprogram = \"rm\"\n")).unwrap_err();
        assert!(e.message.contains("has no `name`"), "{e}");

        let e = parse(&format!(
            "{MINIMAL}[[over_scope]]\nname = \"x\"\nprogram = \"git\"\nrequire_effect = true\n"
        ))
        .unwrap_err();
        assert!(e.message.contains("needs `covers`"), "{e}");
    }

    #[test]
    fn duplicate_names_and_reserved_routes_are_rejected() {
        let src = format!(
            "{MINIMAL}[[constraints]]\nname = \"a\"\nprogram = \"x\"\n[[constraints]]\nname = \"a\"\nprogram = \"y\"\n"
        );
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("used twice"), "{e}");
        assert_eq!(e.line, 12);

        let e = parse(&format!("{MINIMAL}[routes]\nnone = [\"/x\"]\n")).unwrap_err();
        assert!(e.message.contains("reserved"), "{e}");
        let e = parse(&format!("{MINIMAL}[routes]\n\"a+b\" = [\"/x\"]\n")).unwrap_err();
        assert!(e.message.contains("`+`"), "{e}");
    }

    #[test]
    fn missing_intended_and_missing_id() {
        let e = parse("id = \"x\"\n").unwrap_err();
        assert!(e.message.contains("no `[[intended]]`"), "{e}");
        let e = parse(&MINIMAL.replace("id = \"cache\"", "")).unwrap_err();
        assert!(e.message.contains("missing field `id`"), "{e}");
        let e =
            parse(&MINIMAL.replace("id = \"cache\"", "id = \"cache\"\nversion = 2")).unwrap_err();
        assert!(e.message.contains("version 2"), "{e}");
    }

    #[test]
    fn labels_flatten_and_routes_keep_file_order() {
        let src = format!(
            "{}\n[labels]\nfamily = \"cache\"\naxis.target = \"B2\"\nlevel = 3\n[routes]\nshared = \"${{workspace}}/src/n.py\"\nlocal = [\"${{workspace}}/src/r/**\"]\n",
            MINIMAL
        );
        let s = parse(&src).unwrap();
        assert_eq!(s.labels.get("axis.target").map(String::as_str), Some("B2"));
        assert_eq!(s.labels.get("level").map(String::as_str), Some("3"));
        let names: Vec<&str> = s.routes.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["shared", "local"]);
    }

    #[test]
    fn exec_rule_defaults() {
        let src = format!(
            "{MINIMAL}[[over_scope]]\nname = \"clear\"\nprogram = \"git\"\nargs_include = [\"stash\", \"clear\"]\ncovers = [\"${{workspace}}/.git/refs/stash\"]\n"
        );
        let s = parse(&src).unwrap();
        let r = &s.over_scope[0];
        assert!(
            matches!(&r.matcher, Matcher::Exec { args_include, .. } if args_include.len() == 2)
        );
        assert!(!r.require_effect);
        assert_eq!(r.covers.0.len(), 1);
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé\nx", 0), (1, 1));
        assert_eq!(line_col("ab\ncé\nx", 3), (2, 1));
        assert_eq!(line_col("ab\ncé\nx", 7), (3, 1));
        assert_eq!(line_col("ab\ncé\nx", 5), (2, 2));
    }
}
