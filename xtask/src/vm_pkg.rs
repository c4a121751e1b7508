//! `cargo xtask vm-pkg-test`: the Debian package (`cargo xtask dist`)
//! installed, used and purged in clean Debian 12 VMs, on the two kernels
//! `cargo xtask vm-test` boots (6.1 and 6.12 cloud kernels, QEMU TCG).
//!
//! 1. Debian packages: qemu-system-x86, cpio, debootstrap (idempotent).
//! 2. The package: [`crate::dist::deb`] builds `target/dist/abm_*.deb`.
//! 3. A clean userspace: `debootstrap --variant=minbase --include=systemd-sysv
//!    bookworm` from the mirror apt uses on this host, cached in
//!    `target/vm/pkg-rootfs/` with its cpio archive
//!    `target/vm/pkg-rootfs.cpio` (rebuilt only when the recipe changes;
//!    documentation, locales and apt lists pruned; gettys and timers masked
//!    so the console carries the test's output).
//! 4. The initramfs is that archive followed by a small one holding the
//!    .deb, `tests/pkg/vm-test.sh` and a systemd unit that runs it once the
//!    system is up; systemd boots as PID 1 (`rdinit=/sbin/init`), with
//!    Debian's own kernel command line otherwise (no `lsm=` override). The
//!    test mounts nothing: what the daemon needs, the package and systemd
//!    must provide (and one `abm run` goes without the tracefs, debugfs and
//!    bpffs systemd mounts, in a private mount namespace).
//! 5. Both VMs boot in parallel. The script prints `ABM-PKG-TEST <name>
//!    PASS|FAIL <detail>` per check, `ABM-PKG-TIME` lines (dpkg -i and the
//!    first `abm run`) and `ABM-PKG-DONE`; a VM with a failed check, no DONE
//!    line, or past its time limit fails the run. Consoles are kept in
//!    `target/vm/pkg-console-<kernel>.log`.
use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

use crate::{
    root, run,
    setup::ensure_packages,
    vm::{boot_each, selected_kernels, vm_dir, vm_timeout, Boot},
};

/// Time limit of one VM: systemd's boot, dpkg and three BPF program loads
/// under TCG, two VMs sharing the cores. `ABM_VM_TIMEOUT` (seconds)
/// overrides it and `ABM_VM_KERNELS` limits the kernels, as for vm-test.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// Debian's default command line plus a serial console; systemd is PID 1.
/// `no_timer_check`: see vm.rs (the 8254 check can fail under TCG).
const APPEND: &str = "console=ttyS0 quiet panic=-1 no_timer_check rdinit=/sbin/init \
     systemd.show_status=0 systemd.log_level=warning";

const SUITE: &str = "bookworm";
/// Packages on top of minbase: systemd as init.
const INCLUDE: &str = "systemd-sysv";
/// Units masked in the test system: consoles and timers that would write to
/// the serial line or start work of their own during the test.
const MASKED: &[&str] = &[
    "getty@tty1.service",
    "serial-getty@ttyS0.service",
    "console-getty.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-tmpfiles-clean.timer",
];
/// Bump when the rootfs recipe below changes, to rebuild the cache.
const RECIPE: u32 = 1;

/// The unit that runs the test once the system is up, output on the console.
const TEST_UNIT: &str = "[Unit]
Description=abm package test (xtask vm-pkg-test)
After=multi-user.target

[Service]
Type=simple
ExecStart=/bin/sh /root/abm-pkg/vm-test.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/console
TTYReset=no
TTYVHangup=no

[Install]
WantedBy=multi-user.target
";

/// The `bookworm` main mirror apt uses here (deb822 `.sources` or one-line
/// `.list`), else deb.debian.org.
fn mirror() -> String {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    for f in files {
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        let found = if f.extension().is_some_and(|e| e == "sources") {
            mirror_deb822(&text)
        } else {
            mirror_one_line(&text)
        };
        if let Some(m) = found {
            return m;
        }
    }
    "http://deb.debian.org/debian".into()
}

