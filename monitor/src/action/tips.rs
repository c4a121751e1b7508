//! What the judge remembers of a repository's refs during a run: its
//! branch tips and stash entries, read when the run starts and when a git
//! command that changed the refs ends, so that a deletion judged from the
//! trace after it ran is judged on what it deleted.

use std::path::{Path, PathBuf};

use super::recover::Measurer;

impl Measurer {
    /// Adds the branch tips of the repository holding `dir` to
    /// [`Measurer::tips`] (names already known keep the tip seen first),
    /// and reads its stash entries into [`Measurer::stashes`].
    pub fn remember_tips(&mut self, dir: &Path) {
        if let Some(common) = self.common_of(dir) {
            self.read_refs(common);
        }
    }

    /// [`Self::remember_tips`] when a git command ended: read again only
    /// when its records `touched` the refs, or the repository's tips were
    /// never read (or a preview of a branch deletion set them aside).
    pub fn remember_tips_after(&mut self, dir: &Path, touched: bool) {
        let Some(common) = self.common_of(dir) else {
            return;
        };
        if touched || !self.tips_read.contains_key(&common) {
            self.read_refs(common);
        }
    }

    /// The common git directory of the repository holding `dir`.
    fn common_of(&mut self, dir: &Path) -> Option<PathBuf> {
        let root = self.repo_root_of_dir(dir)?;
        self.repo(&root).map(|r| r.common.clone())
    }

    fn read_refs(&mut self, common: PathBuf) {
        self.stashes
            .insert(common.clone(), super::git::stash_entries(&common));
        // Names already known keep their first tip: read again only what
        // may have changed since the last read.
        if self.tips_read.get(&common).is_some_and(|s| !s.changed()) {
            return;
        }
        let (now, stamp) = super::git::branch_tips_stamped(&common);
        self.tips_read.insert(common.clone(), stamp);
        let known = self.tips.entry(common).or_default();
        for (name, tip) in now {
            known.entry(name).or_insert(tip);
        }
    }
}
