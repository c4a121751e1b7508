//! `cargo xtask dist`: installable packages of `abm` in `target/dist/`.
//!
//! 1. `abm_<version>_amd64.deb`, built with `dpkg-deb --build
//!    --root-owner-group` from a staged tree (no debhelper): the release
//!    binary (stripped; the kernel object is embedded in it, which is
//!    checked), the policy pack, `/etc/abm/abm.toml` as a conffile (from
//!    deploy/abm.toml, its example targets commented out), the systemd unit
//!    (deploy/abm.service with ExecStart on /usr/bin/abm), man pages and
//!    bash/zsh/fish completions written by the binary itself (`abm generate`,
//!    from the clap definition), the copyright file, and maintainer scripts
//!    that enable or start nothing (deploy/debian/, docs/install.md). `Depends` comes from
//!    `dpkg-shlibdeps`, or from the binary's `NEEDED` entries and glibc
//!    symbol versions where that tool is missing.
//! 2. `abm-<version>-x86_64-linux.tar.gz`: the same tree under one top
//!    directory with an INSTALL note, around a static binary
//!    (`+crt-static`, built in `target/dist-static` so the normal build
//!    stays valid). A static binary that fails to link, is not static, or
//!    whose `abm doctor` differs from the dynamic one's is not shipped: the
//!    tarball then carries the dynamic binary and its name and note state
//!    the glibc it needs (`...-x86_64-linux-glibc2.NN.tar.gz`).
//!
//! `cargo xtask vm-pkg-test` builds only the .deb ([`deb`]) and installs it
//! in clean Debian VMs.
use std::{
    fmt::Write as _,
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context as _, Result};

use crate::{root, run};

/// `Maintainer:` of the package (`ABM_DEB_MAINTAINER` overrides it).
const MAINTAINER: &str = "abm developers <abm-project@users.noreply.github.com>";
/// ELF machine number of eBPF objects (EM_BPF).
const EM_BPF: u16 = 247;
/// The Rust target of the static tarball binary.
const STATIC_TARGET: &str = "x86_64-unknown-linux-gnu";

pub fn out_dir() -> PathBuf {
    root().join("target/dist")
}

/// The workspace version (`[workspace.package] version` in Cargo.toml).
pub fn version() -> Result<String> {
    let path = root().join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let doc: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    doc.get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("version"))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .with_context(|| format!("{} has no [workspace.package] version", path.display()))
}

/// `cargo xtask dist`: the .deb and the tarball.
pub fn dist() -> Result<()> {
    ensure_tools()?;
    let abm = crate::build_release()?;
    let deb = deb_from(&abm)?;
    if Command::new("lintian").arg("--version").output().is_ok() {
        // Advisory only: findings are printed, never fatal.
        let _ = run(Command::new("lintian")
            .args(["--tag-display-limit", "0"])
            .arg(&deb));
    }
    let (bin, static_binary) = match static_binary(&abm) {
        Ok(b) => (b, true),
        Err(e) => {
            eprintln!(
                "xtask: dist: the tarball gets the dynamic binary, the static one is unusable: {e:#}"
            );
            (abm.clone(), false)
        }
    };
    let tarball = tarball(&bin, static_binary)?;
    eprintln!("xtask: dist: {}", deb.display());
    eprintln!(
        "xtask: dist: {} ({} binary)",
        tarball.display(),
        if static_binary { "static" } else { "dynamic" }
    );
    Ok(())
}

/// Builds the release binary and `target/dist/abm_<version>_amd64.deb` only.
pub fn deb() -> Result<PathBuf> {
    ensure_tools()?;
    let abm = crate::build_release()?;
    deb_from(&abm)
}

fn ensure_tools() -> Result<()> {
    // dpkg-deb comes with dpkg; strip and objdump with binutils; gzip and
    // md5sum are essential. dpkg-dev (dpkg-shlibdeps) is optional.
    crate::setup::ensure_packages(&["binutils", "file"])
}

