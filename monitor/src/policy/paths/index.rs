//! The merged index of a policy's path globs: which tests match a path,
//! computed in one pass per root instead of one per test.

use std::sync::Mutex;

use globset::{Glob, GlobSet, GlobSetBuilder};
use smallvec::SmallVec;

use super::{beneath, path_glob, PathGlobs, Root, Roots};

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

/// A bounded memory of [`PathIndex::hits`] by path, and of the hits of
/// directories' components by directory, for one set of roots (the roots
/// of the last caller: another set starts it afresh). Each map is emptied
/// when full.
#[derive(Debug, Default)]
struct HitCache(Mutex<Recent>);

/// The roots the paths of a [`HitCache`] were matched under, and their hits.
#[derive(Debug, Default)]
struct Recent {
    roots: [Option<String>; 3],
    hits: foldhash::HashMap<String, Hits>,
    /// By set (0: absolute, then each root) and directory (what the set
    /// matches, up to its last `/`): the split globs whose directory
    /// condition it satisfies ([`IndexSet`]). A build writes many files to
    /// one directory.
    dirs: [foldhash::HashMap<String, (Hits, Hits)>; 4],
}

/// Paths (and directories) [`HitCache`] keeps before it starts again.
const HIT_CACHE_PATHS: usize = 4096;

impl Clone for HitCache {
    fn clone(&self) -> Self {
        HitCache::default()
    }
}

impl HitCache {
    fn get_or(
        &self,
        path: &str,
        roots: &Roots<'_>,
        compute: impl FnOnce(&mut DirHits<'_>) -> Hits,
    ) -> Hits {
        let same_roots =
            |k: &[Option<String>; 3]| k.iter().zip(roots.0).all(|(a, b)| a.as_deref() == b);
        let Ok(mut g) = self.0.lock() else {
            return compute(&mut DirHits(None));
        };
        if same_roots(&g.roots) {
            if let Some(h) = g.hits.get(path) {
                return h.clone();
            }
        } else {
            g.roots = roots.0.map(|r| r.map(str::to_owned));
            g.hits.clear();
            g.dirs.iter_mut().for_each(|m| m.clear());
        }
        let h = compute(&mut DirHits(Some(&mut g.dirs)));
        if g.hits.len() >= HIT_CACHE_PATHS {
            g.hits.clear();
        }
        g.hits.insert(path.to_owned(), h.clone());
        h
    }
}

/// The directory part of [`HitCache`], lent to one computation of hits.
struct DirHits<'a>(Option<&'a mut [foldhash::HashMap<String, (Hits, Hits)>; 4]>);

/// The globs of a [`PathIndex`] for one root (or for absolute patterns),
/// merged into glob sets, and for each glob the test it belongs to.
///
/// Most path globs are a directory condition and a name: `**/.venv/**` (a
/// component on the way), `${home}/.ssh/*.pem` (this directory, this kind
/// of name), `/etc/**/*.dpkg-*` (beneath this directory), `**/*_test.go`
/// (any directory). Merged whole into one set, they make its automaton
/// large and every new path costly. Split, the directory conditions depend
/// on the path's directory alone and are remembered per directory
/// ([`DirHits`]), and the names are matched against the last component, a
/// short string. The forms are exact, since `*` does not cross `/`:
///
/// | glob | matches a path with directory `D` and last name `N` iff |
/// |---|---|
/// | `**/C/**` (`C` one component) | a component of `D` matches `C` |
/// | `**/B` (`B` one component) | `N` matches `B` |
/// | `X/**` | `D` or a prefix of it ending before a `/` matches `X` |
/// | `X/**/B` | the same, and `N` matches `B` |
/// | `X/B` | `D` matches `X`, and `N` matches `B` |
/// | `B` (one component, a wildcard) | there is no `D`, and `N` matches `B` |
///
/// Globs with no wildcard, and any other form, are matched whole.
#[derive(Clone, Debug, Default)]
struct IndexSet {
    /// Globs matched against the whole path.
    whole: Merged,
    /// One-component globs with a wildcard (`CHANGELOG*`, `.*history`):
    /// matched against a path of one component only.
    top: Merged,
    /// `C` of each `**/C/**`: matched against each component of `D`.
    comps: Merged,
    /// `X` of each `X/**` and `X/**/B`: matched against `D` and its prefixes.
    under: Merged,
    /// `X` of each `X/B`: matched against `D`.
    exact: Merged,
    /// `B` of each `**/B`, `X/**/B` and `X/B`: matched against `N`.
    name: Merged,
    /// Per split glob (numbered as the owners of `comps`, `under`, `exact`
    /// and `name` are): the test it belongs to.
    test: Vec<u32>,
    /// Split globs with a directory condition, and with a name condition.
    needs_dir: Hits,
    needs_name: Hits,
    /// Whether every glob was merged (a set that failed to build leaves its
    /// tests to their own sets).
    built: bool,
}

