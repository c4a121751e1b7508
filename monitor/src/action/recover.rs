//! Recoverability measured from the file system's state at the time of the
//! judgement, cheapest test first:
//!
//! 1. what this run created (no I/O), wherever it is: it holds only this
//!    run's own work;
//! 2. location and name (no I/O): credentials, databases, system files,
//!    caches, `.git` internals; then written by a build tool in the run;
//! 3. one `lstat`: gone already (unmeasured), empty, a directory, another
//!    hard link;
//! 4. the repository (cached per repository): ignored → regenerable when
//!    in a build or tool output directory or of an output kind, else
//!    irreversible (ignored is not regenerable); in the index → hash the
//!    content once and compare with the index blob, which must exist in
//!    the object store (loose or in a pack).

use std::borrow::Cow;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::git::{file_blob_id, Repo};
use super::pathset::PathSet;
use super::scope::{Locator, CACHE_DIRS};
use crate::record::{Location, Measured, ObjectKind, Op, Recovery};

/// Files larger than this are not hashed (a blob comparison would block
/// the workload too long); they count as modified.
pub const HASH_LIMIT: u64 = 64 << 20;

/// File names that hold data no build regenerates.
const DATABASE_SUFFIXES: &[&str] = &[
    ".sqlite", ".sqlite3", ".db", ".db3", ".mdb", ".ldb", ".rdb", ".dump",
];
const CREDENTIAL_NAMES: &[&str] = &[
    ".env",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "credentials",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    "authorized_keys",
    "known_hosts",
];
const CREDENTIAL_SUFFIXES: &[&str] = &[".pem", ".key", ".p12", ".pfx", ".kdbx", ".gpg"];

/// Measures what calls destroy, with caches per repository.
#[derive(Debug)]
pub struct Measurer {
    pub locator: Locator,
    repos: foldhash::HashMap<PathBuf, Repo>,
    /// Directory -> repository root (None: in no repository).
    repo_of: foldhash::HashMap<PathBuf, Option<PathBuf>>,
    /// Paths created by this run (and still holding what it created).
    pub created: PathSet,
    /// Paths written by build tools in this run.
    pub built: PathSet,
    /// Git directory → every branch and HEAD is on a remote, no stash.
    pushed: foldhash::HashMap<PathBuf, bool>,
    /// The last measurement's `lstat`: its path and what it found (taken by
    /// the judge right after, for the same record).
    last_lstat: Option<(String, std::fs::Metadata)>,
    /// When this run (or the agent session a hook judges for) started:
    /// git objects written since are its own (a stash entry it pushed).
    pub since: std::time::SystemTime,
    /// Branch tips seen earlier in the run, by common git directory: the
    /// workspace repository's at the start, every repository's after each
    /// git action ends (only ever added to). A deletion judged after it
    /// ran (a trace record arrives once the command is done) is judged on
    /// the tip the branch had, as the judge before the call does.
    pub tips: foldhash::HashMap<PathBuf, std::collections::HashMap<String, String>>,
    /// When [`Measurer::tips`] last read each repository's branches
    /// (dropped when a judged deletion takes a name out of it).
    pub(super) tips_read: foldhash::HashMap<PathBuf, super::git::RefsStamp>,
    /// The stash entries of each repository (common git directory), newest
    /// first, as last read (when the run started, when a git action that
    /// wrote under the refs ended) or as a previewed drop leaves them. A
    /// drop previewed after it ran, when its entry is gone, is judged on
    /// them.
    pub stashes: foldhash::HashMap<PathBuf, Vec<String>>,
    /// Previews may come after their command ran (the judge of a trace's
    /// records); false for a judge ahead of the call.
    pub late: bool,
    /// Judging for an agent session that abm does not watch call by call
    /// (`abm hook`): a file born (`statx` birth time) since [`Measurer::since`]
    /// is the session's own, as a file the run saw itself create is the
    /// run's ([`Measurer::created`]).
    pub born_own: bool,
    /// The SQLite databases in the workspace when the run started, with
    /// their tables ([`Measurer::remember_databases`]).
    pub databases: super::database::Databases,
}

