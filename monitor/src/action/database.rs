//! What a SQLite database holds, read from its file: its tables and how
//! many rows each has. A database's rows exist nowhere else, and an
//! application rewrites them in place (`flask init-db` drops and creates
//! its tables through a read-write open): no call removes, truncates or
//! replaces the file, so the judge measures the content.
//!
//! In the default rollback-journal mode (`journal_mode=DELETE`) SQLite
//! copies the pages a transaction changes into `NAME-journal`, writes the
//! new pages into the database file, and commits by removing the journal.
//! (`journal_mode=TRUNCATE` commits by emptying the journal instead.)
//! The removal is the call a change to the rows is judged at: before it
//! runs (seccomp), the database file already holds the new content and a
//! refusal leaves the journal, which the next opener plays back; after it
//! ran (a trace record), the file holds the new content too. Both judges
//! compare the tables with those the database had when the run started
//! ([`Databases::remember`]). A database in WAL mode commits by appending
//! to `NAME-wal`, with no call to judge: it is not measured.
//!
//! The reader follows the file format (<https://www.sqlite.org/fileformat.html>):
//! the schema table's b-tree on page 1 names each table and its root page,
//! and a table's rows are the cells of its b-tree's leaves.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The first 16 bytes of every SQLite 3 database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Pages one measurement reads at most (a large database is counted as
/// "at least" what was read).
const PAGE_BUDGET: usize = 4096;
/// Largest database file remembered when the run starts.
const MAX_FILE: u64 = 1 << 30;

/// Rows of one table: exact, or at least this many (the page budget ran
/// out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    pub count: u64,
    pub exact: bool,
}

impl std::fmt::Display for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = if self.count == 1 { "row" } else { "rows" };
        match self.exact {
            true => write!(f, "{} {plural}", self.count),
            false => write!(f, "at least {} {plural}", self.count),
        }
    }
}

/// A database's tables (the schema's own `sqlite_*` tables left out).
pub type Tables = BTreeMap<String, Rows>;

/// Why a file could not be read as a database.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not a SQLite 3 file (or shorter than its header).
    NotSqlite,
    /// In WAL mode: committed pages may be in `NAME-wal`, not in the file.
    Wal,
    /// A page or record that does not follow the format (the file may be
    /// mid-write).
    Damaged(&'static str),
}

/// The tables of the database in `path`, with their rows.
pub fn tables(path: &Path) -> Result<Tables, Unreadable> {
    read(path, false, PAGE_BUDGET)
}

/// The tables of the database in `path`, each read only as far as its
/// root page: its rows when they all fit there, else "at least 1". A few
/// pages, however large the database: what a commit is judged on.
pub fn occupancy(path: &Path) -> Result<Tables, Unreadable> {
    read(path, true, PAGE_BUDGET)
}

/// The tables of the database in `path`, reading at most `budget` pages
/// below the tables' root pages, none when `shallow`.
fn read(path: &Path, shallow: bool, budget: usize) -> Result<Tables, Unreadable> {
    let f = File::open(path).map_err(|_| Unreadable::NotSqlite)?;
    let len = f.metadata().map_err(|_| Unreadable::NotSqlite)?.len();
    Reader::open(&f, len, shallow, budget)?.tables()
}

struct Reader<'a> {
    file: &'a File,
    page_size: usize,
    usable: usize,
    pages: u64,
    budget: usize,
    /// Count rows on root pages only ([`occupancy`]).
    shallow: bool,
}

