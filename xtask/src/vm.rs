//! `cargo xtask vm-test`: the BPF LSM enforcement tests, in QEMU VMs booting
//! Debian's cloud kernels (6.1 and 6.12; both have `CONFIG_BPF_LSM=y`).
//!
//! 1. Debian packages: qemu-system-x86, busybox-static, cpio (idempotent).
//! 2. Kernels: the image package each meta package names is fetched with
//!    `apt-get download` into `target/vm/debs/`, and its `vmlinuz` is
//!    extracted into `target/vm/kernels/<package>/` (cached: reruns fetch
//!    nothing while the mirror's version is unchanged).
//! 3. An initramfs: busybox-static, the release `abm` (debug info stripped)
//!    with the glibc libraries `ldd` names, the static io_uring helper
//!    (tests/coverage/helper.c built with `cc -static`), the static argv
//!    race helper (tests/vm/argvrace.c), the static helper of the red-team
//!    attacks (tests/vm/vmhelper.c) and `tests/vm/`.
//! 4. QEMU with software emulation (TCG; KVM guests hang on these hosts),
//!    both kernels in parallel, `lsm=...,bpf` on the command line.
//!    `tests/vm/run.sh` prints `ABM-VM-TEST <name> PASS|FAIL <detail>` per
//!    test and `/init` prints `ABM-VM-DONE` at the end. A VM that fails a
//!    test, prints no DONE line or exceeds its time limit fails the run.
use std::{
    fs,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

use crate::{root, run, setup::ensure_packages};

/// The kernels under test: (label, meta package naming the current image).
const KERNELS: &[(&str, &str)] = &[
    ("6.1", "linux-image-cloud-amd64"),
    ("6.12", "linux-image-6.12-cloud-amd64"),
];

/// Time limit of one VM (TCG is slow: loading the BPF programs takes most
/// of it; two VMs share the machine's cores). `ABM_VM_TIMEOUT` (seconds)
/// overrides it; `ABM_VM_KERNELS` (labels) limits the run to some kernels.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// `no_timer_check`: under TCG on a loaded host the kernel's check of the
/// 8254 timer through the IO-APIC can time out and panic at boot ("IO-APIC
/// + timer doesn't work!").
const APPEND: &str =
    "console=ttyS0 quiet lsm=lockdown,capability,landlock,bpf panic=-1 no_timer_check";

pub(crate) fn vm_dir() -> PathBuf {
    root().join("target/vm")
}

/// Output of a command, failing with its stderr.
pub(crate) fn output(cmd: &mut Command) -> Result<String> {
    let shown = format!("{cmd:?}");
    let o = cmd
        .output()
        .with_context(|| format!("cannot start {shown}"))?;
    if !o.status.success() {
        bail!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The image package a meta package depends on (`linux-image-6.1.0-NN-
/// cloud-amd64`), as its `-unsigned` variant when the mirror has one.
fn image_package(meta: &str) -> Result<String> {
    let depends = || output(Command::new("apt-cache").args(["depends", meta]));
    let text = match depends() {
        Ok(t) if t.contains("Depends:") => t,
        _ => {
            run(Command::new("apt-get").args(["update", "-qq"]))?;
            depends().with_context(|| format!("the Debian mirror has no {meta}"))?
        }
    };
    let image = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends:"))
        .map(str::trim)
        .find(|p| p.starts_with("linux-image-"))
        .with_context(|| format!("{meta} names no linux-image package:\n{text}"))?
        .to_owned();
    let unsigned = format!("{image}-unsigned");
    let has_unsigned = Command::new("apt-cache")
        .args(["show", &unsigned])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    Ok(if has_unsigned { unsigned } else { image })
}

/// The kernel image of one package, downloaded and extracted once.
fn kernel(label: &str, meta: &str) -> Result<PathBuf> {
    let pkg = image_package(meta).with_context(|| {
        format!("cannot find Debian's {label} cloud kernel ({meta}); the VM tests need the Debian package mirror")
    })?;
    let kdir = vm_dir().join("kernels").join(&pkg);
    if let Some(k) = find_vmlinuz(&kdir) {
        return Ok(k);
    }
    let debs = vm_dir().join("debs");
    fs::create_dir_all(&debs)?;
    let have = |d: &Path| -> Option<PathBuf> {
        fs::read_dir(d).ok()?.flatten().map(|e| e.path()).find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{pkg}_")))
        })
    };
    let deb = match have(&debs) {
        Some(d) => d,
        None => {
            run(Command::new("apt-get")
                .current_dir(&debs)
                .args(["download", &pkg]))
            .with_context(|| {
                format!(
                    "apt-get download {pkg} failed: the VM tests need the Debian package mirror"
                )
            })?;
            have(&debs).with_context(|| {
                format!("apt-get download {pkg} left no .deb in {}", debs.display())
            })?
        }
    };
    let tmp = kdir.with_extension("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    run(Command::new("sh").arg("-c").arg(format!(
        "dpkg-deb --fsys-tarfile '{}' | tar -x -C '{}' ./boot",
        deb.display(),
        tmp.display()
    )))?;
    let _ = fs::remove_dir_all(&kdir);
    fs::rename(&tmp, &kdir)?;
    find_vmlinuz(&kdir).with_context(|| format!("{} holds no boot/vmlinuz-*", deb.display()))
}

