//! Compiled matchers: the closed set of fields and operators a rule can test,
//! and the per-action view they are tested against.
//!
//! Everything that can be compiled is compiled at load time (glob sets,
//! regex sets, flag specs), so testing a condition does not allocate.

use std::fmt;

use globset::{GlobMatcher, GlobSet, GlobSetBuilder};
use regex::RegexSet;

use crate::record::Op;

pub use super::paths::Root;
pub(crate) use super::paths::{text_glob, GlobError, Hits, PathGlobs, PathIndex, PathTest, Roots};

/// What a condition looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The action's path; for `rename`, the source or the destination.
    Path,
    /// The path the action takes away: the rename source; the path of
    /// other operations.
    Source,
    /// The path the action writes: the rename destination; the path of
    /// other operations.
    Dest,
    /// exec: the caller's working directory.
    Cwd,
    /// exec: base name of the executable or of argv[0].
    Program,
    /// Executable of the acting process.
    Exe,
    /// Thread name of the acting process.
    Comm,
    /// Name of the watch target the process belongs to.
    Target,
    /// exec: any argument after argv[0].
    Argv,
    /// exec: any positional argument (not an option or an option's value).
    Arg,
    /// exec: the leading positional arguments (`push`, `s3 rm`).
    Subcommand,
    /// exec: options present on the command line (`--force`, `-rf`).
    Flag,
    /// exec: the value of a named option (`--context prod`).
    Option,
    /// Symbolic errno of a failed call (`EACCES`).
    Errno,
    /// Symbolic open/rename/unlink flags (`O_TRUNC`, `AT_REMOVEDIR`).
    OpenFlags,
    Uid,
    Gid,
    CgroupId,
    /// chmod mode, or the mode of a creating open.
    Mode,
    /// Outcome of the call: `success`, `failure` or `unknown`.
    Result,
    /// Measured recoverability of what the call destroys: `reversible`,
    /// `recoverable`, `irreversible`, `unmeasured`.
    Recovery,
    /// Where the object is: `workspace`, `scratch`, `shared`, `protected`.
    Location,
    /// What the call destroys: `tracked`, `modified`, `untracked`,
    /// `git_internal`, `build_output`, `database`, `credential`, ...
    Object,
    /// Base name of the program of the action the record belongs to.
    ActionProgram,
    /// Any argument (after argv[0]) of the action's command line.
    ActionArgv,
    /// Blast radius of the whole action: files it removes or overwrites.
    BlastFiles,
    /// ... of which irreversible.
    BlastIrreversible,
    /// ... untracked files.
    BlastUntracked,
    /// ... tracked files modified since the index.
    BlastModified,
    /// ... `.git` internals removed outside git.
    BlastGitInternal,
    /// ... irreversible objects outside the workspace.
    BlastOutside,
    /// `xattr` records: the extended attribute's name.
    Xattr,
}

/// The kinds of values fields hold; each kind allows a fixed set of operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Path,
    Text,
    Number,
    Subcommand,
    Flag,
    Option,
    Result,
}