impl Measurer {
    pub fn new(locator: Locator) -> Measurer {
        Measurer {
            locator,
            repos: Default::default(),
            repo_of: Default::default(),
            created: PathSet::new(),
            built: PathSet::new(),
            pushed: Default::default(),
            last_lstat: None,
            since: crate::core::clock::realtime_coarse(),
            tips: Default::default(),
            tips_read: Default::default(),
            stashes: Default::default(),
            late: true,
            born_own: false,
            databases: Default::default(),
        }
    }

    /// Remembers the SQLite databases under `dir` and their tables: a
    /// change an application commits to one later is judged by what it
    /// took from them ([`Measurer::database_commit`]).
    pub fn remember_databases(&mut self, dir: &Path) {
        self.databases.remember(dir, DATABASE_SUFFIXES);
    }

    /// The removal (or, in `journal_mode=TRUNCATE`, the emptying) of a
    /// rollback journal, `path`, of a database that was there when the run
    /// started: the commit of a change to its rows. When
    /// the change dropped or emptied tables that held rows then, what was
    /// lost; `None` otherwise (also for any other path). `action` is the
    /// action committing it: each loss is told to one action.
    pub fn database_commit(&mut self, path: &str, action: u64) -> Option<Measured> {
        let db = self.databases.of_journal(path)?;
        let lost = self.databases.lost(db, action);
        if lost.is_empty() {
            return None;
        }
        let what: Vec<String> = lost
            .iter()
            .map(|(t, rows, how)| format!("{how} table `{t}` ({rows})"))
            .collect();
        Some(Measured {
            recovery: Recovery::Irreversible,
            location: self.locator.locate(db, false),
            object: ObjectKind::Database,
            why: format!(
                "commits a change to the database {db} (removing or emptying its journal ends the transaction) that {}: rows it held when the run started, which exist nowhere else",
                what.join(", ")
            )
            .into(),
        })
    }

    /// Whether `p` was born since the session started ([`Measurer::born_own`]);
    /// false where the file system keeps no birth time.
    fn born_in_session(&self, p: &Path) -> bool {
        self.born_own
            && std::fs::symlink_metadata(p)
                .and_then(|m| m.created())
                .is_ok_and(|born| born >= self.since)
    }

    /// Forgets the last measurement's `lstat` (a new record is judged).
    pub fn forget_lstat(&mut self) {
        self.last_lstat = None;
    }

    /// The metadata the last measurement's `lstat` found for `path`, if
    /// it measured that path and found a file that is not a symbolic link
    /// (then `stat` would say the same).
    pub fn take_lstat(&mut self, path: &str) -> Option<std::fs::Metadata> {
        let (p, m) = self.last_lstat.take()?;
        (p == path && !m.file_type().is_symlink()).then_some(m)
    }

    /// The working tree root of the repository holding `path`.
    pub fn repo_root(&mut self, path: &Path) -> Option<PathBuf> {
        let dir = path.parent()?;
        self.repo_root_of_dir(dir)
    }

    pub(super) fn repo_root_of_dir(&mut self, dir: &Path) -> Option<PathBuf> {
        if let Some(r) = self.repo_of.get(dir) {
            return r.clone();
        }
        let found = if dir.join(".git").exists() {
            Some(dir.to_path_buf())
        } else {
            dir.parent().and_then(|p| self.repo_root_of_dir(p))
        };
        self.repo_of.insert(dir.to_path_buf(), found.clone());
        found
    }

    pub fn repo(&mut self, root: &Path) -> Option<&mut Repo> {
        if !self.repos.contains_key(root) {
            let r = Repo::open(root)?;
            self.repos.insert(root.to_path_buf(), r);
        }
        self.repos.get_mut(root)
    }

    /// A repository's index or objects changed (git ran): read them again.
    pub fn invalidate(&mut self, root: &Path) {
        if let Some(r) = self.repos.get_mut(root) {
            r.invalidate();
        }
        self.pushed.remove(&root.join(".git"));
    }

    /// Whether deleting this git directory loses no commit: every local
    /// branch and HEAD point at a commit a remote-tracking ref also points
    /// at, and there is no stash (reflogs aside, a clone brings it all
    /// back). Read once per git directory until git runs again.
    fn all_on_a_remote(&mut self, git_dir: &Path) -> bool {
        if let Some(p) = self.pushed.get(git_dir) {
            return *p;
        }
        let p = super::git::all_on_a_remote(git_dir);
        self.pushed.insert(git_dir.to_path_buf(), p);
        p
    }

