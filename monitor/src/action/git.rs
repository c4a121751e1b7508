//! Reading a git repository without running git: the index, loose objects,
//! pack indexes and `.gitignore` files, cached per repository.
//!
//! Formats: `Documentation/gitformat-index.txt` (index v2-v4) and
//! `Documentation/gitformat-pack.txt` (pack `.idx` v1/v2) in git's sources.

use std::collections::HashMap;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use sha1::{Digest as _, Sha1};

/// One entry of the index: the blob git would restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub sha: [u8; 20],
    pub size: u32,
    pub mtime: (u32, u32),
}

/// A repository: its working tree, its git directory and what was read
/// from it (lazily).
#[derive(Debug)]
pub struct Repo {
    pub root: PathBuf,
    pub git_dir: PathBuf,
    /// Where its refs, logs and objects are ([`common_dir`]).
    pub common: PathBuf,
    /// The parsed index, and the stamp of the file it was parsed from.
    index: Option<(Option<Stamp>, Index)>,
    /// Whether `index` was read, or its file's stamp checked, since git
    /// last ran.
    index_fresh: bool,
    /// Sorted object ids of each pack `.idx`, by file.
    packs: Vec<(PathBuf, Stamp, Vec<[u8; 20]>)>,
    /// Whether the pack directory was listed since git last ran.
    packs_fresh: bool,
    ignores: HashMap<PathBuf, Vec<IgnorePattern>>,
    pub index_error: Option<String>,
}

impl Repo {
    /// The repository whose working tree is `root` (holding `.git`).
    pub fn open(root: &Path) -> Option<Repo> {
        let dot = root.join(".git");
        let meta = fs::symlink_metadata(&dot).ok()?;
        let git_dir = if meta.is_dir() {
            dot
        } else {
            // A worktree or submodule: `gitdir: PATH`.
            let text = fs::read_to_string(&dot).ok()?;
            let p = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
            if p.is_absolute() {
                p
            } else {
                root.join(p)
            }
        };
        Some(Repo {
            root: root.to_path_buf(),
            common: common_dir(&git_dir),
            git_dir,
            index: None,
            index_fresh: false,
            packs: Vec::new(),
            packs_fresh: false,
            ignores: HashMap::new(),
            index_error: None,
        })
    }

    /// The index entry of a path relative to the working tree.
    pub fn entry(&mut self, rel: &[u8]) -> Option<IndexEntry> {
        if !self.index_fresh {
            self.index_fresh = true;
            let path = self.git_dir.join("index");
            let stamp = Stamp::of(&path);
            // Git replaces the index (a new file renamed over it) when it
            // changes it: the same stamp is the same content.
            if self.index.as_ref().is_none_or(|(s, _)| *s != stamp) {
                let parsed = match fs::read(&path) {
                    Ok(bytes) => parse_index(&bytes),
                    // A fresh repository has no index yet.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
                    Err(e) => Err(IndexError::Read(e)),
                };
                self.index_error = None;
                let map = parsed.unwrap_or_else(|e| {
                    self.index_error = Some(format!("{}: {e}", path.display()));
                    Index::default()
                });
                self.index = Some((stamp, map));
            }
        }
        self.index.as_ref()?.1.get(rel).cloned()
    }

    /// Index entries under a directory (relative, no trailing slash; empty
    /// for the whole tree).
    pub fn entries_under(&mut self, rel_dir: &[u8]) -> Vec<(Vec<u8>, IndexEntry)> {
        let _ = self.entry(b"");
        let Some((_, idx)) = &self.index else {
            return Vec::new();
        };
        idx.under(rel_dir)
            .map(|(p, e)| (p.to_vec(), e.clone()))
            .collect()
    }

    /// Git ran: check what was read against the files before using it
    /// again (the index and packs are read again when they changed).
    pub fn invalidate(&mut self) {
        self.index_fresh = false;
        self.packs_fresh = false;
    }

