//! Blast radius: what a whole action destroys, counted by kind.
//!
//! For the commands that destroy trees (`rm -r`, `git clean`, `find
//! -delete`) and the git commands that overwrite the working tree (`git
//! reset --hard`, `git checkout -- PATH`, `git checkout -f`, `git restore`)
//! the blast is previewed when the command starts, by walking what it
//! names, before anything is gone; for every action it also accumulates
//! from the measured records.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::recover::{rel_path, Measurer};
use crate::record::{Location, Measured, ObjectKind, Recovery};

/// Files a preview walks at most (the count then says "at least").
pub const WALK_LIMIT: usize = 20_000;

/// Files a question names at most.
pub const NAMED: usize = 6;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Objects an action destroys, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Blast {
    /// Files it removes or overwrites.
    pub files: u64,
    pub irreversible: u64,
    pub untracked: u64,
    pub modified: u64,
    /// `.git` internals removed outside git.
    pub git_internal: u64,
    /// Irreversible objects outside the workspace.
    pub outside: u64,
    pub recoverable: u64,
    pub reversible: u64,
    pub unmeasured: u64,
    /// Branches, tags or stash entries a git command removes (counted in
    /// `irreversible` when no other ref holds their commits).
    #[serde(skip_serializing_if = "is_zero")]
    pub refs: u64,
    /// Files whose owner or mode a recursive `chown`/`chgrp`/`chmod`
    /// would change where the previous values are recorded nowhere
    /// (counted in `irreversible` too).
    #[serde(skip_serializing_if = "is_zero")]
    pub attributes: u64,
    /// Up to [`NAMED`] of the files counted irreversible, to name in a
    /// question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// The walk stopped at [`WALK_LIMIT`]: the counts are lower bounds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What the preview measured, by path: the judge after the call uses
    /// it for a file the command has already removed, so that it judges
    /// the file as the judge before the call did (one judge).
    #[serde(skip)]
    pub seen: std::collections::HashMap<String, Measured>,
}

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

    /// [`add`](Self::add) a measurement of `path`, remembering the path
    /// (to name it) when it is lost.
    pub fn add_path(&mut self, path: &str, m: &Measured) {
        self.add(m);
        if m.recovery == Recovery::Irreversible
            && !matches!(m.object, ObjectKind::Directory | ObjectKind::None)
            && self.lost.len() < NAMED
        {
            self.lost.push(path.to_owned());
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
        self.attributes = self.attributes.max(o.attributes);
        self.refs = self.refs.max(o.refs);
        for p in &o.lost {
            if self.lost.len() < NAMED && !self.lost.contains(p) {
                self.lost.push(p.clone());
            }
        }
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
        if self.refs > 0 {
            parts.push(plural(
                self.refs,
                "branch, tag or stash entry",
                "branches, tags or stash entries",
            ));
        }
        if self.attributes > 0 {
            parts.push(format!(
                "{} whose owner or mode would change with the previous values recorded nowhere",
                self.attributes
            ));
        }
        let files = plural(self.files, "file", "files");
        let named = if self.lost.is_empty() {
            String::new()
        } else {
            let rest = self.irreversible.saturating_sub(self.lost.len() as u64);
            format!(
                "; lost: {}{}",
                self.lost.join(", "),
                if rest > 0 {
                    format!(" and {rest} more")
                } else {
                    String::new()
                }
            )
        };
        if parts.is_empty() {
            format!("{more}{files}{named}")
        } else {
            format!("{more}{files} ({}){named}", parts.join(", "))
        }
    }
}

