//! Recursive ownership and permission changes (`chown -R`, `chgrp -R`,
//! `chmod -R`), previewed: the files whose owner or mode would change.
//! The previous values are recorded nowhere, so the change cannot be
//! undone when they differed from file to file (no one command restores
//! them) or when the change covers a whole workspace, repository or home
//! directory. Files this run made and trees a tool regenerates are not
//! counted.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use super::blast::{Blast, NAMED, WALK_LIMIT};
use super::recover::Measurer;

/// What the command would set.
#[derive(Debug)]
pub enum Change {
    /// New owner and/or group (`None`: unchanged; `Some(None)`: a name
    /// that could not be resolved, assumed to differ).
    Owner {
        uid: Option<Option<u32>>,
        gid: Option<Option<u32>>,
    },
    /// An absolute mode, or symbolic clauses.
    Mode(ModeSpec),
}

#[derive(Debug)]
pub enum ModeSpec {
    Absolute(u32),
    /// (who mask, op, permission bits, `X`)
    Symbolic(Vec<(u32, char, u32, bool)>),
}

impl Change {
    pub fn parse(prog: &str, spec: &str) -> Option<Change> {
        match prog {
            "chown" => {
                let (u, g) = match spec.split_once([':', '.']) {
                    Some((u, g)) => (u, Some(g)),
                    None => (spec, None),
                };
                Some(Change::Owner {
                    uid: (!u.is_empty()).then(|| resolve(u, "/etc/passwd")),
                    gid: g
                        .filter(|g| !g.is_empty())
                        .map(|g| resolve(g, "/etc/group")),
                })
            }
            "chgrp" => Some(Change::Owner {
                uid: None,
                gid: Some(resolve(spec, "/etc/group")),
            }),
            "chmod" => Some(Change::Mode(parse_mode(spec)?)),
            _ => None,
        }
    }

    /// The file's attribute value before, and whether the command changes
    /// it.
    fn changes(&self, meta: &std::fs::Metadata) -> (u64, bool) {
        match self {
            Change::Owner { uid, gid } => {
                let before = (u64::from(meta.uid()) << 32) | u64::from(meta.gid());
                let differs = |want: &Option<Option<u32>>, have: u32| match want {
                    None => false,
                    Some(None) => true,
                    Some(Some(w)) => *w != have,
                };
                (before, differs(uid, meta.uid()) || differs(gid, meta.gid()))
            }
            Change::Mode(spec) => {
                let before = meta.mode() & 0o7777;
                let after = apply(spec, before, meta.is_dir());
                (u64::from(before), after != before)
            }
        }
    }
}

/// A user or group name (or number) → id, from the system's databases.
fn resolve(name: &str, db: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let text = std::fs::read_to_string(db).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next() == Some(name))
            .then(|| f.nth(1).and_then(|id| id.parse().ok()))
            .flatten()
    })
}

fn parse_mode(spec: &str) -> Option<ModeSpec> {
    if !spec.is_empty() && spec.chars().all(|c| c.is_digit(8)) {
        return u32::from_str_radix(spec, 8).ok().map(ModeSpec::Absolute);
    }
    let mut clauses = Vec::new();
    for clause in spec.split(',') {
        let mut who = 0;
        let mut chars = clause.chars().peekable();
        while let Some(c) = chars.peek().copied() {
            who |= match c {
                'u' => 0o4700,
                'g' => 0o2070,
                'o' => 0o1007,
                'a' => 0o7777,
                _ => break,
            };
            chars.next();
        }
        if who == 0 {
            who = 0o7777;
        }
        let op = chars.next().filter(|c| matches!(c, '+' | '-' | '='))?;
        let (mut bits, mut big_x) = (0, false);
        for c in chars {
            bits |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                's' => 0o6000,
                't' => 0o1000,
                'X' => {
                    big_x = true;
                    0
                }
                _ => return None,
            };
        }
        clauses.push((who, op, bits & who, big_x));
    }
    Some(ModeSpec::Symbolic(clauses))
}

fn apply(spec: &ModeSpec, before: u32, is_dir: bool) -> u32 {
    match spec {
        ModeSpec::Absolute(m) => *m & 0o7777,
        ModeSpec::Symbolic(clauses) => {
            let mut m = before;
            for (who, op, bits, big_x) in clauses {
                let x = if *big_x && (is_dir || before & 0o111 != 0) {
                    0o111 & who
                } else {
                    0
                };
                let bits = bits | x;
                m = match op {
                    '+' => m | bits,
                    '-' => m & !bits,
                    _ => (m & !(who & 0o777)) | bits,
                };
            }
            m
        }
    }
}

/// Count into `b` the files under `target` whose attributes the command
/// would change, as irreversible when their previous values differ from
/// one another or `root_like` (the target is a workspace, repository or
/// home directory).
pub fn preview(target: &Path, change: &Change, root_like: bool, m: &mut Measurer, b: &mut Blast) {
    let mut changed = Vec::new();
    let mut priors = std::collections::HashSet::new();
    walk(target, change, m, &mut changed, &mut priors);
    if changed.is_empty() {
        return;
    }
    let n = changed.len() as u64;
    b.files += n;
    if priors.len() > 1 || root_like {
        b.irreversible += n;
        b.attributes += n;
        for p in changed.into_iter().take(NAMED.saturating_sub(b.lost.len())) {
            b.lost.push(p);
        }
    } else {
        b.reversible += n;
    }
}

fn walk(
    p: &Path,
    change: &Change,
    m: &mut Measurer,
    changed: &mut Vec<String>,
    priors: &mut std::collections::HashSet<u64>,
) {
    if changed.len() >= WALK_LIMIT {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    // chown/chmod -R do not follow symbolic links below the top.
    if meta.file_type().is_symlink() {
        return;
    }
    let s = p.to_string_lossy();
    if m.created.contains(&s) || m.built.contains(&s) || m.generated_by_state(p).is_some() {
        return;
    }
    let (before, differs) = change.changes(&meta);
    if differs {
        priors.insert(before);
        changed.push(s.into_owned());
    }
    if meta.is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                walk(&e.path(), change, m, changed, priors);
            }
        }
    }
}
