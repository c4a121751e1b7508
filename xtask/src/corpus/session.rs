//! Corpus sessions: the scripts in tests/corpus/{benign,destructive}/, and
//! running one of them in a fresh copy of its project, unmonitored or
//! under `abm run`.
//!
//! A session script is bash with a header and functions:
//!
//! ```text
//! # project: itoa            the project the session works in (cwd, workspace)
//! # sibling: semver          optional: a second project checked out beside it
//! # what: one line           what the developer (or the mistake) does
//! # source: REPO PATH@COMMIT  optional: the third-party material it replays
//! setup() { ... }            optional, unmonitored: the state before the session
//! session() { ... }          the monitored work
//! check() { ... }            destructive only: exit 0 when the thing is intact
//! ```
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{bail, ensure, Context as _, Result};
use sha2::{Digest as _, Sha256};

use super::{git_env, sh, table::Kind};

#[derive(Debug, Clone)]
pub struct Session {
    pub name: String,
    pub kind: Kind,
    pub project: String,
    pub sibling: Option<String>,
    pub what: String,
    /// Where third-party material the session replays comes from
    /// (repository, path and commit).
    pub source: Option<String>,
    pub file: PathBuf,
}

/// Reads the header of one session script.
pub fn parse_session(file: &Path, kind: Kind, text: &str, projects: &[String]) -> Result<Session> {
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .with_context(|| format!("{}: not a UTF-8 file name", file.display()))?
        .to_string();
    let (mut project, mut sibling, mut what, mut source) = (None, None, String::new(), None);
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix('#') else {
            break;
        };
        let Some((key, value)) = rest.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        match key.trim() {
            "project" => project = Some(value),
            "sibling" => sibling = Some(value),
            "what" => what = value,
            "source" => source = Some(value),
            other if n > 0 && !other.contains(' ') => {
                bail!(
                    "{}:{}: unknown header key {other:?} (project, sibling, what, source)",
                    file.display(),
                    n + 1
                )
            }
            _ => {}
        }
    }
    let project = project
        .with_context(|| format!("{}: no `# project: NAME` line at the top", file.display()))?;
    for p in std::iter::once(&project).chain(sibling.as_ref()) {
        ensure!(
            projects.contains(p),
            "{}: project {p:?} is not in tests/corpus/projects.toml ({})",
            file.display(),
            projects.join(", ")
        );
    }
    ensure!(
        sibling.as_ref() != Some(&project),
        "{}: the sibling is the project itself",
        file.display()
    );
    let defines = |f: &str| {
        text.lines()
            .any(|l| l.trim_start().starts_with(&format!("{f}()")))
    };
    ensure!(
        defines("session"),
        "{}: defines no `session()` function",
        file.display()
    );
    if kind == Kind::Destructive {
        ensure!(
            defines("check"),
            "{}: a destructive session needs a `check()` function (exit 0 when the thing is intact)",
            file.display()
        );
    }
    Ok(Session {
        name,
        kind,
        project,
        sibling,
        what,
        source,
        file: file.to_path_buf(),
    })
}

pub fn discover(corpus_dir: &Path, projects: &[String]) -> Result<Vec<Session>> {
    let mut out = Vec::new();
    for (sub, kind) in [("benign", Kind::Benign), ("destructive", Kind::Destructive)] {
        let dir = corpus_dir.join(sub);
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sh"))
            .collect();
        files.sort();
        for f in files {
            let text =
                fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            out.push(parse_session(&f, kind, &text, projects)?);
        }
    }
    Ok(out)
}

/// How a session is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Unmonitored,
    Observe,
    Enforce,
    /// Unmonitored, every simple command first given to `abm hook json`
    /// (`hooked::trap_script`); the answers in `NAME.hook-answers.jsonl`.
    Hooked,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Unmonitored => "unmonitored",
            Mode::Observe => "observe",
            Mode::Enforce => "enforce",
            Mode::Hooked => "hook",
        }
    }
}