    /// Measure what the call `op` on `path` destroys. rmdir(2) removes
    /// only an empty directory (the kernel refuses with ENOTEMPTY
    /// otherwise): the files it held, if any, were removed and judged one
    /// by one before it, so it loses nothing, wherever it is.
    pub fn measure_effect(&mut self, path: &str, op: Option<Op>, by_git: bool) -> Measured {
        if op != Some(Op::Rmdir) {
            return self.measure(path, by_git);
        }
        let in_repo = self.repo_root(Path::new(path)).is_some();
        Measured {
            recovery: Recovery::Reversible,
            location: self.locator.locate(path, in_repo),
            object: ObjectKind::Directory,
            why: "an empty directory: rmdir removes nothing else".into(),
        }
    }

    /// An open that created `path` (the kernel said so at its exit):
    /// nothing was at that name before the call, so it destroyed nothing;
    /// no I/O.
    pub fn created_by_call(&mut self, path: &str) -> Measured {
        self.destroys_nothing(
            path,
            ObjectKind::Created,
            "created by this call: nothing was at this name before",
        )
    }

    /// A call on a name that does not exist (it fails with `ENOENT` or
    /// `ENOTDIR`): it destroys nothing; no I/O.
    pub fn absent(&mut self, path: &str) -> Measured {
        self.destroys_nothing(
            path,
            ObjectKind::None,
            "no such file: the call fails and destroys nothing",
        )
    }

    /// A call known, without looking at the file, to destroy nothing.
    fn destroys_nothing(&mut self, path: &str, object: ObjectKind, why: &'static str) -> Measured {
        self.last_lstat = None;
        let in_repo = self.repo_root(Path::new(path)).is_some();
        Measured {
            recovery: Recovery::Reversible,
            location: self.locator.locate(path, in_repo),
            object,
            why: Cow::Borrowed(why),
        }
    }

