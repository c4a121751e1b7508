//! Combined conditions: `when = ...` on a rule, `all`/`any`/`not`/`before`
//! over the rules that matched and the objects that changed.
//!
//! ```toml
//! [[over_scope]]
//! name = "shared code edited on top of the local fix"
//! paths = ["${workspace}/src/shared/**"]
//! when = "intended"
//!
//! [[constraints]]
//! name = "restart before the config change"
//! when = { before = ["over_scope:restart", { changed = "k8s://*/prod/configmap/*" }] }
//! ```
//!
//! A condition holds with a set of *witnesses*: the sequence numbers of the
//! records that made it true. `before = [A, B]` holds when both hold and a
//! witness of A comes before a witness of B. References (`intended:NAME`,
//! `over_scope:NAME`, ...) see what the rules' own matchers matched, before
//! any `when` filtering, so conditions never depend on each other.

use std::collections::BTreeSet;

use super::pattern::{PathSet, Roots};

/// Which section a reference names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    Intended,
    OverScope,
    Allowed,
    Constraint,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Section::Intended => "intended",
            Section::OverScope => "over_scope",
            Section::Allowed => "allowed",
            Section::Constraint => "constraint",
        }
    }

    fn from_name(s: &str) -> Option<Section> {
        [
            Section::Intended,
            Section::OverScope,
            Section::Allowed,
            Section::Constraint,
        ]
        .into_iter()
        .find(|x| x.name() == s)
    }
}

/// A combined condition.
#[derive(Clone, Debug)]
pub enum Cond {
    /// `"intended"`: every intended entry's evidence matched.
    Intended,
    /// `"SECTION:NAME"`: that rule (or intended entry) matched.
    Ref(Section, String),
    /// `{ changed = [patterns] }`: a file or command object matching one of
    /// the patterns was changed (ignored objects excluded).
    Changed(PathSet),
    /// `{ match = { rule keys } }`: an inline rule matched an action.
    Match(Box<super::spec::Rule>),
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Not(Box<Cond>),
    Before(Box<Cond>, Box<Cond>),
}

/// What conditions are evaluated against.
pub trait Facts {
    /// Witnesses of a reference, `None` when it did not match.
    fn reference(&self, section: Section, name: &str) -> Option<BTreeSet<u64>>;
    /// Witnesses of `intended`.
    fn intended(&self) -> Option<BTreeSet<u64>>;
    /// Every non-ignored change: (seq, object).
    fn changes(&self) -> &[(u64, String)];
    fn roots(&self) -> &Roots;
    /// Sequence numbers of the actions an inline rule matched.
    fn matches(&self, rule: &super::spec::Rule) -> BTreeSet<u64>;
}

impl Cond {
    /// Witnesses when the condition holds, `None` when it does not.
    pub fn eval(&self, f: &dyn Facts) -> Option<BTreeSet<u64>> {
        let nonempty = |s: BTreeSet<u64>| (!s.is_empty()).then_some(s);
        match self {
            Cond::Intended => f.intended(),
            Cond::Ref(s, n) => f.reference(*s, n),
            Cond::Changed(p) => nonempty(
                f.changes()
                    .iter()
                    .filter(|(_, o)| p.matches(o, f.roots()))
                    .map(|(s, _)| *s)
                    .collect(),
            ),
            Cond::Match(r) => nonempty(f.matches(r)),
            Cond::All(cs) => {
                let mut w = BTreeSet::new();
                for c in cs {
                    w.extend(c.eval(f)?);
                }
                Some(w)
            }
            Cond::Any(cs) => {
                let hits: Vec<BTreeSet<u64>> = cs.iter().filter_map(|c| c.eval(f)).collect();
                (!hits.is_empty()).then(|| hits.into_iter().flatten().collect())
            }
            Cond::Not(c) => match c.eval(f) {
                Some(_) => None,
                None => Some(BTreeSet::new()),
            },
            Cond::Before(a, b) => {
                let (a, b) = (a.eval(f)?, b.eval(f)?);
                let first_a = a.first()?;
                let last_b = b.last()?;
                (first_a < last_b).then(|| a.union(&b).copied().collect())
            }
        }
    }

    /// The references the condition makes, for validation.
    pub fn references(&self, out: &mut Vec<(Section, String)>) {
        match self {
            Cond::Ref(s, n) => out.push((*s, n.clone())),
            Cond::All(cs) | Cond::Any(cs) => cs.iter().for_each(|c| c.references(out)),
            Cond::Not(c) => c.references(out),
            Cond::Before(a, b) => {
                a.references(out);
                b.references(out);
            }
            Cond::Intended | Cond::Changed(_) | Cond::Match(_) => {}
        }
    }
}

