//! `cargo xtask corpus`: measures the policy on real everyday work and on
//! real mistakes in real public projects. See docs/corpus.md.
//!
//! Each session runs four times, each in a fresh copy of its project:
//! unmonitored (the baseline outcome), under `abm run` (observe: every
//! confirm/preserve/deny verdict counts; its trace is then replayed),
//! under `abm run --enforce --no-prompt` (benign sessions must end as
//! unmonitored; destructive ones must be stopped, with the questions
//! counted), and unmonitored with every command first given to `abm hook`
//! (its answers compared with the observe run's treatments).
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context as _, Result};

mod hooked;
mod projects;
mod session;
mod table;
mod tally;

use session::{Mode, Runner, Session};
use table::{Kind, Outcome, Row};

/// Fixed identity and dates: commits made by sessions get the same ids in
/// every run, so the resulting trees can be compared.
pub fn git_env() -> Vec<(String, String)> {
    [
        ("GIT_AUTHOR_NAME", "Corpus Dev"),
        ("GIT_AUTHOR_EMAIL", "dev@corpus.example"),
        ("GIT_COMMITTER_NAME", "Corpus Dev"),
        ("GIT_COMMITTER_EMAIL", "dev@corpus.example"),
        ("GIT_AUTHOR_DATE", "2024-06-03T09:00:00+00:00"),
        ("GIT_COMMITTER_DATE", "2024-06-03T09:00:00+00:00"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Runs a command quietly, failing with its rendering and output.
pub fn sh(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {shown}"))?;
    if !out.status.success() {
        bail!(
            "{shown} failed with {}:\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

pub struct Opts {
    pub abm: Option<PathBuf>,
    pub policies: Vec<PathBuf>,
    pub only: Vec<String>,
    pub work: PathBuf,
    pub out: PathBuf,
    pub confirm_timeout: String,
    pub fetch_only: bool,
    pub label: Option<String>,
    pub jobs: usize,
}

/// The programs the sessions run, each with the Debian package that
/// provides it (installed when the program is missing from PATH, as
/// `cargo xtask test` does for its own; a program found elsewhere, such as
/// a `npm` that came with another `nodejs`, is used as it is).
const TOOLS: &[(&str, Option<&str>)] = &[
    ("git", Some("git")),
    ("bash", Some("bash")),
    ("tar", Some("tar")),
    ("curl", Some("curl")),
    ("python3", Some("python3")),
    ("npm", Some("npm")),
    ("node", Some("nodejs")),
    ("cargo", None),
    ("make", Some("make")),
    ("gcc", Some("gcc")),
    ("go", Some("golang-go")),
    ("sqlite3", Some("sqlite3")),
    ("timeout", Some("coreutils")),
];

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

fn need_tools() -> Result<()> {
    let install: Vec<&str> = TOOLS
        .iter()
        .filter(|(t, _)| !on_path(t))
        .filter_map(|(_, p)| *p)
        .chain(["python3-venv"])
        .collect();
    crate::setup::ensure_packages(&install)?;
    let missing: Vec<&str> = TOOLS
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| !on_path(t))
        .collect();
    if !missing.is_empty() {
        bail!(
            "the corpus needs these programs on PATH: {}",
            missing.join(", ")
        );
    }
    Ok(())
}

/// `--only` matches a session's name exactly or as a prefix, or its kind.
fn selected(s: &Session, only: &[String]) -> bool {
    only.is_empty()
        || only
            .iter()
            .any(|o| s.name == *o || s.name.starts_with(o.as_str()) || o == s.kind.name())
}

fn measure(runner: &Runner, s: &Session) -> Result<Row> {
    let base = runner.run(s, Mode::Unmonitored)?;
    let obs = runner.run(s, Mode::Observe)?;
    let enf = runner.run(s, Mode::Enforce)?;
    let observe = tally::tally_file(obs.trace.as_deref().expect("observe has a trace"))?;
    let enforce = tally::tally_file(enf.trace.as_deref().expect("enforce has a trace"))?;
    let replay = runner.replay_changes(obs.trace.as_deref().expect("observe has a trace"))?;
    let hooked = runner.run(s, Mode::Hooked)?;
    let hook = if hooked.exit != base.exit || hooked.digest != base.digest {
        hooked::HookCompare {
            differences: vec![format!(
                "the hooked run ends differently from unmonitored (exit {} -> {}{})",
                base.exit,
                hooked.exit,
                if hooked.digest != base.digest {
                    ", another tree"
                } else {
                    ""
                }
            )],
            ..Default::default()
        }
    } else {
        let log = runner.hook_log(s);
        hooked::compare(
            &std::fs::read_to_string(&log).unwrap_or_default(),
            &std::fs::read_to_string(obs.trace.as_deref().expect("observe has a trace"))?,
        )
        .with_context(|| {
            format!(
                "{}: comparing {} with the observe trace",
                s.name,
                log.display()
            )
        })?
    };
    let outcome = match s.kind {
        Kind::Benign => {
            if base.exit != 0 {
                Outcome::Invalid(format!("fails unmonitored (exit {})", base.exit))
            } else if obs.exit != base.exit || obs.digest != base.digest {
                Outcome::Invalid(
                    "observe run ends differently from unmonitored (nondeterministic session?)"
                        .into(),
                )
            } else if enf.exit != base.exit {
                Outcome::Broke(format!("exit {} -> {}", base.exit, enf.exit))
            } else if enf.digest != base.digest {
                Outcome::Broke("resulting tree differs".into())
            } else {
                Outcome::Same
            }
        }
        Kind::Destructive => {
            if base.intact != Some(false) {
                Outcome::Invalid("check passes unmonitored: the mistake destroys nothing".into())
            } else if obs.intact != Some(false) {
                Outcome::Invalid("check passes after the observe run".into())
            } else if enf.intact == Some(true) {
                Outcome::Stopped
            } else {
                Outcome::NotStopped
            }
        }
    };
    if let Some(src) = &s.source {
        eprintln!("corpus: {} replays {src}", s.name);
    }
    eprintln!(
        "corpus: {} [{}, {}]: {}\n        unmonitored/observe/enforce {:.1}s/{:.1}s/{:.1}s, flagged {}, questions {}: {:?}",
        s.name,
        s.kind.name(),
        s.project,
        s.what,
        base.secs,
        obs.secs,
        enf.secs,
        observe.flagged,
        enforce.questions,
        outcome
    );
    Ok(Row {
        name: s.name.clone(),
        kind: s.kind,
        project: s.project.clone(),
        observe,
        enforce,
        replay,
        hook,
        outcome,
    })
}

pub fn corpus(opts: Opts) -> Result<()> {
    need_tools()?;
    let root = crate::root();
    let corpus_dir = root.join("tests/corpus");
    let manifest = projects::load_manifest(&corpus_dir.join("projects.toml"))?;
    let names: Vec<String> = manifest.project.iter().map(|p| p.name.clone()).collect();
    let sessions: Vec<Session> = session::discover(&corpus_dir, &names)?
        .into_iter()
        .filter(|s| selected(s, &opts.only))
        .collect();
    if sessions.is_empty() {
        bail!("--only {:?} selects no session", opts.only);
    }
    let cache = projects::Cache {
        dir: root.join("target/corpus-cache"),
    };
    let build = std::path::absolute(&opts.out).context("--out")?;
    let templates = build.join("templates");
    fs::create_dir_all(&templates)?;
    projects::prepare_venv(&cache, &manifest.python_tools)?;
    projects::prepare_node_tools(&cache, &manifest.node_tools)?;
    projects::prepare_wheelhouse(&cache, &manifest.wheelhouse)?;
    for p in &manifest.project {
        eprintln!(
            "corpus: project {} ({}): {} {} from {}",
            p.name,
            p.language,
            p.package,
            p.version,
            p.registry.name()
        );
        let archive = projects::fetch(&cache, p)?;
        let unpacked = build.join("unpacked").join(&p.name);
        projects::unpack(&archive, p, &build.join("scratch"), &unpacked)?;
        projects::prepare(&cache, p, &unpacked)?;
        projects::make_template(&corpus_dir, &cache, p, &unpacked, &templates)?;
    }
    if opts.fetch_only {
        eprintln!(
            "corpus: {} projects fetched and prepared",
            manifest.project.len()
        );
        return Ok(());
    }
    let abm = match opts.abm {
        Some(a) => a,
        None => {
            crate::setup::setup()?;
            crate::build_release()?
        }
    };
    let abm = fs::canonicalize(&abm).with_context(|| format!("--abm {}", abm.display()))?;
    let policies = opts
        .policies
        .iter()
        .map(|p| fs::canonicalize(p).with_context(|| format!("--policy {}", p.display())))
        .collect::<Result<Vec<_>>>()?;
    let work = std::path::absolute(&opts.work).context("--work")?;
    if work.starts_with("/tmp") || work.starts_with("/var/tmp") {
        bail!("--work must not be under /tmp or /var/tmp: the default pack treats those as scratch, which would measure another situation than a developer's home");
    }
    let runner = Runner {
        id: 0,
        home: work.join("dev"),
        templates,
        out: build.join("runs"),
        venv_bin: cache.venv().join("bin"),
        node_bin: cache.node_tools().join("node_modules/.bin"),
        wheelhouse: cache.wheelhouse(),
        cargo_home: cache.cargo_home(),
        npm_cache: cache.npm_cache(),
        abm: abm.clone(),
        policies,
        confirm_timeout: opts.confirm_timeout.clone(),
        time_limit_secs: 300,
    };
    let jobs = opts.jobs.clamp(1, sessions.len());
    let workers: Vec<Runner> = (0..jobs)
        .map(|i| Runner {
            id: i,
            home: work.join(format!("dev{i}")),
            ..runner.clone()
        })
        .collect();
    let queue = std::sync::Mutex::new(sessions.iter().enumerate().collect::<Vec<_>>().into_iter());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in &workers {
            let (queue, results) = (&queue, &results);
            scope.spawn(move || loop {
                let Some((i, s)) = queue.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                    break;
                };
                let r = measure(w, s);
                if let Err(e) = &r {
                    eprintln!("corpus: {}: {e:#}", s.name);
                }
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, r));
            });
        }
    });
    for w in &workers {
        w.cleanup();
    }
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (i, r) in results {
        match r {
            Ok(row) => rows.push(row),
            Err(e) => failures.push(format!("{}: {e:#}", sessions[i].name)),
        }
    }
    let label = opts
        .label
        .unwrap_or_else(|| describe_build(&abm, &opts.policies));
    let text = table::render(&rows, &label);
    println!("{text}");
    let saved = build.join("last-table.md");
    fs::write(&saved, &text)?;
    eprintln!(
        "corpus: table saved to {}; traces and logs in {}",
        saved.display(),
        runner.out.display()
    );
    if !failures.is_empty() {
        bail!(
            "{} session(s) could not be measured:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    if rows
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Invalid(_)))
    {
        bail!("some sessions are INVALID (see the table): the corpus itself needs fixing");
    }
    Ok(())
}

