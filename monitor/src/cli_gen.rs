//! `abm generate`: man pages and shell completions written from the command
//! line definition (`crate::cli` hands its `clap::Command` in), so they
//! cannot drift from `--help`.
//!
//! Hidden: it exists for packaging (`cargo xtask dist` writes the pages and
//! completions into the .deb and the tarball), not for users.
//!
//! ```text
//! abm generate man DIR              # DIR/abm.1, DIR/abm-run.1, DIR/abm-policy-check.1, ...
//! abm generate completions SHELL    # bash, zsh, fish, elvish, powershell; on stdout
//! ```
use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use clap_complete::Shell;

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Write roff man pages: abm.1 and one per (nested) subcommand.
    Man {
        /// Directory to write into (created if missing).
        dir: PathBuf,
    },
    /// Print a completion script for SHELL on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
        /// Write to this file instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// Runs `abm generate` for the command line `cli`.
pub fn generate(a: GenerateArgs, cli: clap::Command) -> anyhow::Result<i32> {
    match a.what {
        What::Man { dir } => {
            let pages = man_pages(cli, &dir)?;
            eprintln!(
                "abm: wrote {} man pages into {}",
                pages.len(),
                dir.display()
            );
        }
        What::Completions { shell, out } => match out {
            Some(path) => {
                let mut f = std::fs::File::create(&path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                completions(cli, shell, &mut f)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            None => match completions(cli, shell, &mut std::io::stdout().lock()) {
                // `abm generate completions bash | head` is not an error.
                Err(e)
                    if e.downcast_ref::<std::io::Error>()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => {}
                r => r?,
            },
        },
    }
    Ok(0)
}

/// Writes `abm.1` and a page per visible subcommand (`abm-run.1`,
/// `abm-policy-check.1`, ...) into `dir`; returns their paths, sorted.
pub fn man_pages(cli: clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create {}: give a directory abm can write",
            dir.display()
        )
    })?;
    clap_mangen::generate_to(cli, dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("abm") && n.ends_with(".1"))
        })
        .collect();
    pages.sort();
    Ok(pages)
}

/// Writes the completion script of `shell` for the `abm` command.
pub fn completions(
    mut cli: clap::Command,
    shell: Shell,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cli, "abm", &mut buf);
    out.write_all(&buf)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;
    use crate::cli::Cli;

    #[test]
    fn man_pages_cover_the_subcommands_and_their_options() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages(Cli::command(), dir.path()).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in ["abm.1", "abm-run.1", "abm-doctor.1", "abm-policy-check.1"] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        // The packaging helper itself stays out of the manual.
        assert!(
            !names.iter().any(|n| n.starts_with("abm-generate")),
            "{names:?}"
        );
        let top = std::fs::read_to_string(dir.path().join("abm.1")).unwrap();
        assert!(top.contains("run"), "{top}");
        assert!(!top.contains("generate"), "{top}");
        let run = std::fs::read_to_string(dir.path().join("abm-run.1")).unwrap();
        assert!(run.contains("enforce"), "{run}");
        assert!(run.contains(".TH abm-run 1"), "{run}");
    }

    #[test]
    fn completions_name_the_subcommands() {
        let mut bash = Vec::new();
        completions(Cli::command(), Shell::Bash, &mut bash).unwrap();
        let bash = String::from_utf8(bash).unwrap();
        assert!(bash.contains("doctor"), "{bash}");
        assert!(bash.contains("--enforce"), "{bash}");
        for shell in [Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            completions(Cli::command(), shell, &mut out).unwrap();
            assert!(String::from_utf8(out).unwrap().contains("doctor"));
        }
    }
}