impl Field {
    pub const ALL: [Field; 32] = [
        Field::Path,
        Field::Source,
        Field::Dest,
        Field::Cwd,
        Field::Program,
        Field::Exe,
        Field::Comm,
        Field::Target,
        Field::Argv,
        Field::Arg,
        Field::Subcommand,
        Field::Flag,
        Field::Option,
        Field::Errno,
        Field::OpenFlags,
        Field::Uid,
        Field::Gid,
        Field::CgroupId,
        Field::Mode,
        Field::Result,
        Field::Recovery,
        Field::Location,
        Field::Object,
        Field::ActionProgram,
        Field::ActionArgv,
        Field::BlastFiles,
        Field::BlastIrreversible,
        Field::BlastUntracked,
        Field::BlastModified,
        Field::BlastGitInternal,
        Field::BlastOutside,
        Field::Xattr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Path => "path",
            Field::Source => "source",
            Field::Dest => "dest",
            Field::Cwd => "cwd",
            Field::Program => "program",
            Field::Exe => "exe",
            Field::Comm => "comm",
            Field::Target => "target",
            Field::Argv => "argv",
            Field::Arg => "arg",
            Field::Subcommand => "subcommand",
            Field::Flag => "flag",
            Field::Option => "option",
            Field::Errno => "errno",
            Field::OpenFlags => "open_flags",
            Field::Uid => "uid",
            Field::Gid => "gid",
            Field::CgroupId => "cgroup_id",
            Field::Mode => "mode",
            Field::Result => "result",
            Field::Recovery => "recovery",
            Field::Location => "location",
            Field::Object => "object",
            Field::ActionProgram => "action_program",
            Field::ActionArgv => "action_argv",
            Field::BlastFiles => "blast_files",
            Field::BlastIrreversible => "blast_irreversible",
            Field::BlastUntracked => "blast_untracked",
            Field::BlastModified => "blast_modified",
            Field::BlastGitInternal => "blast_git_internal",
            Field::BlastOutside => "blast_outside",
            Field::Xattr => "xattr",
        }
    }

    pub fn from_name(s: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == s)
    }

    pub fn kind(self) -> FieldKind {
        match self {
            Field::Path | Field::Source | Field::Dest | Field::Cwd => FieldKind::Path,
            Field::Program
            | Field::Exe
            | Field::Comm
            | Field::Target
            | Field::Argv
            | Field::Arg
            | Field::Errno
            | Field::OpenFlags
            | Field::Recovery
            | Field::Location
            | Field::Object
            | Field::ActionProgram
            | Field::Xattr
            | Field::ActionArgv => FieldKind::Text,
            Field::Uid
            | Field::Gid
            | Field::CgroupId
            | Field::Mode
            | Field::BlastFiles
            | Field::BlastIrreversible
            | Field::BlastUntracked
            | Field::BlastModified
            | Field::BlastGitInternal
            | Field::BlastOutside => FieldKind::Number,
            Field::Subcommand => FieldKind::Subcommand,
            Field::Flag => FieldKind::Flag,
            Field::Option => FieldKind::Option,
            Field::Result => FieldKind::Result,
        }
    }

    /// Fields that only exist for `exec` actions.
    pub fn exec_only(self) -> bool {
        matches!(
            self,
            Field::Cwd
                | Field::Program
                | Field::Argv
                | Field::Arg
                | Field::Subcommand
                | Field::Flag
                | Field::Option
        )
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The closed set of comparison operators. Every `not_*` operator holds
/// exactly when its positive form does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    Equal,
    NotEqual,
    Prefix,
    NotPrefix,
    Suffix,
    NotSuffix,
    Glob,
    NotGlob,
    Regex,
    NotRegex,
    Lt,
    Gt,
    Mask,
    Present,
    Absent,
}