    /// Whether the object store holds an object: a loose file or an entry
    /// of a pack index.
    pub fn has_object(&mut self, sha: &[u8; 20]) -> bool {
        let hex = hex::encode(sha);
        let objects = self.git_dir.join("objects");
        if objects.join(&hex[..2]).join(&hex[2..]).exists() {
            return true;
        }
        if !self.packs_fresh {
            self.packs_fresh = true;
            let mut old = std::mem::take(&mut self.packs);
            if let Ok(rd) = fs::read_dir(objects.join("pack")) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().is_none_or(|x| x != "idx") {
                        continue;
                    }
                    let Some(stamp) = Stamp::of(&p) else { continue };
                    // A pack index is written once under its pack's name.
                    if let Some(i) = old.iter().position(|(q, s, _)| *q == p && *s == stamp) {
                        self.packs.push(old.swap_remove(i));
                    } else if let Ok(b) = fs::read(&p) {
                        self.packs.push((p, stamp, parse_pack_idx(&b)));
                    }
                }
            }
        }
        self.packs
            .iter()
            .any(|(_, _, ids)| ids.binary_search(sha).is_ok())
    }

    /// Whether `.gitignore` files (from the root down to the path's
    /// directory) and `.git/info/exclude` ignore a path relative to the
    /// working tree.
    pub fn is_ignored(&mut self, rel: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        let mut sources = vec![(PathBuf::new(), self.git_dir.join("info/exclude"))];
        let mut dir = PathBuf::new();
        sources.push((dir.clone(), self.root.join(".gitignore")));
        let comps: Vec<&str> = rel.split('/').collect();
        for c in &comps[..comps.len().saturating_sub(1)] {
            dir.push(c);
            sources.push((dir.clone(), self.root.join(&dir).join(".gitignore")));
        }
        for (base, file) in sources {
            let pats = self
                .ignores
                .entry(file.clone())
                .or_insert_with(|| read_ignore(&file));
            let Some(sub) = rel_under(rel, &base) else {
                continue;
            };
            for p in pats.iter() {
                if p.matches(sub, is_dir) {
                    ignored = !p.negated;
                }
            }
        }
        ignored
    }
}

/// What tells one version of a file from another without reading it: its
/// inode, size and change times (git replaces the files it rewrites).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// `None` when the file does not exist (or cannot be stat'ed).
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

fn rel_under<'a>(rel: &'a str, base: &Path) -> Option<&'a str> {
    let b = base.to_str()?;
    if b.is_empty() {
        return Some(rel);
    }
    rel.strip_prefix(b)?.strip_prefix('/')
}

/// The git blob id of some content: SHA-1 of `blob <len>\0<content>`.
pub fn blob_id(content: &[u8]) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", content.len()).as_bytes());
    h.update(content);
    h.finalize().into()
}

/// The blob id of a file, reading at most `limit` bytes (None if larger
/// or unreadable).
pub fn file_blob_id(path: &Path, limit: u64) -> Option<[u8; 20]> {
    let f = fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len > limit {
        return None;
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(limit + 1).read_to_end(&mut buf).ok()?;
    Some(blob_id(&buf))
}

/// Why a git index file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("not an index file (no DIRC signature)")]
    NotIndex,
    #[error("index version {0} is not supported")]
    Version(u32),
    #[error("truncated at byte {0}")]
    TruncatedAt(usize),
    #[error("truncated entry")]
    TruncatedEntry,
    #[error("truncated varint")]
    TruncatedVarint,
    #[error("unterminated path")]
    UnterminatedPath,
    #[error("bad prefix length")]
    BadPrefix,
}

/// The stage-0 entries of an index, sorted by path (as git keeps them):
/// the paths in one buffer, looked up by binary search.
#[derive(Debug, Default)]
pub struct Index {
    names: Vec<u8>,
    entries: Vec<Slot>,
}

/// One entry of an [`Index`]: where its path starts in the names, its
/// length, the entry.
type Slot = (u32, u32, IndexEntry);

