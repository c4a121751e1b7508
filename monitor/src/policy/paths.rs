//! Path globs anchored to named roots (`${workspace}`, `${home}`, `${trace}`).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::RegexSet;

// ---------------------------------------------------------------------------
// Paths and roots

/// The named roots path globs are anchored to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    Workspace,
    Home,
    Trace,
}

impl Root {
    pub const ALL: [Root; 3] = [Root::Workspace, Root::Home, Root::Trace];

    pub fn var(self) -> &'static str {
        match self {
            Root::Workspace => "${workspace}",
            Root::Home => "${home}",
            Root::Trace => "${trace}",
        }
    }
}

/// Root paths for one evaluation, without trailing slashes (`/` becomes
/// the empty string); `None` when the context does not name that root.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Roots<'a>(pub [Option<&'a str>; 3]);

impl<'a> Roots<'a> {
    pub fn new(
        workspace: &'a std::path::Path,
        home: &'a std::path::Path,
        trace: Option<&'a std::path::Path>,
    ) -> Self {
        fn norm(p: &std::path::Path) -> Option<&str> {
            let s = p.to_str()?;
            if s.is_empty() {
                return None;
            }
            Some(s.trim_end_matches('/'))
        }
        Roots([norm(workspace), norm(home), trace.and_then(norm)])
    }

    pub fn get(&self, r: Root) -> Option<&'a str> {
        self.0[r as usize]
    }

    /// Whether `path` is the root itself or beneath it.
    pub fn contains(&self, r: Root, path: &str) -> bool {
        match self.get(r) {
            Some(root) => match path.strip_prefix(root) {
                Some(rest) => rest.is_empty() || rest.starts_with('/'),
                None => false,
            },
            None => false,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum PathTest {
    Glob(Box<PathGlobs>),
    Regex(RegexSet),
}

impl PathTest {
    pub(crate) fn is_match(&self, path: &str, roots: &Roots<'_>) -> bool {
        match self {
            PathTest::Glob(g) => g.is_match(path, roots),
            PathTest::Regex(r) => r.is_match(path),
        }
    }
}

/// Path globs grouped by root. A pattern `${root}REST` matches a path that
/// starts with the root's value followed by something REST matches.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathGlobs {
    abs: Option<GlobSet>,
    roots: [RootGlobs; 3],
}

#[derive(Clone, Debug, Default)]
struct RootGlobs {
    set: Option<GlobSet>,
    /// A bare `${root}` pattern: the root path itself.
    exact: bool,
}

/// A path glob split into its root and the rest; on error, a message and a
/// hint.
pub(crate) fn split_root(pattern: &str) -> Result<(Option<Root>, &str), (String, String)> {
    for r in Root::ALL {
        if let Some(rest) = pattern.strip_prefix(r.var()) {
            if r != Root::Trace && !rest.is_empty() && !rest.starts_with('/') {
                return Err((
                    format!("`{}` must be followed by `/` or end the pattern", r.var()),
                    format!("write `{}/{rest}`", r.var()),
                ));
            }
            return Ok((Some(r), rest));
        }
    }
    if let Some(after) = pattern.strip_prefix("${") {
        let name = after.split('}').next().unwrap_or("");
        return Err((
            format!("unknown root `${{{name}}}`"),
            "the roots are ${workspace}, ${home} and ${trace}".to_owned(),
        ));
    }
    if pattern.starts_with('/') || pattern.starts_with("**/") || pattern == "**" {
        return Ok((None, pattern));
    }
    Err((
        format!("path pattern `{pattern}` is not anchored"),
        format!("start it with ${{workspace}}/, ${{home}}/, ${{trace}}, / or **/, e.g. `${{workspace}}/{pattern}`"),
    ))
}

pub(crate) fn path_glob(pattern: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| glob_error(&e))
}

pub(crate) fn text_glob(pattern: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_err(|e| glob_error(&e))
}

pub(crate) const GLOB_HINT: &str =
    "globs use * (within one path component), ** (any depth), ?, [abc], {a,b}; escape with \\";

pub(crate) fn glob_error(e: &globset::Error) -> String {
    // globset's Display repeats the pattern; its kind alone is clearer here.
    format!("bad glob: {}", e.kind())
}

impl PathGlobs {
    /// Compile patterns; on error, the index of the offending pattern, a
    /// message and a hint.
    pub fn compile(patterns: &[String]) -> Result<PathGlobs, (usize, String, String)> {
        let mut abs = GlobSetBuilder::new();
        let mut n_abs = 0;
        let mut roots: [(GlobSetBuilder, usize, bool); 3] =
            std::array::from_fn(|_| (GlobSetBuilder::new(), 0, false));
        for (i, p) in patterns.iter().enumerate() {
            let (root, rest) = split_root(p).map_err(|(m, h)| (i, m, h))?;
            match root {
                None => {
                    abs.add(path_glob(rest).map_err(|e| (i, e, GLOB_HINT.to_owned()))?);
                    n_abs += 1;
                }
                Some(r) => {
                    let slot = &mut roots[r as usize];
                    if rest.is_empty() {
                        slot.2 = true;
                    } else {
                        slot.0
                            .add(path_glob(rest).map_err(|e| (i, e, GLOB_HINT.to_owned()))?);
                        slot.1 += 1;
                    }
                }
            }
        }
        let build = |b: GlobSetBuilder, n: usize| -> Result<Option<GlobSet>, String> {
            if n == 0 {
                return Ok(None);
            }
            b.build().map(Some).map_err(|e| glob_error(&e))
        };
        let abs = build(abs, n_abs).map_err(|e| (0, e, GLOB_HINT.to_owned()))?;
        let mut out = PathGlobs {
            abs,
            roots: Default::default(),
        };
        for (i, (b, n, exact)) in roots.into_iter().enumerate() {
            out.roots[i] = RootGlobs {
                set: build(b, n).map_err(|e| (0, e, GLOB_HINT.to_owned()))?,
                exact,
            };
        }
        Ok(out)
    }

    pub fn is_match(&self, path: &str, roots: &Roots<'_>) -> bool {
        if let Some(abs) = &self.abs {
            if abs.is_match(path) {
                return true;
            }
        }
        for (r, globs) in Root::ALL.iter().zip(&self.roots) {
            if globs.set.is_none() && !globs.exact {
                continue;
            }
            let Some(root) = roots.get(*r) else { continue };
            let Some(rest) = path.strip_prefix(root) else {
                continue;
            };
            if globs.exact && (rest.is_empty() || (root.is_empty() && rest == "/")) {
                return true;
            }
            if let Some(set) = &globs.set {
                if set.is_match(rest) {
                    return true;
                }
            }
        }
        false
    }
}