/// One glob set and, for each of its globs, the numbers it stands for
/// (tests, or split globs of an [`IndexSet`]). A glob that several tests
/// share (a `@list` used by many rules) is in the set once: the cost of
/// a search grows with the patterns of the set, not with their owners.
#[derive(Clone, Debug, Default)]
struct Merged {
    set: Option<GlobSet>,
    /// Per glob of the set: where its owners start in `owners`.
    first: Vec<u32>,
    owners: Vec<u32>,
    /// Globs without any special character, by their text: one hash
    /// lookup instead of a pass of the set (most of the absolute and
    /// `${home}` patterns are such names).
    literal: foldhash::HashMap<Box<str>, Vec<u32>>,
}

impl Merged {
    fn build(globs: Vec<(u32, Glob)>) -> Option<Merged> {
        if globs.is_empty() {
            return Some(Merged::default());
        }
        // Owners of each distinct glob, in the order the globs first come.
        let mut order: Vec<(Glob, Vec<u32>)> = Vec::new();
        let mut at: foldhash::HashMap<Glob, usize> = foldhash::HashMap::default();
        for (id, g) in globs {
            match at.get(&g) {
                Some(&i) => order[i].1.push(id),
                None => {
                    at.insert(g.clone(), order.len());
                    order.push((g, vec![id]));
                }
            }
        }
        let mut b = GlobSetBuilder::new();
        let mut first = Vec::with_capacity(order.len() + 1);
        let mut owners = Vec::new();
        let mut literal = foldhash::HashMap::default();
        for (g, ids) in order {
            if crate::policy::matcher::is_literal(g.glob()) {
                literal.insert(g.glob().into(), ids);
                continue;
            }
            b.add(g);
            first.push(owners.len() as u32);
            owners.extend(ids);
        }
        first.push(owners.len() as u32);
        let set = if first.len() > 1 {
            // Each glob already compiled on its own, and a set of compiled
            // globs always builds.
            Some(b.build().ok()?)
        } else {
            None
        };
        Some(Merged {
            set,
            first,
            owners,
            literal,
        })
    }

    fn is_empty(&self) -> bool {
        self.set.is_none() && self.literal.is_empty()
    }

    /// The numbers glob `i` of the set stands for.
    fn owners_of(&self, i: usize) -> &[u32] {
        &self.owners[self.first[i] as usize..self.first[i + 1] as usize]
    }

    fn mark(&self, s: &str, scratch: &mut Vec<usize>, hits: &mut Hits) {
        if let Some(ids) = self.literal.get(s) {
            for &id in ids {
                hits.set(id);
            }
        }
        if let Some(set) = &self.set {
            set.matches_into(s, scratch);
            for &i in scratch.iter() {
                for &id in self.owners_of(i) {
                    hits.set(id);
                }
            }
        }
    }
}

/// How a glob of an [`IndexSet`] is matched: see its table.
enum Split {
    Top(Glob),
    Comp(Glob),
    Name(Glob),
    Under(Glob, Option<Glob>),
    Exact(Glob, Glob),
    Whole(Glob),
}

/// One path component, as a glob can name it: not empty, no `/`, no `**`.
fn one_component(c: &str) -> bool {
    !c.is_empty() && !c.contains('/') && !c.contains("**")
}

/// Whether `/` at the end of `head` is a separator, not inside `{...}` or
/// `[...]` or escaped: the split forms are only taken where it is.
fn plain_head(head: &str) -> bool {
    let count = |c: char| head.matches(c).count();
    !head.is_empty() && !head.contains('\\') && count('{') == count('}') && count('[') == count(']')
}