/// Builds the .deb from an `abm` binary.
fn deb_from(abm: &Path) -> Result<PathBuf> {
    let version = version()?;
    let work = out_dir().join("deb-root");
    stage(&work, abm)?;
    let debian = work.join("DEBIAN");
    fs::create_dir_all(&debian)?;
    let depends = depends(&work.join("usr/bin/abm"))?;
    let maintainer = std::env::var("ABM_DEB_MAINTAINER").unwrap_or_else(|_| MAINTAINER.into());
    let control = format!(
        "Package: abm\n\
         Version: {version}\n\
         Architecture: amd64\n\
         Maintainer: {maintainer}\n\
         Installed-Size: {size}\n\
         Depends: {depends}\n\
         Section: admin\n\
         Priority: optional\n\
         Homepage: https://github.com/abm-project/abm\n\
         Description: action boundary monitor for AI coding agents (eBPF)\n \
         abm watches what an AI coding agent, or any command, does to a system,\n \
         from the kernel, and judges every destructive action (unlink, rmdir,\n \
         rename, chmod, chown, truncate, write opens, exec of CLIs) against a\n \
         policy. It writes a complete, ordered, hash-chained trace of each run\n \
         and can block what the policy denies (seccomp or BPF LSM).\n \
         .\n \
         This package holds the abm command, the default policy pack, and a\n \
         systemd unit for abm daemon, which is installed but not enabled.\n \
         Needs a kernel with BTF (/sys/kernel/btf/vmlinux).\n",
        size = installed_size_kib(&work)?,
    );
    write(&debian.join("control"), &control, 0o644)?;
    write(&debian.join("conffiles"), "/etc/abm/abm.toml\n", 0o644)?;
    write(&debian.join("postinst"), POSTINST, 0o755)?;
    write(&debian.join("prerm"), PRERM, 0o755)?;
    write(&debian.join("postrm"), POSTRM, 0o755)?;
    write(&debian.join("md5sums"), &md5sums(&work)?, 0o644)?;
    let deb = out_dir().join(format!("abm_{version}_amd64.deb"));
    let _ = fs::remove_file(&deb);
    run(Command::new("dpkg-deb")
        .env("SOURCE_DATE_EPOCH", source_date_epoch())
        .args(["--build", "--root-owner-group", "-Zxz"])
        .arg(&work)
        .arg(&deb))
    .context("dpkg-deb --build failed (dpkg-deb comes with dpkg)")?;
    // The package as dpkg sees it: parses, and holds the binary.
    let contents = crate::vm::output(Command::new("dpkg-deb").arg("--contents").arg(&deb))?;
    if !contents.contains("./usr/bin/abm") {
        bail!("{} holds no ./usr/bin/abm:\n{contents}", deb.display());
    }
    let _ = fs::remove_dir_all(&work);
    Ok(deb)
}

