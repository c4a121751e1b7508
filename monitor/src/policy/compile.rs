//! Validation and compilation of parsed policy files into rules.
//!
//! Every check that can fail points at the offending token in its file.
//! Nothing here has side effects: a failed compile leaves no trace.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use toml::Spanned;

use super::build::build;
use super::error::{self, at, nearest, ErrorKind, PolicyError};
use super::format::{RawFile, RawRule, SList, SStr, Severity, FORMAT_VERSION};
use super::matcher::{Condition, Field, Operator, PathGlobs};
use super::Rule;
use crate::record::Op;

/// One policy source: its name for messages and its text.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    pub origin: String,
    pub text: String,
}

/// The result of compiling a set of sources.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    pub rules: Vec<Rule>,
    pub value_options: HashMap<String, Vec<String>>,
    pub protected: PathGlobs,
    pub protected_except: PathGlobs,
    /// `[scopes] sensitive`, as written (anchored, checked).
    pub sensitive: Vec<String>,
}

/// Where a token is: source index and byte span.
#[derive(Clone, Debug)]
pub(crate) struct Loc {
    file: usize,
    span: Range<usize>,
}

/// A value after list expansion, remembering where it was written.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub(crate) value: String,
    pub(crate) loc: Loc,
}

pub(crate) enum Value {
    Text(String),
    Int(i64),
}

/// Operations a rule applies to when it names none and has no exec matchers.
use crate::record::FILE_OPS;

pub(crate) struct Ctx<'s> {
    sources: &'s [Source],
    /// Whether rule ids may use the reserved `builtin.` prefix.
    builtin: bool,
}

impl Ctx<'_> {
    pub(crate) fn err(
        &self,
        loc: &Loc,
        kind: ErrorKind,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> PolicyError {
        let s = &self.sources[loc.file];
        at(&s.origin, &s.text, loc.span.clone(), kind, message, hint)
    }

    pub(crate) fn place(&self, loc: &Loc) -> String {
        let s = &self.sources[loc.file];
        let (l, c) = error::line_col(&s.text, loc.span.start);
        format!("{}:{l}:{c}", s.origin)
    }
}

fn loc<T>(file: usize, s: &Spanned<T>) -> Loc {
    Loc {
        file,
        span: s.span(),
    }
}

struct ListDef {
    loc: Loc,
    items: Vec<Item>,
}

