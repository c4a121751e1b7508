//! Blast radius: what a whole action destroys, counted by kind.
//!
//! For the commands that destroy trees (`rm -r`, `git clean`, `find
//! -delete`), `dd of=FILE` (which overwrites FILE in place), and the git
//! commands that overwrite the working tree (`git
//! reset --hard`, `git checkout -- PATH`, `git checkout -f`, `git restore`)
//! the blast is previewed when the command starts, by walking what it
//! names, before anything is gone; for every action it also accumulates
//! from the measured records.

use std::path::{Path, PathBuf};

use super::recover::{rel_path, Measurer};
use crate::record::{Location, Measured, ObjectKind, Recovery};

/// Files a preview walks at most (the count then says "at least").
pub const WALK_LIMIT: usize = 20_000;

pub use crate::record::Blast;

impl Blast {
    pub fn add(&mut self, m: &Measured) {
        if matches!(m.object, ObjectKind::Directory | ObjectKind::None) {
            return;
        }
        self.files += 1;
        match m.recovery {
            Recovery::Irreversible => {
                self.irreversible += 1;
                if !matches!(m.location, Location::Workspace | Location::Scratch) {
                    self.outside += 1;
                }
            }
            Recovery::Recoverable => self.recoverable += 1,
            Recovery::Reversible => self.reversible += 1,
            Recovery::Unmeasured => self.unmeasured += 1,
        }
        match m.object {
            ObjectKind::Untracked => self.untracked += 1,
            ObjectKind::Modified => self.modified += 1,
            ObjectKind::GitInternal if m.recovery == Recovery::Irreversible => {
                self.git_internal += 1
            }
            _ => {}
        }
    }

    /// Undoes [`Blast::add`] of `m`.
    fn take(&mut self, m: &Measured) {
        if matches!(m.object, ObjectKind::Directory | ObjectKind::None) {
            return;
        }
        self.files = self.files.saturating_sub(1);
        let count = match m.recovery {
            Recovery::Irreversible => {
                if !matches!(m.location, Location::Workspace | Location::Scratch) {
                    self.outside = self.outside.saturating_sub(1);
                }
                &mut self.irreversible
            }
            Recovery::Recoverable => &mut self.recoverable,
            Recovery::Reversible => &mut self.reversible,
            Recovery::Unmeasured => &mut self.unmeasured,
        };
        *count = count.saturating_sub(1);
        match m.object {
            ObjectKind::Untracked => self.untracked = self.untracked.saturating_sub(1),
            ObjectKind::Modified => self.modified = self.modified.saturating_sub(1),
            ObjectKind::GitInternal if m.recovery == Recovery::Irreversible => {
                self.git_internal = self.git_internal.saturating_sub(1)
            }
            _ => {}
        }
    }

    /// Counts again as this run's own the files of the preview that
    /// `created` or `built` now hold (made by records the preview ran
    /// ahead of): they destroy nothing that existed before the run.
    pub fn forget_own(
        &mut self,
        created: &super::pathset::PathSet,
        built: &super::pathset::PathSet,
    ) {
        let mut seen = std::mem::take(&mut self.seen);
        for (p, m) in seen.iter_mut() {
            if m.recovery != Recovery::Irreversible || !(created.contains(p) || built.contains(p)) {
                continue;
            }
            self.take(m);
            *m = Measured {
                recovery: Recovery::Reversible,
                location: m.location,
                object: ObjectKind::Created,
                why: std::borrow::Cow::Borrowed("created earlier in this run"),
            };
            self.add(m);
        }
        self.seen = seen;
    }

    /// The counts alone, without what was seen by path (what an exec
    /// record carries).
    pub fn counts(&self) -> Blast {
        Blast {
            files: self.files,
            irreversible: self.irreversible,
            untracked: self.untracked,
            modified: self.modified,
            git_internal: self.git_internal,
            outside: self.outside,
            recoverable: self.recoverable,
            reversible: self.reversible,
            unmeasured: self.unmeasured,
            refs: self.refs,
            truncated: self.truncated,
            seen: Default::default(),
        }
    }