/// Stages the installed tree (usr/, etc/, lib/) of the package in `tree`.
fn stage(tree: &Path, abm: &Path) -> Result<()> {
    check_embedded_object(abm)?;
    let _ = fs::remove_dir_all(tree);
    fs::create_dir_all(tree).with_context(|| format!("cannot create {}", tree.display()))?;
    let bin = tree.join("usr/bin/abm");
    mkdirs(&bin)?;
    // What dh_strip does: debug info and symbols out, the code untouched.
    run(Command::new("strip")
        .args([
            "--strip-unneeded",
            "--remove-section=.comment",
            "--remove-section=.note",
            "-o",
        ])
        .arg(&bin)
        .arg(abm))
    .context("strip failed (install binutils)")?;
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755))?;

    let policies = root().join("policies");
    let share = tree.join("usr/share/abm/policies");
    for (from, to) in [
        (policies.clone(), share.clone()),
        (policies.join("examples"), share.join("examples")),
    ] {
        let mut n = 0;
        for e in fs::read_dir(&from).with_context(|| format!("reading {}", from.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "toml") {
                let name = p.file_name().expect("a file name");
                copy(&p, &to.join(name), 0o644)?;
                n += 1;
            }
        }
        if n == 0 {
            bail!("{} holds no .toml policy file", from.display());
        }
    }
    for want in ["default.toml", "sandbox.toml"] {
        if !share.join(want).exists() {
            bail!("policies/{want} is missing: the package ships it");
        }
    }

    let config = tree.join("etc/abm/abm.toml");
    let source = root().join("deploy/abm.toml");
    let text =
        fs::read_to_string(&source).with_context(|| format!("reading {}", source.display()))?;
    write(&config, &package_config(&text), 0o600)?;
    // The shipped config must load as it is.
    run(Command::new(abm)
        .args(["daemon", "--check", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::null()))
    .with_context(|| {
        format!(
            "the packaged config (from {}) does not load: fix that file",
            source.display()
        )
    })?;

    let unit_src = root().join("deploy/abm.service");
    let unit =
        fs::read_to_string(&unit_src).with_context(|| format!("reading {}", unit_src.display()))?;
    let unit = package_unit(&unit).with_context(|| format!("in {}", unit_src.display()))?;
    write(&tree.join("lib/systemd/system/abm.service"), &unit, 0o644)?;

    // Man pages and completions, from the CLI definition in the binary.
    let man_tmp = out_dir().join("man-tmp");
    let _ = fs::remove_dir_all(&man_tmp);
    run(Command::new(abm).args(["generate", "man"]).arg(&man_tmp))
        .context("`abm generate man` failed")?;
    let man1 = tree.join("usr/share/man/man1");
    fs::create_dir_all(&man1)?;
    let mut pages = 0;
    for e in fs::read_dir(&man_tmp)? {
        let p = e?.path();
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name.ends_with(".1") {
            gzip(&p, &man1.join(format!("{name}.gz")))?;
            pages += 1;
        }
    }
    let _ = fs::remove_dir_all(&man_tmp);
    if !man1.join("abm.1.gz").exists() || pages < 2 {
        bail!("`abm generate man` wrote no abm.1 and subcommand pages");
    }
    for (shell, dest) in [
        ("bash", "usr/share/bash-completion/completions/abm"),
        ("zsh", "usr/share/zsh/vendor-completions/_abm"),
        ("fish", "usr/share/fish/vendor_completions.d/abm.fish"),
    ] {
        let to = tree.join(dest);
        mkdirs(&to)?;
        run(Command::new(abm)
            .args(["generate", "completions", shell, "--out"])
            .arg(&to))
        .with_context(|| format!("`abm generate completions {shell}` failed"))?;
        fs::set_permissions(&to, fs::Permissions::from_mode(0o644))?;
    }

    let doc = tree.join("usr/share/doc/abm");
    write(&doc.join("copyright"), COPYRIGHT, 0o644)?;
    write(
        &tree.join("usr/share/lintian/overrides/abm"),
        LINTIAN_OVERRIDES,
        0o644,
    )?;
    let changelog = out_dir().join("changelog");
    fs::write(&changelog, changelog_text()?)?;
    gzip(&changelog, &doc.join("changelog.gz"))?;
    fs::remove_file(&changelog)?;
    normalize_dirs(tree)
}