pub(crate) fn compile(sources: &[Source], builtin: bool) -> Result<Compiled, PolicyError> {
    let cx = Ctx { sources, builtin };

    // 1. Parse every file.
    let mut files = Vec::with_capacity(sources.len());
    for s in sources {
        let f: RawFile =
            toml::from_str(&s.text).map_err(|e| error::from_toml(&s.origin, &s.text, &e))?;
        files.push(f);
    }

    // 2. Versions.
    for (i, f) in files.iter().enumerate() {
        if *f.version.get_ref() != FORMAT_VERSION {
            return Err(cx.err(
                &loc(i, &f.version),
                ErrorKind::UnsupportedVersion,
                format!("unsupported policy format version {}", f.version.get_ref()),
                Some(format!("this build of abm reads version {FORMAT_VERSION}")),
            ));
        }
    }

    // 3. Lists: definitions, then extensions, then expansion.
    let mut lists: BTreeMap<String, ListDef> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        for (name, items) in &f.lists {
            check_list_name(&cx, i, name)?;
            if let Some(prev) = lists.get(name.get_ref()) {
                return Err(cx.err(
                    &loc(i, name),
                    ErrorKind::DuplicateList,
                    format!("list `{}` is defined twice", name.get_ref()),
                    Some(format!(
                        "first defined at {}; to add items from another file use [extend_lists]",
                        cx.place(&prev.loc)
                    )),
                ));
            }
            lists.insert(
                name.get_ref().clone(),
                ListDef {
                    loc: loc(i, name),
                    items: raw_items(i, items),
                },
            );
        }
    }
    for (i, f) in files.iter().enumerate() {
        for (name, items) in &f.extend_lists {
            let names: Vec<&String> = lists.keys().collect();
            let hint = unknown_list_hint(name.get_ref(), &names);
            match lists.get_mut(name.get_ref()) {
                Some(def) => def.items.extend(raw_items(i, items)),
                None => {
                    return Err(cx.err(
                        &loc(i, name),
                        ErrorKind::UnknownList,
                        format!(
                            "[extend_lists] names `{}`, which no [lists] defines",
                            name.get_ref()
                        ),
                        Some(hint),
                    ))
                }
            }
        }
    }
    let expanded = expand_all_lists(&cx, &lists)?;

    // 4. Command-line syntax.
    let mut value_options: HashMap<String, Vec<String>> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        for (prog, cli) in &f.cli {
            let entry = value_options.entry(prog.get_ref().clone()).or_default();
            for o in expand(&cx, &expanded, i, &cli.value_options)? {
                if !o.value.starts_with('-') || o.value.len() < 2 {
                    return Err(cx.err(
                        &o.loc,
                        ErrorKind::Invalid,
                        format!("value option `{}` must start with `-`", o.value),
                        Some("list options such as \"--context\" or \"-n\"".to_owned()),
                    ));
                }
                if !entry.contains(&o.value) {
                    entry.push(o.value);
                }
            }
        }
    }

    // 5. Scope classification.
    let mut protected = Vec::new();
    let mut protected_except = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(s) = &f.scopes {
            protected.extend(expand(&cx, &expanded, i, &s.protected)?);
            protected_except.extend(expand(&cx, &expanded, i, &s.protected_except)?);
        }
    }
    let protected = compile_paths(&cx, &protected)?;
    let protected_except = compile_paths(&cx, &protected_except)?;
    let mut sensitive = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(s) = &f.scopes {
            sensitive.extend(expand(&cx, &expanded, i, &s.sensitive)?);
        }
    }
    compile_paths(&cx, &sensitive)?;
    for item in &sensitive {
        check_sensitive(&cx, item)?;
    }
    let sensitive = sensitive.into_iter().map(|i| i.value).collect();

    // 6. Rules.
    let mut rules = Vec::new();
    let mut ids: HashMap<String, Loc> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        for raw in &f.rules {
            let id_loc = loc(i, &raw.get_ref().id);
            let id = raw.get_ref().id.get_ref();
            if let Some(prev) = ids.get(id) {
                return Err(cx.err(
                    &id_loc,
                    ErrorKind::DuplicateId,
                    format!("duplicate rule id `{id}`"),
                    Some(format!(
                        "first defined at {}; give each rule a unique id",
                        cx.place(prev)
                    )),
                ));
            }
            ids.insert(id.clone(), id_loc);
            rules.push(compile_rule(&cx, &expanded, i, raw)?);
        }
    }

    // 7. Disabled rules.
    for (i, f) in files.iter().enumerate() {
        let Some(disable) = &f.disable else { continue };
        for d in disable.get_ref() {
            let id = d.get_ref();
            let before = rules.len();
            rules.retain(|r| &r.id != id);
            if rules.len() == before {
                let all: Vec<&String> = ids.keys().collect();
                let hint = if id.starts_with("builtin.") {
                    "built-in rules cannot be disabled".to_owned()
                } else {
                    match nearest(id, &all) {
                        Some(n) => format!("did you mean `{n}`?"),
                        None => "`abm policy show` lists the rule ids".to_owned(),
                    }
                };
                return Err(cx.err(
                    &loc(i, d),
                    ErrorKind::UnknownRule,
                    format!("`disable` names rule `{id}`, which is not loaded"),
                    Some(hint),
                ));
            }
        }
    }

    // 8. Precedence: higher priority first, then load order.
    rules.sort_by_key(|r| std::cmp::Reverse(r.priority));

    Ok(Compiled {
        rules,
        value_options,
        protected,
        protected_except,
        sensitive,
    })
}

