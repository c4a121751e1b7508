//! The corpus projects: download from the registries at pinned versions
//! (checksummed, cached), prepare what offline builds need, and make each
//! a git repository with history and a bare `origin`.
use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, ensure, Context as _, Result};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::{git_env, sh};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub python_tools: Vec<String>,
    /// npm packages (`name@version`) installed once into the corpus's
    /// node tools directory; its `node_modules/.bin` is on every session's PATH.
    #[serde(default)]
    pub node_tools: Vec<String>,
    /// PyPI requirements downloaded once as wheels (with their
    /// dependencies) into the corpus wheelhouse, which every session's pip
    /// finds through `PIP_FIND_LINKS` (offline `pip install` into a new venv).
    #[serde(default)]
    pub wheelhouse: Vec<String>,
    pub project: Vec<Project>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    pub name: String,
    pub language: String,
    pub registry: Registry,
    pub package: String,
    pub version: String,
    pub sha256: String,
    pub subdir: String,
    pub prepare: Prepare,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Registry {
    #[serde(rename = "crates.io")]
    Crates,
    #[serde(rename = "pypi")]
    Pypi,
    #[serde(rename = "npm")]
    Npm,
    /// A Debian binary package (`.deb`), through `apt-get download`.
    #[serde(rename = "debian")]
    Debian,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Prepare {
    #[serde(rename = "")]
    Nothing,
    #[serde(rename = "cargo")]
    Cargo,
    #[serde(rename = "npm")]
    Npm,
}

impl Registry {
    pub fn name(self) -> &'static str {
        match self {
            Registry::Crates => "crates.io",
            Registry::Pypi => "PyPI",
            Registry::Npm => "npm",
            Registry::Debian => "Debian",
        }
    }
}

impl Project {
    /// The artifact's file name as the registry's client saves it.
    pub fn file_name(&self) -> String {
        match self.registry {
            Registry::Crates => format!("{}-{}.crate", self.package, self.version),
            Registry::Pypi => format!("{}-{}.tar.gz", self.package, self.version),
            Registry::Npm => format!("{}-{}.tgz", self.package, self.version),
            Registry::Debian => format!("{}_{}.deb", self.package, self.version),
        }
    }
}

pub fn load_manifest(path: &Path) -> Result<Manifest> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let m: Manifest = toml::from_str(&text).with_context(|| {
        format!(
            "{}: not a valid corpus project list (see the comment at its top)",
            path.display()
        )
    })?;
    let mut seen = std::collections::BTreeSet::new();
    for p in &m.project {
        ensure!(
            seen.insert(p.name.as_str()),
            "{}: project {:?} is listed twice",
            path.display(),
            p.name
        );
        ensure!(
            p.sha256.len() == 64 && p.sha256.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: project {:?}: sha256 must be 64 hex digits",
            path.display(),
            p.name
        );
        ensure!(
            !p.subdir.split('/').any(|c| c == ".."),
            "{}: project {:?}: subdir must stay inside the archive",
            path.display(),
            p.name
        );
    }
    Ok(m)
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Where fetched and prepared things live (reruns reuse them offline).
pub struct Cache {
    pub dir: PathBuf,
}

impl Cache {
    pub fn downloads(&self) -> PathBuf {
        self.dir.join("downloads")
    }
    pub fn cargo_home(&self) -> PathBuf {
        self.dir.join("cargo-home")
    }
    pub fn npm_cache(&self) -> PathBuf {
        self.dir.join("npm-cache")
    }
    pub fn prepared(&self, p: &Project) -> PathBuf {
        self.dir.join("prepared").join(&p.name)
    }
    pub fn venv(&self) -> PathBuf {
        self.dir.join("venv")
    }
    pub fn node_tools(&self) -> PathBuf {
        self.dir.join("node-tools")
    }
    pub fn wheelhouse(&self) -> PathBuf {
        self.dir.join("wheelhouse")
    }
}