/// deploy/abm.toml for /etc/abm/abm.toml: the example `[[target]]` tables
/// commented out (a fresh install watches nothing until told to), with a
/// header saying so.
fn package_config(text: &str) -> String {
    let mut out = String::from(
        "# Installed by the abm package (a conffile: your edits survive upgrades).\n\
         # The daemon is not enabled: `systemctl enable --now abm` starts it.\n\
         # The example targets below are commented out; add yours here or at run\n\
         # time with `abm watch add` (docs/daemon.md, man abm-daemon).\n\n",
    );
    let mut in_target = false;
    for line in text.lines() {
        let t = line.trim();
        if t == "[[target]]" {
            in_target = true;
        } else if t.starts_with('[') || t.is_empty() {
            in_target = false;
        }
        if in_target && !t.starts_with('#') {
            let _ = writeln!(out, "# {line}");
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// deploy/abm.service with ExecStart on /usr/bin/abm and a header for the
/// package instead of the manual install steps.
fn package_unit(text: &str) -> Result<String> {
    let body = text
        .find("[Unit]")
        .map(|i| &text[i..])
        .context("no [Unit] section")?;
    let mut out = String::from(
        "# systemd unit of the abm daemon, installed by the abm package\n\
         # (docs/daemon.md). Not enabled on install: `systemctl enable --now abm`.\n\
         # Config: /etc/abm/abm.toml. `systemctl reload abm` reloads the policy\n\
         # (SIGHUP); `systemctl stop abm` seals every trace (SIGTERM).\n\
         # Logs: `journalctl -u abm`.\n",
    );
    let mut found = false;
    for line in body.lines() {
        if let Some(cmd) = line.strip_prefix("ExecStart=") {
            let (exe, args) = cmd.split_once(' ').unwrap_or((cmd, ""));
            if !exe.ends_with("/abm") {
                bail!(
                    "ExecStart runs {exe:?}, not abm: the package cannot point it at /usr/bin/abm"
                );
            }
            let _ = writeln!(out, "ExecStart=/usr/bin/abm {args}");
            found = true;
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
    if !found {
        bail!("no ExecStart= line");
    }
    Ok(out)
}

/// Fails unless `abm` carries the kernel programs: a 64-bit little-endian
/// ELF object of machine EM_BPF embedded in its data (a build with
/// `AYA_BUILD_SKIP=1` embeds an empty file instead).
fn check_embedded_object(abm: &Path) -> Result<()> {
    let bytes = fs::read(abm).with_context(|| format!("reading {}", abm.display()))?;
    let found = memfind_all(&bytes, b"\x7fELF\x02\x01").any(|i| {
        bytes
            .get(i + 18..i + 20)
            .is_some_and(|m| u16::from_le_bytes([m[0], m[1]]) == EM_BPF)
    });
    if !found {
        bail!(
            "{} embeds no eBPF object (was it built with AYA_BUILD_SKIP=1?): rebuild it with \
             `cargo xtask build`",
            abm.display()
        );
    }
    Ok(())
}

fn memfind_all<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(i, _)| i)
}

/// `Depends:` for the binary: `dpkg-shlibdeps` where installed (dpkg-dev),
/// else computed from its NEEDED libraries and glibc symbol versions.
fn depends(bin: &Path) -> Result<String> {
    match shlibdeps(bin) {
        Ok(d) => return Ok(d),
        Err(e) => eprintln!("xtask: dist: dpkg-shlibdeps unusable ({e:#}); using objdump"),
    }
    depends_from_objdump(bin)
}

fn shlibdeps(bin: &Path) -> Result<String> {
    let dir = out_dir().join("shlibdeps");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("debian"))?;
    fs::write(
        dir.join("debian/control"),
        "Source: abm\n\nPackage: abm\nArchitecture: amd64\n",
    )?;
    let text = crate::vm::output(
        Command::new("dpkg-shlibdeps")
            .current_dir(&dir)
            .args(["-O", "-e"])
            .arg(bin),
    )?;
    let _ = fs::remove_dir_all(&dir);
    let deps = text
        .lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .with_context(|| format!("dpkg-shlibdeps printed no shlibs:Depends: {text}"))?;
    Ok(deps.to_owned())
}

/// Package of each library a Rust binary can need, with the lowest version
/// that has it.
const LIBRARIES: &[(&str, &str)] = &[
    ("libc.so.6", "libc6"),
    ("libm.so.6", "libc6"),
    ("libpthread.so.0", "libc6"),
    ("libdl.so.2", "libc6"),
    ("librt.so.1", "libc6"),
    ("ld-linux-x86-64.so.2", "libc6"),
    ("libgcc_s.so.1", "libgcc-s1 (>= 4.2)"),
];

fn depends_from_objdump(bin: &Path) -> Result<String> {
    let headers = crate::vm::output(Command::new("objdump").arg("-p").arg(bin))?;
    let mut deps: Vec<String> = Vec::new();
    for lib in headers
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(str::trim)
    {
        let pkg = LIBRARIES
            .iter()
            .find(|(l, _)| *l == lib)
            .map(|(_, p)| *p)
            .with_context(|| {
                format!(
                    "{} needs {lib}, which has no package in dist.rs LIBRARIES: add it there \
                     (or install dpkg-dev for dpkg-shlibdeps)",
                    bin.display()
                )
            })?;
        if !deps.iter().any(|d| d == pkg) {
            deps.push(pkg.to_owned());
        }
    }
    if let Some(i) = deps.iter().position(|d| d == "libc6") {
        deps[i] = format!("libc6 (>= {})", glibc_minimum(bin)?);
    }
    Ok(deps.join(", "))
}

/// The highest `GLIBC_x.y` symbol version the binary refers to.
pub fn glibc_minimum(bin: &Path) -> Result<String> {
    let syms = crate::vm::output(Command::new("objdump").arg("-T").arg(bin))?;
    let mut best: Option<(u32, u32, String)> = None;
    for w in syms.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        let Some(v) = w.strip_prefix("GLIBC_") else {
            continue;
        };
        let mut parts = v.split('.').map(|p| p.parse::<u32>());
        let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(a, b, _)| (major, minor) > (*a, *b))
        {
            best = Some((major, minor, v.to_owned()));
        }
    }
    best.map(|(_, _, v)| v)
        .with_context(|| format!("{} refers to no GLIBC_ symbol version", bin.display()))
}