impl<'a> Reader<'a> {
    fn open(
        file: &'a File,
        len: u64,
        shallow: bool,
        budget: usize,
    ) -> Result<Reader<'a>, Unreadable> {
        let mut h = [0u8; 100];
        file.read_exact_at(&mut h, 0)
            .map_err(|_| Unreadable::NotSqlite)?;
        if &h[..16] != MAGIC {
            return Err(Unreadable::NotSqlite);
        }
        if h[18] == 2 || h[19] == 2 {
            return Err(Unreadable::Wal);
        }
        let page_size = match u16::from_be_bytes([h[16], h[17]]) {
            1 => 65536,
            n if n >= 512 && n.is_power_of_two() => n as usize,
            _ => return Err(Unreadable::Damaged("page size")),
        };
        let usable = page_size - h[20] as usize;
        if usable < 480 {
            return Err(Unreadable::Damaged("reserved bytes"));
        }
        Ok(Reader {
            file,
            page_size,
            usable,
            pages: len / page_size as u64,
            budget,
            shallow,
        })
    }

    fn page(&mut self, n: u64) -> Result<Vec<u8>, Unreadable> {
        if n == 0 || n > self.pages {
            return Err(Unreadable::Damaged("page number"));
        }
        self.budget = self.budget.saturating_sub(1);
        let mut b = vec![0u8; self.page_size];
        self.file
            .read_exact_at(&mut b, (n - 1) * self.page_size as u64)
            .map_err(|_| Unreadable::Damaged("short page"))?;
        Ok(b)
    }

    fn tables(mut self) -> Result<Tables, Unreadable> {
        let mut schema = Vec::new();
        self.schema_rows(1, 0, &mut schema)?;
        let mut out = Tables::new();
        for (name, root) in schema {
            if name.starts_with("sqlite_") {
                continue;
            }
            let mut rows = Rows {
                count: 0,
                exact: true,
            };
            self.count(root, 0, &mut rows)?;
            out.insert(name, rows);
        }
        Ok(out)
    }

    /// Counts the entries of the b-tree rooted at page `n` into `rows`.
    /// Once the page budget is spent, a table's root page is still read
    /// (whether it is empty is always known) but no page beneath it: the
    /// count is then "at least" what was read, and at least 1 below an
    /// interior page.
    fn count(&mut self, n: u64, depth: u32, rows: &mut Rows) -> Result<(), Unreadable> {
        if depth > 40 {
            return Err(Unreadable::Damaged("b-tree depth"));
        }
        let shallow = self.shallow || self.budget == 0;
        if shallow && depth > 0 {
            rows.count = rows.count.max(1);
            rows.exact = false;
            return Ok(());
        }
        let p = self.page(n)?;
        let at = if n == 1 { 100 } else { 0 };
        let kind = p[at];
        let cells = u16::from_be_bytes([p[at + 3], p[at + 4]]) as u64;
        match kind {
            // Table leaf, index leaf: each cell is a row.
            0x0d | 0x0a => rows.count += cells,
            // Table interior: rows are in the children. Index interior:
            // each cell is a row too.
            0x05 | 0x02 => {
                if kind == 0x02 {
                    rows.count += cells;
                }
                if shallow {
                    rows.count = rows.count.max(1);
                    rows.exact = false;
                    return Ok(());
                }
                for c in children(&p, at, cells as usize)? {
                    self.count(c, depth + 1, rows)?;
                }
            }
            _ => return Err(Unreadable::Damaged("b-tree page type")),
        }
        Ok(())
    }

    /// The tables (name, root page) of the schema b-tree rooted at `n`.
    fn schema_rows(
        &mut self,
        n: u64,
        depth: u32,
        out: &mut Vec<(String, u64)>,
    ) -> Result<(), Unreadable> {
        if depth > 40 || self.budget == 0 {
            return Err(Unreadable::Damaged("schema b-tree"));
        }
        let p = self.page(n)?;
        let at = if n == 1 { 100 } else { 0 };
        let cells = u16::from_be_bytes([p[at + 3], p[at + 4]]) as usize;
        match p[at] {
            0x0d => {
                for i in 0..cells {
                    out.extend(self.schema_row(cell_offset(&p, at + 8, i)?, &p)?);
                }
                Ok(())
            }
            0x05 => {
                for c in children(&p, at, cells)? {
                    self.schema_rows(c, depth + 1, out)?;
                }
                Ok(())
            }
            _ => Err(Unreadable::Damaged("schema page type")),
        }
    }

    /// The name and root page of a schema row that is a table (`None` for
    /// indexes, views, triggers and virtual tables).
    fn schema_row(&self, cell: usize, p: &[u8]) -> Result<Option<(String, u64)>, Unreadable> {
        let bad = Unreadable::Damaged("schema record");
        let (payload, i) = varint(p, cell).ok_or(Unreadable::Damaged("schema cell"))?;
        let (_rowid, i) = varint(p, i).ok_or(Unreadable::Damaged("schema cell"))?;
        // The part of the payload stored on this page; the columns read
        // here come first and fit in it unless the names are very long.
        let local = local_payload(payload as usize, self.usable);
        let rec = p
            .get(i..i + local)
            .ok_or(Unreadable::Damaged("schema cell"))?;
        let (hlen, mut h) = varint(rec, 0).ok_or(Unreadable::Damaged("schema record"))?;
        let mut types = Vec::new();
        while h < hlen as usize && types.len() < 4 {
            let (t, next) = varint(rec, h).ok_or(Unreadable::Damaged("schema record"))?;
            types.push(t);
            h = next;
        }
        if types.len() < 4 {
            return Err(bad);
        }
        let mut at = hlen as usize;
        let mut cols: Vec<&[u8]> = Vec::new();
        for &t in &types {
            let n = serial_len(t);
            cols.push(
                rec.get(at..at + n)
                    .ok_or(Unreadable::Damaged("schema record"))?,
            );
            at += n;
        }
        if cols[0] != b"table" {
            return Ok(None);
        }
        let name = String::from_utf8_lossy(cols[1]).into_owned();
        let root = match types[3] {
            1..=6 => cols[3].iter().fold(0u64, |a, b| a << 8 | u64::from(*b)),
            8 => 0,
            9 => 1,
            _ => return Err(bad),
        };
        Ok((root > 0).then_some((name, root)))
    }
}

