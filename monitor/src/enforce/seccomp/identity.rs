//! Protected objects by identity. A path rule names objects by their path,
//! but a call can reach a protected object under another name: a hard link
//! made before the run (`ln protected/f elsewhere`, then `: > elsewhere`),
//! a directory above it renamed (`mv dir moved`, then `rm
//! moved/protected/key`), a bind mount. At the start of the run the
//! directories and files that rules stricter than audit name (the fixed
//! part of each path pattern) are resolved to (device, inode), with the
//! directories above them and the files with more than one link below
//! them. Each call is then also judged as the call on the protected path
//! it reaches by identity: the stricter verdict wins.
use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use crate::{
    policy::{Context, Field, Operator, Policy},
    record::{Action, Op, Treatment, Verdict},
};

/// Directory entries looked at, per protected directory and in all, to
/// find multiply-linked files below them: a huge tree is sampled, never
/// walked for long.
const MAX_ENTRIES_EACH: usize = 4_096;
const MAX_ENTRIES: usize = 32_768;
const MAX_DEPTH: usize = 8;
/// Ancestors looked at per call.
const MAX_ANCESTORS: usize = 40;

type Id = (u64, u64);

#[derive(Default)]
pub(crate) struct Protected {
    /// Protected directories, by identity: the path they had at start.
    dirs: HashMap<Id, PathBuf>,
    /// Directories above protected ones (not `/`): the protected
    /// directories below each.
    above: HashMap<Id, (PathBuf, Vec<PathBuf>)>,
    /// Protected files with more than one link, and files named by a
    /// rule literally.
    files: HashMap<Id, PathBuf>,
}

fn id(m: &std::fs::Metadata) -> Id {
    (m.dev(), m.ino())
}

/// `${workspace}`, `${home}` and `~/` expanded; `None` for patterns not
/// anchored at a directory of the host (relative globs, `${trace}`).
fn anchor(p: &str, ctx: &Context) -> Option<PathBuf> {
    let s = if let Some(r) = p.strip_prefix("${workspace}") {
        format!("{}{r}", ctx.workspace.display())
    } else if let Some(r) = p.strip_prefix("${home}") {
        format!("{}{r}", ctx.home.display())
    } else if let Some(r) = p.strip_prefix("~/") {
        format!("{}/{r}", ctx.home.display())
    } else if p.starts_with('/') {
        p.to_owned()
    } else {
        return None;
    };
    // The fixed part, up to the first component with a glob.
    let mut fixed = PathBuf::from("/");
    for c in s.split('/').filter(|c| !c.is_empty()) {
        if c.contains(['*', '?', '[', '{']) {
            break;
        }
        if c == "." || c == ".." {
            return None;
        }
        fixed.push(c);
    }
    (fixed != Path::new("/")).then_some(fixed)
}

impl Protected {
    /// The protected objects of `policy`, as they are now.
    pub fn resolve(policy: &Policy, ctx: &Context) -> Protected {
        let mut p = Protected::default();
        let mut budget = MAX_ENTRIES;
        for rule in policy.rules() {
            if matches!(rule.treatment, Treatment::Accept | Treatment::Audit) {
                continue;
            }
            for c in &rule.conditions {
                if !matches!(c.field, Field::Path | Field::Source | Field::Dest)
                    || !matches!(
                        c.operator,
                        Operator::Glob | Operator::Equal | Operator::Prefix
                    )
                {
                    continue;
                }
                for v in &c.values {
                    let Some(at) = anchor(v, ctx) else { continue };
                    p.add(&at, &mut budget);
                }
            }
        }
        p
    }

    fn add(&mut self, at: &Path, budget: &mut usize) {
        let Ok(m) = std::fs::metadata(at) else { return };
        if m.is_dir() {
            if self.dirs.insert(id(&m), at.to_path_buf()).is_some() {
                return;
            }
            let mut up = at.parent();
            while let Some(d) = up.filter(|d| *d != Path::new("/")) {
                if let Ok(dm) = std::fs::metadata(d) {
                    self.above
                        .entry(id(&dm))
                        .or_insert_with(|| (d.to_path_buf(), Vec::new()))
                        .1
                        .push(at.to_path_buf());
                }
                up = d.parent();
            }
            let mut each = MAX_ENTRIES_EACH.min(*budget);
            let before = each;
            self.linked_files(at, MAX_DEPTH, &mut each);
            *budget -= before - each;
        } else {
            self.files.insert(id(&m), at.to_path_buf());
        }
    }