fn split(g: Glob) -> Split {
    let text = g.glob();
    let part = |c: &str| path_glob(c).ok();
    if !text.contains(['*', '?', '[', '{']) {
        return Split::Whole(g);
    }
    if one_component(text) {
        return Split::Top(g);
    }
    if let Some(c) = text
        .strip_prefix("**/")
        .and_then(|r| r.strip_suffix("/**"))
        .filter(|c| one_component(c))
    {
        if let Some(c) = part(c) {
            return Split::Comp(c);
        }
    }
    if let Some(b) = text.strip_prefix("**/").filter(|b| one_component(b)) {
        if let Some(b) = part(b) {
            return Split::Name(b);
        }
    }
    if let Some(x) = text.strip_suffix("/**").filter(|x| plain_head(x)) {
        if let Some(x) = part(x) {
            return Split::Under(x, None);
        }
    }
    if let Some((head, b)) = text.rsplit_once('/') {
        if one_component(b) && plain_head(head) && !b.contains(['}', ']']) {
            let under = head.strip_suffix("/**").filter(|x| plain_head(x));
            let parts = match under {
                Some(x) => part(x).zip(part(b)).map(|(x, b)| Split::Under(x, Some(b))),
                None if head != "**" => part(head).zip(part(b)).map(|(x, b)| Split::Exact(x, b)),
                None => None,
            };
            if let Some(s) = parts {
                return s;
            }
        }
    }
    Split::Whole(g)
}

impl IndexSet {
    fn build(globs: Vec<(u32, Glob)>) -> IndexSet {
        let (mut whole, mut top) = (Vec::new(), Vec::new());
        let (mut comps, mut under, mut exact, mut name) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut test = Vec::new();
        let (mut needs_dir, mut needs_name) = (Hits::default(), Hits::default());
        for (id, g) in globs {
            let n = test.len() as u32;
            let (dir, base) = match split(g) {
                Split::Whole(g) => {
                    whole.push((id, g));
                    continue;
                }
                Split::Top(g) => {
                    top.push((id, g));
                    continue;
                }
                Split::Comp(c) => {
                    comps.push((n, c));
                    (true, false)
                }
                Split::Name(b) => {
                    name.push((n, b));
                    (false, true)
                }
                Split::Under(x, b) => {
                    under.push((n, x));
                    let named = b.is_some();
                    name.extend(b.map(|b| (n, b)));
                    (true, named)
                }
                Split::Exact(x, b) => {
                    exact.push((n, x));
                    name.push((n, b));
                    (true, true)
                }
            };
            test.push(id);
            if dir {
                needs_dir.set(n);
            }
            if base {
                needs_name.set(n);
            }
        }
        let sets = [whole, top, comps, under, exact, name].map(Merged::build);
        let [Some(whole), Some(top), Some(comps), Some(under), Some(exact), Some(name)] = sets
        else {
            return IndexSet::default();
        };
        IndexSet {
            whole,
            top,
            comps,
            under,
            exact,
            name,
            test,
            needs_dir,
            needs_name,
            built: true,
        }
    }

    fn is_empty(&self) -> bool {
        self.whole.is_empty() && self.top.is_empty() && self.test.is_empty()
    }

    /// The split globs whose directory condition `dir` satisfies: those
    /// it passes on to the directories beneath it (a component matches
    /// `C`, it or a prefix matches `X` of `X/**`), built on its parent's,
    /// and those of `X/B` it matches itself, handed to `f`. Remembered per
    /// directory in `cache` (set number `set`): a directory seen before
    /// hands over its hits as remembered, not a copy.
    fn with_dir_hits<R>(
        &self,
        set: u8,
        dir: &str,
        cache: &mut DirHits<'_>,
        scratch: &mut Vec<usize>,
        f: impl FnOnce(&Hits, &Hits) -> R,
    ) -> R {
        if let Some((passed, own)) = cache.0.as_ref().and_then(|m| m[set as usize].get(dir)) {
            return f(passed, own);
        }
        let (passed, own) = self.dir_hits_new(set, dir, cache, scratch);
        f(&passed, &own)
    }

