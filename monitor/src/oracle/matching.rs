//! Matching one rule against one action, and what a run ignores.

use super::command::CommandObjects;
use super::pattern::{objects, Roots};
use super::spec::{Matcher, Rule, TaskSpec};
use crate::record::{Action, Op};

fn argv_args(a: &Action) -> &[String] {
    a.argv
        .as_deref()
        .map(|v| v.get(1..).unwrap_or(&[]))
        .unwrap_or(&[])
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The spec as seen from one run: patterns and the roots they resolve
/// against.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub spec: &'a TaskSpec,
    pub roots: &'a Roots,
}

impl View<'_> {
    /// Ignored objects are not acted on (protected ones never are ignored).
    pub fn ignored(&self, path: &str) -> bool {
        (default_ignored(path) || self.spec.ignore.matches(path, self.roots))
            && !self.spec.protected.matches(path, self.roots)
    }
}

/// Matches `rule` against one action (`cmd`: its command objects, for an
/// exec). `Some(objects)`: it matches, and explains these objects (the
/// paths a file rule matched on; the objects of a command).
pub fn rule_matches(
    rule: &Rule,
    a: &Action,
    cmd: Option<&CommandObjects>,
    view: View,
) -> Option<Vec<String>> {
    let roots = view.roots;
    let op = a.op?;
    match &rule.matcher {
        Matcher::Condition => None,
        Matcher::Files { ops, paths, side } => {
            if op == Op::Exec || !ops.contains(&op) {
                return None;
            }
            let objs: Vec<String> = objects(a)
                .filter(|(s, _)| op != Op::Rename || side.accepts(*s))
                .map(|(_, p)| p)
                .filter(|p| !view.ignored(p))
                .filter(|p| paths.is_empty() || paths.matches(p, roots))
                .map(str::to_owned)
                .collect();
            // A rule without `paths` also matches an operation whose path is
            // unknown.
            if objs.is_empty() && !(paths.is_empty() && objects(a).next().is_none()) {
                return None;
            }
            Some(objs)
        }
        Matcher::Exec {
            program,
            argv_regex,
            argv_glob,
            args_include,
            args_exclude,
            cwd,
            objects: want,
        } => {
            if op != Op::Exec {
                return None;
            }
            if !program.is_empty() {
                let argv0 = a.argv.as_ref().and_then(|v| v.first()).map(|s| basename(s));
                let exe = a.path.as_deref().map(basename);
                let hit = program.iter().any(|g| {
                    argv0.is_some_and(|n| g.is_match(n)) || exe.is_some_and(|n| g.is_match(n))
                });
                if !hit {
                    return None;
                }
            }
            let args = argv_args(a);
            let joined = args.join(" ");
            if argv_regex.as_ref().is_some_and(|r| !r.is_match(&joined)) {
                return None;
            }
            if argv_glob.as_ref().is_some_and(|g| !g.is_match(&joined)) {
                return None;
            }
            if !args_include
                .iter()
                .all(|g| args.iter().any(|x| g.is_match(x)))
            {
                return None;
            }
            if args_exclude
                .iter()
                .any(|g| args.iter().any(|x| g.is_match(x)))
            {
                return None;
            }
            if !cwd.is_empty() && !a.cwd.as_deref().is_some_and(|c| cwd.matches(c, roots)) {
                return None;
            }
            // The objects a changing command acts on (none when read-only).
            let changed: Vec<&String> = cmd
                .filter(|c| c.changed())
                .map(|c| c.objects.iter().filter(|o| !view.ignored(o)).collect())
                .unwrap_or_default();
            if want.is_empty() {
                return Some(changed.into_iter().cloned().collect());
            }
            let hit: Vec<String> = changed
                .into_iter()
                .filter(|o| want.matches(o, roots))
                .cloned()
                .collect();
            (!hit.is_empty()).then_some(hit)
        }
    }
}

/// Default ignore patterns: pseudo-file systems are never objects.
pub fn default_ignored(path: &str) -> bool {
    ["/dev/", "/proc/", "/sys/"]
        .iter()
        .any(|p| path.starts_with(p))
        || matches!(path, "/dev" | "/proc" | "/sys")
}
