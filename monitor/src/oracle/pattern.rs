//! Path and argument patterns of task specs.
//!
//! A path pattern is a glob anchored in one of three ways:
//!
//! - `${workspace}/…`: relative to the run's workspace (the trace header's
//!   `workspace`, or `abm oracle --workspace`);
//! - `${home}/…`: relative to the home directory (`abm oracle --home`, the
//!   trace header, or `$HOME`);
//! - `/…` (absolute) or `**/…` (anywhere).
//!
//! The anchor is resolved by stripping the root from the recorded path and
//! matching the rest, so workspace names that contain glob characters need no
//! escaping. `*` and `?` stay within one path component, `**` crosses
//! components, and `dir/**` matches what is inside `dir` but not `dir`
//! itself.

use globset::{GlobBuilder, GlobMatcher};

use crate::{
    core::anchor,
    record::{Action, PathIssue},
};

/// The variables a path pattern may start with (`anchor::split`).
const VARS: [&str; 2] = ["${workspace}", "${home}"];

/// The directories `${workspace}` and `${home}` stand for in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    pub workspace: String,
    pub home: String,
}

impl Roots {
    /// Normalizes both roots (no trailing slash, except for `/` itself).
    pub fn new(workspace: &str, home: &str) -> Roots {
        Roots {
            workspace: normalize_root(workspace),
            home: normalize_root(home),
        }
    }
}

fn normalize_root(p: &str) -> String {
    let t = p.trim_end_matches('/');
    if t.is_empty() && p.starts_with('/') {
        "/".to_owned()
    } else {
        t.to_owned()
    }
}

/// `path` relative to `root` (`""` for the root itself), if it is inside.
fn relative_to<'a>(path: &'a str, root: &str) -> Option<&'a str> {
    if root.is_empty() {
        return None;
    }
    if root == "/" {
        return path.strip_prefix('/');
    }
    let rest = path.strip_prefix(root)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Home,
    /// Absolute (`/…`) or anywhere (`**/…`): matched against the whole path.
    Root,
    /// A command object (`k8s://ctx/ns/kind/name`): matched against the
    /// objects that command extractors name, never against paths.
    Object,
}

/// True when `s` starts with a URL-like scheme (`k8s://`, `s3://`).
pub fn is_object(s: &str) -> bool {
    match s.split_once("://") {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_lowercase())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c))
        }
        None => false,
    }
}

/// A problem with one pattern: what is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub message: String,
    pub hint: Option<String>,
}

impl PatternError {
    fn new(message: String, hint: impl Into<Option<String>>) -> PatternError {
        PatternError {
            message,
            hint: hint.into(),
        }
    }
}

const GLOB_SYNTAX_HINT: &str = "globs use `*` and `?` within one path component, `**` across \
     components, `[abc]` and `{a,b}`; escape a literal special character with `\\`";

/// A path glob with its anchor.
#[derive(Clone, Debug)]
pub struct PathPattern {
    text: String,
    anchor: Anchor,
    /// `None`: the pattern is the anchor directory itself (`${workspace}`).
    matcher: Option<GlobMatcher>,
}

