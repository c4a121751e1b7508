//! The path-argument race of tests/truth/race.c: building it, and
//! telling from its records and its files which records name the file the
//! call acted on.
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

/// Builds one of the C programs of tests/truth with the system's `cc`.
pub fn build_c(name: &str, out: &Path, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/truth/{name}.c"));
    let bin = out.join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(extra)
        .status()
        .expect("cc is missing: install gcc (cargo xtask test does)");
    assert!(st.success(), "cc {} failed", src.display());
    bin
}

/// A record's `path_issues` values.
pub fn issues(e: &Value) -> Vec<String> {
    e["path_issues"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What the race's records say, counted.
#[derive(Debug, Default)]
pub struct RaceTally {
    /// Successful records of the race's calls.
    pub total: usize,
    /// ... whose path is the file removed and carries no issue.
    pub confirmed: usize,
    /// ... with a `path_issues` value.
    pub flagged: usize,
    /// ... naming a file the call did not act on (for unlink: one that
    /// never existed), with no issue.
    pub wrong_unflagged: usize,
    /// ... naming a file the call did not act on, flagged (a subset of
    /// `flagged`).
    pub wrong_flagged: usize,
}

pub fn tally_race(events: &[&Value], dir: &Path) -> RaceTally {
    let mut t = RaceTally::default();
    let real = format!("{}/r", dir.display());
    let fake = format!("{}/f", dir.display());
    for e in events {
        if e["op"] != "unlink" || e["result"] != 0 {
            continue;
        }
        let path = e["path"].as_str().unwrap_or("");
        let is_real = path.starts_with(&real);
        let is_fake = path.starts_with(&fake);
        if !is_real && !is_fake {
            continue;
        }
        t.total += 1;
        let flagged = !issues(e).is_empty();
        match (is_real, flagged) {
            (true, false) => t.confirmed += 1,
            (_, true) => t.flagged += 1,
            (false, false) => t.wrong_unflagged += 1,
        }
        if is_fake && flagged {
            t.wrong_flagged += 1;
        }
    }
    t
}

/// What the attribute-change race's records say (`total` .. over the
/// race's own calls: the last `count` successful records of `op` in
/// `dir`, after the setup's), and how many calls the kernel saw as the
/// other name (the `fNNNN` changed).
pub fn tally_attr_race(
    events: &[&Value],
    dir: &Path,
    op: &str,
    count: usize,
) -> (RaceTally, usize) {
    use std::os::unix::fs::MetadataExt as _;
    // Which of rNNNN / fNNNN the call changed: the fNNNN changed iff the
    // kernel saw that name (race.c makes one successful call per NNNN).
    let changed = |i: usize| {
        let m = std::fs::metadata(dir.join(format!("f{i:04}"))).unwrap();
        match op {
            "chmod" => m.mode() & 0o777 == 0o600,
            "truncate" => m.len() == 0,
            // SAFETY: getgid cannot fail and touches no memory.
            "chown" => m.gid() == unsafe { libc::getgid() },
            "utimes" => m.mtime() != 1_000_000_000,
            _ => unreachable!("{op}"),
        }
    };
    let prefix = format!("{}/", dir.display());
    let ours: Vec<&&Value> = events
        .iter()
        .filter(|e| {
            e["op"] == op
                && e["result"] == 0
                && e["path"].as_str().is_some_and(|p| p.starts_with(&prefix))
        })
        .collect();
    assert!(
        ours.len() >= count,
        "{} {op} records, fewer than the race's {count} calls",
        ours.len()
    );
    let mut t = RaceTally::default();
    for e in &ours[ours.len() - count..] {
        let name = &e["path"].as_str().unwrap()[prefix.len()..];
        let i: usize = name[1..].parse().unwrap();
        let acted_on_f = changed(i);
        let right = name.starts_with('f') == acted_on_f;
        let flagged = !issues(e).is_empty();
        t.total += 1;
        match (right, flagged) {
            (true, false) => t.confirmed += 1,
            (_, true) => t.flagged += 1,
            (false, false) => t.wrong_unflagged += 1,
        }
        if !right && flagged {
            t.wrong_flagged += 1;
        }
    }
    let other = (0..count).filter(|&i| changed(i)).count();
    (t, other)
}