/// Why an inline `match` table is not a rule (see [`parse`]).
#[derive(Debug, thiserror::Error)]
pub enum InlineRuleError {
    #[error("takes a table of rule keys")]
    NotTable,
    #[error("{0}")]
    Encode(toml::ser::Error),
    #[error("{}", .0.message())]
    Decode(toml::de::Error),
    /// The rule's keys are wrong: the rule parser's message and hint.
    #[error("{message}{}", .hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Rule {
        message: String,
        hint: Option<String>,
    },
}

/// Parses a condition from its TOML value. `inline` builds a rule from an
/// inline `match` table; errors are messages with a hint, the caller adds
/// the location.
pub fn parse(
    v: &toml::Value,
    inline: &dyn Fn(&toml::Value) -> Result<super::spec::Rule, InlineRuleError>,
) -> Result<Cond, (String, String)> {
    const HINT: &str = "a condition is \"intended\", \"intended:NAME\", \"over_scope:NAME\", \
        \"allowed:NAME\", \"constraint:NAME\", { changed = [patterns] }, { match = { rule keys } }, \
        { all = [...] }, { any = [...] }, { not = ... } or { before = [A, B] }";
    let bad = |m: String| (m, HINT.to_owned());
    match v {
        toml::Value::String(s) if s == "intended" => Ok(Cond::Intended),
        toml::Value::String(s) => {
            let Some((sec, name)) = s.split_once(':') else {
                return Err(bad(format!("unknown condition `{s}`")));
            };
            let sec = Section::from_name(sec).ok_or_else(|| {
                bad(format!(
                    "`{s}`: unknown section `{sec}` (use intended, over_scope, allowed or \
                     constraint)"
                ))
            })?;
            Ok(Cond::Ref(sec, name.to_owned()))
        }
        toml::Value::Table(t) => {
            let mut it = t.iter();
            let (Some((k, v)), None) = (it.next(), it.next()) else {
                return Err(bad(format!(
                    "a condition table has exactly one key, found {}",
                    t.len()
                )));
            };
            let list = |v: &toml::Value| -> Result<Vec<Cond>, (String, String)> {
                match v {
                    toml::Value::Array(a) => a.iter().map(|x| parse(x, inline)).collect(),
                    _ => Err(bad(format!("`{k}` takes an array of conditions"))),
                }
            };
            match k.as_str() {
                "all" => Ok(Cond::All(list(v)?)),
                "any" => {
                    let cs = list(v)?;
                    if cs.is_empty() {
                        return Err(bad("`any = []` can never hold".into()));
                    }
                    Ok(Cond::Any(cs))
                }
                "not" => Ok(Cond::Not(Box::new(parse(v, inline)?))),
                "before" => {
                    let mut cs = list(v)?;
                    if cs.len() != 2 {
                        return Err(bad(format!(
                            "`before` takes two conditions [A, B], found {}",
                            cs.len()
                        )));
                    }
                    let b = cs.pop().map(Box::new);
                    let a = cs.pop().map(Box::new);
                    match (a, b) {
                        (Some(a), Some(b)) => Ok(Cond::Before(a, b)),
                        _ => Err(bad("`before` takes two conditions".into())),
                    }
                }
                "changed" => {
                    let pats: Vec<String> = match v {
                        toml::Value::String(s) => vec![s.clone()],
                        toml::Value::Array(a) => a
                            .iter()
                            .map(|x| x.as_str().map(str::to_owned))
                            .collect::<Option<_>>()
                            .ok_or_else(|| bad("`changed` takes path or object patterns".into()))?,
                        _ => return Err(bad("`changed` takes path or object patterns".into())),
                    };
                    let set = PathSet::parse(&pats).map_err(|e| {
                        (
                            format!("`changed`: {}", e.message),
                            e.hint.unwrap_or_default(),
                        )
                    })?;
                    Ok(Cond::Changed(set))
                }
                "match" => {
                    Ok(Cond::Match(Box::new(inline(v).map_err(|m| {
                        (format!("`match`: {m}"), HINT.to_owned())
                    })?)))
                }
                other => Err(bad(format!("unknown condition key `{other}`"))),
            }
        }
        other => Err(bad(format!(
            "a condition is a string or a table, not {}",
            other.type_str()
        ))),
    }
}