/// The path of `slot` in `names`.
fn slot_name<'a>(names: &'a [u8], slot: &Slot) -> &'a [u8] {
    &names[slot.0 as usize..(slot.0 + slot.1) as usize]
}

impl Index {
    pub fn get(&self, path: &[u8]) -> Option<&IndexEntry> {
        let at = self.partition(path);
        let e = self.entries.get(at)?;
        (slot_name(&self.names, e) == path).then_some(&e.2)
    }

    /// The first entry whose path is not less than `path`.
    fn partition(&self, path: &[u8]) -> usize {
        self.entries
            .partition_point(|e| slot_name(&self.names, e) < path)
    }

    /// The entries from the `start`th on, in path order.
    fn entries_from(&self, start: usize) -> impl Iterator<Item = (&[u8], &IndexEntry)> {
        self.entries[start..]
            .iter()
            .map(|e| (slot_name(&self.names, e), &e.2))
    }

    /// Every entry, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &IndexEntry)> {
        self.entries_from(0)
    }

    /// The entries beneath directory `dir` (relative, no trailing slash;
    /// empty for all).
    pub fn under<'a>(&'a self, dir: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a IndexEntry)> {
        let start = if dir.is_empty() {
            0
        } else {
            self.partition(&[dir, b"/"].concat())
        };
        self.entries_from(start).take_while(move |(p, _)| {
            dir.is_empty() || (p.starts_with(dir) && p.get(dir.len()) == Some(&b'/'))
        })
    }
}

/// Parse an index file (versions 2, 3 and 4).
pub fn parse_index(b: &[u8]) -> Result<Index, IndexError> {
    let be32 = |o: usize| -> Result<u32, IndexError> {
        b.get(o..o + 4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
            .ok_or(IndexError::TruncatedAt(o))
    };
    if b.get(..4) != Some(b"DIRC") {
        return Err(IndexError::NotIndex);
    }
    let version = be32(4)?;
    if !(2..=4).contains(&version) {
        return Err(IndexError::Version(version));
    }
    let count = be32(8)? as usize;
    let mut out = Index {
        names: Vec::with_capacity(b.len()),
        entries: Vec::with_capacity(count.min(b.len() / 62)),
    };
    let mut o = 12;
    // Version 4: the previous path, which the next one shares a prefix of.
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = o;
        let mtime = (be32(o + 8)?, be32(o + 12)?);
        let size = be32(o + 36)?;
        let sha: [u8; 20] = b
            .get(o + 40..o + 60)
            .ok_or(IndexError::TruncatedEntry)?
            .try_into()
            .map_err(|_| IndexError::TruncatedEntry)?;
        let flags =
            u16::from_be_bytes([b[o + 60], *b.get(o + 61).ok_or(IndexError::TruncatedEntry)?]);
        o += 62;
        if version >= 3 && flags & 0x4000 != 0 {
            o += 2;
        }
        let path = if version == 4 {
            // Varint: bytes to strip from the previous path.
            let mut strip: usize = 0;
            loop {
                let c = *b.get(o).ok_or(IndexError::TruncatedVarint)?;
                o += 1;
                strip = (strip << 7) | usize::from(c & 0x7f);
                if c & 0x80 == 0 {
                    break;
                }
                strip += 1;
            }
            let end = o + b[o..]
                .iter()
                .position(|&c| c == 0)
                .ok_or(IndexError::UnterminatedPath)?;
            let keep = prev.len().checked_sub(strip).ok_or(IndexError::BadPrefix)?;
            prev.truncate(keep);
            prev.extend_from_slice(&b[o..end]);
            o = end + 1;
            &prev[..]
        } else {
            let name = o;
            let end = o + b[o..]
                .iter()
                .position(|&c| c == 0)
                .ok_or(IndexError::UnterminatedPath)?;
            // Entries are NUL-padded to a multiple of 8 bytes.
            let len = end - start;
            o = start + (len + 8) / 8 * 8;
            &b[name..end]
        };
        // Only stage 0 (merged) entries describe the working tree's file.
        if (flags >> 12) & 0x3 == 0 {
            let at = out.names.len() as u32;
            out.names.extend_from_slice(path);
            let entry = IndexEntry { sha, size, mtime };
            out.entries.push((at, path.len() as u32, entry));
        }
    }
    // Git writes the entries sorted; a file that is not is read as sorted.
    let names = &out.names;
    let name = |e: &Slot| slot_name(names, e);
    if !out.entries.windows(2).all(|w| name(&w[0]) < name(&w[1])) {
        out.entries.sort_by(|x, y| name(x).cmp(name(y)));
        out.entries.dedup_by(|x, y| name(x) == name(y));
    }
    Ok(out)
}