/// Installed size in KiB as dpkg-gencontrol counts it: each file rounded up
/// to a KiB, each directory and link one.
fn installed_size_kib(tree: &Path) -> Result<u64> {
    fn walk(dir: &Path, total: &mut u64) -> Result<()> {
        for e in fs::read_dir(dir)? {
            let e = e?;
            let meta = e.path().symlink_metadata()?;
            if meta.is_dir() {
                if e.file_name() != "DEBIAN" {
                    *total += 1;
                    walk(&e.path(), total)?;
                }
            } else if meta.is_file() {
                *total += meta.len().div_ceil(1024);
            } else {
                *total += 1;
            }
        }
        Ok(())
    }
    let mut total = 0;
    walk(tree, &mut total)?;
    Ok(total)
}

/// DEBIAN/md5sums: every file but the conffiles, relative to the root.
fn md5sums(tree: &Path) -> Result<String> {
    let mut files = Vec::new();
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) -> Result<()> {
        for e in fs::read_dir(dir)? {
            let p = e?.path();
            let rel = p.strip_prefix(base)?.to_string_lossy().into_owned();
            if rel == "DEBIAN" || rel == "etc" {
                continue;
            }
            if p.symlink_metadata()?.is_dir() {
                walk(&p, base, out)?;
            } else if p.symlink_metadata()?.is_file() {
                out.push(rel);
            }
        }
        Ok(())
    }
    walk(tree, tree, &mut files)?;
    files.sort();
    crate::vm::output(Command::new("md5sum").current_dir(tree).args(&files))
}

