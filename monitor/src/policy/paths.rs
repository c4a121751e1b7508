//! Path globs anchored to named roots (`${workspace}`, `${home}`, `${trace}`).

use std::sync::{Mutex, OnceLock};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::RegexSet;

use crate::core::anchor::{self, Anchor};

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
        let mut exact = [false; 3];
        let mut parts = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let (root, rest) = split_root(p).map_err(|(m, h)| (i, m, h))?;
            if let (Some(r), true) = (root, rest.is_empty()) {
                exact[r as usize] = true;
                continue;
            }
            let g = path_glob(glob_text(root, rest)).map_err(|e| (i, e, GLOB_HINT.to_owned()))?;
            parts.push((root, g));
        }
        let sets = Sets::build(&parts).map_err(|e| (0, glob_error(&e), GLOB_HINT.to_owned()))?;
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

/// Every path glob test of a policy merged into one glob set per root (and
/// one for absolute patterns), so that a path is matched against all of
/// them in one run per root: [`PathIndex::hits`] says which tests match
/// it, exactly as each test's own [`PathGlobs::is_match`] would.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathIndex {
    abs: IndexSet,
    roots: [IndexSet; 3],
    /// Tests that a bare `${root}` pattern satisfies, by root.
    exact: [Vec<u32>; 3],
    tests: usize,
    /// The hits of paths seen lately: a run touches the same paths again
    /// and again (a repository's index and refs, a build's outputs).
    recent: HitCache,
}

/// A bounded memory of [`PathIndex::hits`] by path, for one set of roots
/// (the roots of the last caller: another set starts it afresh). Emptied
/// when full.
#[derive(Debug, Default)]
struct HitCache(Mutex<Recent>);

/// The roots the paths of a [`HitCache`] were matched under, and their hits.
#[derive(Debug, Default)]
struct Recent {
    roots: [Option<String>; 3],
    hits: foldhash::HashMap<String, Hits>,
}

/// Paths [`HitCache`] keeps before it starts again.
const HIT_CACHE_PATHS: usize = 4096;

impl Clone for HitCache {
    fn clone(&self) -> Self {
        HitCache::default()
    }
}

impl HitCache {
    fn get_or(&self, path: &str, roots: &Roots<'_>, compute: impl FnOnce() -> Hits) -> Hits {
        let same_roots =
            |k: &[Option<String>; 3]| k.iter().zip(roots.0).all(|(a, b)| a.as_deref() == b);
        if let Ok(g) = self.0.lock() {
            if same_roots(&g.roots) {
                if let Some(h) = g.hits.get(path) {
                    return h.clone();
                }
            }
        }
        let h = compute();
        if let Ok(mut g) = self.0.lock() {
            if !same_roots(&g.roots) {
                g.roots = roots.0.map(|r| r.map(str::to_owned));
                g.hits.clear();
            }
            if g.hits.len() >= HIT_CACHE_PATHS {
                g.hits.clear();
            }
            g.hits.insert(path.to_owned(), h.clone());
        }
        h
    }
}

/// One merged glob set and, for each of its globs, the test it belongs to.
#[derive(Clone, Debug, Default)]
struct IndexSet {
    set: Option<GlobSet>,
    owner: Vec<u32>,
}

impl IndexSet {
    fn build(globs: Vec<(u32, Glob)>) -> IndexSet {
        if globs.is_empty() {
            return IndexSet::default();
        }
        let mut b = GlobSetBuilder::new();
        let mut owner = Vec::with_capacity(globs.len());
        for (id, g) in globs {
            b.add(g);
            owner.push(id);
        }
        // Each glob already compiled on its own, and a set of compiled
        // globs always builds.
        match b.build() {
            Ok(set) => IndexSet {
                set: Some(set),
                owner,
            },
            Err(_) => IndexSet::default(),
        }
    }

    /// Marks the tests of the globs that match `s`.
    fn mark(&self, s: &str, scratch: &mut Vec<usize>, hits: &mut Hits) {
        if let Some(set) = &self.set {
            set.matches_into(s, scratch);
            for &i in scratch.iter() {
                hits.set(self.owner[i]);
            }
        }
    }
}

/// Which tests of a [`PathIndex`] match one path.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hits(Vec<u64>);

impl Hits {
    fn set(&mut self, id: u32) {
        let (w, b) = (id as usize / 64, id % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    pub fn has(&self, id: u32) -> bool {
        self.0
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
}

impl PathIndex {
    /// Numbers the tests in order and merges their globs. A test whose
    /// merged set fails to build (it cannot: every glob compiled alone)
    /// keeps no number and is matched on its own.
    pub fn build(tests: &mut [&mut PathGlobs]) -> PathIndex {
        let mut abs = Vec::new();
        let mut roots: [Vec<(u32, Glob)>; 3] = Default::default();
        let mut exact: [Vec<u32>; 3] = Default::default();
        for (id, t) in tests.iter_mut().enumerate() {
            let id = id as u32;
            for (root, g) in &t.parts {
                match root {
                    None => abs.push((id, g.clone())),
                    Some(r) => roots[*r as usize].push((id, g.clone())),
                }
            }
            for (r, e) in t.exact.iter().enumerate() {
                if *e {
                    exact[r].push(id);
                }
            }
        }
        let has_abs = !abs.is_empty();
        let abs = IndexSet::build(abs);
        let has_root: [bool; 3] = std::array::from_fn(|r| !roots[r].is_empty());
        let roots = roots.map(IndexSet::build);
        let built = (!has_abs || abs.set.is_some())
            && (0..3).all(|r| !has_root[r] || roots[r].set.is_some());
        for (id, t) in tests.iter_mut().enumerate() {
            t.id = built.then_some(id as u32);
        }
        PathIndex {
            abs,
            roots,
            exact,
            tests: tests.len(),
            recent: HitCache::default(),
        }
    }

    /// The tests that match `path`, computed as [`PathGlobs::is_match`]
    /// does for each of them.
    pub fn hits(&self, path: &str, roots: &Roots<'_>) -> Hits {
        self.recent
            .get_or(path, roots, || self.hits_uncached(path, roots))
    }

    fn hits_uncached(&self, path: &str, roots: &Roots<'_>) -> Hits {
        let mut hits = Hits(Vec::with_capacity(self.tests.div_ceil(64)));
        let mut scratch = Vec::new();
        self.abs.mark(path, &mut scratch, &mut hits);
        for r in Root::ALL {
            let i = r as usize;
            let set = &self.roots[i];
            if set.set.is_none() && self.exact[i].is_empty() {
                continue;
            }
            let Some(root) = roots.get(r) else { continue };
            let Some(rest) = path.strip_prefix(root) else {
                continue;
            };
            if rest.is_empty() || (root.is_empty() && rest == "/") {
                for &id in &self.exact[i] {
                    hits.set(id);
                }
            }
            if let Some(rel) = beneath(r, rest) {
                set.mark(rel, &mut scratch, &mut hits);
            }
        }
        hits
    }
}