/// Object ids listed by a pack index (v1 or v2), sorted.
pub fn parse_pack_idx(b: &[u8]) -> Vec<[u8; 20]> {
    let be32 = |o: usize| {
        b.get(o..o + 4)
            .map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
    };
    let sha_at = |o: usize| -> Option<[u8; 20]> { b.get(o..o + 20)?.try_into().ok() };
    let mut out = Vec::new();
    if b.get(..4) == Some(b"\xfftOc") {
        let n = be32(8 + 255 * 4);
        for i in 0..n {
            match sha_at(8 + 256 * 4 + i * 20) {
                Some(s) => out.push(s),
                None => break,
            }
        }
    } else {
        let n = be32(255 * 4);
        for i in 0..n {
            match sha_at(256 * 4 + i * 24 + 4) {
                Some(s) => out.push(s),
                None => break,
            }
        }
    }
    out.sort_unstable();
    out
}

#[derive(Debug)]
struct IgnorePattern {
    negated: bool,
    dir_only: bool,
    glob: GlobMatcher,
    /// Also matches everything below a matched directory.
    below: GlobMatcher,
}

impl IgnorePattern {
    fn matches(&self, rel: &str, is_dir: bool) -> bool {
        (self.glob.is_match(rel) && (is_dir || !self.dir_only)) || self.below.is_match(rel)
    }
}

fn read_ignore(file: &Path) -> Vec<IgnorePattern> {
    let Ok(text) = fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines().filter_map(ignore_pattern).collect()
}

fn ignore_pattern(line: &str) -> Option<IgnorePattern> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (negated, line) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, line.strip_prefix('\\').unwrap_or(line)),
    };
    let (dir_only, line) = match line.strip_suffix('/') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    // A slash at the start or in the middle anchors the pattern to the
    // directory of the .gitignore; otherwise it matches at any depth.
    let anchored = line.contains('/');
    let body = line.trim_start_matches('/');
    let pat = if anchored {
        body.to_owned()
    } else {
        format!("**/{body}")
    };
    let mk = |p: &str| {
        GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .ok()
            .map(|g| g.compile_matcher())
    };
    Some(IgnorePattern {
        negated,
        dir_only,
        glob: mk(&pat)?,
        below: mk(&format!("{pat}/**"))?,
    })
}

/// Refs of a git directory: loose refs under `refs/` and `packed-refs`,
/// name → object id (hex).
fn refs(git_dir: &Path) -> HashMap<String, String> {
    refs_under(git_dir, "refs")
}

/// The refs of `git_dir` whose names start with `prefix/` (or are
/// `prefix` itself), packed and loose (a loose ref wins).
fn refs_under(git_dir: &Path, prefix: &str) -> HashMap<String, String> {
    refs_stamped(git_dir, prefix, None)
}