    /// The larger of each count (a preview and what was measured since).
    pub fn max(&mut self, o: &Blast) {
        self.files = self.files.max(o.files);
        self.irreversible = self.irreversible.max(o.irreversible);
        self.untracked = self.untracked.max(o.untracked);
        self.modified = self.modified.max(o.modified);
        self.git_internal = self.git_internal.max(o.git_internal);
        self.outside = self.outside.max(o.outside);
        self.recoverable = self.recoverable.max(o.recoverable);
        self.reversible = self.reversible.max(o.reversible);
        self.unmeasured = self.unmeasured.max(o.unmeasured);
        self.refs = self.refs.max(o.refs);
        self.truncated |= o.truncated;
    }

    /// "212 files (14 untracked, 3 modified since the index, 195
    /// recoverable from git)" (counts of zero are left out).
    pub fn describe(&self) -> String {
        let more = if self.truncated { "at least " } else { "" };
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        for (n, what) in [
            (self.untracked, "untracked"),
            (self.modified, "modified since the index"),
            (self.recoverable, "recoverable from git"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if self.git_internal > 0 {
            parts.push(plural(self.git_internal, ".git internal", ".git internals"));
        }
        if self.outside > 0 {
            parts.push(format!(
                "{} irreversible outside the workspace",
                self.outside
            ));
        }
        let files = if self.refs > 0 && self.files == 0 {
            plural(self.refs, "ref or stash entry", "refs or stash entries")
        } else {
            plural(self.files, "file", "files")
        };
        if parts.is_empty() {
            format!("{more}{files}")
        } else {
            format!("{more}{files} ({})", parts.join(", "))
        }
    }
}

/// Preview what a command would destroy, before it runs. `None` when the
/// command is not one that destroys trees or the working tree.
pub fn preview(argv: &[String], cwd: &Path, m: &mut Measurer) -> Option<Blast> {
    preview_in(argv, cwd, Path::new("/"), m)
}

/// [`preview`] for a command whose paths resolve under `root` (a
/// sandbox's or container's root seen from abm, `/proc/PID/root`) from
/// working directory `cwd` (`/proc/PID/cwd`): its absolute arguments name
/// files under `root`, never abm's own. An argument that leads out of both
/// (`..` above the working directory) is not counted.
pub fn preview_in(argv: &[String], cwd: &Path, root: &Path, m: &mut Measurer) -> Option<Blast> {
    let prog = super::group::program_name(argv.first()?);
    let args = &argv[1..];
    let own_view = root == Path::new("/");
    let abs = |p: &str| -> Option<PathBuf> {
        match p.strip_prefix('/') {
            Some(rel) if !own_view => {
                let inside = normalize(&Path::new("/").join(rel));
                Some(root.join(inside.strip_prefix("/").unwrap_or(&inside)))
            }
            _ => {
                let joined = normalize(&cwd.join(p));
                (own_view || joined.starts_with(cwd)).then_some(joined)
            }
        }
    };
    let positionals = |args: &[String]| -> Vec<String> {
        let mut out = Vec::new();
        let mut after = false;
        for a in args {
            if after || !a.starts_with('-') || a == "-" {
                out.push(a.clone());
            } else if a == "--" {
                after = true;
            }
        }
        out
    };
    let short = |args: &[String], c: char, long: &str| {
        args.iter().any(|a| {
            a == long || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c))
        })
    };
    let mut blast = Blast::default();
    match prog {
        "rm" => {
            let recursive = short(args, 'r', "--recursive") || short(args, 'R', "--recursive");
            for t in positionals(args) {
                if let Some(p) = abs(&t) {
                    walk(&p, recursive, m, &mut blast, &|_| true);
                }
            }
        }
        // `dd of=FILE` overwrites FILE in place (with `conv=notrunc` too).
        "dd" => {
            let outs: Vec<&str> = args.iter().filter_map(|a| a.strip_prefix("of=")).collect();
            if outs.is_empty() {
                return None;
            }
            for o in outs {
                if let Some(p) = abs(o) {
                    walk(&p, false, m, &mut blast, &|_| true);
                }
            }
        }
        "find" if args.iter().any(|a| a == "-delete") => {
            let starts: Vec<&String> = args
                .iter()
                .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
                .collect();
            // What the expression selects, where it is a conjunction of
            // tests this preview knows; any file otherwise.
            let select = FindSelect::parse(&args[starts.len()..]);
            for t in starts {
                if let Some(p) = abs(t) {
                    let keep = |f: &Path| select.as_ref().is_none_or(|s| s.keeps(t, &p, f));
                    walk(&p, true, m, &mut blast, &keep);
                }
            }
        }
        "git" => {
            let pos = positionals(args);
            let sub = pos.first()?.as_str();
            let rest = &args[args.iter().position(|a| a == sub)? + 1..];
            let paths: Vec<PathBuf> = positionals(rest).iter().filter_map(|p| abs(p)).collect();
            let root = m.repo_root(&cwd.join("x"))?;
            match sub {
                "clean" if short(rest, 'f', "--force") || short(rest, 'n', "--dry-run") => {
                    if short(rest, 'n', "--dry-run") {
                        return None;
                    }
                    // -x: ignored files too; -X: only ignored files.
                    let only_ignored = short(rest, 'X', "-X");
                    let with_ignored = short(rest, 'x', "-x") || only_ignored;
                    let which = (with_ignored, only_ignored);
                    let dirs = short(rest, 'd', "-d");
                    let starts = if paths.is_empty() {
                        vec![cwd.to_path_buf()]
                    } else {
                        paths
                    };
                    for s in starts {
                        clean_walk(&root, &s, dirs, which, m, &mut blast);
                    }
                }
                "reset" if rest.iter().any(|a| a == "--hard") => {
                    worktree_changes(&root, std::slice::from_ref(&root), m, &mut blast)
                }
                // `git checkout PATHSPEC...` without `--`: the operands
                // that name no branch or tag but a path are pathspecs
                // (`git checkout .`, `git checkout src/a.rs`); a branch
                // switch keeps local changes (git refuses otherwise).
                "checkout"
                    if !rest.iter().any(|a| {
                        a == "--" || a == "-f" || a == "--force" || a == "-b" || a == "-B"
                    }) =>
                {
                    let specs: Vec<PathBuf> = positionals(rest)
                        .iter()
                        .filter(|p| !names_ref(&root, p))
                        .filter_map(|p| abs(p))
                        .filter(|p| std::fs::symlink_metadata(p).is_ok())
                        .collect();
                    if specs.is_empty() {
                        return None;
                    }
                    worktree_changes(&root, &specs, m, &mut blast)
                }
                "checkout" | "restore" | "switch"
                    if rest.iter().any(|a| {
                        a == "--" || a == "-f" || a == "--force" || a == "--discard-changes"
                    }) || (sub == "restore" && !rest.iter().any(|a| a == "--staged")) =>
                {
                    let after_dd: Vec<PathBuf> = match rest.iter().position(|a| a == "--") {
                        Some(i) => rest[i + 1..].iter().filter_map(|p| abs(p)).collect(),
                        None if sub == "restore" && !paths.is_empty() => paths,
                        None => vec![root.clone()],
                    };
                    worktree_changes(&root, &after_dd, m, &mut blast)
                }
                // Stash entries exist nowhere else, but those this run
                // pushed are its own to drop.
                "stash" if matches!(pos.get(1).map(String::as_str), Some("drop" | "clear")) => {
                    let repo = m.repo(&root)?;
                    let (git_dir, common) = (repo.git_dir.clone(), repo.common.clone());
                    let entries = super::git::stash_entries(&git_dir);
                    let clear = pos[1] == "clear";
                    let n = if clear {
                        0
                    } else {
                        pos.get(2).map_or(Some(0), |s| stash_index(s))?
                    };
                    // Previewed after the command ran (entries the last
                    // read had are gone): they are what it dropped.
                    let before = m
                        .stashes
                        .get(&common)
                        .filter(|b| m.late && b.len() > entries.len());
                    let dropped: Vec<String> = match before {
                        Some(b) => {
                            let gone: Vec<&String> =
                                b.iter().filter(|id| !entries.contains(id)).collect();
                            if clear {
                                gone.into_iter().cloned().collect()
                            } else {
                                let nth = b.get(n).filter(|id| gone.contains(id));
                                nth.or(gone.first().copied()).into_iter().cloned().collect()
                            }
                        }
                        None if clear => entries.clone(),
                        None => entries.get(n).into_iter().cloned().collect(),
                    };
                    // What the stash holds once the command has run.
                    let after = entries
                        .iter()
                        .filter(|id| !dropped.contains(id))
                        .cloned()
                        .collect();
                    m.stashes.insert(common, after);
                    for id in &dropped {
                        blast.refs += 1;
                        if super::git::written_since(&git_dir, id, m.since) {
                            blast.recoverable += 1;
                        } else {
                            blast.irreversible += 1;
                        }
                    }
                }
                // Local branches deleted: lost when no other ref holds
                // their commits and the run did not write them.
                "branch" if short(rest, 'd', "--delete") || short(rest, 'D', "--delete") => {
                    let repo = m.repo(&root)?;
                    let (git_dir, common) = (repo.git_dir.clone(), repo.common.clone());
                    let names = positionals(rest);
                    if names.is_empty() {
                        return None;
                    }
                    // A name judged here leaves the remembered tips: the
                    // next read must not take the old read's word for it.
                    m.tips_read.remove(&common);
                    for n in names {
                        let seen = m.tips.get_mut(&common);
                        let Some(loses) =
                            super::git::branch_loses(&root, &git_dir, &n, m.since, seen)
                        else {
                            continue;
                        };
                        blast.refs += 1;
                        if loses {
                            blast.irreversible += 1;
                        } else {
                            blast.recoverable += 1;
                        }
                    }
                }
                // Remote branches or tags deleted: lost when no other ref
                // holds their commits.
                "push" => {
                    let del = rest.iter().any(|a| a == "--delete" || a == "-d");
                    let pos = positionals(rest);
                    let remote = pos.first()?.clone();
                    let names: Vec<String> = pos[1..]
                        .iter()
                        .filter_map(|r| {
                            if del {
                                Some(r.clone())
                            } else {
                                r.strip_prefix(':')
                                    .filter(|n| !n.is_empty())
                                    .map(str::to_owned)
                            }
                        })
                        .collect();
                    if names.is_empty() {
                        return None;
                    }
                    let git_dir = m.repo(&root)?.git_dir.clone();
                    for n in names {
                        blast.refs += 1;
                        if super::git::remote_ref_loses(&root, &git_dir, &remote, &n) {
                            blast.irreversible += 1;
                        } else {
                            blast.recoverable += 1;
                        }
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    }
    Some(blast)
}

/// The index of a stash named `stash@{N}` or `N`.
fn stash_index(s: &str) -> Option<usize> {
    s.strip_prefix("stash@{")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(s)
        .parse()
        .ok()
}

/// The files a `find ... -delete` expression selects, for the expressions
/// that are a conjunction (no `-o`, `!`, parentheses or `,`) of tests:
/// `-name`, `-iname`, `-path`/`-wholename` (`-ipath`), `-maxdepth`,
/// `-mindepth` and `-type`. Other tests of a conjunction only select
/// fewer files: they are left out, and the preview counts at least what
/// the command deletes. A directory is deleted only when it is empty
/// (what it held was selected and counted, or it is not deleted), so only
/// files count.
struct FindSelect {
    /// Globs on the name, and on the path as find prints it.
    names: Vec<globset::GlobMatcher>,
    paths: Vec<globset::GlobMatcher>,
    depth: (usize, usize),
    /// `-type` without `f` or `l` (only directories, devices...): no file.
    no_files: bool,
}

impl FindSelect {
    fn parse(expr: &[String]) -> Option<FindSelect> {
        let glob = |p: &str, fold: bool| {
            globset::GlobBuilder::new(p)
                .literal_separator(false)
                .backslash_escape(true)
                .case_insensitive(fold)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        };
        let mut s = FindSelect {
            names: Vec::new(),
            paths: Vec::new(),
            depth: (0, usize::MAX),
            no_files: false,
        };
        let mut it = expr.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "-o" | "-or" | "!" | "-not" | "(" | ")" | "," => return None,
                "-name" | "-iname" => {
                    let fold = a == "-iname";
                    s.names.push(glob(it.next()?, fold)?);
                }
                "-path" | "-wholename" | "-ipath" | "-iwholename" => {
                    let fold = a.starts_with("-i");
                    s.paths.push(glob(it.next()?, fold)?);
                }
                "-maxdepth" => s.depth.1 = it.next()?.parse().ok()?,
                "-mindepth" => s.depth.0 = it.next()?.parse().ok()?,
                "-type" => {
                    let t = it.next()?;
                    s.no_files |= !t.split(',').any(|c| c == "f" || c == "l");
                }
                // An action's own words run to `;` or `+`.
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    it.find(|w| *w == ";" || *w == "+")?;
                }
                _ => {}
            }
        }
        Some(s)
    }

    /// Whether file `f`, found under `start` (given as `arg`), is selected.
    fn keeps(&self, arg: &str, start: &Path, f: &Path) -> bool {
        let rel = f.strip_prefix(start).unwrap_or(f);
        let depth = rel.components().count();
        if self.no_files || depth < self.depth.0 || depth > self.depth.1 {
            return false;
        }
        let name = f.file_name().unwrap_or_default();
        if !self.names.iter().all(|g| g.is_match(name)) {
            return false;
        }
        let shown = match rel.as_os_str().is_empty() {
            true => PathBuf::from(arg),
            false => Path::new(arg).join(rel),
        };
        self.paths.iter().all(|g| g.is_match(&shown))
    }
}

fn walk(p: &Path, recursive: bool, m: &mut Measurer, b: &mut Blast, keep: &dyn Fn(&Path) -> bool) {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    walk_entry(p, meta.is_dir(), recursive, m, b, keep);
}

/// [`walk`] below its start: whether an entry is a directory comes from
/// the listing (`d_type`; the entry is stat'ed only where the file system
/// does not say), not from a stat of each path.
fn walk_entry(
    p: &Path,
    is_dir: bool,
    recursive: bool,
    m: &mut Measurer,
    b: &mut Blast,
    keep: &dyn Fn(&Path) -> bool,
) {
    if b.files as usize >= WALK_LIMIT {
        b.truncated = true;
        return;
    }
    if is_dir {
        if !recursive {
            return;
        }
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            walk_entry(&e.path(), t.is_dir(), true, m, b, keep);
        }
    } else if keep(p) {
        let by_git = false;
        let path = p.to_string_lossy().into_owned();
        let meas = m.measure(&path, by_git);
        b.add(&meas);
        b.seen.insert(path, meas);
    }
}