/// Everything a run needs besides the session. Each worker has its own
/// home and log directory; all runs of a session use the same one,
/// so absolute paths are the same in the runs that are compared.
#[derive(Debug, Clone)]
pub struct Runner {
    /// Worker number (names the log directory).
    pub id: usize,
    /// The developer's home for the run (recreated per run): HOME, with
    /// the projects in `src/` and their origins in `remotes/`.
    pub home: PathBuf,
    pub templates: PathBuf,
    pub out: PathBuf,
    pub venv_bin: PathBuf,
    pub node_bin: PathBuf,
    pub wheelhouse: PathBuf,
    pub cargo_home: PathBuf,
    pub npm_cache: PathBuf,
    pub abm: PathBuf,
    pub policies: Vec<PathBuf>,
    pub confirm_timeout: String,
    pub time_limit_secs: u64,
}

/// What `abm replay` of an observe trace said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// Records re-judged.
    pub records: u64,
    /// Records whose replayed treatment differs from the recorded one.
    pub changed: Vec<String>,
}

/// Reads `abm replay --json --changed` output.
pub fn parse_replay(json: &[u8]) -> Result<Replay> {
    let v: serde_json::Value = serde_json::from_slice(json)?;
    let records = v["total"]
        .as_u64()
        .context("no `total` in the replay report")?;
    let events = v["events"]
        .as_array()
        .context("no `events` in the replay report")?;
    let s = |x: &serde_json::Value| x.as_str().unwrap_or("?").to_owned();
    let changed = events
        .iter()
        .filter(|e| e["changed"] == true)
        .map(|e| {
            format!(
                "#{} {} {}: {} ({}) -> {} ({})",
                e["seq"],
                s(&e["op"]),
                s(&e["subject"]),
                s(&e["old"]["rule"]),
                s(&e["old"]["treatment"]),
                s(&e["new"]["rule"]),
                s(&e["new"]["treatment"]),
            )
        })
        .collect();
    Ok(Replay { records, changed })
}

/// What one run left behind.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub exit: i32,
    pub digest: String,
    /// Destructive sessions: did `check` pass (the thing is intact)?
    pub intact: Option<bool>,
    pub trace: Option<PathBuf>,
    pub secs: f64,
}

const FAKE_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
corpus-fixture-not-a-real-key\n\
-----END OPENSSH PRIVATE KEY-----\n";

impl Runner {
    fn log_dir(&self) -> PathBuf {
        PathBuf::from(format!(
            "/var/log/abm-corpus-{}-{}",
            std::process::id(),
            self.id
        ))
    }