/// Downloads the artifact unless the cache holds it with the pinned digest.
pub fn fetch(cache: &Cache, p: &Project) -> Result<PathBuf> {
    let dir = cache.downloads();
    fs::create_dir_all(&dir)?;
    let file = dir.join(p.file_name());
    if file.exists() {
        if sha256_file(&file)? == p.sha256 {
            return Ok(file);
        }
        eprintln!(
            "corpus: {} in the cache has another digest; downloading again",
            file.display()
        );
        fs::remove_file(&file)?;
    }
    let tmp = dir.join(format!(".tmp-{}", p.name));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let spec = format!("{}@{}", p.package, p.version);
    eprintln!("corpus: fetching {spec} from {}", p.registry.name());
    match p.registry {
        // The file the crates.io download API redirects to (what cargo fetches).
        Registry::Crates => sh(Command::new("curl")
            .args(["-sSfL", "--retry", "3", "-o"])
            .arg(tmp.join(p.file_name()))
            .arg(format!(
                "https://static.crates.io/crates/{0}/{0}-{1}.crate",
                p.package, p.version
            )))?,
        // The corpus virtualenv's pip: `--no-build-isolation` builds the
        // metadata with the setuptools and wheel installed there (pinned),
        // not whatever the system Python has.
        Registry::Pypi => sh(Command::new(cache.venv().join("bin/python"))
            .args([
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-d",
            ])
            .arg(&tmp)
            .arg(format!("{}=={}", p.package, p.version)))?,
        Registry::Npm => sh(Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&tmp)
            .arg(&spec)
            .arg("--cache")
            .arg(cache.dir.join("npm-pack-cache")))?,
        // apt's own client, from the host's configured Debian mirror; the
        // saved name escapes the epoch and names the architecture, so the
        // one .deb it saved is renamed to `file_name()`.
        Registry::Debian => {
            sh(Command::new("apt-get")
                .args(["download", "-q"])
                .arg(format!("{}={}", p.package, p.version))
                .current_dir(&tmp))
            .with_context(|| {
                format!(
                    "apt-get download {spec}: is this a Debian host with the package lists \
                     updated (`apt-get update`), and is {} still in its suite?",
                    p.version
                )
            })?;
            let debs: Vec<PathBuf> = fs::read_dir(&tmp)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "deb"))
                .collect();
            ensure!(
                debs.len() == 1,
                "apt-get download {spec} saved {} .deb files, not one",
                debs.len()
            );
            fs::rename(&debs[0], tmp.join(p.file_name()))?;
        }
    }
    let got = tmp.join(p.file_name());
    ensure!(
        got.exists(),
        "fetching {spec}: the client saved no {}",
        p.file_name()
    );
    let digest = sha256_file(&got)?;
    if digest != p.sha256 {
        bail!(
            "{spec} from {}: SHA-256 {digest} differs from the pinned {} in tests/corpus/projects.toml; \
             the registry served another file (keep the pin unless the version was changed on purpose)",
            p.registry.name(),
            p.sha256
        );
    }
    fs::rename(&got, &file)?;
    let _ = fs::remove_dir_all(&tmp);
    Ok(file)
}

/// Unpacks the artifact's `subdir` into `dest` (replacing it).
pub fn unpack(archive: &Path, p: &Project, scratch: &Path, dest: &Path) -> Result<()> {
    let _ = fs::remove_dir_all(scratch);
    fs::create_dir_all(scratch)?;
    if p.registry == Registry::Debian {
        sh(Command::new("dpkg-deb").arg("-x").arg(archive).arg(scratch))?;
    } else {
        sh(Command::new("tar")
            .arg("xzf")
            .arg(archive)
            .arg("-C")
            .arg(scratch)
            .arg("--no-same-owner"))?;
    }
    let src = scratch.join(&p.subdir);
    ensure!(
        src.is_dir(),
        "{}: no directory {:?} in {} (fix `subdir` in tests/corpus/projects.toml)",
        p.name,
        p.subdir,
        archive.display()
    );
    let _ = fs::remove_dir_all(dest);
    fs::create_dir_all(dest.parent().expect("dest has a parent"))?;
    sh(Command::new("cp").arg("-a").arg(&src).arg(dest))?;
    let _ = fs::remove_dir_all(scratch);
    Ok(())
}

/// Online, once: what the project's offline builds need later.
pub fn prepare(cache: &Cache, p: &Project, unpacked: &Path) -> Result<()> {
    let out = cache.prepared(p);
    let done = out.join(".done");
    if p.prepare == Prepare::Nothing || done.exists() {
        return Ok(());
    }
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out)?;
    // Outside this repository: cargo would take it for a member of the
    // workspace above it.
    let work = std::env::temp_dir().join(format!("abm-corpus-prepare-{}", p.name));
    let _ = fs::remove_dir_all(&work);
    sh(Command::new("cp").arg("-a").arg(unpacked).arg(&work))?;
    match p.prepare {
        Prepare::Nothing => {}
        Prepare::Cargo => {
            eprintln!("corpus: cargo fetch for {}", p.name);
            for args in [&["generate-lockfile"][..], &["fetch"][..]] {
                sh(Command::new("cargo")
                    .args(args)
                    .current_dir(&work)
                    .env("CARGO_HOME", cache.cargo_home()))?;
            }
        }
        Prepare::Npm => {
            eprintln!(
                "corpus: npm lockfile and cache for {} (takes a few minutes once)",
                p.name
            );
            sh(Command::new("npm")
                .args([
                    "install",
                    "--package-lock-only",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    "--cache",
                ])
                .arg(cache.dir.join("npm-meta-cache"))
                .current_dir(&work))?;
            fs::copy(
                work.join("package-lock.json"),
                out.join("package-lock.json"),
            )?;
            sh(Command::new("npm")
                .args([
                    "ci",
                    "--omit=dev",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    "--cache",
                ])
                .arg(cache.npm_cache())
                .current_dir(&work))?;
        }
    }
    let _ = fs::remove_dir_all(&work);
    fs::write(done, "")?;
    Ok(())
}

