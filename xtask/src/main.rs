//! Developer workflows: toolchain setup, build, run, tests, benchmarks.
//! Product logic lives in `monitor`; this only orchestrates.
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand};

mod bench;
mod corpus;
mod dist;
mod dockerd;
mod fresh;
mod setup;
mod stack;
mod vm;
mod vm_pkg;

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Developer workflows for the action boundary monitor"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install the eBPF toolchain (idempotent: skips what is present).
    Setup,
    /// Set up, then build `abm` (release) with its kernel programs, and
    /// check their stack against the verifier's bound across calls.
    Build,
    /// Set up, build, and run `abm run` on a command: `cargo xtask run -- CMD...`.
    Run {
        /// Extra `abm run` options, e.g. `--policy FILE` (before `--`).
        #[arg(long = "abm-arg", value_name = "ARG", allow_hyphen_values = true)]
        abm_args: Vec<String>,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Set up, build, lint, and run all unit and integration tests
    /// (including the BPF LSM tests in QEMU VMs).
    Test {
        /// Skip the QEMU/BPF LSM VM tests.
        #[arg(long)]
        no_vm: bool,
    },
    /// Run the enforcement tests in QEMU VMs on Debian kernels with BPF LSM.
    VmTest,
    /// Build the Debian package and the tarball into target/dist/.
    Dist,
    /// Install, use and purge the Debian package in clean Debian 12 VMs.
    VmPkgTest,
    /// Benchmarks: ratios against an unmonitored baseline and peers.
    Bench {
        /// Runs per configuration (alternated A B A B ...).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Only these workloads (burst, git, build, session, outside, report, verify).
        #[arg(long)]
        only: Vec<String>,
    },
    /// Measure the policy on a corpus of real developer sessions and real
    /// mistakes in real public projects (see docs/corpus.md). Prints the
    /// table of false asks, breakage, stopped mistakes and questions.
    Corpus {
        /// The abm binary to measure. Default: build target/release/abm.
        #[arg(long, value_name = "PATH")]
        abm: Option<PathBuf>,
        /// Policy file(s) passed to every `abm run` as `--policy`.
        #[arg(long, value_name = "FILE")]
        policy: Vec<PathBuf>,
        /// Only sessions with this name (or name prefix, or `benign` /
        /// `destructive`). Repeatable.
        #[arg(long, value_name = "NAME")]
        only: Vec<String>,
        /// Where each run's home (projects, origins, dotfiles) is made.
        /// Not under /tmp: the default pack treats /tmp as scratch.
        #[arg(long, value_name = "DIR", default_value = "/home/abm-corpus")]
        work: PathBuf,
        /// Where the project templates, every run's trace and log, and the
        /// last table go. Default: target/corpus.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// `--confirm-timeout` for the enforced runs: with --no-prompt an
        /// unanswered question is denied after this many seconds.
        #[arg(long, value_name = "SECS", default_value = "1")]
        confirm_timeout: String,
        /// Only fetch and prepare the projects (the online step).
        #[arg(long)]
        fetch_only: bool,
        /// Label for the table's first line. Default: the binary's path,
        /// build time and policy.
        #[arg(long)]
        label: Option<String>,
        /// Sessions run at the same time (each in its own home).
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs a command, failing with its rendering if it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: {shown}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

pub fn build_release() -> Result<PathBuf> {
    run(cargo().args(["build", "--release", "-p", "monitor"]))?;
    Ok(root().join("target/release/abm"))
}

fn check_policies(abm: &Path, dir: &Path, on_default: bool) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        // The default pack is checked on its own; overlays go on top of it.
        .filter(|p| !on_default || !p.ends_with("policies/default.toml"))
        .collect();
    if files.is_empty() {
        return Ok(());
    }
    files.sort();
    let mut check = Command::new(abm);
    check.args(["policy", "check"]);
    if on_default {
        check.arg("--on-default");
    }
    run(check.args(&files))
}

/// Programs the integration and coverage tests drive for real.
const TEST_PACKAGES: &[&str] = &[
    "git",
    "rsync",
    "busybox-static",
    "e2fsprogs",
    "make",
    "gcc",
    "perl",
    "python3",
    "python3-pip",
    "python3-venv",
    "bubblewrap",
    // The remote approvals test runs its client in another network
    // namespace (`ip netns`, a veth pair).
    "iproute2",
    // The Harbor test debootstraps a Debian trixie root (Python 3.12+).
    "debootstrap",
    // Container tests: a real dockerd, podman and their runtimes.
    "docker.io",
    "podman",
    // abm report's tests render it in headless Chromium; the daemon's
    // metrics test scrapes it with a real Prometheus.
    "chromium",
    "prometheus",
];

/// Python modules the tests import (installed with pip for
/// /usr/bin/python3 when missing): `zstandard` for the reference verifier
/// of docs/trace.md.
const TEST_PYTHON_MODULES: &[&str] = &["zstandard"];

fn ensure_python_modules(modules: &[&str]) -> Result<()> {
    let python = "/usr/bin/python3";
    let has = |m: &str| {
        Command::new(python)
            .args(["-c", &format!("import {m}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> = modules.iter().copied().filter(|m| !has(m)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    run(Command::new(python)
        .args(["-m", "pip", "install", "--quiet", "--break-system-packages"])
        .args(&missing))?;
    if let Some(m) = missing.iter().find(|m| !has(m)) {
        bail!("{python} cannot import {m} after `pip install {m}`; install it by hand");
    }
    Ok(())
}

fn test(no_vm: bool) -> Result<()> {
    setup::setup()?;
    setup::ensure_packages(TEST_PACKAGES)?;
    ensure_python_modules(TEST_PYTHON_MODULES)?;
    // The container tests' engine runs in the host's mount namespace, as
    // a service would (xtask/src/dockerd.rs).
    dockerd::ensure(&root().join("target/dockerd.log"))?;
    // Everything from here on, tests included, sees the host as a fresh
    // boot would: no tracefs, debugfs, bpffs or securityfs mounted.
    fresh::enter(&root().join("target/fresh-host"))?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    setup::clippy_ebpf()?;
    let abm = build_release()?;
    // The kernels of the VM tests refuse what the host may accept.
    stack::check()?;
    // Every shipped policy file must parse: packs on their own, examples
    // (overlays) on top of the default pack.
    // The default pack stands alone; every other file in policies/ (the
    // sandbox profile) and the examples are overlays on top of it.
    run(Command::new(&abm)
        .args(["policy", "check"])
        .arg(root().join("policies/default.toml")))?;
    check_policies(&abm, &root().join("policies"), true)?;
    check_policies(&abm, &root().join("policies/examples"), true)?;
    // Unit and integration tests (the integration tests load the kernel
    // programs and need root, which CI has).
    // Kernel tests fail rather than skip when eBPF or seccomp is missing;
    // a caller skips a feature only by naming it in ABM_TEST_SKIP.
    let mut tests = cargo();
    tests
        .args(["test", "--release", "--workspace", "--", "--test-threads=2"])
        .env("ABM_REQUIRE_EBPF", "1");
    run(&mut tests)?;
    if no_vm {
        eprintln!("xtask: skipping the VM tests (--no-vm)");
    } else {
        vm::vm_test()?;
        vm_pkg::vm_pkg_test()?;
    }
    eprintln!("xtask: all tests passed");
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Setup => setup::setup(),
        Cmd::Build => {
            setup::setup()?;
            build_release()?;
            stack::check()
        }
        Cmd::Run { abm_args, command } => {
            setup::setup()?;
            let abm = build_release()?;
            let status = Command::new(abm)
                .arg("run")
                .args(abm_args)
                .arg("--")
                .args(command)
                .status()?;
            std::process::exit(status.code().unwrap_or(1));
        }
        Cmd::Test { no_vm } => test(no_vm),
        Cmd::VmTest => {
            setup::setup()?;
            vm::vm_test()
        }
        Cmd::Dist => {
            setup::setup()?;
            dist::dist()
        }
        Cmd::VmPkgTest => {
            setup::setup()?;
            vm_pkg::vm_pkg_test()
        }
        Cmd::Bench { runs, only } => {
            setup::setup()?;
            // ABM_BENCH_ABM=PATH measures that abm binary instead of building.
            let abm = match std::env::var_os("ABM_BENCH_ABM") {
                Some(p) => PathBuf::from(p),
                None => build_release()?,
            };
            bench::bench(&abm, runs, &only)
        }
        Cmd::Corpus {
            abm,
            policy,
            only,
            work,
            out,
            confirm_timeout,
            fetch_only,
            label,
            jobs,
        } => corpus::corpus(corpus::Opts {
            abm,
            policies: policy,
            only,
            work,
            out: out.unwrap_or_else(|| root().join("target/corpus")),
            confirm_timeout,
            fetch_only,
            label,
            jobs,
        }),
    }
}