    fn env(&self, s: &Session) -> Vec<(String, String)> {
        let path = format!(
            "{}:{}:{}",
            self.venv_bin.display(),
            self.node_bin.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
        );
        let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let rustup =
            std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{real_home}/.rustup"));
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), self.home.display().to_string()),
            ("USER".into(), "root".into()),
            ("LOGNAME".into(), "root".into()),
            ("SHELL".into(), "/bin/bash".into()),
            ("TERM".into(), "dumb".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TZ".into(), "UTC".into()),
            ("RUSTUP_HOME".into(), rustup),
            ("CARGO_TERM_COLOR".into(), "never".into()),
            ("CARGO_NET_OFFLINE".into(), "true".into()),
            ("PIP_NO_INDEX".into(), "1".into()),
            ("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()),
            (
                "PIP_FIND_LINKS".into(),
                self.wheelhouse.display().to_string(),
            ),
            // Go offline, with the toolchain installed, caches in the home.
            ("GOPROXY".into(), "off".into()),
            ("GOTOOLCHAIN".into(), "local".into()),
            ("GOFLAGS".into(), "-mod=mod".into()),
            ("GOPATH".into(), self.home.join("go").display().to_string()),
            (
                "GOCACHE".into(),
                self.home.join(".cache/go-build").display().to_string(),
            ),
            ("CORPUS_PROJECT".into(), s.project.clone()),
            (
                "CORPUS_ORIGIN".into(),
                self.remote(&s.project).display().to_string(),
            ),
            (
                "CORPUS_LOG_DIR".into(),
                self.log_dir().display().to_string(),
            ),
        ];
        if let Some(sib) = &s.sibling {
            env.push((
                "CORPUS_SIBLING".into(),
                self.repo(sib).display().to_string(),
            ));
        }
        env.extend(git_env());
        env
    }

    fn repo(&self, project: &str) -> PathBuf {
        self.home.join("src").join(project)
    }

    fn remote(&self, project: &str) -> PathBuf {
        self.home.join("remotes").join(format!("{project}.git"))
    }

    /// A fresh home: the projects, their origins, dotfiles, caches.
    fn instantiate(&self, s: &Session) -> Result<()> {
        if self.home.exists() {
            fs::remove_dir_all(&self.home)
                .with_context(|| format!("removing the previous run's {}", self.home.display()))?;
        }
        fs::create_dir_all(self.home.join("src"))?;
        fs::create_dir_all(self.home.join("remotes"))?;
        for p in std::iter::once(&s.project).chain(s.sibling.as_ref()) {
            let t = self.templates.join(p);
            sh(Command::new("cp")
                .arg("-a")
                .arg(t.join("src").join(p))
                .arg(self.home.join("src")))?;
            sh(Command::new("cp")
                .arg("-a")
                .arg(t.join("remotes").join(format!("{p}.git")))
                .arg(self.home.join("remotes")))?;
            sh(Command::new("git")
                .args(["remote", "set-url", "origin"])
                .arg(self.remote(p))
                .current_dir(self.repo(p)))?;
        }
        let h = &self.home;
        let write = |rel: &str, body: &str, mode: u32| -> Result<()> {
            use std::os::unix::fs::PermissionsExt as _;
            let f = h.join(rel);
            fs::create_dir_all(f.parent().expect("parent"))?;
            fs::write(&f, body)?;
            fs::set_permissions(&f, fs::Permissions::from_mode(mode))?;
            Ok(())
        };
        write(
            ".gitconfig",
            "[user]\n\tname = Corpus Dev\n\temail = dev@corpus.example\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
            0o644,
        )?;
        write(".ssh/id_ed25519", FAKE_KEY, 0o600)?;
        write(
            ".ssh/id_ed25519.pub",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIcorpus dev@corpus.example\n",
            0o644,
        )?;
        write(
            ".ssh/known_hosts",
            "git.corpus.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIhost\n",
            0o644,
        )?;
        write(".aws/credentials", "[default]\naws_access_key_id = AKIACORPUSFIXTURE\naws_secret_access_key = corpus/fixture/not/a/secret\n", 0o600)?;
        write(
            ".bash_history",
            "cd ~/src/itoa\ncargo test\ngit log --oneline\nssh deploy@build.corpus.example\nmake -j2\n",
            0o600,
        )?;
        write(".bashrc", "export EDITOR=vi\nalias ll='ls -l'\n", 0o644)?;
        write(
            ".npmrc",
            "fund=false\naudit=false\nupdate-notifier=false\n",
            0o644,
        )?;
        if self.cargo_home.exists() {
            sh(Command::new("cp")
                .arg("-a")
                .arg(&self.cargo_home)
                .arg(h.join(".cargo")))?;
        }
        if self.npm_cache.exists() {
            sh(Command::new("cp")
                .arg("-a")
                .arg(&self.npm_cache)
                .arg(h.join(".npm")))?;
        }
        let logs = self.log_dir();
        let _ = fs::remove_dir_all(&logs);
        fs::create_dir_all(&logs)?;
        Ok(())
    }

    fn bash(&self, s: &Session, function: &str) -> Command {
        let mut c = Command::new("bash");
        c.args(["-c", &format!("set -euo pipefail; . \"$0\"; {function}")])
            .arg(&s.file);
        c
    }

    fn prepared(&self, s: &Session, mut c: Command, log: &Path) -> Result<Command> {
        let logf = fs::OpenOptions::new().create(true).append(true).open(log)?;
        // The project directory itself may be what a mistake removed.
        let repo = self.repo(&s.project);
        c.current_dir(if repo.is_dir() {
            repo
        } else {
            self.home.clone()
        })
        .env_clear()
        .envs(self.env(s))
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf);
        Ok(c)
    }

    /// Runs `s` once in `mode` in a fresh copy of its project.
    pub fn run(&self, s: &Session, mode: Mode) -> Result<RunResult> {
        fs::create_dir_all(&self.out)?;
        let tag = format!("{}.{}", s.name, mode.name());
        let log = self.out.join(format!("{tag}.log"));
        let _ = fs::remove_file(&log);
        self.instantiate(s)?;
        let text = fs::read_to_string(&s.file)?;
        if text.lines().any(|l| l.trim_start().starts_with("setup()")) {
            let status = self.prepared(s, self.bash(s, "setup"), &log)?.status()?;
            ensure!(
                status.success(),
                "{}: setup() failed ({status}); see {}",
                s.name,
                log.display()
            );
        }
        let trace = matches!(mode, Mode::Observe | Mode::Enforce)
            .then(|| self.out.join(format!("{tag}.jsonl")));
        let mut cmd = Command::new("timeout");
        cmd.args(["--kill-after=10", &self.time_limit_secs.to_string()]);
        if let Some(trace) = &trace {
            let _ = fs::remove_file(trace);
            let quarantine = self.out.join(format!("{tag}.quarantine"));
            let _ = fs::remove_dir_all(&quarantine);
            cmd.arg(&self.abm).args(["run", "-q", "--trace"]).arg(trace);
            cmd.arg("--workspace").arg(self.repo(&s.project));
            cmd.arg("--quarantine").arg(&quarantine);
            for p in &self.policies {
                cmd.arg("--policy").arg(p);
            }
            if mode == Mode::Enforce {
                cmd.args([
                    "--enforce",
                    "--no-prompt",
                    "--confirm-timeout",
                    &self.confirm_timeout,
                ]);
            }
            cmd.arg("--");
        }
        let inner = if mode == Mode::Hooked {
            let log = self.hook_log(s);
            let state = self.out.join(format!("{tag}.state"));
            let _ = fs::remove_file(&log);
            let _ = fs::remove_dir_all(&state);
            fs::create_dir_all(&state)?;
            let mut args = vec![
                "--workspace".to_owned(),
                self.repo(&s.project).display().to_string(),
            ];
            for p in &self.policies {
                args.extend(["--policy".to_owned(), p.display().to_string()]);
            }
            let trap = super::hooked::trap_script(&self.abm, &args, &log, &state, &tag);
            self.bash(s, &format!("{trap}session"))
        } else {
            self.bash(s, "session")
        };
        cmd.arg(inner.get_program()).args(inner.get_args());
        let start = Instant::now();
        let status = self.prepared(s, cmd, &log)?.status()?;
        let secs = start.elapsed().as_secs_f64();
        ensure!(
            status.code() != Some(124) && status.code() != Some(137),
            "{}: {} run exceeded {} s; see {}",
            s.name,
            mode.name(),
            self.time_limit_secs,
            log.display()
        );
        let exit = status.code().unwrap_or(-1);
        if let Some(trace) = &trace {
            ensure!(
                trace.exists(),
                "{}: abm wrote no trace ({status}); see {}",
                s.name,
                log.display()
            );
        }
        let digest = tree_digest(&self.repo(&s.project), &self.remote(&s.project))?;
        let intact = if s.kind == Kind::Destructive {
            Some(
                self.prepared(s, self.bash(s, "check"), &log)?
                    .status()?
                    .success(),
            )
        } else {
            None
        };
        let _ = fs::remove_dir_all(self.log_dir());
        Ok(RunResult {
            exit,
            digest,
            intact,
            trace,
            secs,
        })
    }

    /// Where the [`Mode::Hooked`] run of `s` writes the hook's answers.
    pub fn hook_log(&self, s: &Session) -> PathBuf {
        self.out.join(format!("{}.hook-answers.jsonl", s.name))
    }

    /// `abm replay` of a trace with the run's policies: how many records
    /// it re-judged, and each one whose treatment differs from the
    /// recorded verdict, as `seq subject: rule (treatment) -> rule
    /// (treatment)`.
    pub fn replay_changes(&self, trace: &Path) -> Result<Replay> {
        let mut cmd = Command::new(&self.abm);
        cmd.args(["replay", "--json", "--changed"]);
        for p in &self.policies {
            cmd.arg("--policy").arg(p);
        }
        let out = cmd
            .arg(trace)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {} replay", self.abm.display()))?;
        ensure!(
            out.status.success(),
            "abm replay {} failed ({}): {}",
            trace.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        parse_replay(&out.stdout)
            .with_context(|| format!("reading `abm replay --json` of {}", trace.display()))
    }

    pub fn cleanup(&self) {
        let _ = fs::remove_dir_all(&self.home);
        let _ = fs::remove_dir_all(self.log_dir());
    }
}