/// Child pages of an interior page whose header starts at `at`.
fn children(p: &[u8], at: usize, cells: usize) -> Result<Vec<u64>, Unreadable> {
    let u32_at = |i: usize| {
        p.get(i..i + 4)
            .map(|b| u64::from(u32::from_be_bytes(b.try_into().expect("4 bytes"))))
            .ok_or(Unreadable::Damaged("interior page"))
    };
    let mut out = Vec::with_capacity(cells + 1);
    for i in 0..cells {
        out.push(u32_at(cell_offset(p, at + 12, i)?)?);
    }
    out.push(u32_at(at + 8)?);
    Ok(out)
}

/// Offset of cell `i` from the cell pointer array at `array`.
fn cell_offset(p: &[u8], array: usize, i: usize) -> Result<usize, Unreadable> {
    let b = p
        .get(array + 2 * i..array + 2 * i + 2)
        .ok_or(Unreadable::Damaged("cell pointer"))?;
    let off = u16::from_be_bytes([b[0], b[1]]) as usize;
    if off >= p.len() {
        return Err(Unreadable::Damaged("cell pointer"));
    }
    Ok(off)
}

/// Bytes of a table leaf cell's payload stored on its page.
fn local_payload(payload: usize, usable: usize) -> usize {
    let x = usable - 35;
    if payload <= x {
        return payload;
    }
    let m = (usable - 12) * 32 / 255 - 23;
    let k = m + (payload - m) % (usable - 4);
    if k <= x {
        k
    } else {
        m
    }
}

/// Bytes of a record value of serial type `t`.
fn serial_len(t: u64) -> usize {
    match t {
        0 | 8 | 9 | 10 | 11 => 0,
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        5 => 6,
        6 | 7 => 8,
        n => ((n - 12) / 2) as usize,
    }
}

