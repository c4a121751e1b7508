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

use crate::record::Action;

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
        let (anchor, rest) = if let Some(rest) = text.strip_prefix("${workspace}") {
            (Anchor::Workspace, rest)
        } else if let Some(rest) = text.strip_prefix("${home}") {
            (Anchor::Home, rest)
        } else if text.starts_with('/') || text == "**" || text.starts_with("**/") {
            (Anchor::Root, text)
        } else if let Some(rest) = text.strip_prefix('~') {
            return Err(PatternError::new(
                format!("path pattern `{text}` starts with `~`, which is not expanded"),
                format!("write `${{home}}{rest}`"),
            ));
        } else if let Some(var) = text.strip_prefix("${") {
            let name = var.split('}').next().unwrap_or(var);
            return Err(PatternError::new(
                format!("unknown variable `${{{name}}}` in path pattern `{text}`"),
                "the variables are `${workspace}` and `${home}`".to_owned(),
            ));
        } else if text.is_empty() {
            return Err(PatternError::new(
                "empty path pattern".to_owned(),
                "write `${workspace}/PATH`, `${home}/PATH` or an absolute path".to_owned(),
            ));
        } else {
            return Err(PatternError::new(
                format!("path pattern `{text}` is relative"),
                format!(
                    "anchor it: `${{workspace}}/{text}`, `${{home}}/{text}` or an absolute path \
                     (start it with `**/` to match at any depth)"
                ),
            ));
        };
        if anchor != Anchor::Root && !rest.is_empty() && !rest.starts_with('/') {
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
        if rest.contains("${") {
            return Err(PatternError::new(
                format!("in `{text}`, a variable appears after the start of the pattern"),
                "`${workspace}` and `${home}` may only start a pattern".to_owned(),
            ));
        }
        let glob = match anchor {
            Anchor::Root => rest,
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
        let rel = match self.anchor {
            Anchor::Root => Some(path),
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

/// A list of path patterns; matches when any one does.
#[derive(Clone, Debug, Default)]
pub struct PathSet(pub Vec<PathPattern>);

impl PathSet {
    pub fn matches(&self, path: &str, roots: &Roots) -> bool {
        self.0.iter().any(|p| p.matches(path, roots))
    }

    /// The first pattern that matches.
    pub fn first_match(&self, path: &str, roots: &Roots) -> Option<&PathPattern> {
        self.0.iter().find(|p| p.matches(path, roots))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
const UNKNOWN_PATH_ISSUES: [&str; 3] = ["read_failed", "bad_fd", "disconnected"];

/// True when the action has a path but it could not be resolved reliably.
pub fn path_unknown(a: &Action) -> bool {
    a.path_issues
        .iter()
        .any(|i| UNKNOWN_PATH_ISSUES.contains(&i.as_str()))
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
    fn text_globs_cross_slashes_and_need_escaped_braces() {
        let g = TextGlob::parse("refs/*").unwrap();
        assert!(g.is_match("refs/heads/x"));
        let g = TextGlob::parse("{-d,-D,--delete}").unwrap();
        assert!(g.is_match("-D") && g.is_match("--delete") && !g.is_match("-f"));
        let g = TextGlob::parse("stash@\\{1\\}").unwrap();
        assert!(g.is_match("stash@{1}"));
    }
}
