//! Building one rule (file, exec or condition-only) from its TOML table.

use std::ops::Range;

use regex::Regex;
use toml::Spanned;

use super::{Ctx, Matcher, RawRule, RenameSide, Rule, SpecError, StrList, FILE_OPS, FORMAT_DOC};
use crate::oracle::condition::{self, Cond, InlineRuleError};
use crate::oracle::pattern::{PathSet, TextGlob};
use crate::record::Op;

impl Ctx<'_> {
    pub(super) fn rule(
        &self,
        raw: &Spanned<RawRule>,
        section: &str,
        default_name: Option<String>,
    ) -> Result<Rule, SpecError> {
        let span = raw.span();
        let r = raw.get_ref();
        let name = match (&r.name, default_name) {
            (Some(n), _) if n.get_ref().trim().is_empty() => {
                return Err(self.err(
                    n.span(),
                    format!("`{section}` entry has an empty `name`"),
                    Some("give it a short name; it appears in verdicts".into()),
                ))
            }
            (Some(n), _) => n.get_ref().clone(),
            (None, Some(d)) => d,
            (None, None) => {
                return Err(self.err(
                    span,
                    format!("`[[{section}]]` entry has no `name`"),
                    Some(format!(
                    "add `name = \"...\"`; it identifies the rule in verdicts (see {FORMAT_DOC})"
                )),
                ))
            }
        };

        let ops = match &r.ops {
            None => None,
            Some(v) => {
                let mut ops = Vec::new();
                for s in &v.get_ref().0 {
                    match Op::from_name(s) {
                        Some(op) if op.is_action() || op == Op::Read => ops.push(op),
                        _ => {
                            return Err(self.err(
                                v.span(),
                                format!("`ops`: unknown operation `{s}`"),
                                Some(
                                    "operations are unlink, rmdir, rename, chmod, chown, \
                                     truncate, write, exec and read (a read-only open of a \
                                     sensitive file)"
                                        .into(),
                                ),
                            ))
                        }
                    }
                }
                if ops.is_empty() {
                    return Err(self.err(
                        v.span(),
                        "`ops` is empty".into(),
                        Some("list at least one operation, or remove `ops` to match all".into()),
                    ));
                }
                Some((ops, v.span()))
            }
        };

        let exec_fields: Vec<(&str, Range<usize>)> = [
            ("program", r.program.as_ref().map(|v| v.span())),
            ("argv_regex", r.argv_regex.as_ref().map(|v| v.span())),
            ("argv_glob", r.argv_glob.as_ref().map(|v| v.span())),
            ("args_include", r.args_include.as_ref().map(|v| v.span())),
            ("args_exclude", r.args_exclude.as_ref().map(|v| v.span())),
            ("cwd", r.cwd.as_ref().map(|v| v.span())),
            ("objects", r.objects.as_ref().map(|v| v.span())),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect();
        let has_exec_op = ops.as_ref().is_some_and(|(o, _)| o.contains(&Op::Exec));
        let is_exec = !exec_fields.is_empty() || has_exec_op;

        let matcher = if is_exec {
            if let Some((o, s)) = &ops {
                if o.iter().any(|op| *op != Op::Exec) {
                    return Err(self.err(
                        s.clone(),
                        "a rule cannot match `exec` and file operations at once".into(),
                        Some(
                            "split it into two rules: one with `program`/`argv_*` for the \
                             command, one with `ops`/`paths` for the files"
                                .into(),
                        ),
                    ));
                }
            }
            if let Some(p) = &r.paths {
                return Err(self.err(
                    p.span(),
                    "`paths` cannot be combined with `program`, `argv_*`, `args_*` or `cwd`".into(),
                    Some(
                        "`paths` matches the files an operation acted on; to require that a \
                         command changed files, use `covers` with `require_effect = true`"
                            .into(),
                    ),
                ));
            }
            if let Some(s) = &r.side {
                return Err(self.err(s.span(), "`side` only applies to file rules".into(), None));
            }
            let argv_regex = match &r.argv_regex {
                None => None,
                Some(v) => Some(Regex::new(v.get_ref()).map_err(|e| {
                    self.err(
                        v.span(),
                        format!("`argv_regex`: invalid regular expression: {e}"),
                        Some(
                            "the regex is matched against the arguments after the program \
                             name, joined by single spaces; use a TOML literal string \
                             ('...') to avoid doubling backslashes"
                                .into(),
                        ),
                    )
                })?),
            };
            let argv_glob = match &r.argv_glob {
                None => None,
                Some(v) => Some(
                    TextGlob::parse(v.get_ref())
                        .map_err(|e| self.pat_err(v.span(), "argv_glob", e))?,
                ),
            };
            Matcher::Exec {
                program: self.text_globs("program", &r.program)?,
                argv_regex,
                argv_glob,
                args_include: self.text_globs("args_include", &r.args_include)?,
                args_exclude: self.text_globs("args_exclude", &r.args_exclude)?,
                cwd: self.paths("cwd", &r.cwd)?,
                objects: self.objects(&r.objects)?,
            }
        } else if r.paths.is_none() && ops.is_none() && r.when.is_some() {
            if let Some(c) = &r.covers {
                return Err(self.err(
                    c.span(),
                    format!("`{section}` rule `{name}` has `covers` but no matcher"),
                    Some(
                        "`covers` explains the changes of the process a matcher matched; add \
                         `paths`/`ops` or `program`/`args_*`, or remove `covers`"
                            .into(),
                    ),
                ));
            }
            Matcher::Condition
        } else {
            let paths = self.paths("paths", &r.paths)?;
            if r.paths.is_none() && ops.is_none() {
                return Err(self.err(
                    span,
                    format!("`{section}` rule `{name}` matches nothing"),
                    Some(
                        "give it `paths` (and optionally `ops`) for file operations, or \
                         `program`/`argv_regex`/`argv_glob`/`args_include` for commands"
                            .into(),
                    ),
                ));
            }
            if let Some(p) = &r.paths {
                if p.get_ref().0.is_empty() {
                    return Err(self.err(
                        p.span(),
                        "`paths` is empty".into(),
                        Some("list at least one path pattern".into()),
                    ));
                }
            }
            let side = match &r.side {
                None => RenameSide::Either,
                Some(s) => match s.get_ref().as_str() {
                    "either" => RenameSide::Either,
                    "source" => RenameSide::Source,
                    "destination" => RenameSide::Destination,
                    other => {
                        return Err(self.err(
                            s.span(),
                            format!("`side`: unknown value `{other}`"),
                            Some("use \"either\", \"source\" or \"destination\"".into()),
                        ))
                    }
                },
            };
            Matcher::Files {
                ops: ops.map(|(o, _)| o).unwrap_or_else(|| FILE_OPS.to_vec()),
                paths,
                side,
            }
        };

        let covers = self.paths("covers", &r.covers)?;
        let require_effect = match &r.require_effect {
            Some(v) if *v.get_ref() && covers.is_empty() => {
                return Err(self.err(
                    v.span(),
                    "`require_effect = true` needs `covers`".into(),
                    Some("list in `covers` the objects the command must change".into()),
                ))
            }
            Some(v) => *v.get_ref(),
            None => false,
        };
        let when = match &r.when {
            None => None,
            Some(w) => Some(self.condition(w)?),
        };
        Ok(Rule {
            name,
            description: r.description.clone(),
            matcher,
            covers,
            require_effect,
            when,
        })
    }

    fn objects(&self, v: &Option<Spanned<StrList>>) -> Result<PathSet, SpecError> {
        let set = self.paths("objects", v)?;
        if let Some(v) = v {
            if let Some(p) = v
                .get_ref()
                .0
                .iter()
                .find(|p| !crate::oracle::pattern::is_object(p.trim_start_matches('!')))
            {
                return Err(self.err(
                    v.span(),
                    format!("`objects`: `{p}` is not a command object pattern"),
                    Some(
                        "command objects look like `k8s://CONTEXT/NAMESPACE/KIND/NAME`, \
                         `tf://WORKSPACE/ADDRESS`, `s3://BUCKET/KEY`, `image://REGISTRY/REPO:TAG` \
                         or `git://REMOTE/REF` (see docs/oracle.md); files go in `paths`"
                            .into(),
                    ),
                ));
            }
        }
        Ok(set)
    }

    fn condition(&self, w: &Spanned<toml::Value>) -> Result<Cond, SpecError> {
        let inline = |v: &toml::Value| -> Result<Rule, InlineRuleError> {
            let text = match v {
                toml::Value::Table(t) => toml::to_string(t).map_err(InlineRuleError::Encode)?,
                _ => return Err(InlineRuleError::NotTable),
            };
            let raw: RawRule = toml::from_str(&text).map_err(InlineRuleError::Decode)?;
            let sub = Ctx {
                file: self.file,
                src: &text,
            };
            let raw = Spanned::new(0..text.len(), raw);
            sub.rule(&raw, "match", Some("match".into()))
                .map_err(|e| InlineRuleError::Rule {
                    message: e.message,
                    hint: e.hint,
                })
        };
        condition::parse(w.get_ref(), &inline)
            .map_err(|(m, h)| self.err(w.span(), format!("`when`: {m}"), Some(h)))
    }
}