impl Operator {
    pub const ALL: [Operator; 15] = [
        Operator::Equal,
        Operator::NotEqual,
        Operator::Prefix,
        Operator::NotPrefix,
        Operator::Suffix,
        Operator::NotSuffix,
        Operator::Glob,
        Operator::NotGlob,
        Operator::Regex,
        Operator::NotRegex,
        Operator::Lt,
        Operator::Gt,
        Operator::Mask,
        Operator::Present,
        Operator::Absent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operator::Equal => "equal",
            Operator::NotEqual => "not_equal",
            Operator::Prefix => "prefix",
            Operator::NotPrefix => "not_prefix",
            Operator::Suffix => "suffix",
            Operator::NotSuffix => "not_suffix",
            Operator::Glob => "glob",
            Operator::NotGlob => "not_glob",
            Operator::Regex => "regex",
            Operator::NotRegex => "not_regex",
            Operator::Lt => "lt",
            Operator::Gt => "gt",
            Operator::Mask => "mask",
            Operator::Present => "present",
            Operator::Absent => "absent",
        }
    }

    pub fn from_name(s: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.name() == s)
    }

    pub fn is_negated(self) -> bool {
        matches!(
            self,
            Operator::NotEqual
                | Operator::NotPrefix
                | Operator::NotSuffix
                | Operator::NotGlob
                | Operator::NotRegex
                | Operator::Absent
        )
    }

    /// The positive form of a negated operator (itself otherwise).
    pub fn positive(self) -> Operator {
        match self {
            Operator::NotEqual => Operator::Equal,
            Operator::NotPrefix => Operator::Prefix,
            Operator::NotSuffix => Operator::Suffix,
            Operator::NotGlob => Operator::Glob,
            Operator::NotRegex => Operator::Regex,
            Operator::Absent => Operator::Present,
            o => o,
        }
    }

    /// Operators allowed on a kind of field.
    pub fn allowed(kind: FieldKind) -> &'static [Operator] {
        use Operator::*;
        match kind {
            FieldKind::Path => &[Glob, NotGlob, Regex, NotRegex],
            FieldKind::Text => &[
                Equal, NotEqual, Prefix, NotPrefix, Suffix, NotSuffix, Glob, NotGlob, Regex,
                NotRegex,
            ],
            FieldKind::Number => &[Equal, NotEqual, Lt, Gt, Mask],
            FieldKind::Subcommand => &[Equal, NotEqual],
            FieldKind::Flag => &[Present, Absent],
            FieldKind::Option => &[Glob, NotGlob],
            FieldKind::Result => &[Equal, NotEqual],
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One test of a rule. All conditions of a rule must hold; within one
/// condition, values are alternatives (any may match).
#[derive(Clone, Debug)]
pub struct Condition {
    pub field: Field,
    pub operator: Operator,
    /// Option names (`field = "option"` only).
    pub names: Vec<String>,
    /// The values, with `@list` references expanded (numbers in decimal).
    pub values: Vec<String>,
    pub(crate) test: Test,
}

impl Condition {
    /// Relative cost of testing the condition, to test cheap ones first.
    pub(crate) fn cost(&self) -> u8 {
        match &self.test {
            Test::Result(_) | Test::Number(_) | Test::Flags(_) => 0,
            Test::Text(TextTest::Glob(g)) if g.set.is_none() => 0,
            Test::Text(TextTest::Equal(_) | TextTest::Prefix(_) | TextTest::Suffix(_)) => 0,
            Test::Subcommand(_) => 1,
            Test::Text(_) | Test::Option(_) => 2,
            Test::Path(_) => 3,
        }
    }

    /// Whether the condition holds for an action.
    pub(crate) fn matches(&self, v: &View<'_>) -> bool {
        self.positive(v) != self.operator.is_negated()
    }

    fn positive(&self, v: &View<'_>) -> bool {
        match &self.test {
            Test::Path(t) => {
                // Subjects: the four paths of the view, then its cwd.
                let subjects = match self.field {
                    Field::Path => 0..4,
                    Field::Source => 0..2,
                    Field::Dest if matches!(v.op, Op::Rename | Op::Link | Op::Symlink) => 2..4,
                    Field::Dest => 0..2,
                    Field::Cwd => 4..5,
                    _ => 0..0,
                };
                subjects.into_iter().any(|i| v.path_matches(i, t))
            }
            Test::Text(t) => match self.field {
                Field::Program => v
                    .exec
                    .as_ref()
                    .is_some_and(|e| e.programs.iter().flatten().any(|p| t.is_match(p))),
                Field::Exe => v.action.exe.as_deref().is_some_and(|s| t.is_match(s)),
                Field::Comm => t.is_match(&v.action.comm),
                Field::Target => v.action.target.as_deref().is_some_and(|s| t.is_match(s)),
                Field::Argv => v
                    .exec
                    .as_ref()
                    .is_some_and(|e| e.args.iter().any(|a| t.is_match(a))),
                Field::Arg => v
                    .exec
                    .as_ref()
                    .is_some_and(|e| e.positionals().any(|a| t.is_match(a))),
                Field::Errno => v.action.errno.as_deref().is_some_and(|s| t.is_match(s)),
                Field::OpenFlags => v.action.flag_names.iter().any(|s| t.is_match(s)),
                Field::Xattr => v.action.xattr.as_deref().is_some_and(|s| t.is_match(s)),
                Field::Recovery | Field::Location | Field::Object => {
                    v.action.measured.as_ref().is_some_and(|m| {
                        t.is_match(match self.field {
                            Field::Recovery => m.recovery.name(),
                            Field::Location => m.location.name(),
                            _ => m.object.name(),
                        })
                    })
                }
                Field::ActionProgram => v
                    .facts
                    .and_then(|f| f.action_argv.as_ref()?.first())
                    .is_some_and(|p| t.is_match(base_name(p))),
                Field::ActionArgv => v
                    .facts
                    .and_then(|f| f.action_argv.as_ref())
                    .is_some_and(|a| a.iter().skip(1).any(|s| t.is_match(s))),
                _ => false,
            },
            Test::Number(t) => {
                let a = v.action;
                let n = match self.field {
                    Field::Uid => Some(i64::from(a.uid)),
                    Field::Gid => Some(i64::from(a.gid)),
                    Field::CgroupId => i64::try_from(a.cgroup_id).ok(),
                    Field::Mode => a.mode.map(i64::from),
                    Field::BlastFiles => v.facts.map(|f| f.blast.files as i64),
                    Field::BlastIrreversible => v.facts.map(|f| f.blast.irreversible as i64),
                    Field::BlastUntracked => v.facts.map(|f| f.blast.untracked as i64),
                    Field::BlastModified => v.facts.map(|f| f.blast.modified as i64),
                    Field::BlastGitInternal => v.facts.map(|f| f.blast.git_internal as i64),
                    Field::BlastOutside => v.facts.map(|f| f.blast.outside as i64),
                    _ => None,
                };
                n.is_some_and(|n| t.is_match(n))
            }
            Test::Subcommand(alts) => v.exec.as_ref().is_some_and(|e| {
                alts.iter().any(|words| {
                    let mut pos = e.positionals();
                    words
                        .iter()
                        .all(|w| pos.next().is_some_and(|a| w.is_match(a)))
                })
            }),
            Test::Flags(specs) => v
                .exec
                .as_ref()
                .is_some_and(|e| specs.iter().any(|s| s.is_present(e))),
            Test::Option(values) => v
                .exec
                .as_ref()
                .is_some_and(|e| e.option_values(&self.names).any(|val| values.is_match(val))),
            Test::Result(mask) => {
                let bit = match v.action.result {
                    None => RESULT_UNKNOWN,
                    Some(0) => RESULT_SUCCESS,
                    Some(_) => RESULT_FAILURE,
                };
                mask & bit != 0
            }
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.field)?;
        if !self.names.is_empty() {
            write!(f, " {}", self.names.join("|"))?;
        }
        write!(f, " {} [", self.operator)?;
        const SHOWN: usize = 6;
        for (i, v) in self.values.iter().take(SHOWN).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            // Long alternations would swamp the line; clip them.
            const WIDTH: usize = 48;
            if v.chars().count() > WIDTH {
                let head: String = v.chars().take(WIDTH - 1).collect();
                write!(f, "{head}\u{2026}")?;
            } else {
                f.write_str(v)?;
            }
        }
        if self.values.len() > SHOWN {
            write!(f, ", ... +{} more", self.values.len() - SHOWN)?;
        }
        f.write_str("]")
    }
}

