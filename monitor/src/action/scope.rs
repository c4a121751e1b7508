//! Where an object is, relative to the task: the workspace (wherever it
//! lives, /tmp included), scratch (temporary directories outside the
//! workspace and outside any repository), shared (other repositories,
//! caches, other places) or protected (system configuration and logs,
//! credentials, shell history, accounts).

use std::path::{Path, PathBuf};

use crate::record::Location;

/// Temporary directories (scratch when outside the workspace and outside
/// any repository).
const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/run/user"];

/// Protected system places: configuration (sudoers, PAM, cron,
/// ld.so.preload, account databases are all under /etc), logs, boot,
/// installed software, cron spools.
const SYSTEM_DIRS: &[&str] = &[
    "/etc",
    "/var/log",
    "/var/spool/cron",
    "/boot",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/lib32",
    "/root/.ssh",
];

/// Protected files and directories relative to the home directory.
const HOME_PROTECTED: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".local/share/fish/fish_history",
    ".bashrc",
    ".profile",
    ".bash_profile",
    ".zshrc",
];

/// Tool caches relative to the home directory (regenerable).
pub const CACHE_DIRS: &[&str] = &[
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".npm",
    ".rustup/tmp",
    ".rustup/downloads",
    ".local/share/pnpm",
    ".yarn/cache",
    ".m2/repository",
    ".gradle/caches",
];

/// Classifies paths against the task's roots.
#[derive(Clone, Debug)]
pub struct Locator {
    pub workspace: PathBuf,
    pub home: PathBuf,
    /// `$TMPDIR`, when set and not one of the usual places.
    pub tmpdir: Option<PathBuf>,
    /// The roots as text without a `/` at the end, as [`under_str`]
    /// compares them: worked out once, not for every path judged. `None`
    /// for a root that is not UTF-8 (compared through [`under`]).
    text: Roots,
}

#[derive(Clone, Debug, Default)]
struct Roots {
    workspace: Option<String>,
    home: Option<String>,
    tmpdir: Option<String>,
}

fn root_text(p: &Path) -> Option<String> {
    p.to_str().map(|s| s.trim_end_matches('/').to_owned())
}

/// `path` is under `dir`, given as text when it is UTF-8.
fn under_root(path: &str, text: Option<&str>, dir: &Path) -> bool {
    match text {
        Some(t) => under_str(path, t),
        None => under(path, dir),
    }
}

impl Locator {
    pub fn new(workspace: &Path, home: &Path) -> Locator {
        let tmpdir = std::env::var_os("TMPDIR").map(PathBuf::from);
        Locator {
            text: Roots {
                workspace: root_text(workspace),
                home: root_text(home),
                tmpdir: tmpdir.as_deref().and_then(root_text),
            },
            workspace: workspace.to_path_buf(),
            home: home.to_path_buf(),
            tmpdir,
        }
    }

    /// The location of an absolute path; `in_repo`: it lies in some
    /// repository's working tree.
    pub fn locate(&self, path: &str, in_repo: bool) -> Location {
        if self.is_protected(path) {
            return Location::Protected;
        }
        if !self.workspace.as_os_str().is_empty()
            && under_root(path, self.text.workspace.as_deref(), &self.workspace)
        {
            return Location::Workspace;
        }
        let temp = TEMP_DIRS.iter().any(|d| under_str(path, d))
            || self
                .tmpdir
                .as_deref()
                .is_some_and(|t| under_root(path, self.text.tmpdir.as_deref(), t));
        if temp && !in_repo {
            Location::Scratch
        } else {
            Location::Shared
        }
    }

    pub fn is_protected(&self, path: &str) -> bool {
        SYSTEM_DIRS.iter().any(|d| under_str(path, d))
            || self.under_any(path, HOME_PROTECTED)
            || Path::new(path)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == "authorized_keys" || n.ends_with("_history"))
    }

    /// Whether a path is under one of the home-relative places.
    pub fn under_any(&self, path: &str, rel: &[&str]) -> bool {
        // Every place starts with the home directory: the rest of the path
        // after it is compared with each place, without joining.
        let Some(home) = self.text.home.as_deref() else {
            return rel.iter().any(|r| under(path, &self.home.join(r)));
        };
        let Some(rest) = path.strip_prefix(home).and_then(|r| r.strip_prefix('/')) else {
            return false;
        };
        rel.iter().any(|r| under_str(rest, r))
    }
}

/// `path` is `dir` or inside it, both given as text without a `/` at the end.
fn under_str(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

/// `path` is `dir` or inside it.
pub fn under(path: &str, dir: &Path) -> bool {
    under_str(path, dir.to_string_lossy().trim_end_matches('/'))
}
