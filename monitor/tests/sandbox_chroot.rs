//! A sandbox made the way many agent harnesses isolate a task without
//! Docker: `unshare -m`, an overlay over a small root, the host's `/usr`
//! bound into it, `chroot`. Its `/etc` and `/root` are its own (other
//! inodes, a mount abm's namespace does not have). Inside it, deletes,
//! execs and reads of its secrets are judged, enforced and recorded as on
//! the host: `rm -rf /etc` is refused with what it would destroy in the
//! sandbox, a truncation through an absolute symlink of the sandbox is
//! judged as its target there, and reads of the sandbox's `/etc/shadow`
//! and `/root/.ssh/id_rsa` are recorded. The overlay's upper directory
//! shows what really happened: a deleted file leaves a whiteout there, a
//! truncated one a copy.
mod common;

use std::{path::Path, process::Command};

use common::{TempDir, ABM};
use serde_json::Value;

const RULES: &str = r#"
version = 1
[[rule]]
id = "sandbox.keep"
reason = "the sandbox's kept files"
ops = ["unlink", "rmdir", "rename", "truncate", "write"]
paths = ["/etc/keep", "/etc/keep/**"]
treatment = "deny"
priority = 100
"#;

/// The small root (lower layer), the overlay's directories, and the script
/// that mounts it in the new mount namespace and runs `$1` chrooted.
struct Sandbox {
    t: TempDir,
}

impl Sandbox {
    fn new(tag: &str) -> Sandbox {
        let t = TempDir::new(tag);
        common::sh(
            "mkdir -p lower/etc/sub lower/etc/keep lower/root/.ssh lower/usr lower/tmp lower/proc upper work merged ws \
             && for i in $(seq 1 20); do echo $i > lower/etc/f$i; echo $i > lower/etc/sub/g$i; done \
             && echo 'root:$6$sandbox:19000:0:99999:7:::' > lower/etc/shadow && chmod 640 lower/etc/shadow \
             && echo k > lower/etc/keep/k && ln -s /etc/keep lower/etc/alias \
             && echo PRIVATE > lower/root/.ssh/id_rsa \
             && ln -s usr/bin lower/bin && ln -s usr/lib lower/lib && ln -s usr/lib64 lower/lib64 && ln -s usr/sbin lower/sbin",
            t.path(),
        );
        let run = format!(
            "set -e\nR='{}'\nmount -t overlay overlay -o lowerdir=$R/lower,upperdir=$R/upper,workdir=$R/work $R/merged\n\
             mount --bind /usr $R/merged/usr\nexec chroot $R/merged /bin/sh -c \"$1\"\n",
            t.path().display()
        );
        std::fs::write(t.join("run.sh"), run).unwrap();
        std::fs::write(t.join("rules.toml"), RULES).unwrap();
        Sandbox { t }
    }

    /// Runs `script` inside the sandbox under `abm run` with `extra` flags.
    fn run(&self, extra: &[&str], script: &str) -> (std::process::Output, Vec<Value>) {
        let trace = self.t.join("trace.jsonl");
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/default.toml");
        let out = Command::new(ABM)
            .args(["run", "--quiet", "--linger", "0", "--trace"])
            .arg(&trace)
            .arg("--workspace")
            .arg(self.t.join("ws"))
            .args(["--policy", default, "--policy"])
            .arg(self.t.join("rules.toml"))
            .args(extra)
            .args(["--", "unshare", "-m", "sh"])
            .arg(self.t.join("run.sh"))
            .arg(script)
            .current_dir(self.t.join("ws"))
            .output()
            .expect("run abm");
        (out, common::read_records(&trace))
    }

    /// What the sandbox changed, from the overlay's upper layer: deleted
    /// names (whiteouts) and files copied up (written).
    fn changes(&self) -> (Vec<String>, Vec<String>) {
        let mut whiteouts = Vec::new();
        let mut copied = Vec::new();
        let upper = self.t.join("upper");
        fn walk(d: &Path, upper: &Path, w: &mut Vec<String>, c: &mut Vec<String>) {
            use std::os::unix::fs::FileTypeExt as _;
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let ft = e.file_type().unwrap();
                let rel = format!("/{}", e.path().strip_prefix(upper).unwrap().display());
                if ft.is_dir() {
                    walk(&e.path(), upper, w, c);
                } else if ft.is_char_device() {
                    w.push(rel);
                } else if ft.is_file() {
                    c.push(rel);
                }
            }
        }
        walk(&upper, &upper, &mut whiteouts, &mut copied);
        whiteouts.sort();
        copied.sort();
        (whiteouts, copied)
    }
}