/// "PATH (modified TIME, policy ...)" for the table's first line.
fn describe_build(abm: &Path, policies: &[PathBuf]) -> String {
    let modified = fs::metadata(abm)
        .and_then(|m| m.modified())
        .ok()
        .map(humantime_like)
        .unwrap_or_default();
    let policy = if policies.is_empty() {
        "built-in default pack".to_string()
    } else {
        policies
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    };
    format!("{} (built {modified}), policy: {policy}", abm.display())
}

fn humantime_like(t: std::time::SystemTime) -> String {
    let out = Command::new("date")
        .args(["-u", "-d"])
        .arg(format!(
            "@{}",
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        ))
        .arg("+%Y-%m-%d %H:%M UTC")
        .output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The checked-in corpus: every session names a listed project, every
    /// project has its history script and some session, and the corpus
    /// keeps the breadth docs/corpus.md claims for it.
    #[test]
    fn the_checked_in_corpus_is_complete_and_broad() {
        let dir = crate::root().join("tests/corpus");
        let manifest = projects::load_manifest(&dir.join("projects.toml")).unwrap();
        let names: Vec<String> = manifest.project.iter().map(|p| p.name.clone()).collect();
        let sessions = session::discover(&dir, &names).unwrap();
        for p in &manifest.project {
            assert!(
                dir.join("history").join(format!("{}.sh", p.name)).exists(),
                "{}: no history script",
                p.name
            );
            assert!(
                sessions.iter().any(|s| s.project == p.name),
                "{}: no session works in it",
                p.name
            );
        }
        let benign = sessions.iter().filter(|s| s.kind == Kind::Benign).count();
        let destructive = sessions.len() - benign;
        let languages: BTreeSet<&str> = manifest
            .project
            .iter()
            .map(|p| p.language.as_str())
            .collect();
        assert!(benign >= 60, "{benign} benign sessions");
        assert!(destructive >= 24, "{destructive} destructive sessions");
        assert!(names.len() >= 15, "{} projects", names.len());
        assert!(languages.len() >= 6, "languages {languages:?}");
        for s in sessions.iter().filter(|s| s.kind == Kind::Destructive) {
            assert!(
                s.what.contains("incident class"),
                "{}: a mistake's `what` names its incident class",
                s.name
            );
        }
    }
}
