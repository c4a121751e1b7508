//! One question per action, and answers that stick: the one answer store
//! of an enforcing run, used the same way by both backends (the seccomp
//! supervisor before a call, the BPF LSM guard after the kernel refused
//! one).
//!
//! A `confirm` is asked once per logical action of a run: the same command
//! line in the same directory (an exec: its argv and working directory; a
//! PATH search that tries `/a/git`, `/b/git`, `/c/git` with the same argv is
//! one action), or the same operation on the same path(s) under the same
//! rule. While the first request waits, identical calls wait with it and
//! get its answer; once answered, identical calls get that answer at once
//! (a "no" stays a no; a "yes" is not asked again). `abm approve ID` of an
//! already refused or timed-out request changes the remembered answer, so
//! the caller's next identical attempt goes through.
//!
//! Where the action id of a call is known before it runs (the seccomp
//! supervisor judges with the action model), an answer also covers the
//! other calls of that action: the unlinks of an approved `rm -rf`.
use std::{
    collections::HashMap,
    path::Path,
    process::{Command, Stdio},
    sync::Mutex,
    time::Duration,
};

use crate::record::{Action, Op, Treatment, Verdict};

/// The remembered answer of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Asked, not answered yet: request id.
    Waiting(u64),
    Approved(u64),
    /// Refused (`denied` or `timeout`) by request id.
    Refused(u64, &'static str),
}

#[derive(Default)]
struct State {
    by_key: HashMap<String, Answer>,
    key_of: HashMap<u64, String>,
    /// Requests waiting on another request's answer: leader -> followers.
    followers: HashMap<u64, Vec<u64>>,
    /// Action id (crate::action) -> (approved, the request answered).
    by_action: HashMap<u64, (bool, u64)>,
}

/// The run's answers, shared by the backend that asks and the control
/// socket that answers.
#[derive(Default)]
pub struct Answers {
    st: Mutex<State>,
}

/// The key of one logical action for `rule`.
pub fn key(a: &Action, rule: &str) -> String {
    let op = a.op.map(Op::name).unwrap_or("?");
    match a.op {
        Some(Op::Exec) => format!(
            "exec\0{}\0{}",
            a.cwd.as_deref().unwrap_or(""),
            a.argv.as_ref().map(|v| v.join("\0")).unwrap_or_default()
        ),
        _ => format!(
            "{op}\0{rule}\0{}\0{}",
            a.path.as_deref().unwrap_or(""),
            a.path2.as_deref().unwrap_or("")
        ),
    }
}

impl Answers {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer already known for `key`, if any.
    pub fn lookup(&self, key: &str) -> Option<Answer> {
        self.lock().by_key.get(key).copied()
    }

    /// Records a human's answer to `request` for the action of the call
    /// that asked (`a.action`), and for a command line its logical key.
    pub fn record(&self, a: &Action, approve: bool, request: u64) {
        let mut st = self.lock();
        if let Some(k) = a.action {
            st.by_action.insert(k, (approve, request));
        }
        if a.op == Some(Op::Exec) && a.argv.is_some() {
            let answer = if approve {
                Answer::Approved(request)
            } else {
                Answer::Refused(request, "denied")
            };
            st.by_key.insert(key(a, ""), answer);
        }
    }

    /// The earlier answer that covers a call judged `confirm` or
    /// `preserve` before it runs: a refusal of the same command line, or
    /// an answer to the action the call belongs to. `(approved, request)`.
    pub fn prior(&self, a: &Action, v: &Verdict) -> Option<(bool, u64)> {
        if !matches!(v.treatment, Treatment::Confirm | Treatment::Preserve) {
            return None;
        }
        let st = self.lock();
        if a.op == Some(Op::Exec) && a.argv.is_some() {
            if let Some(Answer::Refused(r, _)) = st.by_key.get(&key(a, "")) {
                return Some((false, *r));
            }
        }
        a.action.and_then(|k| st.by_action.get(&k).copied())
    }

    /// A new question `id` for `key`.
    pub fn ask(&self, key: String, id: u64) {
        let mut st = self.lock();
        st.key_of.insert(id, key.clone());
        st.by_key.insert(key, Answer::Waiting(id));
    }

    /// Request `id` waits for `leader`'s answer.
    pub fn follow(&self, leader: u64, id: u64) {
        let mut st = self.lock();
        st.followers.entry(leader).or_default().push(id);
    }