    /// Measure what removing or overwriting the content of `path` loses.
    /// `by_git`: the acting action is git itself (its own housekeeping).
    pub fn measure(&mut self, path: &str, by_git: bool) -> Measured {
        self.last_lstat = None;
        let p = Path::new(path);
        let in_repo = self.repo_root(p).is_some();
        let location = self.locator.locate(path, in_repo);
        let m = |recovery, object, why: &'static str| Measured {
            recovery,
            location,
            object,
            why: Cow::Borrowed(why),
        };
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // What this run created holds only this run's work, wherever it
        // is: a clone made in a temporary directory, a test's database.
        if self.created.contains(path) {
            return m(
                Recovery::Reversible,
                ObjectKind::Created,
                "created earlier in this run",
            );
        }
        if self.born_in_session(p) {
            return m(
                Recovery::Reversible,
                ObjectKind::Created,
                "created earlier in this agent session",
            );
        }
        // 1. Names and places (no I/O).
        if let Some(i) = path
            .find("/.git/")
            .or_else(|| path.ends_with("/.git").then(|| path.len() - 5))
        {
            let after = &path[i + 5..];
            let housekeeping = after.ends_with(".lock")
                || after.contains("/tmp_")
                || name.starts_with("tmp_obj_")
                || name.starts_with(".tmp");
            let git_dir = Path::new(&path[..i + 5]);
            return if by_git || housekeeping {
                m(
                    Recovery::Reversible,
                    ObjectKind::GitInternal,
                    "git's own bookkeeping inside .git",
                )
            } else if self.all_on_a_remote(git_dir) {
                m(
                    Recovery::Recoverable,
                    ObjectKind::GitInternal,
                    ".git internals of a repository whose branches are all on a remote: a clone brings them back",
                )
            } else {
                m(
                    Recovery::Irreversible,
                    ObjectKind::GitInternal,
                    ".git internals changed outside git: commits, stashes and reflogs not on any remote are lost",
                )
            };
        }
        if location != Location::Protected && installed_by_package_manager(path) {
            return m(
                Recovery::Reversible,
                ObjectKind::BuildOutput,
                "installed by a package manager (site-packages, node_modules): reinstalling regenerates it",
            );
        }
        if CREDENTIAL_NAMES.contains(&name)
            || name.starts_with(".env.")
            || CREDENTIAL_SUFFIXES.iter().any(|s| name.ends_with(s))
        {
            return m(
                Recovery::Irreversible,
                ObjectKind::Credential,
                "a credential or secrets file: nothing regenerates it",
            );
        }
        if DATABASE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
            return m(
                Recovery::Irreversible,
                ObjectKind::Database,
                "a database file: its data exists nowhere else",
            );
        }
        if location == Location::Protected {
            return m(
                Recovery::Irreversible,
                ObjectKind::System,
                "system configuration, logs, history or accounts",
            );
        }
        if self.locator.under_any(path, CACHE_DIRS) {
            return m(
                Recovery::Reversible,
                ObjectKind::Cache,
                "a tool cache: downloaded or rebuilt on demand",
            );
        }
        // 2. This run's own work (built output below).
        if self.built.contains(path) {
            return m(
                Recovery::Reversible,
                ObjectKind::BuildOutput,
                "written by a build tool in this run",
            );
        }
        // 3. One lstat.
        let meta = std::fs::symlink_metadata(p);
        let repo_root = self.repo_root(p);
        let Ok(meta) = meta else {
            return self.measure_gone(path, repo_root.as_deref(), location);
        };
        self.last_lstat = Some((path.to_owned(), meta.clone()));
        if meta.is_dir() {
            return m(
                Recovery::Reversible,
                ObjectKind::Directory,
                "a directory: its files are judged one by one",
            );
        }
        if meta.file_type().is_symlink() {
            return m(
                Recovery::Reversible,
                ObjectKind::Empty,
                "a symbolic link: its target is untouched",
            );
        }
        // An empty file loses nothing; in a repository, only when git
        // knows it (tracked or ignored): an untracked file is judged by its
        // standing, as the judge after the call must (it cannot see the
        // size of a file already gone).
        if meta.len() == 0 && repo_root.is_none() {
            return m(Recovery::Reversible, ObjectKind::Empty, "an empty file");
        }
        if meta.nlink() > 1 {
            return m(
                Recovery::Recoverable,
                ObjectKind::Linked,
                "another hard link keeps the content",
            );
        }
        // 4. The repository.
        let Some(root) = repo_root else {
            return if location == Location::Scratch {
                m(
                    Recovery::Reversible,
                    ObjectKind::Loose,
                    "a temporary file outside any repository",
                )
            } else {
                m(
                    Recovery::Irreversible,
                    ObjectKind::Loose,
                    "in no repository: no copy exists",
                )
            };
        };
        let rel = rel_path(&root, p);
        let Some(repo) = self.repo(&root) else {
            return m(
                Recovery::Irreversible,
                ObjectKind::Untracked,
                "the repository could not be opened",
            );
        };
        match repo.entry(rel.as_bytes()) {
            Some(_) if meta.len() == 0 => m(
                Recovery::Reversible,
                ObjectKind::Empty,
                "an empty file (tracked: its committed version is in git)",
            ),
            None if meta.len() == 0 && repo.is_ignored(&rel, false) => {
                m(Recovery::Reversible, ObjectKind::Empty, "an empty file")
            }
            Some(e) => {
                if u64::from(e.size) != meta.len() & 0xffff_ffff {
                    return m(
                        Recovery::Irreversible,
                        ObjectKind::Modified,
                        "modified since the index: the changes exist nowhere else",
                    );
                }
                let id = file_blob_id(p, HASH_LIMIT);
                if id != Some(e.sha) {
                    return m(
                        Recovery::Irreversible,
                        ObjectKind::Modified,
                        "modified since the index: the changes exist nowhere else",
                    );
                }
                if repo.has_object(&e.sha) {
                    m(
                        Recovery::Recoverable,
                        ObjectKind::Tracked,
                        "identical to its git blob: `git checkout` restores it",
                    )
                } else {
                    m(
                        Recovery::Irreversible,
                        ObjectKind::Modified,
                        "tracked, but its blob is missing from the object store",
                    )
                }
            }
            None if repo.is_ignored(&rel, false) => ignored(&rel, location),
            None => m(
                Recovery::Irreversible,
                ObjectKind::Untracked,
                "untracked: no copy exists in git",
            ),
        }
    }

    /// Measure what rewriting `path` in place loses (a truncate, an
    /// `O_TRUNC` open, a rename over it): the same answer before the call
    /// (seccomp, `abm hook`) and after it (the trace pipeline, which sees
    /// the new content). So it uses only what both can know: this run's
    /// own files, the name and place classes of [`measure`](Self::measure),
    /// and the file's standing in its repository (tracked, ignored,
    /// untracked) — never the old content, its size or its link count,
    /// which the call changes:
    ///
    /// - untracked (not ignored) in a repository: irreversible, assumed to
    ///   hold work (an empty file is judged like a full one);
    /// - tracked: `unmeasured` (whether it had changes since the index
    ///   cannot be told after the call; the committed version is in git);
    /// - in no repository (not scratch): `unmeasured`.
    pub fn measure_rewrite(&mut self, path: &str, op: Option<Op>, by_git: bool) -> Measured {
        let m = self.measure(path, by_git);
        // A truncating open or a truncate leaves a special file what it is
        // (a rename over one replaces it: the judge after the call sees
        // the new file, so a rename is judged by name and place alone).
        let special = self
            .last_lstat
            .as_ref()
            .filter(|(lp, meta)| lp == path && is_special(meta) && op != Some(Op::Rename))
            .map(|(_, meta)| overwritable(meta));
        if let Some(overwritten) = special {
            let (recovery, why) = if overwritten {
                (
                    Recovery::Irreversible,
                    "a block, memory or flash device: writing to it overwrites what the device holds",
                )
            } else {
                (
                    Recovery::Reversible,
                    "a character device, pipe or socket (as /dev/null): it holds no content to lose",
                )
            };
            return Measured {
                recovery,
                object: ObjectKind::Device,
                why: Cow::Borrowed(why),
                ..m
            };
        }
        let content = matches!(
            m.object,
            ObjectKind::Tracked
                | ObjectKind::Modified
                | ObjectKind::Untracked
                | ObjectKind::Empty
                | ObjectKind::Loose
                | ObjectKind::Linked
        );
        if !content || m.why.starts_with("already gone") {
            return m;
        }
        let p = Path::new(path);
        // A symbolic link is followed by a truncating open: judged as a
        // link either way (its target is not measured).
        if self
            .last_lstat
            .as_ref()
            .is_some_and(|(lp, meta)| lp == path && meta.file_type().is_symlink())
        {
            return m;
        }
        let location = m.location;
        let mk = |recovery, object, why: &'static str| Measured {
            recovery,
            location,
            object,
            why: Cow::Borrowed(why),
        };
        let Some(root) = self.repo_root(p) else {
            return if location == Location::Scratch {
                mk(
                    Recovery::Reversible,
                    ObjectKind::Loose,
                    "a temporary file outside any repository",
                )
            } else {
                mk(
                    Recovery::Unmeasured,
                    ObjectKind::Loose,
                    "rewritten in place in no repository: its old content is not measured",
                )
            };
        };
        let rel = rel_path(&root, p);
        let Some(repo) = self.repo(&root) else {
            return m;
        };
        if repo.entry(rel.as_bytes()).is_some() {
            return mk(
                Recovery::Unmeasured,
                ObjectKind::Tracked,
                "tracked, rewritten in place: its committed version is in git; changes since the index are not measured for a rewrite",
            );
        }
        if repo.is_ignored(&rel, false) {
            return ignored(&rel, location);
        }
        mk(
            Recovery::Irreversible,
            ObjectKind::Untracked,
            "untracked, rewritten in place: its old content exists nowhere else",
        )
    }

    /// Observe mode: the file is gone when the record is read. Use what
    /// the repository still says about it.
    fn measure_gone(&mut self, path: &str, root: Option<&Path>, location: Location) -> Measured {
        let m = |recovery, object, why: &'static str| Measured {
            recovery,
            location,
            object,
            why: Cow::Borrowed(why),
        };
        let Some(root) = root else {
            if location == Location::Scratch {
                return m(
                    Recovery::Reversible,
                    ObjectKind::Loose,
                    "a temporary file outside any repository",
                );
            }
            return m(
                Recovery::Unmeasured,
                ObjectKind::Loose,
                "already gone when measured; in no repository",
            );
        };
        let rel = rel_path(root, Path::new(path));
        let Some(repo) = self.repo(root) else {
            return m(
                Recovery::Unmeasured,
                ObjectKind::Untracked,
                "already gone; the repository could not be opened",
            );
        };
        match repo.entry(rel.as_bytes()) {
            Some(e) if repo.has_object(&e.sha) => m(
                Recovery::Recoverable,
                ObjectKind::Tracked,
                "already gone when measured; its index blob exists (content at deletion not verified)",
            ),
            Some(_) => m(Recovery::Unmeasured, ObjectKind::Tracked, "already gone; its index blob is missing"),
            None if repo.is_ignored(&rel, false) => ignored(&rel, location),
            // Neither tracked nor ignored nor made by this run: it held
            // the user's work, as the judge before the call finds it.
            None => m(
                Recovery::Irreversible,
                ObjectKind::Untracked,
                "already gone when measured; untracked, not made by this run: no copy exists in git",
            ),
        }
    }
}