    /// [`Self::with_dir_hits`] of a directory not remembered yet: computed, and
    /// remembered.
    fn dir_hits_new(
        &self,
        set: u8,
        dir: &str,
        cache: &mut DirHits<'_>,
        scratch: &mut Vec<usize>,
    ) -> (Hits, Hits) {
        let (mut passed, last) = match dir.rfind('/') {
            Some(i) => (
                self.with_dir_hits(set, &dir[..i], cache, scratch, |p, _| p.clone()),
                &dir[i + 1..],
            ),
            None => (Hits::default(), dir),
        };
        self.comps.mark(last, scratch, &mut passed);
        self.under.mark(dir, scratch, &mut passed);
        let mut own = Hits::default();
        self.exact.mark(dir, scratch, &mut own);
        if let Some(m) = cache.0.as_mut() {
            let m = &mut m[set as usize];
            if m.len() >= HIT_CACHE_PATHS {
                m.clear();
            }
            m.insert(dir.to_owned(), (passed.clone(), own.clone()));
        }
        (passed, own)
    }

    /// Marks the tests of the globs that match `s`; `set` numbers this
    /// set in `cache`.
    fn mark(
        &self,
        set: u8,
        s: &str,
        cache: &mut DirHits<'_>,
        scratch: &mut Vec<usize>,
        hits: &mut Hits,
    ) {
        self.whole.mark(s, scratch, hits);
        let (dir, last) = match s.rfind('/') {
            Some(i) => (Some(&s[..i]), &s[i + 1..]),
            None => (None, s),
        };
        if dir.is_none() {
            self.top.mark(last, scratch, hits);
        }
        if self.test.is_empty() {
            return;
        }
        let mut named = Hits::default();
        self.name.mark(last, scratch, &mut named);
        let Some(d) = dir else {
            return self.combine(&Hits::default(), &Hits::default(), &named, hits);
        };
        self.with_dir_hits(set, d, cache, scratch, |passed, own| {
            self.combine(passed, own, &named, hits)
        })
    }

    /// Marks the tests of the split globs whose directory condition the
    /// directory satisfies (`passed` on from above it, or its `own`) and
    /// whose name condition the last component satisfies (`named`).
    fn combine(&self, passed: &Hits, own: &Hits, named: &Hits, hits: &mut Hits) {
        let words = self.test.len().div_ceil(64);
        for w in 0..words {
            let need_d = self.needs_dir.word(w);
            let need_n = self.needs_name.word(w);
            let dir_ok = passed.word(w) | own.word(w);
            let mut m = (dir_ok | !need_d) & (named.word(w) | !need_n) & (need_d | need_n);
            while m != 0 {
                let n = w * 64 + m.trailing_zeros() as usize;
                if let Some(&id) = self.test.get(n) {
                    hits.set(id);
                }
                m &= m - 1;
            }
        }
    }
}

/// Which tests of a [`PathIndex`] match one path. The default pack has
/// 64 path tests: two words hold them without an allocation per path.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hits(SmallVec<[u64; 2]>);

impl Hits {
    fn set(&mut self, id: u32) {
        let (w, b) = (id as usize / 64, id % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    fn word(&self, w: usize) -> u64 {
        self.0.get(w).copied().unwrap_or(0)
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
        let abs = IndexSet::build(abs);
        let roots = roots.map(IndexSet::build);
        let built = abs.built && roots.iter().all(|r| r.built);
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
            .get_or(path, roots, |dirs| self.hits_uncached(path, roots, dirs))
    }

    fn hits_uncached(&self, path: &str, roots: &Roots<'_>, dirs: &mut DirHits<'_>) -> Hits {
        let mut hits = Hits(SmallVec::with_capacity(self.tests.div_ceil(64)));
        let mut scratch = Vec::new();
        self.abs.mark(0, path, dirs, &mut scratch, &mut hits);
        for r in Root::ALL {
            let i = r as usize;
            let set = &self.roots[i];
            if set.is_empty() && self.exact[i].is_empty() {
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
                set.mark(i as u8 + 1, rel, dirs, &mut scratch, &mut hits);
            }
        }
        hits
    }
}