/// [`refs_under`], stamping (into `stamps`, when given) `packed-refs` and
/// each directory walked before reading them.
fn refs_stamped(
    git_dir: &Path,
    prefix: &str,
    mut stamps: Option<&mut Stamps>,
) -> HashMap<String, String> {
    fn walk(
        dir: &Path,
        name: &str,
        out: &mut HashMap<String, String>,
        stamps: &mut Option<&mut Stamps>,
    ) {
        if let Some(s) = stamps.as_deref_mut() {
            s.push((dir.to_path_buf(), Stamp::of(dir)));
        }
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let n = format!("{name}/{}", e.file_name().to_string_lossy());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), &n, out, stamps);
            } else if let Ok(t) = fs::read_to_string(e.path()) {
                out.insert(n, t.trim().to_owned());
            }
        }
    }
    let mut out = HashMap::new();
    let packed = git_dir.join("packed-refs");
    if let Some(s) = stamps.as_deref_mut() {
        s.push((packed.clone(), Stamp::of(&packed)));
    }
    if let Ok(t) = fs::read_to_string(&packed) {
        for l in t
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        {
            if let Some((sha, name)) = l.split_once(' ') {
                let under = name
                    .strip_prefix(prefix)
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'));
                if under {
                    out.insert(name.to_owned(), sha.to_owned());
                }
            }
        }
    }
    walk(&git_dir.join(prefix), prefix, &mut out, &mut stamps);
    out
}

type Stamps = Vec<(PathBuf, Option<Stamp>)>;

/// What a read of a repository's branch refs saw: the stamps of
/// `packed-refs` and of each directory under `refs/heads`, taken before
/// they were read. git writes, renames and removes a loose ref inside its
/// directory, which moves that directory's times, and replaces
/// `packed-refs` whole: while every stamp is the same, the branches are
/// those read then.
#[derive(Debug, Default)]
pub struct RefsStamp(Stamps);

/// How close to the time of a read a file's times may be before they
/// cannot tell a change made in the same clock tick: such a read is not
/// trusted later (as git treats a "racily clean" index entry).
const RACY: std::time::Duration = std::time::Duration::from_millis(50);

impl RefsStamp {
    /// Whether the refs may have changed since the read (always, for a
    /// read whose stamps were too close to its own time).
    pub fn changed(&self) -> bool {
        self.0.is_empty() || self.0.iter().any(|(p, s)| Stamp::of(p) != *s)
    }
}

/// The local branches of a (common) git directory and their tips, with
/// what tells when they change.
pub fn branch_tips_stamped(common: &Path) -> (HashMap<String, String>, RefsStamp) {
    let now = std::time::SystemTime::now();
    let mut stamps = Vec::new();
    let tips = refs_stamped(common, "refs/heads", Some(&mut stamps));
    let recent = |t: (i64, i64)| {
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::new(t.0.max(0) as u64, t.1.clamp(0, 999_999_999) as u32);
        now.duration_since(at).map_or(true, |d| d < RACY)
    };
    let racy = stamps
        .iter()
        .flat_map(|(_, s)| s)
        .any(|s| recent(s.mtime) || recent(s.ctime));
    if racy {
        stamps.clear();
    }
    (tips, RefsStamp(stamps))
}

/// Whether every local branch and HEAD of `git_dir` point at a commit some
/// remote-tracking ref points at, with no stash: deleting the repository
/// then loses no commit (a clone brings them back). False when the refs
/// cannot be read or there is no remote-tracking ref.
pub fn all_on_a_remote(git_dir: &Path) -> bool {
    let refs = refs(git_dir);
    if refs.contains_key("refs/stash") {
        return false;
    }
    let remote: std::collections::HashSet<&str> = refs
        .iter()
        .filter(|(n, _)| n.starts_with("refs/remotes/"))
        .map(|(_, v)| v.as_str())
        .collect();
    if remote.is_empty() {
        return false;
    }
    let head = fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
    let head = head.trim();
    let head_ok = match head.strip_prefix("ref: ") {
        Some(r) => refs.get(r).is_none_or(|v| remote.contains(v.as_str())),
        None => remote.contains(head),
    };
    head_ok
        && refs
            .iter()
            .filter(|(n, _)| n.starts_with("refs/heads/"))
            .all(|(_, v)| remote.contains(v.as_str()))
}