/// `path` relative to a repository's working tree, `/`-separated.
pub fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Inside what a package manager installs (a virtualenv's or the
/// system's `site-packages`, `dist-packages`, `node_modules`): reinstalling
/// the package regenerates it, whatever its name (`certifi/cacert.pem`, a
/// package's own `.env` example). By place, so the judge before a call and
/// the judge after it agree.
pub fn installed_by_package_manager(path: &str) -> bool {
    ["/site-packages/", "/dist-packages/", "/node_modules/"]
        .iter()
        .any(|d| path.contains(d))
}

/// What a git-ignored file that no tool marks as its own is: ignored is not
/// regenerable. Build output is what lies in a directory a build or
/// package tool writes (`target/`, `build/`, `dist/`, `.venv/` ...) or is a
/// compiler's or run's output by its kind (`.o`, `.pyc`, `.class`, logs);
/// anything else ignored (a `data/` directory, local configuration) holds
/// data that exists nowhere else.
fn ignored(rel: &str, location: Location) -> Measured {
    let mut comps = rel.split('/');
    let name = comps.next_back().unwrap_or("");
    let in_build_dir = comps.any(|c| {
        GENERATED_DIR_NAMES.contains(&c)
            || c.ends_with(".egg-info")
            || c.starts_with("cmake-build-")
            || c.starts_with("bazel-")
    });
    let output_kind = GENERATED_SUFFIXES.iter().any(|s| name.ends_with(s));
    if in_build_dir || output_kind {
        Measured {
            recovery: Recovery::Reversible,
            location,
            object: ObjectKind::BuildOutput,
            why: Cow::Borrowed(
                "ignored by .gitignore, in a build or tool output directory or of an output kind: regenerated",
            ),
        }
    } else {
        Measured {
            recovery: Recovery::Irreversible,
            location,
            object: ObjectKind::Untracked,
            why: Cow::Borrowed(
                "ignored by .gitignore but not build output: ignored is not regenerable, no copy exists",
            ),
        }
    }
}

/// Directories build and package tools write, by name (trusted only for
/// git-ignored paths).
const GENERATED_DIR_NAMES: &[&str] = &[
    "target",
    "build",
    "dist",
    "out",
    "_build",
    ".build",
    "node_modules",
    ".venv",
    "venv",
    "env",
    ".env",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".eggs",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".turbo",
    ".parcel-cache",
    ".gradle",
    ".terraform",
    ".cache",
    "CMakeFiles",
    "coverage",
    "htmlcov",
    ".coverage",
    "site-packages",
    "vendor",
    ".angular",
    ".docusaurus",
    ".expo",
    "storybook-static",
    "bin",
    "obj",
];

/// Output kinds (compiler objects, bytecode, logs) of ignored files.
const GENERATED_SUFFIXES: &[&str] = &[
    ".o",
    ".obj",
    ".a",
    ".so",
    ".dylib",
    ".pyc",
    ".pyo",
    ".class",
    ".rlib",
    ".rmeta",
    ".d",
    ".log",
    ".tsbuildinfo",
    ".map",
    ".whl",
    ".coverage",
];

/// A device node, pipe or socket: no file content of its own.
fn is_special(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    t.is_block_device() || t.is_char_device() || t.is_fifo() || t.is_socket()
}

/// A special file whose content an `O_TRUNC` open or a write overwrites:
/// a block device (a disk, a partition, a loop device), the memory devices
/// (`/dev/mem`, `/dev/kmem`, `/dev/port`: character major 1, minors 1, 2
/// and 4) and MTD flash (character major 90). Other character devices,
/// pipes and sockets take writes without storing them as file content.
fn overwritable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    let (major, minor) = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
    t.is_block_device()
        || (t.is_char_device() && ((major == 1 && matches!(minor, 1 | 2 | 4)) || major == 90))
}