/// Online, once: a virtualenv with the pinned Python tools. Its scripts
/// name the interpreter by absolute path, so a cache that was copied or
/// moved (the stamp names the old place) gets a new one.
pub fn prepare_venv(cache: &Cache, tools: &[String]) -> Result<()> {
    let venv = cache.venv();
    let stamp = venv.join(".corpus-tools");
    let want = format!("{}\n{}", venv.display(), tools.join("\n"));
    if fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(());
    }
    eprintln!(
        "corpus: creating {} with {}",
        venv.display(),
        tools.join(" ")
    );
    let _ = fs::remove_dir_all(&venv);
    sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    sh(Command::new(venv.join("bin/pip"))
        .args(["install", "-q"])
        .args(tools))?;
    fs::write(stamp, want)?;
    Ok(())
}

/// Online, once: the pinned npm tools (e.g. the TypeScript compiler) in
/// one directory whose `node_modules/.bin` the sessions get on PATH.
pub fn prepare_node_tools(cache: &Cache, tools: &[String]) -> Result<()> {
    let dir = cache.node_tools();
    let stamp = dir.join(".corpus-tools");
    let want = tools.join("\n");
    if tools.is_empty() || fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(());
    }
    eprintln!(
        "corpus: installing {} into {}",
        tools.join(" "),
        dir.display()
    );
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    sh(Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&dir)
        .args(tools)
        .arg("--cache")
        .arg(cache.dir.join("npm-meta-cache")))?;
    fs::write(stamp, want)?;
    Ok(())
}

/// Online, once: wheels of the requirements (and their dependencies) for
/// the sessions' offline `pip install`s into new virtualenvs.
pub fn prepare_wheelhouse(cache: &Cache, reqs: &[String]) -> Result<()> {
    let dir = cache.wheelhouse();
    let stamp = dir.join(".corpus-wheels");
    let want = reqs.join("\n");
    if reqs.is_empty() || fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(());
    }
    eprintln!(
        "corpus: downloading wheels of {} into {}",
        reqs.join(" "),
        dir.display()
    );
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    sh(Command::new(cache.venv().join("bin/python"))
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--only-binary",
            ":all:",
            "-d",
        ])
        .arg(&dir)
        .args(reqs))?;
    fs::write(stamp, want)?;
    Ok(())
}

/// Builds `templates/<name>`: `src/<name>` (a repository: the import, then
/// the commits of `history/<name>.sh`) and `remotes/<name>.git` (bare,
/// with `main` pushed). Each session run copies it.
pub fn make_template(
    corpus_dir: &Path,
    cache: &Cache,
    p: &Project,
    unpacked: &Path,
    templates: &Path,
) -> Result<()> {
    let t = templates.join(&p.name);
    let _ = fs::remove_dir_all(&t);
    let repo = t.join("src").join(&p.name);
    let remote = t.join("remotes").join(format!("{}.git", p.name));
    fs::create_dir_all(t.join("src"))?;
    fs::create_dir_all(t.join("remotes"))?;
    sh(Command::new("cp").arg("-a").arg(unpacked).arg(&repo))?;
    let git = |args: &[&str]| -> Result<()> {
        let mut c = Command::new("git");
        c.args(args).current_dir(&repo).envs(git_env());
        sh(&mut c)
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["add", "-A"])?;
    git(&[
        "commit",
        "-q",
        "-m",
        &format!(
            "Import {} {} from {}",
            p.package,
            p.version,
            p.registry.name()
        ),
    ])?;
    let history = corpus_dir.join("history").join(format!("{}.sh", p.name));
    ensure!(
        history.exists(),
        "{}: missing {} (the project's edits after the import)",
        p.name,
        history.display()
    );
    sh(Command::new("bash")
        .args(["-euo", "pipefail"])
        .arg(&history)
        .current_dir(&repo)
        .envs(git_env())
        .env("CORPUS_PREPARED", cache.prepared(p)))
    .with_context(|| format!("running {}", history.display()))?;
    sh(Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&remote))?;
    git(&["remote", "add", "origin", &remote.to_string_lossy()])?;
    git(&["push", "-q", "-u", "origin", "main"])?;
    Ok(())
}