    /// Records the answer to `id`; returns the requests that waited on it.
    pub fn answered(&self, id: u64, approve: bool, decision: &'static str) -> Vec<u64> {
        let mut st = self.lock();
        if let Some(k) = st.key_of.get(&id).cloned() {
            let a = if approve {
                Answer::Approved(id)
            } else {
                Answer::Refused(id, decision)
            };
            st.by_key.insert(k, a);
        }
        st.followers.remove(&id).unwrap_or_default()
    }

    /// The caller of `id` went away before an answer: ask again next time.
    /// Returns the waiting followers (the first becomes the new question).
    pub fn abandoned(&self, id: u64) -> Vec<u64> {
        let mut st = self.lock();
        if let Some(k) = st.key_of.remove(&id) {
            if st.by_key.get(&k) == Some(&Answer::Waiting(id)) {
                st.by_key.remove(&k);
            }
        }
        st.followers.remove(&id).unwrap_or_default()
    }

    /// `abm approve|deny ID` of a request answered before: changes the
    /// remembered answer of its action. `None`: `id` is unknown.
    pub fn reconsider(&self, id: u64, approve: bool) -> Option<Answer> {
        let mut st = self.lock();
        let k = st.key_of.get(&id)?.clone();
        let prev = st.by_key.get(&k).copied();
        if let Some(Answer::Waiting(_)) = prev {
            return None;
        }
        let a = if approve {
            Answer::Approved(id)
        } else {
            Answer::Refused(id, "denied")
        };
        st.by_key.insert(k, a);
        Some(a)
    }
}

/// Decision names for `answered`.
pub fn decision_name(d: &str) -> &'static str {
    match d {
        "timeout" => "timeout",
        "shutdown" => "shutdown",
        _ => "denied",
    }
}

/// What the action would destroy, when abm can tell cheaply and without
/// side effects: the uncommitted changes a `git reset --hard`,
/// `checkout/restore .` or `checkout -f` would discard, the untracked files
/// a `git clean -f` would delete. `None` for everything else.
pub fn preview(a: &Action) -> Option<String> {
    let argv = a.argv.as_ref()?;
    let cwd = Path::new(a.cwd.as_deref()?);
    let prog = Path::new(argv.first()?).file_name()?.to_str()?;
    if prog != "git" {
        return None;
    }
    let sub = argv.iter().skip(1).find(|w| !w.starts_with('-'))?;
    let (args, what): (Vec<&str>, &str) = match sub.as_str() {
        "reset" | "checkout" | "restore" | "switch" => (
            vec![
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
            ],
            "uncommitted change",
        ),
        "clean" => {
            // The same flags, as a dry run.
            let mut v = vec!["clean", "-n"];
            for w in argv.iter().skip(2) {
                if w.starts_with('-') && !w.starts_with("--force") && w != "-f" {
                    v.push(w.as_str());
                }
            }
            (v, "untracked file")
        }
        _ => return None,
    };
    let out = run_bounded(cwd, &args)?;
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    let names: Vec<String> = lines
        .iter()
        .map(|l| {
            l.trim_start_matches("Would remove ")
                .get(if sub == "clean" { 0 } else { 3 }..)
                .unwrap_or(l)
                .to_owned()
        })
        .collect();
    let n = names.len();
    if n == 0 {
        return Some(format!("no {what}s found in {}", cwd.display()));
    }
    let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    Some(format!(
        "would discard {n} {what}{} in {}: {shown}{}",
        if n == 1 { "" } else { "s" },
        cwd.display(),
        if n > 5 { ", ..." } else { "" }
    ))
}