/// `which`: (ignored files too, only ignored files), as `git clean -x` and
/// `git clean -X` select.
fn clean_walk(
    root: &Path,
    start: &Path,
    dirs: bool,
    which: (bool, bool),
    m: &mut Measurer,
    b: &mut Blast,
) {
    let (with_ignored, only_ignored) = which;
    let Ok(rd) = std::fs::read_dir(start) else {
        return;
    };
    for e in rd.flatten() {
        if b.files as usize >= WALK_LIMIT {
            b.truncated = true;
            return;
        }
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        let rel = rel_path(root, &p);
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        let Some(repo) = m.repo(root) else { return };
        let ignored = repo.is_ignored(&rel, is_dir);
        if ignored && !with_ignored {
            continue;
        }
        if is_dir {
            if dirs || !repo.entries_under(rel.as_bytes()).is_empty() {
                clean_walk(root, &p, dirs, which, m, b);
            }
        } else if only_ignored && !ignored {
            // `-X` leaves untracked files that are not ignored.
        } else if repo.entry(rel.as_bytes()).is_none() {
            let path = p.to_string_lossy().into_owned();
            let meas = m.measure(&path, false);
            b.add(&meas);
            b.seen.insert(path, meas);
        }
    }
}

/// Tracked files under `paths` whose content differs from the index: what
/// `reset --hard` / `checkout -- PATH` overwrite.
fn worktree_changes(root: &Path, paths: &[PathBuf], m: &mut Measurer, b: &mut Blast) {
    let Some(repo) = m.repo(root) else { return };
    let mut entries = Vec::new();
    for p in paths {
        let rel = rel_path(root, p);
        let rel = if p == root { String::new() } else { rel };
        if let Some(e) = repo.entry(rel.as_bytes()) {
            entries.push((rel.into_bytes(), e));
        } else {
            entries.extend(repo.entries_under(rel.as_bytes()));
        }
    }
    for (rel, e) in entries {
        let path = root.join(String::from_utf8_lossy(&rel).as_ref());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        b.files += 1;
        let same_stat = meta.len() == u64::from(e.size)
            && (
                std::os::unix::fs::MetadataExt::mtime(&meta) as u32,
                std::os::unix::fs::MetadataExt::mtime_nsec(&meta) as u32,
            ) == e.mtime;
        if same_stat || super::git::file_blob_id(&path, super::recover::HASH_LIMIT) == Some(e.sha) {
            b.recoverable += 1;
        } else {
            b.modified += 1;
            b.irreversible += 1;
        }
    }
}