/// A SQLite varint at `i`: its value and the offset after it.
fn varint(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for k in 0..9 {
        let byte = *b.get(i + k)?;
        if k == 8 {
            return Some((v << 8 | u64::from(byte), i + 9));
        }
        v = v << 7 | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + k + 1));
        }
    }
    None
}

/// The databases in a directory tree when the run started, with their
/// tables: a change committed to one of them is judged by what it took
/// away from those tables.
#[derive(Debug, Default)]
pub struct Databases {
    at_start: BTreeMap<String, Tables>,
    /// Tables whose loss was already reported, by database: by which
    /// action (one question per loss, asked of the action that made it).
    reported: BTreeMap<(String, String), u64>,
}

/// Directory names not searched for databases: version control, and
/// trees a package manager or build makes.
const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    "target",
    ".tox",
    ".mypy_cache",
];
/// Directory levels and entries searched at most, and databases read.
const MAX_DEPTH: usize = 6;
const MAX_ENTRIES: usize = 50_000;
const MAX_DATABASES: usize = 64;

impl Databases {
    /// Remembers the SQLite databases under `root` (a file whose name a
    /// database file usually has, checked by its content), up to
    /// `MAX_DEPTH` levels, `MAX_ENTRIES` entries and `MAX_DATABASES`
    /// databases, skipping `SKIP_DIRS`. Nothing is searched when `root`
    /// is `/`.
    pub fn remember(&mut self, root: &Path, names: &[&str]) {
        if root == Path::new("/") || root.as_os_str().is_empty() {
            return;
        }
        let mut stack = vec![(root.to_path_buf(), 0usize)];
        let mut seen = 0usize;
        while let Some((dir, depth)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    tracing::debug!(root = %root.display(), "database search stopped at {MAX_ENTRIES} entries");
                    return;
                }
                let Ok(ft) = e.file_type() else { continue };
                let name = e.file_name();
                let name = name.to_string_lossy();
                if ft.is_dir() {
                    if depth + 1 < MAX_DEPTH && !SKIP_DIRS.contains(&name.as_ref()) {
                        stack.push((e.path(), depth + 1));
                    }
                } else if ft.is_file()
                    && names.iter().any(|s| name.ends_with(s))
                    && self.at_start.len() < MAX_DATABASES
                    && e.metadata().is_ok_and(|m| m.len() <= MAX_FILE)
                {
                    let p = e.path();
                    if let Ok(t) = tables(&p) {
                        self.at_start.insert(p.to_string_lossy().into_owned(), t);
                    }
                }
            }
        }
    }

    /// The database a journal path belongs to, if it was there when the
    /// run started.
    pub fn of_journal<'p>(&self, journal: &'p str) -> Option<&'p str> {
        let db = journal.strip_suffix("-journal")?;
        self.at_start.contains_key(db).then_some(db)
    }

    /// What a change committed to database `db` by action `action` took
    /// away from the tables it had when the run started: tables dropped or
    /// emptied (their rows, at the start), each reported to one action
    /// only. Empty when nothing was lost or the file cannot be read.
    pub fn lost(&mut self, db: &str, action: u64) -> Vec<(String, Rows, &'static str)> {
        let Some(before) = self.at_start.get(db) else {
            return Vec::new();
        };
        let now = match occupancy(Path::new(db)) {
            Ok(t) => t,
            Err(e) => {
                tracing::debug!(db, ?e, "database not read");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (name, rows) in before {
            if rows.count == 0 {
                continue;
            }
            let how = match now.get(name) {
                None => "dropped",
                Some(r) if r.count == 0 => "emptied",
                Some(_) => continue,
            };
            let key = (db.to_owned(), name.clone());
            if *self.reported.entry(key).or_insert(action) != action {
                continue;
            }
            out.push((name.clone(), *rows, how));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs SQL on a database through Python's `sqlite3` (the SQLite
    /// library every application links).
    fn sql(db: &Path, script: &str) {
        let ok = std::process::Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
            ])
            .arg(db)
            .arg(script)
            .status()
            .expect("python3 runs (the tests need python3 with sqlite3)")
            .success();
        assert!(ok, "python3 sqlite3 failed on {script}");
    }

    fn rows(count: u64) -> Rows {
        Rows { count, exact: true }
    }

    #[test]
    fn tables_and_rows_are_read_from_the_file() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("app.sqlite");
        sql(
            &db,
            "CREATE TABLE user (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE post (id INTEGER PRIMARY KEY, body TEXT);
             CREATE TABLE empty_one (x);
             CREATE INDEX post_body ON post (body);
             CREATE TABLE kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
             INSERT INTO user (name) VALUES ('ada');
             INSERT INTO kv VALUES ('a', 1), ('b', 2), ('c', 3);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO post (body) SELECT printf('%0400d', i) FROM n;",
        );
        let t = tables(&db).unwrap();
        let want: Tables = [
            ("empty_one".to_owned(), rows(0)),
            ("kv".to_owned(), rows(3)),
            ("post".to_owned(), rows(3000)),
            ("user".to_owned(), rows(1)),
        ]
        .into();
        assert_eq!(t, want);
        // A budget spent on the first table's pages: the tables after it
        // are still read as far as their root pages, never taken as empty.
        let few = read(&db, false, 3).unwrap();
        assert_eq!(few["user"], rows(1));
        assert_eq!(few["empty_one"], rows(0));
        assert!(
            !few["post"].exact && few["post"].count >= 1,
            "{:?}",
            few["post"]
        );
        // On root pages only: a table whose rows span pages is "at least 1".
        let o = occupancy(&db).unwrap();
        assert_eq!(o["user"], rows(1));
        assert_eq!(o["empty_one"], rows(0));
        assert_eq!(
            o["post"],
            Rows {
                count: 1,
                exact: false
            }
        );
    }

    #[test]
    fn other_files_are_not_databases() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("notes.db");
        std::fs::write(&f, b"SQLite format 2\0 and more text than a header").unwrap();
        assert_eq!(tables(&f), Err(Unreadable::NotSqlite));
        let wal = d.path().join("wal.db");
        sql(
            &wal,
            "PRAGMA journal_mode=WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        );
        assert_eq!(tables(&wal), Err(Unreadable::Wal));
    }

    #[test]
    fn a_loss_is_what_a_change_took_from_the_tables_at_the_start() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("instance").join("app.sqlite");
        std::fs::create_dir(db.parent().unwrap()).unwrap();
        sql(
            &db,
            "CREATE TABLE user (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE post (id INTEGER PRIMARY KEY, body TEXT);
             CREATE TABLE tag (t);
             INSERT INTO user (name) VALUES ('ada');
             INSERT INTO post (body) VALUES ('a'), ('b');",
        );
        let mut dbs = Databases::default();
        dbs.remember(d.path(), &[".sqlite"]);
        let key = db.to_string_lossy().into_owned();
        let journal = format!("{key}-journal");
        assert_eq!(dbs.of_journal(&journal), Some(key.as_str()));
        assert_eq!(dbs.of_journal(&key), None);
        // Rows added, one removed: nothing a table held is gone.
        sql(
            &db,
            "INSERT INTO post (body) VALUES ('c'); DELETE FROM post WHERE body = 'a';",
        );
        assert!(dbs.lost(&key, 1).is_empty());
        // Dropped and emptied; a table empty at the start loses nothing.
        sql(&db, "DROP TABLE user; DELETE FROM post; DROP TABLE tag;");
        let lost = dbs.lost(&key, 2);
        assert_eq!(
            lost,
            vec![
                ("post".to_owned(), rows(2), "emptied"),
                ("user".to_owned(), rows(1), "dropped"),
            ]
        );
        // Told to the action that made the loss, again to it, not to another.
        assert_eq!(dbs.lost(&key, 2).len(), 2);
        assert!(dbs.lost(&key, 3).is_empty());
    }
}