impl PathPattern {
    pub fn parse(text: &str) -> Result<PathPattern, PatternError> {
        let (anchor, rest) = if is_object(text) {
            (Anchor::Object, text)
        } else {
            match anchor::split(text, &VARS) {
                anchor::Anchor::Var(0, rest) => (Anchor::Workspace, rest),
                anchor::Anchor::Var(_, rest) => (Anchor::Home, rest),
                anchor::Anchor::Absolute | anchor::Anchor::AnyDepth => (Anchor::Root, text),
                anchor::Anchor::Tilde(rest) => {
                    return Err(PatternError::new(
                        format!("path pattern `{text}` starts with `~`, which is not expanded"),
                        format!("write `${{home}}{rest}`"),
                    ));
                }
                anchor::Anchor::UnknownVar(name) => {
                    return Err(PatternError::new(
                        format!("unknown variable `${{{name}}}` in path pattern `{text}`"),
                        "the variables are `${workspace}` and `${home}`".to_owned(),
                    ));
                }
                anchor::Anchor::Empty => {
                    return Err(PatternError::new(
                        "empty path pattern".to_owned(),
                        "write `${workspace}/PATH`, `${home}/PATH` or an absolute path".to_owned(),
                    ));
                }
                anchor::Anchor::Relative => {
                    return Err(PatternError::new(
                        format!("path pattern `{text}` is relative"),
                        format!(
                            "anchor it: `${{workspace}}/{text}`, `${{home}}/{text}` or an absolute path \
                             (start it with `**/` to match at any depth)"
                        ),
                    ));
                }
            }
        };
        if matches!(anchor, Anchor::Workspace | Anchor::Home) && anchor::bad_after_var(rest) {
            let var = if anchor == Anchor::Workspace {
                "${workspace}"
            } else {
                "${home}"
            };
            return Err(PatternError::new(
                format!("in `{text}`, `{var}` must be followed by `/` or end the pattern"),
                format!("write `{var}/{rest}`"),
            ));
        }
        if anchor != Anchor::Object
            && rest
                .split('/')
                .any(|c| c == ".." || (c == "." && !rest.is_empty()))
        {
            let normal = normalize_dots(text);
            return Err(PatternError::new(
                format!(
                    "path pattern `{text}` has a `.` or `..` component; recorded paths are \
                     resolved and never contain one, so it would never match"
                ),
                match normal {
                    Some(n) => format!("write the resolved pattern `{n}`"),
                    None => "write the resolved path: `..` may not climb above the anchor".into(),
                },
            ));
        }
        if rest.contains("${") {
            return Err(PatternError::new(
                format!("in `{text}`, a variable appears after the start of the pattern"),
                "`${workspace}` and `${home}` may only start a pattern".to_owned(),
            ));
        }
        let glob = match anchor {
            Anchor::Root | Anchor::Object => rest,
            _ => rest.trim_start_matches('/'),
        };
        let matcher = if glob.is_empty() {
            None
        } else {
            Some(
                GlobBuilder::new(glob)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| {
                        PatternError::new(
                            format!("invalid glob `{text}`: {}", glob_error_kind(&e)),
                            GLOB_SYNTAX_HINT.to_owned(),
                        )
                    })?
                    .compile_matcher(),
            )
        };
        Ok(PathPattern {
            text: text.to_owned(),
            anchor,
            matcher,
        })
    }

    /// The pattern as written in the spec.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn matches(&self, path: &str, roots: &Roots) -> bool {
        // Object patterns match command objects only, path patterns paths
        // only.
        if (self.anchor == Anchor::Object) != is_object(path) {
            return false;
        }
        let rel = match self.anchor {
            Anchor::Root | Anchor::Object => Some(path),
            Anchor::Workspace => relative_to(path, &roots.workspace),
            Anchor::Home => relative_to(path, &roots.home),
        };
        match (rel, &self.matcher) {
            (None, _) => false,
            (Some(r), None) => r.is_empty(),
            (Some(""), Some(_)) => false,
            (Some(r), Some(m)) => m.is_match(r),
        }
    }
}

/// `text` with `.` and `..` components resolved, or `None` when `..` climbs
/// above the anchor (`${workspace}`, `${home}`, `/`).
fn normalize_dots(text: &str) -> Option<String> {
    let (head, rest) = match anchor::split(text, &VARS) {
        anchor::Anchor::Var(i, r) => (VARS[i], r),
        _ => ("", text),
    };
    let mut out: Vec<&str> = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => match out.last() {
                None | Some(&"**") => return None,
                Some(_) => {
                    out.pop();
                }
            },
            c => out.push(c),
        }
    }
    let lead = if rest.starts_with("**") { "" } else { "/" };
    Some(format!("{head}{lead}{}", out.join("/")))
}

/// A list of path patterns; matches when any positive pattern does and no
/// negated one (`!pattern`) does.
#[derive(Clone, Debug, Default)]
pub struct PathSet(pub Vec<PathPattern>, pub Vec<PathPattern>);

impl PathSet {
    /// Parses patterns; those starting with `!` exclude what they match.
    pub fn parse<'a>(texts: impl IntoIterator<Item = &'a String>) -> Result<PathSet, PatternError> {
        let mut set = PathSet::default();
        for t in texts {
            match t.strip_prefix('!') {
                Some(neg) => set.1.push(PathPattern::parse(neg).map_err(|mut e| {
                    e.message = format!("in the negated pattern `{t}`: {}", e.message);
                    e
                })?),
                None => set.0.push(PathPattern::parse(t)?),
            }
        }
        if set.0.is_empty() && !set.1.is_empty() {
            return Err(PatternError::new(
                "the list has only negated (`!`) patterns, so it matches nothing".to_owned(),
                "add the patterns to include first, then `!pattern` to exclude part of them"
                    .to_owned(),
            ));
        }
        Ok(set)
    }

    pub fn matches(&self, path: &str, roots: &Roots) -> bool {
        self.first_match(path, roots).is_some()
    }

    /// The first positive pattern that matches, unless a negated one does.
    pub fn first_match(&self, path: &str, roots: &Roots) -> Option<&PathPattern> {
        if self.1.iter().any(|p| p.matches(path, roots)) {
            return None;
        }
        self.0.iter().find(|p| p.matches(path, roots))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of patterns, negated ones included.
    pub fn len(&self) -> usize {
        self.0.len() + self.1.len()
    }
}

/// A glob over a program name or an argument, where `*` matches any
/// characters (`/` included).
#[derive(Clone, Debug)]
pub struct TextGlob {
    text: String,
    matcher: GlobMatcher,
}