/// A sensitive pattern is resolved to files when a run starts, so it must
/// say where: under `${home}`, `${workspace}`, `~/` or absolute, with no
/// `.` or `..` component.
fn check_sensitive(cx: &Ctx<'_>, item: &Item) -> Result<(), PolicyError> {
    let v = item.value.as_str();
    let anchored = ["${home}/", "${workspace}/", "~/", "/"]
        .iter()
        .any(|p| v.starts_with(p));
    let dotted = v.split('/').any(|c| c == "." || c == "..");
    if anchored && !dotted {
        return Ok(());
    }
    let hint = if dotted {
        "`.` and `..` components never match: write the resolved path"
    } else {
        "anchor it: \"${workspace}/...\", \"${home}/...\", \"~/...\" or an absolute path"
    };
    Err(cx.err(
        &item.loc,
        ErrorKind::Invalid,
        format!("sensitive pattern `{v}` is not anchored"),
        Some(hint.to_owned()),
    ))
}

fn raw_items(file: usize, items: &SList) -> Vec<Item> {
    items
        .get_ref()
        .iter()
        .map(|s| Item {
            value: s.get_ref().clone(),
            loc: loc(file, s),
        })
        .collect()
}

fn check_list_name(cx: &Ctx<'_>, file: usize, name: &SStr) -> Result<(), PolicyError> {
    let n = name.get_ref();
    let ok = !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(cx.err(
            &loc(file, name),
            ErrorKind::Invalid,
            format!("bad list name `{n}`"),
            Some("list names use letters, digits, `_`, `-` and `.`".to_owned()),
        ))
    }
}