/// `git ARGS` in `cwd` with a two-second limit; stdout on success.
fn run_bounded(cwd: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let mut s = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut s).ok()?;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(argv: &[&str], cwd: &str, path: &str) -> Action {
        Action {
            op: Some(Op::Exec),
            argv: Some(argv.iter().map(|s| s.to_string()).collect()),
            cwd: Some(cwd.into()),
            path: Some(path.into()),
            ..Default::default()
        }
    }

    #[test]
    fn path_search_retries_share_one_key_and_a_no_sticks() {
        let a = exec(&["git", "reset", "--hard"], "/w", "/a/git");
        let b = exec(&["git", "reset", "--hard"], "/w", "/b/git");
        let c = exec(&["git", "reset", "--hard"], "/other", "/a/git");
        assert_eq!(key(&a, "r"), key(&b, "r"));
        assert_ne!(key(&a, "r"), key(&c, "r"));
        let ans = Answers::default();
        assert_eq!(ans.lookup(&key(&a, "r")), None);
        ans.ask(key(&a, "r"), 1);
        assert_eq!(ans.lookup(&key(&b, "r")), Some(Answer::Waiting(1)));
        ans.follow(1, 2);
        assert_eq!(ans.answered(1, false, "denied"), vec![2]);
        assert_eq!(
            ans.lookup(&key(&b, "r")),
            Some(Answer::Refused(1, "denied"))
        );
        // A later approval of the same request changes the answer.
        assert_eq!(ans.reconsider(1, true), Some(Answer::Approved(1)));
        assert_eq!(ans.lookup(&key(&a, "r")), Some(Answer::Approved(1)));
        assert_eq!(ans.reconsider(99, true), None);
    }

    fn confirm() -> Verdict {
        Verdict {
            rule: "r".into(),
            treatment: Treatment::Confirm,
            irreversibility: crate::record::Irreversibility::Irreversible,
            scope: crate::record::Scope::Workspace,
            reason: "x".into(),
        }
    }

    #[test]
    fn a_refused_action_stays_refused_for_identical_retries() {
        let d = Answers::default();
        let mut a = exec(&["rm", "-rf", "../billing"], "/w", "/usr/bin/rm");
        a.action = Some(7);
        d.record(&a, false, 3);
        let mut retry = exec(&["rm", "-rf", "../billing"], "/w", "/bin/rm");
        retry.action = Some(8);
        assert_eq!(d.prior(&retry, &confirm()), Some((false, 3)));
        let mut elsewhere = retry.clone();
        elsewhere.cwd = Some("/other".into());
        assert_eq!(d.prior(&elsewhere, &confirm()), None);
        let mut effect = Action {
            op: Some(Op::Unlink),
            action: Some(7),
            ..Default::default()
        };
        assert_eq!(d.prior(&effect, &confirm()), Some((false, 3)));
        let deny = Verdict {
            treatment: Treatment::Deny,
            ..confirm()
        };
        assert_eq!(d.prior(&effect, &deny), None);
        effect.action = Some(9);
        assert_eq!(d.prior(&effect, &confirm()), None);
        // `abm approve 3` afterwards: the command line is no longer refused.
        assert_eq!(d.reconsider(3, true), None, "3 was recorded, not asked");
        d.ask(key(&a, "r"), 4);
        d.answered(4, false, "denied");
        assert_eq!(d.prior(&retry, &confirm()), Some((false, 4)));
        assert_eq!(d.reconsider(4, true), Some(Answer::Approved(4)));
        assert_eq!(d.prior(&retry, &confirm()), None);
    }

    #[test]
    fn abandoned_questions_are_asked_again() {
        let ans = Answers::default();
        let a = exec(&["git", "clean", "-fd"], "/w", "/usr/bin/git");
        ans.ask(key(&a, "r"), 4);
        ans.follow(4, 5);
        assert_eq!(ans.abandoned(4), vec![5]);
        assert_eq!(ans.lookup(&key(&a, "r")), None);
    }

    #[test]
    fn preview_lists_what_reset_would_discard() {
        let d = std::env::temp_dir().join(format!("abm-preview-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let git = |args: &[&str]| {
            let s = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&d)
                .output()
                .unwrap();
            assert!(s.status.success(), "{s:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(d.join("a.txt"), "1").unwrap();
        std::fs::write(d.join("B.txt"), "1").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "x"]);
        std::fs::write(d.join("a.txt"), "2").unwrap();
        std::fs::write(d.join("B.txt"), "2").unwrap();
        std::fs::write(d.join("new.txt"), "n").unwrap();
        let cwd = d.to_string_lossy().into_owned();
        let p = preview(&exec(&["git", "reset", "--hard"], &cwd, "/usr/bin/git")).unwrap();
        assert!(p.starts_with("would discard 2 uncommitted changes"), "{p}");
        assert!(p.contains("B.txt") && p.contains("a.txt"), "{p}");
        let p = preview(&exec(&["git", "clean", "-f"], &cwd, "/usr/bin/git")).unwrap();
        assert!(p.starts_with("would discard 1 untracked file"), "{p}");
        assert!(p.contains("new.txt"), "{p}");
        assert!(d.join("new.txt").exists());
        assert_eq!(preview(&exec(&["rm", "-rf", "x"], &cwd, "/bin/rm")), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