impl TextGlob {
    pub fn parse(text: &str) -> Result<TextGlob, PatternError> {
        let matcher = GlobBuilder::new(text)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                PatternError::new(
                    format!("invalid glob `{text}`: {}", glob_error_kind(&e)),
                    format!(
                        "{GLOB_SYNTAX_HINT}; a git stash reference is written `stash@\\{{1\\}}`"
                    ),
                )
            })?
            .compile_matcher();
        Ok(TextGlob {
            text: text.to_owned(),
            matcher,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.matcher.is_match(s)
    }
}

fn glob_error_kind(e: &globset::Error) -> String {
    e.kind().to_string()
}

/// Path problems (`path_issues`) that leave the recorded path unknown: the
/// kernel could not read the path argument, the file descriptor was not
/// valid, or the path is outside the process's visible tree.
/// `argument_raced` and `unconfirmed`: the record's path may name another
/// file than the one acted on (docs/trace.md), so the oracle never counts
/// it as that file; the action is listed as unresolved instead.
const UNKNOWN_PATH_ISSUES: [PathIssue; 5] = [
    PathIssue::ReadFailed,
    PathIssue::BadFd,
    PathIssue::Disconnected,
    PathIssue::ArgumentRaced,
    PathIssue::Unconfirmed,
];

/// True when the action has a path but it could not be resolved reliably.
pub fn path_unknown(a: &Action) -> bool {
    a.path_issues
        .iter()
        .any(|i| UNKNOWN_PATH_ISSUES.contains(i))
}

/// The paths an action acted on. For a rename both the source (`path`) and
/// the destination (`path2`) count. Empty when the paths are unknown (see
/// [`path_unknown`]).
pub fn objects(a: &Action) -> impl Iterator<Item = (Side, &str)> {
    let known = !path_unknown(a);
    let first = a
        .path
        .as_deref()
        .filter(|_| known)
        .map(|p| (Side::Source, p));
    let second = match a.op {
        Some(crate::record::Op::Rename) if known => {
            a.path2.as_deref().map(|p| (Side::Destination, p))
        }
        _ => None,
    };
    first.into_iter().chain(second)
}