    fn linked_files(&mut self, dir: &Path, depth: usize, budget: &mut usize) {
        if depth == 0 {
            return;
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                self.linked_files(&e.path(), depth - 1, budget);
            } else if m.is_file() && m.nlink() > 1 {
                self.files.insert(id(&m), e.path());
            }
        }
    }

    /// A `link` about to be made: when its source is below a protected
    /// directory, the file joins the protected files (a second name for it
    /// may follow). Runs in the caller's view.
    pub fn linking(&mut self, a: &Action) {
        if a.op != Some(Op::Link) || self.dirs.is_empty() {
            return;
        }
        let Some(src) = a.path.as_deref().map(Path::new) else {
            return;
        };
        let Ok(m) = std::fs::symlink_metadata(src) else {
            return;
        };
        if !m.is_file() || self.files.contains_key(&id(&m)) {
            return;
        }
        let mut cur = src.parent();
        for _ in 0..MAX_ANCESTORS {
            let Some(d) = cur.filter(|d| *d != Path::new("/")) else {
                return;
            };
            if let Some(at) = std::fs::metadata(d)
                .ok()
                .and_then(|dm| self.dirs.get(&id(&dm)))
            {
                let rest = src.strip_prefix(d).unwrap_or(src);
                let q = at.join(rest);
                self.files.insert(id(&m), q);
                return;
            }
            cur = d.parent();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.files.is_empty()
    }

    /// The path(s) a call reaches by identity, when they differ from the
    /// ones it names: (path, path2) of the same call on the protected
    /// objects. Runs in the caller's view.
    fn reached(&self, a: &Action, follows: bool) -> Option<(String, Option<String>)> {
        let op = a.op?;
        let path = a.path.as_deref()?;
        let p = Path::new(path);
        let meta = if follows {
            std::fs::metadata(p)
        } else {
            std::fs::symlink_metadata(p)
        };
        if let Ok(m) = &meta {
            if m.is_file() {
                if let Some(f) = self.files.get(&id(m)).filter(|f| f.as_path() != p) {
                    return Some((f.to_string_lossy().into_owned(), a.path2.clone()));
                }
            }
            // A directory above protected ones, moved: the protected ones
            // move with it.
            if op == Op::Rename && m.is_dir() {
                if let (Some((at, below)), Some(dst)) = (self.above.get(&id(m)), &a.path2) {
                    let b = &below[0];
                    let rest = b.strip_prefix(at).unwrap_or(b);
                    return Some((
                        b.to_string_lossy().into_owned(),
                        Some(Path::new(dst).join(rest).to_string_lossy().into_owned()),
                    ));
                }
            }
        }
        // The object itself or a directory on its way is a protected
        // directory reached under another name.
        let mut cur = if meta.as_ref().is_ok_and(|m| m.is_dir()) {
            Some(p)
        } else {
            p.parent()
        };
        for _ in 0..MAX_ANCESTORS {
            let Some(d) = cur else { break };
            if d == Path::new("/") {
                break;
            }
            if let Ok(m) = std::fs::metadata(d) {
                if let Some(at) = self.dirs.get(&id(&m)) {
                    if at.as_path() == d {
                        return None;
                    }
                    let rest = p.strip_prefix(d).unwrap_or(Path::new(""));
                    let q = if rest.as_os_str().is_empty() {
                        at.clone()
                    } else {
                        at.join(rest)
                    };
                    return Some((q.to_string_lossy().into_owned(), a.path2.clone()));
                }
            }
            cur = d.parent();
        }
        None
    }

    /// The verdict of the same call on the protected object it reaches by
    /// identity, when that is stricter than `v`.
    pub fn check(
        &self,
        a: &Action,
        v: &Verdict,
        follows: bool,
        policy: &Policy,
        ctx: &Context,
    ) -> Option<Verdict> {
        if self.is_empty() || a.op == Some(Op::Exec) {
            return None;
        }
        let (path, path2) = self.reached(a, follows)?;
        let mut same = a.clone();
        same.path = Some(path.clone());
        same.path_b64 = None;
        same.container_path = None;
        if same.op == Some(Op::Rename) {
            same.path2 = path2;
            same.container_path2 = None;
        }
        let w = policy.evaluate(&same, ctx);
        (w.treatment > v.treatment).then(|| Verdict {
            reason: format!(
                "{} (by identity: {} is {path})",
                w.reason,
                a.path.as_deref().unwrap_or("?")
            ),
            ..w
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_the_fixed_part_of_a_pattern() {
        let ctx = Context {
            workspace: "/w".into(),
            home: "/h".into(),
            trace_path: None,
        };
        assert_eq!(
            anchor("${workspace}/protected/**", &ctx),
            Some("/w/protected".into())
        );
        assert_eq!(anchor("~/.ssh/id_*", &ctx), Some("/h/.ssh".into()));
        assert_eq!(anchor("/etc/passwd", &ctx), Some("/etc/passwd".into()));
        assert_eq!(anchor("/**", &ctx), None);
        assert_eq!(anchor("**/.git/**", &ctx), None);
        assert_eq!(anchor("${trace}", &ctx), None);
    }

    #[test]
    fn a_hard_link_and_a_moved_ancestor_reach_the_protected_paths() {
        let t = tempfile::tempdir().unwrap();
        let w = t.path().join("w");
        std::fs::create_dir_all(w.join("a/protected")).unwrap();
        std::fs::write(w.join("a/protected/f"), "x").unwrap();
        std::fs::hard_link(w.join("a/protected/f"), w.join("link")).unwrap();
        let ctx = Context {
            workspace: w.clone(),
            home: "/nonexistent".into(),
            trace_path: None,
        };
        let policy = Policy::from_str(
            r#"
version = 1
[[rule]]
id = "t.protected"
reason = "protected"
ops = ["unlink", "rename", "truncate"]
paths = ["${workspace}/a/protected/**", "${workspace}/a/protected"]
treatment = "deny"
"#,
            "test",
        )
        .unwrap();
        let p = Protected::resolve(&policy, &ctx);
        let act = |op: Op, path: &Path, path2: Option<&Path>| Action {
            op: Some(op),
            syscall: "x".into(),
            path: Some(path.to_string_lossy().into_owned()),
            path2: path2.map(|p| p.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let judge = |a: &Action| {
            let v = policy.evaluate(a, &ctx);
            p.check(a, &v, true, &policy, &ctx).unwrap_or(v)
        };
        // Truncating the pre-existing link is truncating the protected file.
        let v = judge(&act(Op::Truncate, &w.join("link"), None));
        assert_eq!(
            (v.treatment, v.rule.as_str()),
            (Treatment::Deny, "t.protected")
        );
        assert!(v.reason.contains("by identity"), "{}", v.reason);
        // Renaming the directory above moves the protected one.
        let v = judge(&act(Op::Rename, &w.join("a"), Some(&w.join("b"))));
        assert_eq!(v.treatment, Treatment::Deny);
        // After the move (made outside the rule's reach), a delete under
        // the new name is a delete of the protected file.
        std::fs::rename(w.join("a"), w.join("b")).unwrap();
        let v = judge(&act(Op::Unlink, &w.join("b/protected/f"), None));
        assert_eq!(v.treatment, Treatment::Deny, "{}", v.reason);
        // A file linked elsewhere during the run: its new name reaches it.
        let mut p = p;
        std::fs::write(w.join("b/protected/g"), "x").unwrap();
        p.linking(&act(
            Op::Link,
            &w.join("b/protected/g"),
            Some(&w.join("g2")),
        ));
        std::fs::hard_link(w.join("b/protected/g"), w.join("g2")).unwrap();
        let a = act(Op::Truncate, &w.join("g2"), None);
        let v = policy.evaluate(&a, &ctx);
        let v = p.check(&a, &v, true, &policy, &ctx).unwrap_or(v);
        assert_eq!(v.treatment, Treatment::Deny, "{}", v.reason);
        // Elsewhere: nothing changes.
        std::fs::write(w.join("other"), "x").unwrap();
        let a = act(Op::Unlink, &w.join("other"), None);
        let v = policy.evaluate(&a, &ctx);
        assert!(p.check(&a, &v, true, &policy, &ctx).is_none());
        assert_eq!(v.treatment, Treatment::Accept);
    }
}