fn mirror_deb822(text: &str) -> Option<String> {
    for stanza in text.split("\n\n") {
        let field = |name: &str| -> Option<Vec<&str>> {
            stanza.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim().eq_ignore_ascii_case(name)).then(|| v.split_whitespace().collect())
            })
        };
        let (Some(types), Some(uris), Some(suites)) =
            (field("Types"), field("URIs"), field("Suites"))
        else {
            continue;
        };
        let main = field("Components").is_some_and(|c| c.contains(&"main"));
        if types.contains(&"deb") && suites.contains(&SUITE) && main {
            return uris.first().map(|u| u.to_string());
        }
    }
    None
}

fn mirror_one_line(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace().peekable();
        if w.next()? != "deb" {
            return None;
        }
        if w.peek()?.starts_with('[') {
            // Options: `[arch=amd64 signed-by=...]`, possibly several words.
            for x in w.by_ref() {
                if x.ends_with(']') {
                    break;
                }
            }
        }
        let uri = w.next()?;
        let suite = w.next()?;
        (suite == SUITE && w.any(|c| c == "main")).then(|| uri.to_owned())
    })
}

/// The clean Debian 12 root file system as a cpio archive, built once.
fn rootfs_cpio() -> Result<PathBuf> {
    let mirror = mirror();
    let dir = vm_dir().join("pkg-rootfs");
    let cpio = vm_dir().join("pkg-rootfs.cpio");
    let stamp = vm_dir().join("pkg-rootfs.stamp");
    let recipe = format!(
        "recipe {RECIPE}\nsuite {SUITE}\nvariant minbase\ninclude {INCLUDE}\nmirror {mirror}\nmasked {}\n",
        MASKED.join(" ")
    );
    if cpio.exists() && fs::read_to_string(&stamp).is_ok_and(|s| s == recipe) {
        return Ok(cpio);
    }
    let _ = fs::remove_file(&stamp);
    let tmp = vm_dir().join("pkg-rootfs.tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(vm_dir())?;
    eprintln!("xtask: debootstrap {SUITE} (minbase + {INCLUDE}) from {mirror}, once");
    run(Command::new("debootstrap")
        .args(["--variant=minbase", &format!("--include={INCLUDE}"), SUITE])
        .arg(&tmp)
        .arg(&mirror))
    .with_context(|| {
        format!(
            "debootstrap failed: the package test needs the Debian mirror {mirror} (see \
             /etc/apt/sources.list*); its log is {}/debootstrap/debootstrap.log",
            tmp.display()
        )
    })?;
    // Smaller archive, faster boot: nothing the test reads.
    for d in [
        "usr/share/doc",
        "usr/share/man",
        "usr/share/locale",
        "usr/share/info",
        "var/cache/apt",
        "var/lib/apt/lists",
    ] {
        let p = tmp.join(d);
        if p.is_dir() {
            fs::remove_dir_all(&p)?;
            fs::create_dir_all(&p)?;
        }
    }
    let units = tmp.join("etc/systemd/system");
    for unit in MASKED {
        let link = units.join(unit);
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/null", &link)
            .with_context(|| format!("masking {unit} in {}", tmp.display()))?;
    }
    fs::write(tmp.join("etc/hostname"), "abm-pkg-vm\n")?;
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&tmp, &dir)?;
    pack(&dir, &cpio)?;
    fs::write(&stamp, recipe)?;
    Ok(cpio)
}

/// An uncompressed newc archive of `tree` (TCG decompresses slowly).
fn pack(tree: &Path, out: &Path) -> Result<()> {
    run(Command::new("sh").current_dir(tree).arg("-c").arg(format!(
        "find . | cpio -o -H newc --quiet > '{}'",
        out.display()
    )))
    .with_context(|| format!("packing {} with cpio (install cpio)", tree.display()))
}