fn preconditions() -> bool {
    if let Some(why) = common::kernel_unavailable() {
        common::skip_or_fail("ebpf", &why);
        return false;
    }
    for prog in ["unshare", "chroot", "mount"] {
        assert!(
            common::have(prog),
            "cannot run: `{prog}` is missing (Debian package util-linux / coreutils / mount)"
        );
    }
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.lines().any(|l| l.ends_with("\toverlay")) {
        let _ = Command::new("modprobe").arg("overlay").status();
        let fs = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        assert!(
            fs.lines().any(|l| l.ends_with("\toverlay")),
            "cannot run: the kernel has no overlay file system (modprobe overlay)"
        );
    }
    true
}

fn events(records: &[Value]) -> impl Iterator<Item = &Value> {
    records.iter().filter(|r| r["type"] == "event")
}

fn blocks(e: &Value) -> bool {
    matches!(
        e["verdict"]["treatment"].as_str(),
        Some("deny" | "confirm" | "preserve")
    )
}

/// The sandbox's records of `op` whose path inside the sandbox is `inner`.
fn inside<'a>(records: &'a [Value], op: &str, inner: &str) -> Vec<&'a Value> {
    events(records)
        .filter(|e| e["op"] == op && e["container_path"] == inner)
        .collect()
}

#[test]
fn inside_a_chroot_sandbox_enforce_judges_the_sandboxs_own_files() {
    if !preconditions() {
        return;
    }
    if !common::seccomp_user_notif() {
        common::skip_or_fail("seccomp", "no seccomp user notification in this kernel");
        return;
    }
    let sb = Sandbox::new("sbx-enforce");
    let (out, records) = sb.run(
        &[
            "--enforce",
            "--enforce-backend",
            "seccomp",
            "--no-prompt",
            "--confirm-timeout",
            "1",
        ],
        "cat /etc/shadow; cat /root/.ssh/id_rsa; rm -rf /etc; rm /etc/f1; \
         (: > /etc/alias/k); rm /etc/keep/k; ls /etc | wc -l",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("PRIVATE"),
        "the sandbox ran: {stdout}\n{stderr}"
    );

    // Nothing of the sandbox was deleted or truncated.
    let (whiteouts, copied) = sb.changes();
    assert!(
        whiteouts.is_empty(),
        "deleted in the sandbox: {whiteouts:?}"
    );
    assert!(copied.is_empty(), "written in the sandbox: {copied:?}");
    // f1..f20, sub, keep, shadow and alias are all still there.
    assert!(
        stdout.lines().any(|l| l.trim() == "24"),
        "ls /etc: {stdout}"
    );

    // `X
    let rm: Vec<&Value> = events(&records)
        .filter(|e| e["op"] == "exec" && e["argv"] == serde_json::json!(["rm", "-rf", "/etc"]))
        .filter(|e| e["result_note"] == "denied_by_seccomp")
        .collect();
    assert!(!rm.is_empty(), "rm -rf /etc was not refused:\n{stderr}");
    let v = &rm[0]["verdict"];
    assert_eq!(v["treatment"], "deny", "{v}");
    assert!(
        v["reason"].as_str().unwrap_or("").contains("43 files"),
        "the preview counts the sandbox's /etc, not the host's: {v}"
    );
    assert_eq!(rm[0]["container_path"], "/usr/bin/rm", "{}", rm[0]);
    assert_eq!(rm[0]["enforcement"]["decision"], "denied");

    // `rm /etc/f1`: a confirmation nobody answered.
    let rm1: Vec<&Value> = events(&records)
        .filter(|e| e["op"] == "exec" && e["argv"] == serde_json::json!(["rm", "/etc/f1"]))
        .filter(|e| e["result_note"] == "denied_by_seccomp")
        .collect();
    assert!(!rm1.is_empty(), "rm /etc/f1 was not refused:\n{stderr}");
    assert_eq!(rm1[0]["verdict"]["treatment"], "confirm", "{}", rm1[0]);

    // `: > /etc/alias/k`: the sandbox's absolute symlink, resolved in the
    // sandbox (the host has no /etc/alias), judged as /etc/keep/k.
    let tr = inside(&records, "truncate", "/etc/keep/k");
    assert!(
        !tr.is_empty(),
        "no truncate record of /etc/keep/k:\n{}",
        events(&records)
            .filter(|e| e["op"] != "exec")
            .map(|e| format!(
                "{} {} {} {}",
                e["op"], e["path"], e["container_path"], e["result_note"]
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(tr[0]["result_note"], "denied_by_seccomp", "{}", tr[0]);
    assert_eq!(tr[0]["verdict"]["rule"], "sandbox.keep", "{}", tr[0]);
    assert_eq!(tr[0]["raw_path"], "/etc/alias/k");

    // The sandbox's secrets, read right after it started: recorded.
    for secret in ["/etc/shadow", "/root/.ssh/id_rsa"] {
        let r = inside(&records, "read", secret);
        assert!(!r.is_empty(), "no read of the sandbox's {secret} recorded");
        assert_eq!(r[0]["comm"], "cat");
    }

    // Under --enforce no record says "deny" or "confirm" about a call that
    // ran without saying why.
    let silent: Vec<String> = events(&records)
        .filter(|e| blocks(e) && e["result"].as_i64().is_none_or(|r| r >= 0))
        .filter(|e| e["enforcement"].is_null())
        .map(|e| e.to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "blocking verdicts not enforced, silently:\n{}",
        silent.join("\n")
    );
    let refused = events(&records)
        .filter(|e| e["result_note"] == "denied_by_seccomp")
        .count();
    let reads = events(&records).filter(|e| e["op"] == "read").count();
    eprintln!(
        "sandbox (enforce): {refused} calls refused, {reads} sensitive reads recorded, {} whiteouts, {} copies",
        whiteouts.len(),
        copied.len()
    );
}

#[test]
fn inside_a_chroot_sandbox_observe_records_the_sandboxs_own_files() {
    if !preconditions() {
        return;
    }
    let sb = Sandbox::new("sbx-observe");
    // Reads of a new view's secrets are recorded once the exec that
    // entered it is released (docs/security.md): the shell waits a second.
    let (out, records) = sb.run(
        &[],
        "sleep 1; cat /etc/shadow; cat /root/.ssh/id_rsa; rm -rf /etc/sub; : > /etc/alias/k",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (whiteouts, copied) = sb.changes();
    // Observe mode blocks nothing: what happened is in the upper layer...
    assert!(whiteouts.iter().any(|w| w == "/etc/sub"), "{whiteouts:?}");
    assert_eq!(copied, ["/etc/keep/k"]);
    // ...and in the trace, under the sandbox's own paths.
    for i in 1..=20 {
        let u = inside(&records, "unlink", &format!("/etc/sub/g{i}"));
        assert_eq!(u.len(), 1, "/etc/sub/g{i}");
        assert_eq!(u[0]["result"], 0);
    }
    assert_eq!(inside(&records, "rmdir", "/etc/sub").len(), 1);
    // What `rm -rf /etc/sub` would destroy is counted in the sandbox (its
    // 20 files), not at the host's /etc/sub.
    let rm: Vec<&Value> = events(&records)
        .filter(|e| e["op"] == "exec" && e["argv"] == serde_json::json!(["rm", "-rf", "/etc/sub"]))
        .collect();
    assert_eq!(rm.len(), 1, "the exec of rm -rf /etc/sub");
    eprintln!(
        "sandbox (observe): rm -rf /etc/sub judged: {}",
        rm[0]["verdict"]
    );
    assert!(
        rm[0]["verdict"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("20 files"),
        "the preview counts the sandbox's /etc/sub: {}",
        rm[0]["verdict"]
    );
    let g1 = inside(&records, "unlink", "/etc/sub/g1");
    assert!(blocks(g1[0]), "a delete in a system directory: {}", g1[0]);
    // The truncation through the sandbox's symlink is recorded (which
    // name the record gives it is the pipeline's: the target, or the link).
    let tr: Vec<&Value> = events(&records)
        .filter(|e| e["op"] == "truncate" && e["raw_path"] == "/etc/alias/k")
        .collect();
    assert_eq!(tr.len(), 1, "the truncation through the sandbox's symlink");
    eprintln!(
        "sandbox (observe): truncation through /etc/alias/k recorded as {} (path_issues {})",
        tr[0]["container_path"], tr[0]["path_issues"]
    );
    for secret in ["/etc/shadow", "/root/.ssh/id_rsa"] {
        assert_eq!(
            inside(&records, "read", secret).len(),
            1,
            "read of {secret}"
        );
    }
    eprintln!(
        "sandbox (observe): {} unlinks, {} reads recorded, {} whiteouts, {} copies",
        events(&records).filter(|e| e["op"] == "unlink").count(),
        events(&records).filter(|e| e["op"] == "read").count(),
        whiteouts.len(),
        copied.len()
    );
}