pub(crate) const RESULT_SUCCESS: u8 = 1;
pub(crate) const RESULT_FAILURE: u8 = 2;
pub(crate) const RESULT_UNKNOWN: u8 = 4;

#[derive(Clone, Debug)]
pub(crate) enum Test {
    Path(PathTest),
    Text(TextTest),
    Number(NumberTest),
    Subcommand(Vec<Vec<Word>>),
    Flags(Vec<FlagSpec>),
    Option(TextGlobs),
    Result(u8),
}

/// One word of a subcommand: literal, or a glob.
#[derive(Clone, Debug)]
pub(crate) enum Word {
    Literal(String),
    Glob(GlobMatcher),
}

impl Word {
    pub fn new(w: &str) -> Result<Word, GlobError> {
        if is_literal(w) {
            Ok(Word::Literal(w.to_owned()))
        } else {
            Ok(Word::Glob(text_glob(w)?.compile_matcher()))
        }
    }

    fn is_match(&self, s: &str) -> bool {
        match self {
            Word::Literal(l) => l == s,
            Word::Glob(g) => g.is_match(s),
        }
    }
}

/// Whether a glob pattern has no special characters (matching it is a
/// string comparison).
pub(crate) fn is_literal(p: &str) -> bool {
    !p.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Text globs, with the literal ones split out: most program names and
/// list items are plain words, and comparing strings is much cheaper than
/// running a glob set.
#[derive(Clone, Debug)]
pub(crate) struct TextGlobs {
    literals: Vec<String>,
    set: Option<GlobSet>,
}

impl TextGlobs {
    pub fn compile(patterns: &[String]) -> Result<TextGlobs, (usize, GlobError)> {
        let mut literals = Vec::new();
        let mut b = GlobSetBuilder::new();
        let mut n = 0;
        for (i, p) in patterns.iter().enumerate() {
            if is_literal(p) {
                literals.push(p.clone());
            } else {
                b.add(text_glob(p).map_err(|e| (i, e))?);
                n += 1;
            }
        }
        let set = if n == 0 {
            None
        } else {
            Some(b.build().map_err(|e| (0, e.into()))?)
        };
        Ok(TextGlobs { literals, set })
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.literals.iter().any(|l| l == s) || self.set.as_ref().is_some_and(|g| g.is_match(s))
    }

    /// The patterns, when none is a glob: the test is then membership.
    pub fn only_literals(&self) -> Option<&[String]> {
        self.set.is_none().then_some(self.literals.as_slice())
    }
}

// ---------------------------------------------------------------------------
// Text and numbers

#[derive(Clone, Debug)]
pub(crate) enum TextTest {
    Equal(Vec<String>),
    Prefix(Vec<String>),
    Suffix(Vec<String>),
    Glob(TextGlobs),
    Regex(RegexSet),
}

impl TextTest {
    pub fn is_match(&self, s: &str) -> bool {
        match self {
            TextTest::Equal(v) => v.iter().any(|x| x == s),
            TextTest::Prefix(v) => v.iter().any(|x| s.starts_with(x.as_str())),
            TextTest::Suffix(v) => v.iter().any(|x| s.ends_with(x.as_str())),
            TextTest::Glob(g) => g.is_match(s),
            TextTest::Regex(r) => r.is_match(s),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum NumberTest {
    Equal(Vec<i64>),
    Lt(i64),
    Gt(i64),
    /// Any of the bits of any value is set.
    Mask(Vec<i64>),
}

impl NumberTest {
    fn is_match(&self, n: i64) -> bool {
        match self {
            NumberTest::Equal(v) => v.contains(&n),
            NumberTest::Lt(x) => n < *x,
            NumberTest::Gt(x) => n > *x,
            NumberTest::Mask(v) => v.iter().any(|m| n & m != 0),
        }
    }
}

// ---------------------------------------------------------------------------
// Command lines

/// A flag a rule looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FlagSpec {
    /// `--force`, `-auto-approve`, `-destroy`: the argument itself, or with
    /// an attached `=value`.
    Word(String),
    /// `-f`, `-rf`, `-xdf` (one to three letters): every letter is set in
    /// some short-option cluster (`-f`, `-fr`, `-r -f`).
    Letters(u128),
    /// `--delete --force`: all of the parts are present.
    All(Vec<FlagSpec>),
}

/// A flag in a policy that is not written as on a command line.
#[derive(Debug, thiserror::Error)]
#[error("flag `{0}` must start with `-` or `--` (positional words go in `args` or `subcommand`)")]
pub(crate) struct BadFlag(String);

impl FlagSpec {
    pub fn parse(spec: &str) -> Result<FlagSpec, BadFlag> {
        let spec = spec.trim();
        if spec.contains(char::is_whitespace) {
            let parts = spec
                .split_whitespace()
                .map(FlagSpec::parse)
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(FlagSpec::All(parts));
        }
        if !spec.starts_with('-') || spec == "-" || spec == "--" {
            return Err(BadFlag(spec.to_owned()));
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
            return Ok(FlagSpec::Letters(mask));
        }
        Ok(FlagSpec::Word(spec.to_owned()))
    }

    fn is_present(&self, e: &ExecView<'_>) -> bool {
        match self {
            FlagSpec::Word(w) => e.option_args().any(|a| {
                a.strip_prefix(w.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
            }),
            FlagSpec::Letters(mask) => e.short_letters & mask == *mask,
            FlagSpec::All(parts) => parts.iter().all(|p| p.is_present(e)),
        }
    }
}

pub(crate) use super::view::{base_name, ExecView, View};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::paths::split_root;
    use crate::record::Action;

    fn exec(argv: &[&str], vo: &[&str]) -> (Action, Vec<String>) {
        let a = Action {
            op: Some(Op::Exec),
            path: Some(format!("/usr/bin/{}", argv[0])),
            argv: Some(argv.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        (a, vo.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn positionals_skip_options_and_their_values() {
        let (a, vo) = exec(
            &[
                "kubectl",
                "--context",
                "prod",
                "-n",
                "web",
                "delete",
                "--force",
                "pod",
                "x",
                "--",
                "-y",
            ],
            &["--context", "-n"],
        );
        let e = ExecView::new(&a, |_| &vo);
        assert_eq!(
            e.positionals().collect::<Vec<_>>(),
            ["delete", "pod", "x", "-y"]
        );
    }

    #[test]
    fn flag_specs_match_words_and_letter_clusters() {
        let (a, vo) = exec(&["rm", "-fR", "--no-preserve-root=x", "/"], &[]);
        let e = ExecView::new(&a, |_| &vo);
        let p = |s: &str| FlagSpec::parse(s).unwrap().is_present(&e);
        assert!(p("-f"));
        assert!(p("-Rf"));
        assert!(p("-fR"));
        assert!(!p("-rf"), "letters are case-sensitive");
        assert!(p("--no-preserve-root"));
        assert!(!p("--no-preserve"), "words match whole options only");
        assert!(p("-f --no-preserve-root"));
        assert!(!p("-f --force"));
    }

    #[test]
    fn glued_short_values_do_not_count_as_flags() {
        let (a, vo) = exec(&["kubectl", "-nfoo", "delete", "pod"], &["-n"]);
        let e = ExecView::new(&a, |_| &vo);
        assert!(!FlagSpec::parse("-f").unwrap().is_present(&e));
        let names = vec!["-n".to_string()];
        assert_eq!(e.option_values(&names).collect::<Vec<_>>(), ["foo"]);
    }

    #[test]
    fn option_values_in_all_spellings() {
        let names = vec!["--context".to_string(), "-n".to_string()];
        for argv in [
            &["kubectl", "--context", "prod", "get"][..],
            &["kubectl", "--context=prod", "get"],
            &["kubectl", "-n", "prod", "get"],
            &["kubectl", "-nprod", "get"],
            &["kubectl", "-n=prod", "get"],
        ] {
            let (a, vo) = exec(argv, &["--context", "-n"]);
            let e = ExecView::new(&a, |_| &vo);
            assert_eq!(
                e.option_values(&names).collect::<Vec<_>>(),
                ["prod"],
                "{argv:?}"
            );
        }
    }

    #[test]
    fn roots_anchor_globs() {
        let g = PathGlobs::compile(&[
            "${workspace}/.git/**".into(),
            "${workspace}".into(),
            "${trace}*".into(),
            "**/node_modules/**".into(),
        ])
        .unwrap();
        let ws = std::path::Path::new("/w/");
        let home = std::path::Path::new("/h");
        let trace = std::path::Path::new("/t/trace.jsonl");
        let roots = Roots::new(ws, home, Some(trace));
        assert!(g.is_match("/w/.git/objects/ab", &roots));
        assert!(g.is_match("/w", &roots));
        assert!(!g.is_match("/w2/.git/objects/ab", &roots));
        assert!(!g.is_match("/w/src/.git", &roots));
        assert!(g.is_match("/t/trace.jsonl", &roots));
        assert!(g.is_match("/t/trace.jsonl.tmp", &roots));
        assert!(g.is_match("/a/node_modules/x/y", &roots));
        // Without a workspace, workspace globs never match.
        let none = Roots::new(std::path::Path::new(""), home, None);
        assert!(!g.is_match("/w/.git/objects/ab", &none));
    }

    #[test]
    fn unanchored_and_unknown_roots_are_rejected() {
        assert!(split_root("src/**").unwrap_err().0.contains("not anchored"));
        assert_eq!(
            split_root("${tmp}/x").unwrap_err().0,
            "unknown root `${tmp}`"
        );
        assert!(split_root("${workspace}x").is_err());
        assert_eq!(
            split_root("${trace}.key").unwrap(),
            (Some(Root::Trace), ".key")
        );
    }
}