/// The static binary for the tarball, built in target/dist-static.
fn static_binary(dynamic: &Path) -> Result<PathBuf> {
    let dir = root().join("target/dist-static");
    // Only the target's artefacts get +crt-static (with --target, build
    // scripts and proc macros are built without RUSTFLAGS, which they need);
    // the kernel crate's bpfel build is a different target.
    let mut build = crate::cargo();
    build
        .env(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "-C target-feature=+crt-static",
        )
        .env("CARGO_TARGET_DIR", &dir)
        .args([
            "build",
            "--release",
            "-p",
            "monitor",
            "--target",
            STATIC_TARGET,
        ]);
    run(&mut build).context("the static build failed")?;
    let bin = dir.join(STATIC_TARGET).join("release/abm");
    let file = crate::vm::output(Command::new("file").arg("-L").arg(&bin))?;
    if !file.contains("statically linked") && !file.contains("static-pie linked") {
        bail!("{} is not static: {}", bin.display(), file.trim());
    }
    let ldd = Command::new("ldd").arg(&bin).output()?;
    let ldd_text =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    if !ldd_text.contains("not a dynamic executable") && !ldd_text.contains("statically linked") {
        bail!(
            "ldd lists libraries for {}: {}",
            bin.display(),
            ldd_text.trim()
        );
    }
    check_embedded_object(&bin)?;
    // It must judge this machine as the dynamic binary does.
    let doctor = |b: &Path| -> Result<(Option<i32>, String)> {
        let o = Command::new(b)
            .arg("doctor")
            .output()
            .with_context(|| format!("cannot run {} doctor", b.display()))?;
        Ok((
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        ))
    };
    let (st_code, st_out) = doctor(&bin)?;
    let (dy_code, dy_out) = doctor(dynamic)?;
    eprintln!("xtask: dist: static `abm doctor` (exit {st_code:?}):\n{st_out}");
    if st_code != dy_code || st_out != dy_out {
        bail!(
            "the static `abm doctor` (exit {st_code:?}) differs from the dynamic one's (exit \
             {dy_code:?}):\n{st_out}\n---\n{dy_out}"
        );
    }
    Ok(bin)
}

/// `target/dist/abm-<version>-x86_64-linux[-glibcX.Y].tar.gz`.
fn tarball(bin: &Path, is_static: bool) -> Result<PathBuf> {
    let version = version()?;
    let glibc = if is_static {
        None
    } else {
        Some(glibc_minimum(bin)?)
    };
    let name = match &glibc {
        None => format!("abm-{version}-x86_64-linux"),
        Some(g) => format!("abm-{version}-x86_64-linux-glibc{g}"),
    };
    let stage_dir = out_dir().join("tar-root");
    let _ = fs::remove_dir_all(&stage_dir);
    let top = stage_dir.join(&name);
    stage(&top, bin)?;
    let needs = match &glibc {
        None => "The binary is static: it needs no shared library and runs on any\n\
                 x86_64 Linux with BTF (/sys/kernel/btf/vmlinux)."
            .to_owned(),
        Some(g) => format!(
            "The binary is linked dynamically against glibc {g} or later (and\n\
             libgcc_s): Debian 12, Ubuntu 22.04 and newer have it."
        ),
    };
    write(
        &top.join("INSTALL"),
        &format!(
            "abm {version} for x86_64 Linux\n\n\
             {needs}\n\n\
             The tree mirrors the Debian package (abm_{version}_amd64.deb): copy it\n\
             over / as root, or take only the binary.\n\n\
             \x20 sudo cp -r usr/. /usr/        # binary, policies, man pages, completions\n\
             \x20 sudo cp -r lib/. /lib/        # the systemd unit\n\
             \x20 sudo cp -rn etc/. /etc/       # /etc/abm/abm.toml, kept if present\n\
             \x20 abm doctor                     # what this kernel supports\n\
             \x20 sudo abm run -- CMD ARGS...    # watch a command\n\n\
             The daemon (optional): edit /etc/abm/abm.toml, then\n\n\
             \x20 sudo systemctl daemon-reload && sudo systemctl enable --now abm\n\n\
             Binary only: `sudo install -m 0755 usr/bin/abm /usr/local/bin/abm`\n\
             (then point ExecStart in the unit at /usr/local/bin/abm if you use it).\n\n\
             Uninstall: stop and disable the daemon, then remove usr/bin/abm,\n\
             usr/share/abm, usr/share/doc/abm, lib/systemd/system/abm.service,\n\
             the man pages usr/share/man/man1/abm*.1.gz, the three completion\n\
             files, /etc/abm and, with every trace in it, /var/lib/abm.\n\n\
             Documentation: docs/install.md and docs/daemon.md in the source,\n\
             `man abm`, `abm --help`.\n"
        ),
        0o644,
    )?;
    let out = out_dir().join(format!("{name}.tar.gz"));
    let _ = fs::remove_file(&out);
    run(Command::new("sh")
        .current_dir(&stage_dir)
        .arg("-c")
        .arg(format!(
            "tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@{} -cf - '{name}' \
             | gzip -9n > '{}'",
            source_date_epoch(),
            out.display()
        )))
    .context("tar | gzip failed")?;
    let _ = fs::remove_dir_all(&stage_dir);
    Ok(out)
}

