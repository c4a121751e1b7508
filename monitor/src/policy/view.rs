//! The per-action view conditions are tested against: an exec's command
//! line split once (positionals, options, option values, short-option
//! letters), and the action's fields as the matchers read them.

use super::matcher::*;
use crate::record::{Action, Op};

const ARG_POSITIONAL: u8 = 0;
const ARG_OPTION: u8 = 1;
const ARG_VALUE: u8 = 2;

/// An exec's command line, split once per evaluation.
#[derive(Debug)]
pub(crate) struct ExecView<'a> {
    /// argv[1..]
    pub args: &'a [String],
    /// Per argument: positional, option, or the value of the option before.
    kinds: Vec<u8>,
    /// Letters set in short-option clusters.
    pub(crate) short_letters: u128,
    /// Base names of the executable path and of argv[0].
    pub programs: [Option<&'a str>; 2],
}

pub(crate) fn base_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

impl<'a> ExecView<'a> {
    /// `value_options` looks up the options that take a separate value for
    /// a program name.
    pub fn new<'p>(action: &'a Action, value_options: impl Fn(&str) -> &'p [String]) -> Self
    where
        'p: 'a,
    {
        let argv: &'a [String] = action.argv.as_deref().unwrap_or(&[]);
        let args = argv.get(1..).unwrap_or(&[]);
        let from_path = action.path.as_deref().map(base_name);
        let from_argv = argv.first().map(|a| base_name(a));
        let programs = if from_path == from_argv {
            [from_path, None]
        } else {
            [from_path, from_argv]
        };
        let mut vo: &[String] = &[];
        for p in programs.iter().flatten() {
            let found = value_options(p);
            if !found.is_empty() {
                vo = found;
                break;
            }
        }
        let takes_value = |opt: &str| vo.iter().any(|o| o == opt);
        let mut kinds = vec![ARG_POSITIONAL; args.len()];
        let mut short_letters = 0u128;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" {
                // Everything after `--` is positional; mark the separator
                // itself as an option so it is neither.
                kinds[i] = ARG_OPTION;
                break;
            }
            if a.len() > 1 && a.starts_with('-') {
                kinds[i] = ARG_OPTION;
                if !a.starts_with("--") {
                    let body = &a.as_bytes()[1..];
                    if body.iter().all(u8::is_ascii_alphanumeric) {
                        for (j, &b) in body.iter().enumerate() {
                            short_letters |= 1u128 << b;
                            // `-nprod`: the rest is the value of `-n`.
                            if vo.iter().any(|o| o.len() == 2 && o.as_bytes()[1] == b)
                                && j + 1 < body.len()
                            {
                                break;
                            }
                        }
                    }
                }
                if !a.contains('=') && takes_value(a) && i + 1 < args.len() {
                    kinds[i + 1] = ARG_VALUE;
                    i += 1;
                }
            }
            i += 1;
        }
        ExecView {
            args,
            kinds,
            short_letters,
            programs,
        }
    }

    pub fn positionals(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.args
            .iter()
            .zip(&self.kinds)
            .filter(|(_, k)| **k == ARG_POSITIONAL)
            .map(|(a, _)| a.as_str())
    }

    pub(crate) fn option_args(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.args
            .iter()
            .zip(&self.kinds)
            .filter(|(a, k)| **k == ARG_OPTION && a.as_str() != "--")
            .map(|(a, _)| a.as_str())
    }

    /// Values given to any of `names`: `--name v`, `--name=v`, `-n v`, `-nv`.
    pub(crate) fn option_values<'s>(
        &'s self,
        names: &'s [String],
    ) -> impl Iterator<Item = &'a str> + 's {
        let end = self
            .args
            .iter()
            .position(|a| a == "--")
            .unwrap_or(self.args.len());
        (0..end).flat_map(move |i| {
            let a = self.args[i].as_str();
            names.iter().filter_map(move |n| {
                let rest = a.strip_prefix(n.as_str())?;
                if rest.is_empty() {
                    return self.args.get(i + 1).map(String::as_str);
                }
                if let Some(v) = rest.strip_prefix('=') {
                    return Some(v);
                }
                // Glued short option value: `-nprod`.
                let short = n.len() == 2 && !n.starts_with("--");
                short.then_some(rest)
            })
        })
    }
}

/// Everything a condition may look at, computed once per evaluation.
pub(crate) struct View<'a> {
    pub action: &'a Action,
    pub op: Op,
    /// source (host), source (container), dest (host), dest (container).
    pub paths: [Option<&'a str>; 4],
    pub cwd: Option<&'a str>,
    pub roots: Roots<'a>,
    pub exec: Option<ExecView<'a>>,
    /// What the action model knows about the record's action.
    pub facts: Option<&'a super::Facts>,
    /// The policy's merged path globs, and per subject (the four paths,
    /// then the working directory) the tests that match it, computed on
    /// first use.
    index: Option<&'a PathIndex>,
    hits: [std::cell::OnceCell<Hits>; 5],
}

impl<'a> View<'a> {
    pub fn new<'p>(
        action: &'a Action,
        op: Op,
        roots: Roots<'a>,
        value_options: impl Fn(&str) -> &'p [String],
    ) -> Self
    where
        'p: 'a,
    {
        let abs = |p: &'a Option<String>| p.as_deref().filter(|s| s.starts_with('/'));
        let source = action.path.as_deref().or_else(|| abs(&action.raw_path));
        let dest = action.path2.as_deref().or_else(|| abs(&action.raw_path2));
        let paths = [
            source,
            action.container_path.as_deref(),
            dest,
            action.container_path2.as_deref(),
        ];
        let exec = (op == Op::Exec).then(|| ExecView::new(action, value_options));
        View {
            action,
            op,
            paths,
            cwd: action.cwd.as_deref(),
            roots,
            exec,
            facts: None,
            index: None,
            hits: Default::default(),
        }
    }

    /// Matches path tests through a policy's merged index.
    pub fn with_index(mut self, index: &'a PathIndex) -> Self {
        self.index = Some(index);
        self
    }

    /// Subject `i`: the four paths, then the working directory.
    pub fn subject(&self, i: usize) -> Option<&'a str> {
        match i {
            0..4 => self.paths[i],
            4 => self.cwd,
            _ => None,
        }
    }

    /// Whether subject `i` is present and matches a path test.
    pub fn path_matches(&self, i: usize, test: &PathTest) -> bool {
        let Some(p) = self.subject(i) else {
            return false;
        };
        match (test, self.index) {
            (PathTest::Glob(g), Some(index)) => match g.id {
                Some(id) => self.hits[i]
                    .get_or_init(|| index.hits(p, &self.roots))
                    .has(id),
                None => g.is_match(p, &self.roots),
            },
            _ => test.is_match(p, &self.roots),
        }
    }

    /// Whether subject `i` is present and matches `globs`.
    pub fn globs_match(&self, i: usize, globs: &PathGlobs) -> bool {
        let Some(p) = self.subject(i) else {
            return false;
        };
        match (globs.id, self.index) {
            (Some(id), Some(index)) => self.hits[i]
                .get_or_init(|| index.hits(p, &self.roots))
                .has(id),
            _ => globs.is_match(p, &self.roots),
        }
    }

    /// Host-side paths (source, then destination) that are present.
    pub fn host_paths(&self) -> impl Iterator<Item = &'a str> {
        [self.paths[0], self.paths[2]].into_iter().flatten()
    }
}