fn unknown_list_hint(name: &str, names: &[&String]) -> String {
    match nearest(name, names) {
        Some(n) => format!("did you mean `@{n}`?"),
        None if names.is_empty() => "define it under [lists]".to_owned(),
        None => format!(
            "define it under [lists]; defined lists: {}",
            names
                .iter()
                .map(|n| format!("@{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn expand_all_lists(
    cx: &Ctx<'_>,
    lists: &BTreeMap<String, ListDef>,
) -> Result<HashMap<String, Vec<Item>>, PolicyError> {
    fn go(
        cx: &Ctx<'_>,
        lists: &BTreeMap<String, ListDef>,
        name: &str,
        stack: &mut Vec<String>,
        done: &mut HashMap<String, Vec<Item>>,
    ) -> Result<Vec<Item>, PolicyError> {
        if let Some(v) = done.get(name) {
            return Ok(v.clone());
        }
        stack.push(name.to_owned());
        let mut out = Vec::new();
        for item in &lists[name].items {
            match item.value.strip_prefix('@') {
                Some(r) => {
                    if stack.iter().any(|s| s == r) {
                        return Err(cx.err(
                            &item.loc,
                            ErrorKind::UnknownList,
                            format!("list `{name}` includes itself through `@{r}`"),
                            Some(format!("remove the cycle: {} -> {r}", stack.join(" -> "))),
                        ));
                    }
                    if !lists.contains_key(r) {
                        let names: Vec<&String> = lists.keys().collect();
                        return Err(cx.err(
                            &item.loc,
                            ErrorKind::UnknownList,
                            format!("unknown list `@{r}`"),
                            Some(unknown_list_hint(r, &names)),
                        ));
                    }
                    out.extend(go(cx, lists, r, stack, done)?);
                }
                None => out.push(item.clone()),
            }
        }
        stack.pop();
        done.insert(name.to_owned(), out.clone());
        Ok(out)
    }
    let mut done = HashMap::new();
    for name in lists.keys() {
        go(cx, lists, name, &mut Vec::new(), &mut done)?;
    }
    Ok(done)
}

/// Expand `@list` references in a list of strings.
fn expand(
    cx: &Ctx<'_>,
    lists: &HashMap<String, Vec<Item>>,
    file: usize,
    items: &[SStr],
) -> Result<Vec<Item>, PolicyError> {
    let mut out = Vec::with_capacity(items.len());
    for s in items {
        out.extend(expand_one(cx, lists, loc(file, s), s.get_ref())?);
    }
    Ok(out)
}

fn expand_one(
    cx: &Ctx<'_>,
    lists: &HashMap<String, Vec<Item>>,
    at: Loc,
    value: &str,
) -> Result<Vec<Item>, PolicyError> {
    match value.strip_prefix('@') {
        Some(name) => match lists.get(name) {
            Some(items) => Ok(items.clone()),
            None => {
                let mut names: Vec<&String> = lists.keys().collect();
                names.sort();
                Err(cx.err(
                    &at,
                    ErrorKind::UnknownList,
                    format!("unknown list `@{name}`"),
                    Some(unknown_list_hint(name, &names)),
                ))
            }
        },
        None => Ok(vec![Item {
            value: value.to_owned(),
            loc: at,
        }]),
    }
}

pub(crate) fn compile_paths(cx: &Ctx<'_>, items: &[Item]) -> Result<PathGlobs, PolicyError> {
    let patterns: Vec<String> = items.iter().map(|i| i.value.clone()).collect();
    PathGlobs::compile(&patterns).map_err(|(idx, msg, hint)| {
        let item = &items[idx.min(items.len().saturating_sub(1))];
        cx.err(
            &item.loc,
            ErrorKind::BadGlob,
            format!("{msg} in `{}`", item.value),
            Some(hint),
        )
    })
}

fn check_rule_id(cx: &Ctx<'_>, file: usize, id: &SStr) -> Result<(), PolicyError> {
    let v = id.get_ref();
    let l = loc(file, id);
    let well_formed = v
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && v.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'_'
        });
    if !well_formed {
        return Err(cx.err(
            &l,
            ErrorKind::Invalid,
            format!("bad rule id `{v}`"),
            Some("rule ids use lower-case letters, digits, `.`, `-` and `_`, e.g. \"repo.force-push\"".to_owned()),
        ));
    }
    if v == "default" || (v.starts_with("builtin.") && !cx.builtin) {
        return Err(cx.err(
            &l,
            ErrorKind::Invalid,
            format!("rule id `{v}` is reserved"),
            Some(
                "`default` and `builtin.*` name the verdicts abm gives itself; pick another id"
                    .to_owned(),
            ),
        ));
    }
    Ok(())
}

fn compile_rule(
    cx: &Ctx<'_>,
    lists: &HashMap<String, Vec<Item>>,
    file: usize,
    raw: &Spanned<RawRule>,
) -> Result<Rule, PolicyError> {
    let r = raw.get_ref();
    check_rule_id(cx, file, &r.id)?;

    let reason = r.reason.get_ref().trim();
    if reason.is_empty() || reason.contains('\n') {
        return Err(cx.err(
            &loc(file, &r.reason),
            ErrorKind::Invalid,
            "`reason` must be one non-empty line",
            Some(
                "say in a few words what the action risks, e.g. \"rewrites published history\""
                    .to_owned(),
            ),
        ));
    }

    let priority = match &r.priority {
        None => 0,
        Some(p) => i32::try_from(*p.get_ref()).map_err(|_| {
            cx.err(
                &loc(file, p),
                ErrorKind::Invalid,
                format!("priority {} is out of range", p.get_ref()),
                Some("use a small whole number; higher runs first, the default is 0".to_owned()),
            )
        })?,
    };

    let mut tags = Vec::new();
    for t in &r.tags {
        if t.get_ref().trim().is_empty() {
            return Err(cx.err(
                &loc(file, t),
                ErrorKind::Invalid,
                "empty tag",
                Some("remove it or write a word".to_owned()),
            ));
        }
        tags.push(t.get_ref().clone());
    }

    // Conditions, in the order they are written: shorthands first.
    let mut conds: Vec<(Condition, Loc)> = Vec::new();
    let add = |field: Field,
               op: Operator,
               list: &Option<SList>,
               conds: &mut Vec<(Condition, Loc)>|
     -> Result<(), PolicyError> {
        if let Some(list) = list {
            let items = expand(cx, lists, file, list.get_ref())?;
            let l = loc(file, list);
            let values = items
                .into_iter()
                .map(|i| (Value::Text(i.value), i.loc))
                .collect();
            conds.push((build(cx, field, op, Vec::new(), values, &l)?, l));
        }
        Ok(())
    };
    add(Field::Path, Operator::Glob, &r.paths, &mut conds)?;
    add(Field::Path, Operator::NotGlob, &r.not_paths, &mut conds)?;
    add(Field::Program, Operator::Glob, &r.program, &mut conds)?;
    add(
        Field::Subcommand,
        Operator::Equal,
        &r.subcommand,
        &mut conds,
    )?;
    add(Field::Flag, Operator::Present, &r.flags, &mut conds)?;
    add(Field::Flag, Operator::Absent, &r.not_flags, &mut conds)?;
    add(Field::Arg, Operator::Glob, &r.args, &mut conds)?;
    for o in &r.options {
        let o_loc = loc(file, o);
        let names = expand(cx, lists, file, o.get_ref().names.get_ref())?;
        let values = expand(cx, lists, file, o.get_ref().values.get_ref())?
            .into_iter()
            .map(|i| (Value::Text(i.value), i.loc))
            .collect();
        let c = build(cx, Field::Option, Operator::Glob, names, values, &o_loc)?;
        conds.push((c, o_loc));
    }
    add(Field::Result, Operator::Equal, &r.result, &mut conds)?;

    for w in &r.when {
        let w_loc = loc(file, w);
        let w = w.get_ref();
        let field_name = w.field.get_ref();
        let field = Field::from_name(field_name).ok_or_else(|| {
            let all: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
            cx.err(
                &loc(file, &w.field),
                ErrorKind::BadMatcher,
                format!("unknown matcher field `{field_name}`"),
                Some(match nearest(field_name, &all) {
                    Some(n) => format!("did you mean `{n}`?"),
                    None => format!("fields: {}", all.join(", ")),
                }),
            )
        })?;
        let op_name = w.operator.get_ref();
        let allowed = Operator::allowed(field.kind());
        let operator = Operator::from_name(op_name).ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|o| o.name()).collect();
            cx.err(
                &loc(file, &w.operator),
                ErrorKind::BadMatcher,
                format!("unknown operator `{op_name}`"),
                Some(match nearest(op_name, &names) {
                    Some(n) => format!("did you mean `{n}`?"),
                    None => format!("operators for `{field}`: {}", names.join(", ")),
                }),
            )
        })?;
        if !allowed.contains(&operator) {
            let names: Vec<&str> = allowed.iter().map(|o| o.name()).collect();
            return Err(cx.err(
                &loc(file, &w.operator),
                ErrorKind::BadMatcher,
                format!("operator `{operator}` does not apply to field `{field}`"),
                Some(format!("operators for `{field}`: {}", names.join(", "))),
            ));
        }
        let names = match (&w.names, field) {
            (Some(n), Field::Option) => expand(cx, lists, file, n.get_ref())?,
            (None, Field::Option) => {
                return Err(cx.err(
                    &w_loc,
                    ErrorKind::BadMatcher,
                    "a matcher on `option` needs `names`",
                    Some("add names = [\"--context\", \"-n\"]".to_owned()),
                ))
            }
            (Some(n), _) => {
                return Err(cx.err(
                    &loc(file, n),
                    ErrorKind::BadMatcher,
                    format!("`names` only applies to field `option`, not `{field}`"),
                    Some("remove `names`".to_owned()),
                ))
            }
            (None, _) => Vec::new(),
        };
        let mut values = Vec::new();
        for v in w.values.get_ref() {
            let v_loc = loc(file, v);
            match v.get_ref() {
                toml::Value::String(s) => {
                    for i in expand_one(cx, lists, v_loc, s)? {
                        values.push((Value::Text(i.value), i.loc));
                    }
                }
                toml::Value::Integer(n) => values.push((Value::Int(*n), v_loc)),
                other => {
                    return Err(cx.err(
                        &v_loc,
                        ErrorKind::Type,
                        format!(
                            "matcher values must be strings or integers, not {}",
                            other.type_str()
                        ),
                        Some("quote text values; write numbers bare (0o755 for modes)".to_owned()),
                    ))
                }
            }
        }
        let v_loc = loc(file, &w.values);
        let c = build(cx, field, operator, names, values, &v_loc)?;
        conds.push((c, w_loc));
    }

    // Operations.
    let exec_matcher = conds.iter().find(|(c, _)| c.field.exec_only());
    let ops: Vec<Op> = match &r.ops {
        Some(list) => {
            let mut ops = Vec::new();
            if list.get_ref().is_empty() {
                return Err(cx.err(
                    &loc(file, list),
                    ErrorKind::Invalid,
                    "`ops` is empty, so the rule could never match",
                    Some(
                        "name operations, e.g. ops = [\"unlink\", \"rmdir\"], or leave `ops` out"
                            .to_owned(),
                    ),
                ));
            }
            for o in list.get_ref() {
                let name = o.get_ref();
                let op = Op::from_name(name).ok_or_else(|| {
                    let all: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
                    cx.err(
                        &loc(file, o),
                        ErrorKind::UnknownOp,
                        format!("unknown operation `{name}`"),
                        Some(match nearest(name, &all) {
                            Some(n) => {
                                format!("did you mean `{n}`? operations: {}", all.join(", "))
                            }
                            None => format!("operations: {}", all.join(", ")),
                        }),
                    )
                })?;
                if !ops.contains(&op) {
                    ops.push(op);
                }
            }
            if let Some((c, l)) = exec_matcher {
                if ops != [Op::Exec] {
                    return Err(cx.err(
                        l,
                        ErrorKind::BadMatcher,
                        format!(
                            "`{}` only applies to exec, but the rule's ops are not just [\"exec\"]",
                            c.field
                        ),
                        Some("split the rule in two, or set ops = [\"exec\"]".to_owned()),
                    ));
                }
            }
            ops
        }
        None if exec_matcher.is_some() => vec![Op::Exec],
        None => FILE_OPS.to_vec(),
    };
    let op_mask = ops.iter().fold(0u32, |m, op| m | op_bit(*op));
    let conditions: Vec<Condition> = conds.into_iter().map(|(c, _)| c).collect();
    let mut eval_order: Vec<usize> = (0..conditions.len()).collect();
    eval_order.sort_by_key(|&i| conditions[i].cost());

    let treatment = *r.treatment.get_ref();
    let s = &cx.sources[file];
    let (line, col) = error::line_col(&s.text, raw.span().start);
    Ok(Rule {
        id: r.id.get_ref().clone(),
        reason: reason.to_owned(),
        ops,
        treatment,
        scope: r.scope,
        irreversibility: r.irreversibility,
        severity: r.severity.unwrap_or(Severity::for_treatment(treatment)),
        tags,
        priority,
        origin: format!("{}:{line}:{col}", s.origin),
        conditions,
        op_mask,
        eval_order,
    })
}

pub(crate) fn op_bit(op: Op) -> u32 {
    1u32 << (Op::ALL.iter().position(|o| *o == op).unwrap_or(31) as u32)
}