fn git_out(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// A digest of a project's state: refs, HEAD, status (ignored paths
/// collapsed to their top directory, as `git status` shows them), the
/// content and exec bit of every tracked or untracked-not-ignored file,
/// and the origin's refs. Ignored build output counts by presence only
/// (its bytes embed times and paths); `.git` internals (packing, reflogs)
/// do not count.
pub fn tree_digest(repo: &Path, remote: &Path) -> Result<String> {
    use std::os::unix::{ffi::OsStrExt as _, fs::PermissionsExt as _};
    let mut h = Sha256::new();
    if !repo.join(".git").exists() {
        h.update(b"no repository\n");
        if repo.exists() {
            let mut files = Vec::new();
            walk(repo, repo, &mut files)?;
            files.sort();
            for f in files {
                h.update(f.as_bytes());
            }
        }
        return Ok(hex::encode(h.finalize()));
    }
    for args in [
        &["for-each-ref", "--format=%(refname) %(objectname)"][..],
        &["symbolic-ref", "-q", "HEAD"][..],
        &["rev-parse", "-q", "--verify", "HEAD"][..],
        &["status", "--porcelain=v1", "--ignored"][..],
    ] {
        h.update(args.join(" ").as_bytes());
        h.update(git_out(repo, args).unwrap_or_default());
    }
    let listed =
        git_out(repo, &["ls-files", "-z", "-c", "-o", "--exclude-standard"]).unwrap_or_default();
    let mut names: Vec<&[u8]> = listed
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    for n in names {
        let p = repo.join(std::ffi::OsStr::from_bytes(n));
        h.update(n);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                h.update(fs::read_link(&p)?.as_os_str().as_encoded_bytes());
            }
            Ok(m) if m.is_file() => {
                h.update([u8::from(m.permissions().mode() & 0o111 != 0)]);
                h.update(Sha256::digest(fs::read(&p)?));
            }
            Ok(_) => h.update(b"other"),
            Err(_) => h.update(b"missing"),
        }
    }
    h.update(b"origin");
    h.update(
        git_out(
            remote,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
        .unwrap_or_default(),
    );
    Ok(hex::encode(h.finalize()))
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        if e.file_type()?.is_dir() {
            out.push(format!("{rel}/"));
            walk(root, &p, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn projects() -> Vec<String> {
        vec!["itoa".into(), "semver".into()]
    }

    #[test]
    fn replay_report_gives_total_and_changed_records() {
        let json = br#"{"total": 40, "changed": 1, "events": [
            {"seq": 9, "op": "unlink", "subject": "/w/a", "changed": true,
             "old": {"rule": "action.delete-work", "treatment": "confirm"},
             "new": {"rule": "default", "treatment": "accept"}}]}"#;
        let r = parse_replay(json).unwrap();
        assert_eq!(r.records, 40);
        assert_eq!(
            r.changed,
            vec!["#9 unlink /w/a: action.delete-work (confirm) -> default (accept)".to_string()]
        );
        assert!(parse_replay(b"{}").is_err());
        assert!(parse_replay(b"not json").is_err());
    }

    #[test]
    fn header_names_project_sibling_and_what() {
        let text = "# project: itoa\n# sibling: semver\n# what: deletes the sibling\nsession() { rm -rf ../semver; }\ncheck() { test -d ../semver; }\n";
        let s = parse_session(
            Path::new("d/rm-sibling.sh"),
            Kind::Destructive,
            text,
            &projects(),
        )
        .unwrap();
        assert_eq!(s.name, "rm-sibling");
        assert_eq!(s.project, "itoa");
        assert_eq!(s.sibling.as_deref(), Some("semver"));
        assert_eq!(s.what, "deletes the sibling");
        assert_eq!(s.source, None);
        let text = "# project: itoa\n# source: owner/repo tasks/x/solution.sh@abc\n# what: replays\nsession() { :; }\n";
        let s = parse_session(Path::new("b/tb.sh"), Kind::Benign, text, &projects()).unwrap();
        assert_eq!(
            s.source.as_deref(),
            Some("owner/repo tasks/x/solution.sh@abc")
        );
    }

    #[test]
    fn bad_headers_are_errors_naming_the_file() {
        let cases = [
            ("session() { :; }\n", "no `# project: NAME`"),
            (
                "# project: nosuch\nsession() { :; }\n",
                "not in tests/corpus/projects.toml",
            ),
            (
                "# project: itoa\n# colour: red\nsession() { :; }\n",
                "unknown header key",
            ),
            ("# project: itoa\n", "no `session()`"),
            (
                "# project: itoa\n# sibling: itoa\nsession() { :; }\n",
                "the sibling is the project",
            ),
        ];
        for (text, want) in cases {
            let err = parse_session(Path::new("b/x.sh"), Kind::Benign, text, &projects())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(want) && err.contains("b/x.sh"),
                "{text:?}: {err}"
            );
        }
        let err = parse_session(
            Path::new("d/x.sh"),
            Kind::Destructive,
            "# project: itoa\nsession() { :; }\n",
            &projects(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("check()"), "{err}");
    }

    /// The digest that decides "same outcome": real git, a real repository.
    #[test]
    fn tree_digest_sees_work_and_refs_but_not_ignored_bytes() {
        let dir = std::env::temp_dir().join(format!("abm-corpus-digest-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (repo, remote) = (dir.join("r"), dir.join("origin.git"));
        fs::create_dir_all(&repo).unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(&repo)
                .envs(git_env())
                .output()
                .unwrap();
            assert!(
                ok.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&ok.stderr)
            );
        };
        git(&["init", "-q", "-b", "main"]);
        fs::write(repo.join(".gitignore"), "build/\n").unwrap();
        fs::write(repo.join("a.txt"), "one\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "first"]);
        Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&remote)
            .output()
            .unwrap();
        git(&["remote", "add", "origin", remote.to_str().unwrap()]);

        let d0 = tree_digest(&repo, &remote).unwrap();
        assert_eq!(d0, tree_digest(&repo, &remote).unwrap(), "stable");

        fs::create_dir_all(repo.join("build")).unwrap();
        fs::write(repo.join("build/out.o"), "1").unwrap();
        let d_build = tree_digest(&repo, &remote).unwrap();
        assert_ne!(d0, d_build, "ignored output counts by presence");
        fs::write(repo.join("build/out.o"), "2 (other bytes, same presence)").unwrap();
        assert_eq!(
            d_build,
            tree_digest(&repo, &remote).unwrap(),
            "not by its bytes"
        );

        fs::write(repo.join("a.txt"), "two\n").unwrap();
        let d_edit = tree_digest(&repo, &remote).unwrap();
        assert_ne!(d_build, d_edit, "a tracked file's content counts");
        fs::write(repo.join("new.txt"), "x").unwrap();
        assert_ne!(
            d_edit,
            tree_digest(&repo, &remote).unwrap(),
            "an untracked file counts"
        );
        fs::remove_file(repo.join("new.txt")).unwrap();
        assert_eq!(d_edit, tree_digest(&repo, &remote).unwrap());

        git(&["push", "-q", "origin", "main"]);
        assert_ne!(
            d_edit,
            tree_digest(&repo, &remote).unwrap(),
            "the origin's refs count"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