/// Preview what a command would destroy, before it runs. `None` when the
/// command is not one that destroys trees or the working tree.
pub fn preview(argv: &[String], cwd: &Path, m: &mut Measurer) -> Option<Blast> {
    let prog = super::group::program_name(argv.first()?);
    let args = &argv[1..];
    let abs = |p: &str| -> PathBuf { normalize(&cwd.join(p)) };
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
                walk(&abs(&t), recursive, m, &mut blast, &|_| true);
            }
        }
        "find" if args.iter().any(|a| a == "-delete") => {
            // `find -H/-L/-P` options come before the starting points.
            let args: Vec<&String> = args
                .iter()
                .skip_while(|a| matches!(a.as_str(), "-H" | "-L" | "-P"))
                .collect();
            let starts: Vec<&String> = args
                .iter()
                .copied()
                .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
                .collect();
            let expr: Vec<&str> = args[starts.len()..].iter().map(|a| a.as_str()).collect();
            let f = super::find::Expr::parse(&expr);
            let starts = if starts.is_empty() {
                vec![".".to_owned()]
            } else {
                starts.into_iter().cloned().collect()
            };
            for t in starts {
                find_walk(&abs(&t), &t, 0, &f, m, &mut blast);
            }
        }
        "chown" | "chgrp" | "chmod" if short(args, 'R', "--recursive") => {
            let pos = positionals(args);
            let (spec, targets) = pos.split_first()?;
            let change = super::attrs::Change::parse(prog, spec)?;
            for t in targets {
                let target = abs(t);
                let root_like = m.is_root_like(&target);
                super::attrs::preview(&target, &change, root_like, m, &mut blast);
            }
        }
        "git" => {
            let pos = positionals(args);
            let sub = pos.first()?.as_str();
            let rest = &args[args.iter().position(|a| a == sub)? + 1..];
            let paths: Vec<PathBuf> = positionals(rest).iter().map(|p| abs(p)).collect();
            let root = m.repo_root(&cwd.join("x"))?;
            match sub {
                "clean" if short(rest, 'f', "--force") || short(rest, 'n', "--dry-run") => {
                    if short(rest, 'n', "--dry-run") {
                        return None;
                    }
                    let only_ignored = short(rest, 'X', "-X");
                    let with_ignored = short(rest, 'x', "-x") || only_ignored;
                    let dirs = short(rest, 'd', "-d");
                    let starts = if paths.is_empty() {
                        vec![cwd.to_path_buf()]
                    } else {
                        paths
                    };
                    let which = Clean {
                        dirs,
                        with_ignored,
                        only_ignored,
                    };
                    for s in starts {
                        if std::fs::symlink_metadata(&s).is_ok_and(|md| !md.is_dir()) {
                            clean_file(&root, &s, false, &which, m, &mut blast);
                        } else {
                            clean_walk(&root, &s, false, &which, m, &mut blast);
                        }
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
                        .map(|p| abs(p))
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
                        Some(i) => rest[i + 1..].iter().map(|p| abs(p)).collect(),
                        None if sub == "restore" && !paths.is_empty() => paths,
                        None => vec![root.clone()],
                    };
                    worktree_changes(&root, &after_dd, m, &mut blast)
                }
                // Remote branches or tags deleted: lost when no other
                // remote ref holds their commits.
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
                                r.strip_prefix(':').map(str::to_owned)
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
                            if blast.lost.len() < NAMED {
                                blast.lost.push(format!("{remote}/{n}"));
                            }
                        } else {
                            blast.recoverable += 1;
                        }
                    }
                }
                // Stash entries exist nowhere else.
                "stash" if matches!(pos.get(1).map(String::as_str), Some("drop" | "clear")) => {
                    let git_dir = m.repo(&root)?.git_dir.clone();
                    let n = super::git::stash_entries(&git_dir);
                    let n = if pos[1] == "drop" { n.min(1) } else { n };
                    blast.refs += n;
                    blast.irreversible += n;
                    if n > 0 {
                        blast.lost.push("stash entries".to_owned());
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    }
    Some(blast)
}

fn walk(p: &Path, recursive: bool, m: &mut Measurer, b: &mut Blast, keep: &dyn Fn(&Path) -> bool) {
    if b.files as usize >= WALK_LIMIT {
        b.truncated = true;
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if meta.is_dir() {
        if !recursive {
            return;
        }
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.flatten() {
            walk(&e.path(), true, m, b, keep);
        }
    } else if keep(p) {
        let by_git = false;
        let path = p.to_string_lossy().into_owned();
        let meas = m.measure(&path, by_git);
        b.add_path(&path, &meas);
        b.seen.insert(path, meas);
    }
}

/// Which files `git clean` removes: `-d` recurses into untracked
/// directories, `-x` also ignored files, `-X` only ignored files.
struct Clean {
    dirs: bool,
    with_ignored: bool,
    only_ignored: bool,
}

/// `under_ignored`: an ancestor directory is ignored (all below it is).
fn clean_walk(
    root: &Path,
    start: &Path,
    under_ignored: bool,
    which: &Clean,
    m: &mut Measurer,
    b: &mut Blast,
) {
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
        let ignored = under_ignored || repo.is_ignored(&rel, is_dir);
        if ignored && !which.with_ignored {
            continue;
        }
        if is_dir {
            let tracked_below = !repo.entries_under(rel.as_bytes()).is_empty();
            if which.dirs || tracked_below || (ignored && which.only_ignored) {
                clean_walk(root, &p, ignored, which, m, b);
            }
        } else {
            clean_file(root, &p, ignored, which, m, b);
        }
    }
}

fn clean_file(
    root: &Path,
    p: &Path,
    ignored: bool,
    which: &Clean,
    m: &mut Measurer,
    b: &mut Blast,
) {
    let rel = rel_path(root, p);
    let Some(repo) = m.repo(root) else { return };
    if repo.entry(rel.as_bytes()).is_some() {
        return;
    }
    let ignored = ignored || repo.is_ignored(&rel, false);
    if (ignored && !which.with_ignored) || (!ignored && which.only_ignored) {
        return;
    }
    let path = p.to_string_lossy().into_owned();
    let meas = m.measure(&path, false);
    b.add_path(&path, &meas);
    b.seen.insert(path, meas);
}

/// A `find ... -delete` walk: only what the expression selects is counted
/// (`find . -name '*.pyc' -delete` removes bytecode, not the tree). `shown`
/// is the path as find prints it (for `-path`).
fn find_walk(
    p: &Path,
    shown: &str,
    depth: usize,
    f: &super::find::Expr,
    m: &mut Measurer,
    b: &mut Blast,
) {
    if b.files as usize >= WALK_LIMIT {
        b.truncated = true;
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if meta.is_dir() {
        if f.max_depth.is_none_or(|d| depth < d) {
            if let Ok(rd) = std::fs::read_dir(p) {
                for e in rd.flatten() {
                    let name = e.file_name();
                    let child =
                        format!("{}/{}", shown.trim_end_matches('/'), name.to_string_lossy());
                    find_walk(&e.path(), &child, depth + 1, f, m, b);
                }
            }
        }
        return;
    }
    if depth < f.min_depth || !f.deletes(p, shown, &meta) {
        return;
    }
    let path = p.to_string_lossy().into_owned();
    let meas = m.measure(&path, false);
    b.add_path(&path, &meas);
    b.seen.insert(path, meas);
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
            if b.lost.len() < NAMED {
                b.lost.push(path.to_string_lossy().into_owned());
            }
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