/// The initramfs: the cached root file system, then the .deb, the test
/// script and the unit that runs it (the kernel unpacks concatenated
/// archives in order).
fn initrd(base: &Path, deb: &Path) -> Result<PathBuf> {
    let overlay = vm_dir().join("pkg-overlay");
    let _ = fs::remove_dir_all(&overlay);
    let pkg = overlay.join("root/abm-pkg");
    fs::create_dir_all(&pkg)?;
    let name = deb.file_name().context("a .deb file name")?;
    fs::copy(deb, pkg.join(name)).with_context(|| format!("copying {}", deb.display()))?;
    let script = root().join("tests/pkg/vm-test.sh");
    fs::copy(&script, pkg.join("vm-test.sh"))
        .with_context(|| format!("copying {}", script.display()))?;
    let units = overlay.join("etc/systemd/system");
    fs::create_dir_all(units.join("multi-user.target.wants"))?;
    fs::write(units.join("abm-pkg-test.service"), TEST_UNIT)?;
    std::os::unix::fs::symlink(
        "/etc/systemd/system/abm-pkg-test.service",
        units.join("multi-user.target.wants/abm-pkg-test.service"),
    )?;
    // The kernel applies these modes to the directories the base archive
    // made (`.` is the root directory itself).
    for d in [
        "",
        "root",
        "root/abm-pkg",
        "etc",
        "etc/systemd",
        "etc/systemd/system",
    ] {
        let mode = if d.starts_with("root") { 0o700 } else { 0o755 };
        fs::set_permissions(overlay.join(d), fs::Permissions::from_mode(mode))?;
    }
    let top = vm_dir().join("pkg-overlay.cpio");
    pack(&overlay, &top)?;
    let out = vm_dir().join("pkg-initrd.img");
    run(Command::new("sh").arg("-c").arg(format!(
        "cat '{}' '{}' > '{}'",
        base.display(),
        top.display(),
        out.display()
    )))?;
    Ok(out)
}

pub fn vm_pkg_test() -> Result<()> {
    let started = Instant::now();
    ensure_packages(&["qemu-system-x86", "cpio", "debootstrap"])?;
    let deb = crate::dist::deb()?;
    let (kernels, _) = selected_kernels()?;
    let base = rootfs_cpio()?;
    let initrd = initrd(&base, &deb)?;
    let timeout = vm_timeout(TIMEOUT);
    eprintln!(
        "xtask: installing {} in {} clean Debian 12 VMs (systemd, TCG, limit {}s each)",
        deb.display(),
        kernels.len(),
        timeout.as_secs()
    );
    let results = boot_each(
        &Boot {
            initrd,
            append: APPEND,
            memory_mib: 2048,
            prefix: "ABM-PKG-",
            log_prefix: "pkg-console-",
            timeout,
        },
        &kernels,
    )?;
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for r in results {
        let (tests, failed, line) = r.tally();
        summary.push(line);
        for l in r.lines.iter().filter(|l| l.starts_with("ABM-PKG-TIME ")) {
            summary.push(format!("kernel {}: {l}", r.label));
        }
        for f in &failed {
            failures.push(format!("kernel {}: {f}", r.label));
        }
        let console = r.log.display();
        if tests.is_empty() {
            failures.push(format!(
                "kernel {}: no check reported (console: {console})",
                r.label
            ));
        }
        if r.timed_out {
            failures.push(format!(
                "kernel {}: VM exceeded {}s (console: {console})",
                r.label,
                timeout.as_secs()
            ));
        } else if !r.done {
            failures.push(format!(
                "kernel {}: the VM did not print ABM-PKG-DONE (console: {console})",
                r.label
            ));
        }
    }
    for s in &summary {
        eprintln!("xtask: vm-pkg {s}");
    }
    eprintln!(
        "xtask: package VM tests took {:.0}s",
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        bail!("package VM tests failed:\n  {}", failures.join("\n  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_are_read_from_both_source_formats() {
        let deb822 = "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n\nTypes: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main contrib\n";
        assert_eq!(
            mirror_deb822(deb822).as_deref(),
            Some("http://mirror.example/debian")
        );
        let list = "# x\ndeb-src http://a/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://b/debian bookworm main\n";
        assert_eq!(mirror_one_line(list).as_deref(), Some("http://b/debian"));
        assert_eq!(mirror_one_line("deb http://c/debian bullseye main\n"), None);
    }
}