/// Whether `name` is a branch, tag or remote-tracking ref of the
/// repository at `root` (loose or packed), or `HEAD`.
fn names_ref(root: &Path, name: &str) -> bool {
    if name.starts_with("HEAD")
        || name.contains('^')
        || name.contains('@')
        || (name.contains('~') && !name.starts_with('~'))
    {
        return true;
    }
    let git = root.join(".git");
    if ["refs/heads", "refs/tags", "refs/remotes"]
        .iter()
        .any(|d| git.join(d).join(name).is_file())
    {
        return true;
    }
    std::fs::read_to_string(git.join("packed-refs")).is_ok_and(|t| {
        t.lines().any(|l| {
            l.split_once(' ').is_some_and(|(_, r)| {
                ["refs/heads/", "refs/tags/", "refs/remotes/"]
                    .iter()
                    .any(|d| r.strip_prefix(d) == Some(name))
            })
        })
    })
}

/// `..` and `.` resolved lexically (`/w/../billing` → `/billing`).
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::scope::Locator;

    /// `find -delete` is previewed by what its tests select, not by all it
    /// walks; an expression this preview cannot narrow counts every file.
    #[test]
    fn find_delete_is_previewed_by_what_it_selects() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        for f in [
            "a.pyc",
            "src/b.pyc",
            "src/deep/c.PYC",
            "src/notes.txt",
            "keep.txt",
        ] {
            let p = ws.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        let mut m = Measurer::new(Locator::new(&ws, &tmp.path().join("home")));
        let mut seen = |words: &[&str]| -> Vec<String> {
            let argv: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            let b = preview(&argv, &ws, &mut m).expect("find -delete is previewed");
            let mut v: Vec<String> = b
                .seen
                .keys()
                .map(|k| {
                    k.strip_prefix(&format!("{}/", ws.display()))
                        .unwrap()
                        .to_owned()
                })
                .collect();
            v.sort();
            assert_eq!(b.files as usize, v.len());
            v
        };
        let pyc = ["a.pyc", "src/b.pyc"];
        assert_eq!(seen(&["find", ".", "-name", "*.pyc", "-delete"]), pyc);
        assert_eq!(
            seen(&["find", ".", "-type", "f", "-iname", "*.pyc", "-delete"]),
            ["a.pyc", "src/b.pyc", "src/deep/c.PYC"]
        );
        assert_eq!(
            seen(&["find", ".", "-maxdepth", "1", "-name", "*.pyc", "-delete"]),
            ["a.pyc"]
        );
        assert_eq!(
            seen(&["find", ".", "-path", "./src/*", "-name", "*.pyc", "-delete"]),
            ["src/b.pyc"]
        );
        // A test it does not know (-mtime) only narrows: left out.
        assert_eq!(
            seen(&["find", ".", "-name", "*.pyc", "-mtime", "-7", "-delete"]),
            pyc
        );
        // Directories only: no file is deleted (a directory only when empty).
        assert!(seen(&["find", ".", "-type", "d", "-empty", "-delete"]).is_empty());
        // -o widens: every file counts.
        assert_eq!(
            seen(&["find", ".", "-name", "*.pyc", "-o", "-name", "*.txt", "-delete"]).len(),
            5
        );
        assert_eq!(seen(&["find", "src", "-delete"]).len(), 3);
    }
}
