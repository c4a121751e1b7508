//! Path globs anchored to named roots (`${workspace}`, `${home}`, `${trace}`).

use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::RegexSet;

use crate::core::anchor::{self, Anchor};

mod index;
pub(crate) use index::{Hits, PathIndex};

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
///
/// The test's own glob sets are built when the policy is compiled (which
/// checks them) and dropped again once the policy's [`PathIndex`] answers
/// for the test ([`PathGlobs::release`]): the merged sets hold the same
/// globs. They are built again, once, if something still asks the test
/// directly.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathGlobs {
    sets: OnceLock<Sets>,
    /// Per root: a bare `${root}` pattern, the root path itself.
    exact: [bool; 3],
    /// The globs by root (`None`: absolute), for a policy's [`PathIndex`].
    parts: Vec<(Option<Root>, Glob)>,
    /// This test's number in the policy's [`PathIndex`], once indexed.
    pub(crate) id: Option<u32>,
}

/// One test's compiled glob sets: absolute patterns, then one per root.
#[derive(Clone, Debug, Default)]
struct Sets {
    abs: Option<GlobSet>,
    roots: [Option<GlobSet>; 3],
}

impl Sets {
    fn build(parts: &[(Option<Root>, Glob)]) -> Result<Sets, globset::Error> {
        let mut abs = GlobSetBuilder::new();
        let mut n_abs = 0;
        let mut roots: [(GlobSetBuilder, usize); 3] =
            std::array::from_fn(|_| (GlobSetBuilder::new(), 0));
        for (root, g) in parts {
            match root {
                None => {
                    abs.add(g.clone());
                    n_abs += 1;
                }
                Some(r) => {
                    let slot = &mut roots[*r as usize];
                    slot.0.add(g.clone());
                    slot.1 += 1;
                }
            }
        }
        let build = |b: GlobSetBuilder, n: usize| -> Result<Option<GlobSet>, globset::Error> {
            if n == 0 {
                return Ok(None);
            }
            b.build().map(Some)
        };
        let mut out = Sets {
            abs: build(abs, n_abs)?,
            roots: Default::default(),
        };
        for (i, (b, n)) in roots.into_iter().enumerate() {
            out.roots[i] = build(b, n)?;
        }
        Ok(out)
    }
}

/// A path glob split into its root and the rest; on error, a message and a
/// hint.
pub(crate) fn split_root(pattern: &str) -> Result<(Option<Root>, &str), (String, String)> {
    match anchor::split(pattern, &Root::ALL.map(Root::var)) {
        Anchor::Var(i, rest) => {
            let r = Root::ALL[i];
            // `${trace}` names a file: `${trace}.key` is its key.
            if r != Root::Trace && anchor::bad_after_var(rest) {
                return Err((
                    format!("`{}` must be followed by `/` or end the pattern", r.var()),
                    format!("write `{}/{rest}`", r.var()),
                ));
            }
            Ok((Some(r), rest))
        }
        Anchor::UnknownVar(name) => Err((
            format!("unknown root `${{{name}}}`"),
            "the roots are ${workspace}, ${home} and ${trace}".to_owned(),
        )),
        Anchor::Absolute | Anchor::AnyDepth => Ok((None, pattern)),
        Anchor::Tilde(_) | Anchor::Empty | Anchor::Relative => Err((
            format!("path pattern `{pattern}` is not anchored"),
            format!("start it with ${{workspace}}/, ${{home}}/, ${{trace}}, / or **/, e.g. `${{workspace}}/{pattern}`"),
        )),
    }
}

pub(crate) fn path_glob(pattern: &str) -> Result<globset::Glob, GlobError> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()?)
}

pub(crate) fn text_glob(pattern: &str) -> Result<globset::Glob, GlobError> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()?)
}

pub(crate) const GLOB_HINT: &str =
    "globs use * (within one path component), ** (any depth), ?, [abc], {a,b}; escape with \\";

/// A glob that does not compile. globset's own text repeats the pattern;
/// its kind alone is clearer beside the pattern the caller names.
#[derive(Debug, thiserror::Error)]
#[error("bad glob: {}", .0.kind())]
pub(crate) struct GlobError(#[from] globset::Error);

impl PathGlobs {
    /// Compile patterns; on error, the index of the offending pattern, a
    /// message and a hint.
    pub fn compile(patterns: &[String]) -> Result<PathGlobs, (usize, String, String)> {
        let mut exact = [false; 3];
        let mut parts = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let (root, rest) = split_root(p).map_err(|(m, h)| (i, m, h))?;
            if let (Some(r), true) = (root, rest.is_empty()) {
                exact[r as usize] = true;
                continue;
            }
            let g = path_glob(glob_text(root, rest))
                .map_err(|e| (i, e.to_string(), GLOB_HINT.to_owned()))?;
            parts.push((root, g));
        }
        let sets = Sets::build(&parts)
            .map_err(|e| (0, GlobError::from(e).to_string(), GLOB_HINT.to_owned()))?;
        Ok(PathGlobs {
            sets: OnceLock::from(sets),
            exact,
            parts,
            id: None,
        })
    }

    /// Drops the test's own sets if the policy's index answers for it.
    pub fn release(&mut self) {
        if self.id.is_some() {
            self.sets = OnceLock::new();
        }
    }

    fn sets(&self) -> &Sets {
        // These globs built into sets when the policy was compiled; the
        // same build cannot fail now.
        self.sets
            .get_or_init(|| Sets::build(&self.parts).unwrap_or_default())
    }

    pub fn is_match(&self, path: &str, roots: &Roots<'_>) -> bool {
        let sets = self.sets();
        if let Some(abs) = &sets.abs {
            if abs.is_match(path) {
                return true;
            }
        }
        for (i, r) in Root::ALL.iter().enumerate() {
            let (set, exact) = (&sets.roots[i], self.exact[i]);
            if set.is_none() && !exact {
                continue;
            }
            let Some(root) = roots.get(*r) else { continue };
            let Some(rest) = path.strip_prefix(root) else {
                continue;
            };
            if exact && (rest.is_empty() || (root.is_empty() && rest == "/")) {
                return true;
            }
            if let (Some(set), Some(rel)) = (set, beneath(*r, rest)) {
                if set.is_match(rel) {
                    return true;
                }
            }
        }
        false
    }
}

/// The part of a pattern that is compiled: for a root-relative one, what
/// [`beneath`] leaves of it, so that `${workspace}/**/*.tf` compiles as
/// `**/*.tf`, which glob sets match by extension alone instead of with a
/// regex of its own, and is matched against what `beneath` leaves of a path.
fn glob_text(root: Option<Root>, rest: &str) -> &str {
    root.and_then(|r| beneath(r, rest)).unwrap_or(rest)
}

/// What a root-relative glob is matched against, given the path's `rest`
/// after the root: for `${workspace}` and `${home}` the part after the `/`
/// (no glob can match a path that continues the root's last name, as
/// `/work2` continues `/work`); for `${trace}`, `rest` itself.
fn beneath(root: Root, rest: &str) -> Option<&str> {
    match root {
        Root::Workspace | Root::Home => rest.strip_prefix('/'),
        Root::Trace => Some(rest),
    }
}