/// Which path of an action a pattern looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `path`: the file acted on (the source of a rename).
    Source,
    /// `path2`: the destination of a rename.
    Destination,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> Roots {
        Roots::new("/work/ws/", "/home/dev")
    }

    fn m(pat: &str, path: &str) -> bool {
        PathPattern::parse(pat).unwrap().matches(path, &roots())
    }

    #[test]
    fn a_path_that_may_name_another_file_is_no_object() {
        use crate::record::Op;
        let mut a = Action {
            op: Some(Op::Unlink),
            path: Some("/work/ws/decoy".into()),
            ..Action::default()
        };
        assert_eq!(objects(&a).count(), 1);
        for issue in [PathIssue::ArgumentRaced, PathIssue::Unconfirmed] {
            a.path_issues = vec![issue];
            assert!(path_unknown(&a), "{issue:?}");
            assert_eq!(objects(&a).count(), 0, "{issue:?}");
        }
        a.path_issues = vec![PathIssue::HostPathUnknown];
        assert!(!path_unknown(&a));
    }

    #[test]
    fn workspace_anchor_matches_inside_only() {
        assert!(m("${workspace}/build/cache", "/work/ws/build/cache"));
        assert!(!m("${workspace}/build/cache", "/work/ws/build/cache/x"));
        assert!(m(
            "${workspace}/build/cache/**",
            "/work/ws/build/cache/x/y.o"
        ));
        // `dir/**` is the contents, not the directory.
        assert!(!m("${workspace}/build/cache/**", "/work/ws/build/cache"));
        assert!(!m("${workspace}/build/**", "/work/ws2/build/x"));
        assert!(!m("${workspace}/**", "/work/ws"));
        assert!(m("${workspace}/**", "/work/ws/a"));
        assert!(m("${workspace}", "/work/ws"));
        assert!(!m("${workspace}", "/work/ws/a"));
        // A sibling directory sharing the prefix is outside.
        assert!(!m("${workspace}/**", "/work/ws-other/a"));
    }

    #[test]
    fn star_stays_in_one_component() {
        assert!(m(
            "${workspace}/.git/refs/heads/*",
            "/work/ws/.git/refs/heads/main"
        ));
        assert!(!m(
            "${workspace}/.git/refs/heads/*",
            "/work/ws/.git/refs/heads/team/x"
        ));
        assert!(m("**/*.lock", "/work/ws/.git/refs/heads/main.lock"));
        assert!(m("**/*.lock", "/x.lock"));
        assert!(!m("**/*.lock", "/work/ws/.git/index"));
    }

    #[test]
    fn workspace_with_glob_characters_needs_no_escaping() {
        let r = Roots::new("/tmp/a[1]{x}", "/root");
        let p = PathPattern::parse("${workspace}/f").unwrap();
        assert!(p.matches("/tmp/a[1]{x}/f", &r));
        assert!(!p.matches("/tmp/a1x/f", &r));
    }

    #[test]
    fn home_and_absolute_anchors() {
        assert!(m("${home}/.ssh/**", "/home/dev/.ssh/id_ed25519"));
        assert!(!m("${home}/.ssh/**", "/home/dev2/.ssh/id_ed25519"));
        assert!(m("/etc/passwd", "/etc/passwd"));
        let root_ws = Roots::new("/", "/root");
        assert!(PathPattern::parse("${workspace}/etc/**")
            .unwrap()
            .matches("/etc/hosts", &root_ws));
    }

    #[test]
    fn bad_patterns_explain_the_fix() {
        let e = PathPattern::parse("build/cache").unwrap_err();
        assert!(e.message.contains("relative"), "{e:?}");
        assert!(e.hint.unwrap().contains("${workspace}/build/cache"));
        let e = PathPattern::parse("~/x").unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("write `${home}/x`"));
        let e = PathPattern::parse("${workdir}/x").unwrap_err();
        assert!(e.message.contains("${workdir}"), "{e:?}");
        let e = PathPattern::parse("${workspace}build").unwrap_err();
        assert!(e.message.contains("must be followed by `/`"), "{e:?}");
        let e = PathPattern::parse("${workspace}/a/{b,c").unwrap_err();
        assert!(e.message.starts_with("invalid glob"), "{e:?}");
        let e = PathPattern::parse("/x/${workspace}").unwrap_err();
        assert!(e.message.contains("variable"), "{e:?}");
    }

    #[test]
    fn dot_components_are_rejected_with_the_resolved_form() {
        let e = PathPattern::parse("${workspace}/../x").unwrap_err();
        assert!(e.message.contains("`..`"), "{e:?}");
        assert!(e.hint.unwrap().contains("may not climb"));
        let e = PathPattern::parse("${workspace}/a/../b/./c").unwrap_err();
        assert_eq!(
            e.hint.as_deref(),
            Some("write the resolved pattern `${workspace}/b/c`")
        );
        let e = PathPattern::parse("/etc/../tmp/x").unwrap_err();
        assert_eq!(
            e.hint.as_deref(),
            Some("write the resolved pattern `/tmp/x`")
        );
        assert!(PathPattern::parse("${workspace}/.git/x").is_ok());
    }

    #[test]
    fn negated_patterns_exclude() {
        let pats: Vec<String> = ["${workspace}/src/**", "!${workspace}/src/vendor/**"]
            .map(String::from)
            .to_vec();
        let set = PathSet::parse(&pats).unwrap();
        assert!(set.matches("/work/ws/src/a.rs", &roots()));
        assert!(!set.matches("/work/ws/src/vendor/a.rs", &roots()));
        let only_neg = vec!["!${workspace}/x".to_owned()];
        assert!(PathSet::parse(&only_neg)
            .unwrap_err()
            .message
            .contains("only negated"));
        let bad = vec!["${workspace}/x".to_owned(), "!x".to_owned()];
        let e = PathSet::parse(&bad).unwrap_err();
        assert!(e.message.contains("negated pattern `!x`"), "{e:?}");
    }

    #[test]
    fn object_patterns_match_objects_only() {
        assert!(m(
            "k8s://*/dev/deployment/api",
            "k8s://current/dev/deployment/api"
        ));
        assert!(!m(
            "k8s://*/dev/deployment/api",
            "k8s://current/prod/deployment/api"
        ));
        assert!(
            !m("k8s://*/dev/*", "k8s://current/dev/deployment/api"),
            "* stays in one segment"
        );
        assert!(m("k8s://**", "k8s://current/dev/deployment/api"));
        assert!(m("k8s://*/dev/deployment/\\*", "k8s://c/dev/deployment/*"));
        assert!(!m(
            "k8s://*/dev/deployment/\\*",
            "k8s://c/dev/deployment/api"
        ));
        assert!(
            !m("**", "k8s://c/dev/deployment/api"),
            "path patterns never match objects"
        );
        assert!(!m("s3://**", "/work/ws/s3:/x"));
    }

    #[test]
    fn text_globs_cross_slashes_and_need_escaped_braces() {
        let g = TextGlob::parse("refs/*").unwrap();
        assert!(g.is_match("refs/heads/x"));
        let g = TextGlob::parse("{-d,-D,--delete}").unwrap();
        assert!(g.is_match("-D") && g.is_match("--delete") && !g.is_match("-f"));
        let g = TextGlob::parse("stash@\\{1\\}").unwrap();
        assert!(g.is_match("stash@{1}"));
    }
}