fn find_vmlinuz(kdir: &Path) -> Option<PathBuf> {
    fs::read_dir(kdir.join("boot"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
}

/// Copies `src` to `tree/<dest>` (creating directories), following links.
fn install(tree: &Path, src: &Path, dest: &str, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let to = tree.join(dest.trim_start_matches('/'));
    fs::create_dir_all(to.parent().expect("a path in the tree"))?;
    fs::copy(src, &to).with_context(|| format!("copying {} to {}", src.display(), to.display()))?;
    fs::set_permissions(&to, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// The shared libraries `ldd` lists for a binary (absolute paths).
fn libraries(bin: &Path) -> Result<Vec<PathBuf>> {
    let text = output(Command::new("ldd").arg(bin))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Builds `target/vm/initrd.gz` from the release binary and tests/vm/.
fn initramfs(abm: &Path) -> Result<PathBuf> {
    let dir = vm_dir();
    let tree = dir.join("initramfs");
    let _ = fs::remove_dir_all(&tree);
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "usr/sbin",
        "proc",
        "sys",
        "dev",
        "tmp",
        "run",
        "root",
        "etc",
        "tests/bin",
    ] {
        fs::create_dir_all(tree.join(d))?;
    }
    install(&tree, Path::new("/bin/busybox"), "/bin/busybox", 0o755)?;
    // The release binary carries debug info (profile.release debug = 1):
    // strip it so the initramfs stays small.
    let stripped = dir.join("abm.stripped");
    run(Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(abm))?;
    install(&tree, &stripped, "/bin/abm", 0o755)?;
    for lib in libraries(abm)? {
        install(&tree, &lib, &lib.to_string_lossy(), 0o755)?;
    }
    // Static C helpers (the image has no libc of their own): (name in
    // /tests/bin, source, what it is for, extra flags).
    let helpers = [
        (
            "covhelper",
            "tests/coverage/helper.c",
            "io_uring helper",
            &[][..],
        ),
        (
            "argvrace",
            "tests/vm/argvrace.c",
            "argv race helper",
            &["-pthread"][..],
        ),
        (
            "pathrace",
            "tests/truth/race.c",
            "path race helper",
            &["-pthread"][..],
        ),
        ("vmhelper", "tests/vm/vmhelper.c", "VM test helper", &[][..]),
    ];
    for (name, source, what, extra) in helpers {
        let bin = dir.join(name);
        run(Command::new("cc")
            .args(["-static", "-O2"])
            .args(extra)
            .arg("-o")
            .arg(&bin)
            .arg(root().join(source)))
        .with_context(|| format!("building the static {what} (needs gcc and libc6-dev)"))?;
        install(&tree, &bin, &format!("/tests/bin/{name}"), 0o755)?;
    }
    let src = root().join("tests/vm");
    for e in fs::read_dir(&src)? {
        let p = e?.path();
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name == "init" {
            install(&tree, &p, "/init", 0o755)?;
        } else {
            install(&tree, &p, &format!("/tests/{name}"), 0o644)?;
        }
    }
    fs::write(tree.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    fs::write(tree.join("etc/group"), "root:x:0:\n")?;
    let out = dir.join("initrd.gz");
    run(Command::new("sh").current_dir(&tree).arg("-c").arg(format!(
        "find . | cpio -o -H newc --quiet | gzip -1 > '{}'",
        out.display()
    )))?;
    Ok(out)
}

/// What one VM reported.
pub(crate) struct VmResult {
    pub(crate) label: String,
    /// The report prefix ([`Boot::prefix`]).
    pub(crate) prefix: &'static str,
    pub(crate) lines: Vec<String>,
    pub(crate) done: bool,
    pub(crate) timed_out: bool,
    pub(crate) secs: f64,
    pub(crate) log: PathBuf,
}

impl VmResult {
    /// The report's test lines (`<prefix>TEST NAME PASS|FAIL ...`), those
    /// that did not pass, and the kernel's summary line.
    pub(crate) fn tally(&self) -> (Vec<&String>, Vec<&String>, String) {
        let tests: Vec<&String> = self
            .lines
            .iter()
            .filter(|l| l.starts_with(&format!("{}TEST ", self.prefix)))
            .collect();
        let failed: Vec<&String> = tests
            .iter()
            .copied()
            .filter(|l| l.split_whitespace().nth(2) != Some("PASS"))
            .collect();
        let line = format!(
            "kernel {}: {} passed, {} failed, {:.0}s{}",
            self.label,
            tests.len() - failed.len(),
            failed.len(),
            self.secs,
            if self.done { "" } else { " (no final line)" }
        );
        (tests, failed, line)
    }
}

/// How the VMs of one test boot under software emulation (TCG).
pub(crate) struct Boot {
    pub(crate) initrd: PathBuf,
    /// The kernel command line.
    pub(crate) append: &'static str,
    pub(crate) memory_mib: u32,
    /// Console lines holding this prefix are the guest's report; the one
    /// with `<prefix>DONE` ends it.
    pub(crate) prefix: &'static str,
    /// Console logs go to target/vm/<log_prefix><label>.log.
    pub(crate) log_prefix: &'static str,
    pub(crate) timeout: Duration,
}

/// The kernels `ABM_VM_KERNELS` (labels, comma-separated) names, all when
/// it is unset, each fetched; and whether that is all of them.
pub(crate) fn selected_kernels() -> Result<(Vec<(&'static str, PathBuf)>, bool)> {
    let only: Option<Vec<String>> = std::env::var("ABM_VM_KERNELS")
        .ok()
        .map(|s| s.split(',').map(|l| l.trim().to_owned()).collect());
    let known = || {
        KERNELS
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(o) = &only {
        if let Some(bad) = o.iter().find(|l| !KERNELS.iter().any(|(k, _)| k == l)) {
            bail!("ABM_VM_KERNELS: no kernel {bad:?} (known: {})", known());
        }
    }
    let mut kernels = Vec::new();
    for (label, meta) in KERNELS {
        if only.as_ref().is_some_and(|o| !o.iter().any(|l| l == label)) {
            continue;
        }
        kernels.push((*label, kernel(label, meta)?));
    }
    if kernels.is_empty() {
        bail!("ABM_VM_KERNELS names none of the kernels ({})", known());
    }
    Ok((kernels, only.is_none()))
}

/// The time limit of one VM: `ABM_VM_TIMEOUT` seconds, else `default`.
pub(crate) fn vm_timeout(default: Duration) -> Duration {
    std::env::var("ABM_VM_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(default)
}

/// Boots one VM per kernel, all at once; their results in kernel order.
pub(crate) fn boot_each(b: &Boot, kernels: &[(&'static str, PathBuf)]) -> Result<Vec<VmResult>> {
    thread::scope(|scope| {
        let handles: Vec<_> = kernels
            .iter()
            .map(|(label, k)| scope.spawn(move || boot_vm(b, label, k)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("VM thread panicked"))?
            })
            .collect()
    })
}

/// Boots a VM, collects its report lines and waits for it to power off
/// (or kills it at the time limit).
fn boot_vm(b: &Boot, label: &str, kernel: &Path) -> Result<VmResult> {
    let log = vm_dir().join(format!("{}{label}.log", b.log_prefix));
    let mut child = Command::new("qemu-system-x86_64")
        .args(["-accel", "tcg", "-cpu", "max", "-smp", "1"])
        .args(["-m", &b.memory_mib.to_string()])
        .args(["-nographic", "-no-reboot"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(&b.initrd)
        .args(["-append", b.append])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start qemu-system-x86_64 (install qemu-system-x86)")?;
    let started = Instant::now();
    let stdout = child.stdout.take().context("qemu's stdout")?;
    let tag = label.to_owned();
    let prefix = b.prefix.to_owned();
    let done_line = format!("{prefix}DONE");
    let log_path = log.clone();
    // The console is read on a thread so the time limit holds even while
    // the guest prints nothing.
    let reader = thread::spawn(move || -> (Vec<String>, bool) {
        let mut all = String::new();
        let mut lines = Vec::new();
        let mut done = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let line = line.trim_end_matches('\r').to_owned();
            all.push_str(&line);
            all.push('\n');
            // Console lines can carry kernel messages in front of ours.
            if let Some(i) = line.find(&prefix) {
                let ours = line[i..].to_owned();
                eprintln!("vm {tag}: {ours}");
                done |= ours.starts_with(&done_line);
                lines.push(ours);
            }
        }
        let _ = fs::write(&log_path, all);
        (lines, done)
    });
    let mut timed_out = false;
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > b.timeout {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        thread::sleep(Duration::from_millis(200));
    }
    let (lines, done) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("console reader panicked"))?;
    Ok(VmResult {
        label: label.to_owned(),
        prefix: b.prefix,
        lines,
        done,
        timed_out,
        secs: started.elapsed().as_secs_f64(),
        log,
    })
}

/// Writes the BPF LSM outcomes of the red-team attacks (tests/vm/adversarial.sh)
/// between the `lsm-attacks` markers of docs/security.md.
fn write_attack_table(attacks: &[(String, Vec<(String, String)>)]) -> Result<()> {
    let labels: Vec<&str> = KERNELS.iter().map(|(k, _)| *k).collect();
    let mut t = String::from(
        "Generated by `cargo xtask vm-test` (tests/vm/adversarial.sh); every attack runs as root \
         inside `abm run --enforce --enforce-backend lsm` in the test VMs.\n\n| attack |",
    );
    for l in &labels {
        t.push_str(&format!(" BPF LSM, kernel {l} |"));
    }
    t.push_str("\n| --- |");
    for _ in &labels {
        t.push_str(" --- |");
    }
    t.push('\n');
    for (name, outcomes) in attacks {
        t.push_str(&format!("| {name} |"));
        for l in &labels {
            let o = outcomes
                .iter()
                .find(|(k, _)| k == l)
                .map(|(_, o)| o.as_str())
                .unwrap_or("not run");
            t.push_str(&format!(" {o} |"));
        }
        t.push('\n');
    }
    let doc = root().join("docs/security.md");
    let text = fs::read_to_string(&doc).with_context(|| format!("reading {}", doc.display()))?;
    let (begin, end) = ("<!-- lsm-attacks:begin -->\n", "<!-- lsm-attacks:end -->");
    let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
        bail!("{} has no lsm-attacks markers", doc.display());
    };
    let new = format!("{}{t}{}", &text[..b + begin.len()], &text[e..]);
    if new != text {
        fs::write(&doc, new).with_context(|| format!("writing {}", doc.display()))?;
        eprintln!(
            "xtask: wrote the BPF LSM attack table into {}",
            doc.display()
        );
    }
    Ok(())
}

pub fn vm_test() -> Result<()> {
    let started = Instant::now();
    ensure_packages(&["qemu-system-x86", "busybox-static", "cpio"])?;
    let abm = crate::build_release()?;
    let (kernels, all_kernels) = selected_kernels()?;
    let initrd = initramfs(&abm)?;
    let timeout = vm_timeout(TIMEOUT);
    eprintln!(
        "xtask: booting {} VMs (TCG, limit {}s each)",
        kernels.len(),
        timeout.as_secs()
    );
    let results = boot_each(
        &Boot {
            initrd,
            append: APPEND,
            memory_mib: 1024,
            prefix: "ABM-VM-",
            log_prefix: "console-",
            timeout,
        },
        &kernels,
    )?;
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    // Red-team outcomes: attack -> (kernel, outcome), in the VMs' order.
    let mut attacks: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut complete = all_kernels;
    for r in results {
        let mut any = false;
        for l in &r.lines {
            let Some((name, outcome)) = l
                .strip_prefix("ABM-VM-ATTACK ")
                .and_then(|a| a.rsplit_once('|'))
            else {
                continue;
            };
            any = true;
            let row = match attacks.iter_mut().position(|(n, _)| n == name) {
                Some(i) => &mut attacks[i].1,
                None => {
                    attacks.push((name.to_owned(), Vec::new()));
                    &mut attacks.last_mut().expect("just pushed").1
                }
            };
            row.push((r.label.to_owned(), outcome.trim().to_owned()));
        }
        complete &= any;
        let (tests, failed, line) = r.tally();
        summary.push(line);
        for f in &failed {
            failures.push(format!("kernel {}: {f}", r.label));
        }
        if tests.is_empty() {
            failures.push(format!(
                "kernel {}: no test reported (console: {})",
                r.label,
                r.log.display()
            ));
        }
        if r.timed_out {
            failures.push(format!(
                "kernel {}: VM exceeded {}s (console: {})",
                r.label,
                timeout.as_secs(),
                r.log.display()
            ));
        } else if !r.done {
            failures.push(format!(
                "kernel {}: the VM did not print ABM-VM-DONE (console: {})",
                r.label,
                r.log.display()
            ));
        }
    }
    for s in &summary {
        eprintln!("xtask: vm {s}");
    }
    // Every kernel booted and reported attacks: their outcomes are facts
    // even when other tests failed (an attack a VM did not reach says "not
    // run").
    if complete {
        write_attack_table(&attacks)?;
    }
    eprintln!(
        "xtask: VM tests took {:.0}s",
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        bail!("BPF LSM VM tests failed:\n  {}", failures.join("\n  "));
    }
    Ok(())
}