/// The directory that holds the refs, logs and objects of `git_dir` (a
/// linked worktree's `commondir`, else `git_dir` itself).
pub fn common_dir(git_dir: &Path) -> PathBuf {
    match fs::read_to_string(git_dir.join("commondir")) {
        Ok(s) => {
            let p = Path::new(s.trim());
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                git_dir.join(p)
            }
        }
        Err(_) => git_dir.to_path_buf(),
    }
}

/// The commits of the stash entries, newest (`stash@{0}`) first, from the
/// stash reflog of `git_dir`.
pub fn stash_entries(git_dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(common_dir(git_dir).join("logs/refs/stash")).unwrap_or_default();
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect();
    out.reverse();
    out
}

/// Whether commit `id` was written at or after `since`: a loose object
/// whose file is that new. A packed object, or one that cannot be found,
/// is older (or unknown): not.
pub fn written_since(git_dir: &Path, id: &str, since: SystemTime) -> bool {
    if id.len() < 3 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let obj = common_dir(git_dir)
        .join("objects")
        .join(&id[..2])
        .join(&id[2..]);
    fs::metadata(obj)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since)
}

/// Whether deleting the remote branch or tag `name` of `remote` loses
/// commits: false when another ref of the repository (a remote-tracking
/// ref, a tag, a local branch) points at or contains its tip. The tip is
/// the remote-tracking ref's, else the local tag's of that name; with
/// neither, the ref's content cannot be measured: true.
pub fn remote_ref_loses(root: &Path, git_dir: &Path, remote: &str, name: &str) -> bool {
    let all = refs(&common_dir(git_dir));
    let short = name
        .trim_start_matches("refs/heads/")
        .trim_start_matches("refs/tags/");
    let tracking = format!("refs/remotes/{remote}/{short}");
    match all
        .get(&tracking)
        .or_else(|| all.get(&format!("refs/tags/{short}")))
    {
        Some(tip) => !held_elsewhere(root, &all, &tracking, tip),
        None => true,
    }
}

/// What deleting the local branch `name` loses: `None` when there is no
/// such branch (git refuses), `Some(false)` when another ref (a branch, a
/// remote-tracking ref, a tag) points at or contains its tip, or the tip
/// was written since `since` (the run's own commits), else `Some(true)`.
///
/// A branch already gone is judged on its tip in `seen` (tips remembered
/// earlier in the run, [`branch_tips_stamped`]), which it then leaves: once a
/// deletion has been judged on it, the name is no longer known.
pub fn branch_loses(
    root: &Path,
    git_dir: &Path,
    name: &str,
    since: SystemTime,
    seen: Option<&mut HashMap<String, String>>,
) -> Option<bool> {
    let all = refs(&common_dir(git_dir));
    let own = format!("refs/heads/{}", name.trim_start_matches("refs/heads/"));
    let tip = match all.get(&own) {
        Some(t) => t.clone(),
        None => seen?.remove(&own)?,
    };
    if written_since(git_dir, &tip, since) {
        return Some(false);
    }
    Some(!held_elsewhere(root, &all, &own, &tip))
}

/// Whether a ref of `all` other than `except` (and other than a symbolic
/// `…/HEAD`) points at or contains commit `tip` (`git for-each-ref
/// --contains`, run only when no ref points at the tip itself). When git
/// cannot answer, nothing is known to hold it: false.
fn held_elsewhere(root: &Path, all: &HashMap<String, String>, except: &str, tip: &str) -> bool {
    let elsewhere = |n: &str| {
        n != except
            && !n.ends_with("/HEAD")
            && (n.starts_with("refs/remotes/")
                || n.starts_with("refs/tags/")
                || n.starts_with("refs/heads/"))
    };
    if all.iter().any(|(n, v)| elsewhere(n) && v == tip) {
        return true;
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["for-each-ref", "--format=%(refname)", "--contains", tip])
        .args(["refs/remotes", "refs/tags", "refs/heads"])
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().any(elsewhere),
        _ => false,
    }
}