/// The time of the last commit, for reproducible archives.
fn source_date_epoch() -> String {
    Command::new("git")
        .current_dir(root())
        .args(["log", "-1", "--format=%ct"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "0".into())
}

fn changelog_text() -> Result<String> {
    let version = version()?;
    let date = crate::vm::output(Command::new("date").args([
        "-u",
        "-R",
        "-d",
        &format!("@{}", source_date_epoch()),
    ]))?;
    let maintainer = std::env::var("ABM_DEB_MAINTAINER").unwrap_or_else(|_| MAINTAINER.into());
    Ok(format!(
        "abm ({version}) unstable; urgency=medium\n\n  * Package built by `cargo xtask dist`.\n\n -- {maintainer}  {}\n",
        date.trim()
    ))
}

fn mkdirs(file: &Path) -> Result<()> {
    let dir = file.parent().context("a path with a parent")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

fn write(path: &Path, text: &str, mode: u32) -> Result<()> {
    mkdirs(path)?;
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn copy(from: &Path, to: &Path, mode: u32) -> Result<()> {
    mkdirs(to)?;
    fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn gzip(from: &Path, to: &Path) -> Result<()> {
    mkdirs(to)?;
    let f = fs::File::create(to).with_context(|| format!("cannot create {}", to.display()))?;
    let status = Command::new("gzip")
        .args(["-9n", "-c"])
        .arg(from)
        .stdout(f)
        .status()
        .context("cannot start gzip")?;
    if !status.success() {
        bail!("gzip {} failed with {status}", from.display());
    }
    fs::set_permissions(to, fs::Permissions::from_mode(0o644))?;
    Ok(())
}

/// Every directory 0755, whatever the umask.
fn normalize_dirs(dir: &Path) -> Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        if p.symlink_metadata()?.is_dir() {
            normalize_dirs(&p)?;
        }
    }
    Ok(())
}

/// The maintainer scripts (docs/install.md): postinst enables and starts
/// nothing; prerm stops the daemon on removal; postrm purges the state.
const POSTINST: &str = include_str!("../../deploy/debian/postinst");
const PRERM: &str = include_str!("../../deploy/debian/prerm");
const POSTRM: &str = include_str!("../../deploy/debian/postrm");
/// The config is 0600 as deploy/abm.service prescribes.
const LINTIAN_OVERRIDES: &str = include_str!("../../deploy/debian/lintian-overrides");
const COPYRIGHT: &str = include_str!("../../deploy/debian/copyright");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_config_comments_out_the_example_targets_only() {
        let src = "a = 1\n\n[retention]\nmax_age = \"30d\"\n\n# A cgroup\n[[target]]\nname = \"x\"\ncgroup = \"y\"\n\n# [kubernetes]\n";
        let out = package_config(src);
        assert!(out.contains("\na = 1\n"), "{out}");
        assert!(out.contains("\n[retention]\nmax_age"), "{out}");
        assert!(
            out.contains("# [[target]]\n# name = \"x\"\n# cgroup = \"y\"\n"),
            "{out}"
        );
        let parsed: toml::Table = out.parse().unwrap();
        assert!(parsed.get("target").is_none());
    }

    #[test]
    fn packaged_unit_runs_usr_bin_abm() {
        let src = "# install -m 0755 x /usr/local/bin/abm\n[Unit]\nDescription=d\n[Service]\nExecStart=/usr/local/bin/abm daemon --config /etc/abm/abm.toml\n";
        let out = package_unit(src).unwrap();
        assert!(out.contains("ExecStart=/usr/bin/abm daemon --config /etc/abm/abm.toml\n"));
        assert!(!out.contains("/usr/local"), "{out}");
        assert!(package_unit("[Unit]\n[Service]\nExecStart=/bin/true\n").is_err());
        assert!(package_unit("[Unit]\n").is_err());
    }
}
