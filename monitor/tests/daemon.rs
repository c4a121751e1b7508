//! `abm daemon` on the real kernel, with containers made of namespaces and
//! cgroups: `unshare -m -p -f --mount-proc` in a fresh cgroup v2 child, then
//! `pivot_root` or `chroot` into a small root file system (read-only bind
//! mounts of /bin /lib /lib64 /usr and a writable /data). Every container,
//! cgroup and daemon is cleaned up by a guard on drop.
//!
//! Run with `--test-threads=1`: the tests share the machine's kernel.
mod common;

use std::{
    io::{BufRead as _, BufReader, Write as _},
    os::unix::{
        fs::{OpenOptionsExt as _, PermissionsExt as _},
        process::CommandExt as _,
    },
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{
    daemon::{config, wait_for, Daemon},
    TempDir, ABM,
};
use monitor::kernel::cgroup::{self, Hierarchy};
use serde_json::Value;

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A cgroup v2 directory (with its subtree) removed on drop, after killing
/// what is still in it.
struct CgroupGuard(PathBuf);

impl CgroupGuard {
    fn new(parent: &Path, name: &str) -> CgroupGuard {
        let p = parent.join(name);
        std::fs::create_dir(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        CgroupGuard(p)
    }
}

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        if !self.0.exists() {
            return;
        }
        cgroup::kill_all(&self.0);
        let end = Instant::now() + Duration::from_secs(5);
        while !cgroup::procs_recursive(&self.0).is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        for _ in 0..50 {
            if cgroup::remove_tree(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The test's own cgroup parent under the cgroup v2 hierarchy.
fn test_cgroup_parent(tag: &str) -> (Hierarchy, CgroupGuard) {
    let h = Hierarchy::detect().expect("a cgroup v2 mount");
    let g = CgroupGuard::new(
        &h.mount,
        &format!(
            "abm-test-{tag}-{}-{}",
            std::process::id(),
            nanos() % 1_000_000
        ),
    );
    (h, g)
}

#[derive(Clone, Copy, PartialEq)]
enum Enter {
    PivotRoot,
    Chroot,
}

/// A container: its own mount and pid namespaces, a cgroup, and a root file
/// system in a temporary directory. Its agent runs the shell commands the
/// test sends through a FIFO (/data/ctl) and acknowledges each (/data/ack).
struct Container {
    root: PathBuf,
    child: Option<Child>,
    cgroup: CgroupGuard,
    sent: u32,
    _dir: TempDir,
}

const AGENT: &str = r#"
n=0
while true; do
  cmd=$(cat /data/ctl)
  [ "$cmd" = exit ] && exit 0
  sh -c "$cmd"
  n=$((n+1))
  echo $n > /data/ack.tmp
  mv /data/ack.tmp /data/ack
done
"#;

impl Container {
    fn start(tag: &str, cgroup: CgroupGuard, enter: Enter) -> Container {
        let dir = TempDir::new(&format!("ctr-{tag}"));
        let root = dir.join("root");
        for d in [
            "bin", "lib", "lib64", "usr", "data", "proc", "old", "tmp", "etc",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("data/agent.sh"), AGENT).unwrap();
        let fifo = std::ffi::CString::new(root.join("data/ctl").to_str().unwrap()).unwrap();
        // SAFETY: `fifo` is a NUL-terminated string that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let r = root.display();
        let mut script = format!("set -e\nR={r}\nmount --bind $R $R\n");
        for d in ["bin", "lib", "lib64", "usr"] {
            if Path::new("/").join(d).exists() {
                script.push_str(&format!(
                    "mount --bind /{d} $R/{d}\nmount -o remount,bind,ro $R/{d}\n"
                ));
            }
        }
        match enter {
            Enter::PivotRoot => script.push_str(
                "cd $R\npivot_root . old\nmount -t proc proc /proc\numount -l /old\ncd /\nexec /bin/sh /data/agent.sh\n",
            ),
            Enter::Chroot => script.push_str(
                "mount -t proc proc $R/proc\nexec chroot $R /bin/sh -c 'cd / && exec /bin/sh /data/agent.sh'\n",
            ),
        }
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(cgroup.0.join("cgroup.procs"))
            .unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&procs);
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "-p", "-f", "--mount-proc", "sh", "-c", &script])
            .stdin(Stdio::null());
        // SAFETY: one write(2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || cgroup::join_cgroup(fd));
        }
        let child = cmd.spawn().expect("unshare");
        drop(procs);
        let c = Container {
            root,
            child: Some(child),
            cgroup,
            sent: 0,
            _dir: dir,
        };
        // Ready when the agent waits on the FIFO inside its new root.
        let agent_ready = || {
            cgroup::procs(&c.cgroup.0).iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|s| s == "cat\0/data/ctl\0")
            })
        };
        wait_for(
            "the container's agent",
            Duration::from_secs(10),
            agent_ready,
        );
        c
    }

    fn data(&self, p: &str) -> PathBuf {
        self.root.join("data").join(p)
    }

    /// Host path of a path inside the container.
    fn host(&self, p: &str) -> String {
        format!("{}{p}", self.root.display())
    }

    /// Runs a shell command in the container and waits until it is done.
    fn run(&mut self, cmd: &str) {
        self.send(cmd);
        self.sent += 1;
        let want = self.sent.to_string();
        let ack = self.data("ack");
        wait_for(
            &format!("container command {cmd:?}"),
            Duration::from_secs(10),
            || std::fs::read_to_string(&ack).is_ok_and(|s| s.trim() == want),
        );
    }

    fn send(&self, cmd: &str) {
        let ctl = self.data("ctl");
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&ctl)
            {
                Ok(mut f) => {
                    f.write_all(cmd.as_bytes()).unwrap();
                    return;
                }
                Err(e) if Instant::now() < end => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("container agent not listening: {e}"),
            }
        }
    }

    /// Lets the agent exit and waits for the container to end.
    fn stop(&mut self) {
        self.send("exit");
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
        wait_for("an empty container cgroup", Duration::from_secs(5), || {
            cgroup::procs_recursive(&self.cgroup.0).is_empty()
        });
    }

    fn cgroup_id(&self) -> u64 {
        cgroup::cgroup_id(&self.cgroup.0).unwrap()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        cgroup::kill_all(&self.cgroup.0);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A running `abm daemon`, killed on drop if the test did not stop it.
fn verify(trace: &str) {
    let o = Command::new(ABM).args(["verify", trace]).output().unwrap();
    assert!(
        o.status.success(),
        "abm verify {trace}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn records(trace: &str) -> Vec<Value> {
    common::read_records(Path::new(trace))
}

fn events(trace: &str) -> Vec<Value> {
    records(trace)
        .into_iter()
        .filter(|r| r["type"] == "event")
        .collect()
}

/// Records of a trace whose writer was killed: a torn last line is skipped
/// (`abm verify` reports it as an unsealed tail).
fn records_lenient(trace: &Path) -> Vec<Value> {
    // `abm trace cat` prints the complete records of either trace form.
    let out = Command::new(ABM)
        .args(["trace", "cat"])
        .arg(trace)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn find<'a>(evs: &'a [Value], op: &str, path: &str) -> Option<&'a Value> {
    evs.iter().find(|e| e["op"] == op && e["path"] == path)
}

fn show(evs: &[Value]) -> String {
    evs.iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["op"], e["path"], e["container_path"], e["target"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn container_id() -> String {
    let seed = format!("{:032x}{:08x}", nanos(), std::process::id());
    format!("{seed:0<64}").chars().take(64).collect()
}

#[test]
fn daemon_attributes_two_containers_and_ignores_a_third() {
    require_kernel!();
    let dir = TempDir::new("daemon-two");
    let (h, parent) = test_cgroup_parent("two");
    let cid = container_id();
    let mut a = Container::start("a", CgroupGuard::new(&parent.0, "a"), Enter::PivotRoot);
    let mut b = Container::start(
        "b",
        CgroupGuard::new(&parent.0, &format!("docker-{cid}.scope")),
        Enter::Chroot,
    );
    let mut c = Container::start("c", CgroupGuard::new(&parent.0, "c"), Enter::PivotRoot);
    let a_rel = a
        .cgroup
        .0
        .strip_prefix(&h.mount)
        .unwrap()
        .display()
        .to_string();
    let mut d = Daemon::start(
        &dir,
        &config(
            &dir,
            &format!(
                "[[target]]\nname = \"agent-a\"\ncgroup = \"{a_rel}\"\n\n[[target]]\nname = \"agent-b\"\ncontainer = \"{}\"\n",
                &cid[..16]
            ),
        ),
    );
    let st = d.status();
    let targets = st["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2, "{st:#}");
    for t in targets {
        assert_eq!(t["state"], "active", "{st:#}");
    }
    assert_eq!(d.target("agent-a")["cgroup_id"], a.cgroup_id());
    assert_eq!(d.target("agent-b")["cgroup_id"], b.cgroup_id());

    // The control socket is root's alone.
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    let nobody = Command::new(ABM)
        .args(["status", "--socket"])
        .arg(&d.socket)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(
        !nobody.status.success(),
        "a non-root user reached the socket"
    );

    // A live subscriber sees events with their target.
    let mut tail = Command::new(ABM)
        .args(["tail", "--socket"])
        .arg(&d.socket)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let tail_out = BufReader::new(tail.stdout.take().unwrap());
    wait_for("the tail subscriber", Duration::from_secs(5), || {
        d.status()["daemon"]["subscribers"] == 1
    });

    for ctr in [&mut a, &mut b, &mut c] {
        std::fs::write(ctr.data("victim"), "x").unwrap();
        std::fs::write(ctr.data("old"), "x").unwrap();
        ctr.run(
            "rm /data/victim; mv /data/old /data/new; chmod 600 /data/new; echo hi > /data/out",
        );
    }
    // A grandchild of the container's shell.
    std::fs::write(a.data("late"), "x").unwrap();
    a.run("sh -c 'rm /data/late'");

    let mut seen = Vec::new();
    let mut lines = tail_out.lines();
    wait_for(
        "tail lines of both targets",
        Duration::from_secs(10),
        || {
            if let Some(Ok(l)) = lines.next() {
                let v: Value = serde_json::from_str(&l).unwrap();
                if v["type"] == "event" && v["op"] == "unlink" {
                    seen.push(v["target"].as_str().unwrap_or("").to_owned());
                }
            }
            seen.iter().any(|t| t == "agent-a") && seen.iter().any(|t| t == "agent-b")
        },
    );
    let _ = tail.kill();
    let _ = tail.wait();

    let st = d.status();
    assert!(st["targets"][0]["events"].as_u64().unwrap() > 0, "{st:#}");
    let status_text = String::from_utf8_lossy(&d.abm(&["status"]).stdout).into_owned();
    assert!(
        status_text.contains("agent-a") && status_text.contains("active"),
        "{status_text}"
    );

    assert_eq!(d.stop(), 0, "daemon exit; log:\n{}", d.log_text());
    let ta = d_trace(&st, "agent-a");
    let tb = d_trace(&st, "agent-b");
    assert_ne!(ta, tb);
    verify(&ta);
    verify(&tb);
    // Each trace file has its anchor in the anchor directory, named in its
    // header; it pins that trace and rejects the other.
    let anchor_of = |trace: &str| {
        let a = records(trace)[0]["extra"]["anchor"]
            .as_str()
            .unwrap_or_else(|| panic!("{trace}: no anchor in the header"))
            .to_owned();
        let name = Path::new(trace)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(a, format!("{}/{name}.anchor", dir.s("anchors")));
        a
    };
    let (aa, ab) = (anchor_of(&ta), anchor_of(&tb));
    let verify_anchor = |trace: &str, anchor: &str| {
        let o = Command::new(ABM)
            .args(["verify", trace, "--anchor", anchor])
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    for (t, a) in [(&ta, &aa), (&tb, &ab)] {
        let (code, out) = verify_anchor(t, a);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("anchor: matches: the seal"), "{out}");
    }
    let (code, out) = verify_anchor(&tb, &aa);
    assert_eq!(
        code,
        Some(1),
        "another target's anchor must reject the trace: {out}"
    );
    assert!(out.contains("REJECTED"), "{out}");

    for (trace, name, ctr, other, third) in
        [(&ta, "agent-a", &a, &b, &c), (&tb, "agent-b", &b, &a, &c)]
    {
        let recs = records(trace);
        assert_eq!(recs[0]["type"], "header");
        assert_eq!(recs[0]["extra"]["target"], name);
        assert_eq!(recs[0]["command"], serde_json::json!([]));
        assert_eq!(recs.last().unwrap()["type"], "seal");
        let evs = events(trace);
        assert!(
            evs.iter().all(|e| e["target"] == name),
            "{name}: foreign target\n{}",
            show(&evs)
        );
        let unlink = find(&evs, "unlink", &ctr.host("/data/victim")).unwrap_or_else(|| {
            panic!(
                "{name}: no unlink of {}\n{}",
                ctr.host("/data/victim"),
                show(&evs)
            )
        });
        assert_eq!(unlink["container_path"], "/data/victim", "{unlink:#}");
        assert_eq!(unlink["result"], 0);
        let mv = find(&evs, "rename", &ctr.host("/data/old"))
            .unwrap_or_else(|| panic!("{name}: no rename\n{}", show(&evs)));
        assert_eq!(mv["path2"], ctr.host("/data/new"));
        assert_eq!(mv["container_path2"], "/data/new");
        let chmod = find(&evs, "chmod", &ctr.host("/data/new")).expect("chmod");
        assert_eq!(chmod["container_path"], "/data/new");
        assert_eq!(chmod["mode"], 0o600);
        let out = find(&evs, "truncate", &ctr.host("/data/out")).expect("write with O_TRUNC");
        assert_eq!(out["container_path"], "/data/out");
        assert!(
            evs.iter()
                .any(|e| e["op"] == "exec" && e["argv"][0] == "rm"),
            "{name}: no exec of rm"
        );
        let other_root = other.root.display().to_string();
        let third_root = third.root.display().to_string();
        for e in &evs {
            let p = e["path"].as_str().unwrap_or("");
            assert!(
                !p.starts_with(&other_root),
                "{name} has the other container's {p}"
            );
            assert!(
                !p.starts_with(&third_root),
                "{name} has the unwatched container's {p}"
            );
        }
    }
    let evs_a = events(&ta);
    assert!(
        find(&evs_a, "unlink", &a.host("/data/late")).is_some(),
        "late process\n{}",
        show(&evs_a)
    );
    // The pivot_root container's own exec of /bin/rm is reported from its root.
    let rm = evs_a
        .iter()
        .find(|e| e["op"] == "exec" && e["result"] == 0 && e["argv"][0] == "rm")
        .unwrap_or_else(|| panic!("no exec of rm\n{}", show(&evs_a)));
    let cp = rm["container_path"].as_str().unwrap_or("");
    assert!(cp == "/usr/bin/rm" || cp == "/bin/rm", "{rm:#}");

    a.stop();
    b.stop();
    c.stop();
}

fn d_trace(status: &Value, name: &str) -> String {
    status["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .and_then(|t| t["trace"].as_str())
        .unwrap_or_else(|| panic!("no trace for {name}: {status:#}"))
        .to_owned()
}

const POLICY_V1: &str = r#"
version = 1

[[rule]]
id = "test.first"
reason = "first policy"
ops = ["unlink"]
paths = ["/data/victim*"]
treatment = "audit"
"#;

const POLICY_V2: &str = r#"
version = 1

[[rule]]
id = "test.second"
reason = "second policy"
ops = ["unlink"]
paths = ["/data/victim*"]
treatment = "confirm"
"#;

fn unlink_rule(trace: &str, container_path: &str) -> String {
    let evs = events(trace);
    let e = evs
        .iter()
        .find(|e| e["op"] == "unlink" && e["container_path"] == container_path)
        .unwrap_or_else(|| panic!("no unlink of {container_path}\n{}", show(&evs)));
    e["verdict"]["rule"].as_str().unwrap_or("").to_owned()
}

#[test]
fn daemon_keeps_its_policy_when_a_reload_is_broken() {
    require_kernel!();
    let dir = TempDir::new("daemon-reload");
    let (_h, parent) = test_cgroup_parent("reload");
    let mut a = Container::start("r", CgroupGuard::new(&parent.0, "a"), Enter::PivotRoot);
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, POLICY_V1).unwrap();
    let mut d = Daemon::start(
        &dir,
        &config(
            &dir,
            &format!(
                "policy = [\"{}\"]\n[[target]]\nname = \"a\"\ncgroup = \"{}\"\n",
                policy.display(),
                a.cgroup.0.display()
            ),
        ),
    );
    let digest1 = d.status()["daemon"]["policy"]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 1..=3 {
        std::fs::write(a.data(&format!("victim{i}")), "x").unwrap();
    }
    a.run("rm /data/victim1");

    // A broken policy: rejected with file:line:col, the old one stays.
    std::fs::write(
        &policy,
        "version = 1\n\n[[rule]]\nid = \"broken\"\nops = [\"unlink\"\n",
    )
    .unwrap();
    d.signal(libc::SIGHUP);
    let where_ = format!("{}:", policy.display());
    wait_for(
        "the reload error in the log",
        Duration::from_secs(10),
        || d.log_text().contains("policy reload failed"),
    );
    let log = d.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("policy reload failed"))
        .unwrap();
    assert!(line.contains(&where_), "no file in {line}");
    let after = &line[line.find(&where_).unwrap() + where_.len()..];
    let mut nums = after.split(':').take(2).map(|s| s.trim().parse::<u32>());
    assert!(
        nums.next().is_some_and(|n| n.is_ok()) && nums.next().is_some_and(|n| n.is_ok()),
        "no line:col in {line}"
    );
    let st = d.status();
    assert_eq!(st["daemon"]["policy"]["digest"], digest1.as_str());
    assert!(
        st["daemon"]["policy"]["last_reload_error"]
            .as_str()
            .is_some_and(|e| e.contains(&where_)),
        "{st:#}"
    );
    assert_eq!(d.target("a")["state"], "active");
    a.run("rm /data/victim2");

    // A good policy again: the next actions use it.
    std::fs::write(&policy, POLICY_V2).unwrap();
    d.signal(libc::SIGHUP);
    wait_for("the new policy", Duration::from_secs(10), || {
        d.status()["daemon"]["policy"]["digest"] != digest1.as_str()
    });
    assert!(d.status()["daemon"]["policy"]["last_reload_error"].is_null());
    a.run("rm /data/victim3");

    let st = d.status();
    assert_eq!(d.stop(), 0);
    let trace = d_trace(&st, "a");
    verify(&trace);
    assert_eq!(unlink_rule(&trace, "/data/victim1"), "test.first");
    assert_eq!(unlink_rule(&trace, "/data/victim2"), "test.first");
    assert_eq!(unlink_rule(&trace, "/data/victim3"), "test.second");
    let notes: Vec<Value> = records(&trace)
        .into_iter()
        .filter(|r| r["type"] == "note" && r["kind"] == "policy_reloaded")
        .collect();
    assert_eq!(notes.len(), 1, "one successful reload is noted");
    a.stop();
}

#[test]
fn daemon_watch_add_remove_and_a_removed_cgroup_seals_the_trace() {
    require_kernel!();
    let dir = TempDir::new("daemon-watch");
    let (_h, parent) = test_cgroup_parent("watch");
    let mut a = Container::start("w", CgroupGuard::new(&parent.0, "a"), Enter::PivotRoot);
    let mut d = Daemon::start(&dir, &config(&dir, ""));
    assert_eq!(d.status()["targets"], serde_json::json!([]));
    let cg = a.cgroup.0.display().to_string();

    let add = d.abm(&["watch", "add", "w", "--cgroup", &cg]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let dup = d.abm(&["watch", "add", "w", "--cgroup", &cg]);
    assert!(!dup.status.success(), "a second target with the same name");
    std::fs::write(a.data("one"), "x").unwrap();
    a.run("rm /data/one");
    let first = d.target("w")["trace"].as_str().unwrap().to_owned();
    let rm = d.abm(&["watch", "remove", "w"]);
    assert!(
        rm.status.success(),
        "{}",
        String::from_utf8_lossy(&rm.stderr)
    );
    assert_eq!(d.target("w")["state"], "removed");
    verify(&first);
    assert!(find(&events(&first), "unlink", &a.host("/data/one")).is_some());

    // Not watched any more: nothing is recorded.
    std::fs::write(a.data("two"), "x").unwrap();
    a.run("rm /data/two");

    // Again, into a new trace; then the container ends and its cgroup goes.
    let add = d.abm(&["watch", "add", "w", "--cgroup", &cg]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let second = d.target("w")["trace"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    std::fs::write(a.data("three"), "x").unwrap();
    a.run("rm /data/three");
    a.stop();
    std::fs::remove_dir(&a.cgroup.0).unwrap();
    wait_for(
        "the target to be reported gone",
        Duration::from_secs(10),
        || d.target("w")["state"] == "gone",
    );
    assert_eq!(d.target("w")["reason"], "cgroup removed");
    verify(&second);
    let evs = events(&second);
    assert!(
        find(&evs, "unlink", &a.host("/data/three")).is_some(),
        "{}",
        show(&evs)
    );
    assert!(find(&evs, "unlink", &a.host("/data/two")).is_none());
    assert!(find(&events(&first), "unlink", &a.host("/data/two")).is_none());
    let recs = records(&second);
    assert!(recs
        .iter()
        .any(|r| r["type"] == "note" && r["kind"] == "target_gone"));
    assert!(d.log_text().contains("cgroup removed"));
    assert_eq!(d.stop(), 0);
    verify(&second);
}

#[test]
fn daemon_covers_processes_that_join_a_sub_cgroup_later() {
    require_kernel!();
    let dir = TempDir::new("daemon-sub");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("victim"), "x").unwrap();
    std::fs::write(ws.join("ignored"), "x").unwrap();
    let (_h, parent) = test_cgroup_parent("sub");
    let watched = CgroupGuard::new(&parent.0, "watched");
    let inner = CgroupGuard::new(&watched.0, "inner");
    let mut d = Daemon::start(
        &dir,
        &config(
            &dir,
            &format!(
                "[[target]]\nname = \"p\"\ncgroup = \"{}\"\n",
                watched.0.display()
            ),
        ),
    );
    // Started outside any watched cgroup, after the daemon: not in scope.
    let mut p = Command::new("sh")
        .arg("-c")
        .arg("rm ignored; while [ ! -e go ]; do sleep 0.02; done; rm victim")
        .current_dir(&ws)
        .spawn()
        .unwrap();
    wait_for("the first rm", Duration::from_secs(5), || {
        !ws.join("ignored").exists()
    });
    // Moved into a sub-cgroup of the watched cgroup: in scope from now on.
    std::fs::write(inner.0.join("cgroup.procs"), p.id().to_string()).unwrap();
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(p.wait().unwrap().success());
    let st = d.status();
    assert_eq!(d.stop(), 0);
    let trace = d_trace(&st, "p");
    verify(&trace);
    let evs = events(&trace);
    let victim = ws.join("victim").display().to_string();
    let e = find(&evs, "unlink", &victim).unwrap_or_else(|| panic!("no unlink\n{}", show(&evs)));
    assert_eq!(e["target"], "p");
    assert_eq!(e["cgroup_id"], cgroup::cgroup_id(&inner.0).unwrap());
    assert!(find(&evs, "unlink", &ws.join("ignored").display().to_string()).is_none());
    drop(inner);
}

fn sha(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn restarting_the_daemon_leaves_existing_traces_intact() {
    require_kernel!();
    let dir = TempDir::new("daemon-restart");
    let (_h, parent) = test_cgroup_parent("restart");
    let mut a = Container::start("s", CgroupGuard::new(&parent.0, "a"), Enter::Chroot);
    let cfg = config(
        &dir,
        &format!(
            "[[target]]\nname = \"s\"\ncgroup = \"{}\"\n",
            a.cgroup.0.display()
        ),
    );
    let mut d = Daemon::start(&dir, &cfg);
    std::fs::write(a.data("one"), "x").unwrap();
    a.run("rm /data/one");
    assert_eq!(d.stop(), 0);
    let traces = || -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("traces"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    };
    let before = traces();
    assert_eq!(before.len(), 1);
    let digest = sha(&before[0]);
    verify(before[0].to_str().unwrap());

    // Restart at once (same second, same config): a new trace file.
    let d = Daemon::start(&dir, &cfg);
    std::fs::write(a.data("two"), "x").unwrap();
    a.run("rm /data/two");
    // A daemon killed without sealing leaves a verifiable, unsealed trace
    // (with what it had written out: wait for the event to reach the file).
    let live = d.target("s")["trace"].as_str().unwrap().to_owned();
    wait_for(
        "the event in the live trace",
        Duration::from_secs(10),
        || {
            records_lenient(Path::new(&live))
                .iter()
                .any(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/data/two")))
        },
    );
    // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
    unsafe { libc::kill(d.pid(), libc::SIGKILL) };
    drop(d);
    let mut d = Daemon::start(&dir, &cfg);
    std::fs::write(a.data("three"), "x").unwrap();
    a.run("rm /data/three");
    assert_eq!(d.stop(), 0);
    let after = traces();
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(sha(&before[0]), digest, "the sealed trace changed");
    let mut sealed = 0;
    for t in &after {
        let recs = records_lenient(t);
        if recs.last().unwrap()["type"] == "seal" {
            sealed += 1;
            verify(t.to_str().unwrap());
        } else {
            // Intact but unsealed: `abm verify` exits 2.
            let o = Command::new(ABM).arg("verify").arg(t).output().unwrap();
            assert_eq!(
                o.status.code(),
                Some(2),
                "{}",
                String::from_utf8_lossy(&o.stdout)
            );
        }
    }
    assert_eq!(sealed, 2);
    let all: Vec<Value> = after
        .iter()
        .flat_map(|t| records_lenient(t))
        .filter(|r| r["type"] == "event")
        .collect();
    for f in ["one", "two", "three"] {
        assert!(
            all.iter()
                .any(|e| e["op"] == "unlink" && e["container_path"] == format!("/data/{f}")),
            "no unlink of {f}\n{}",
            show(&all)
        );
    }
    a.stop();
}

#[test]
fn run_cgroup_covers_a_process_that_joins_its_cgroup() {
    require_kernel!();
    let dir = TempDir::new("run-cgroup");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("victim"), "x").unwrap();
    std::fs::write(ws.join("mine"), "x").unwrap();
    // A process outside abm's tree, waiting for a signal file, then
    // deleting a file: the command moves it into its own cgroup.
    let mut outsider = Command::new("sh")
        .arg("-c")
        .arg("while [ ! -e go ]; do sleep 0.02; done; rm victim")
        .current_dir(&ws)
        .spawn()
        .unwrap();
    let script = format!(
        "cg=$(sed -n 's/^0:://p' /proc/self/cgroup); mnt=$(grep -m1 ' - cgroup2 ' /proc/self/mountinfo | cut -d' ' -f5); \
         echo {} > \"$mnt$cg/cgroup.procs\"; rm mine; touch go; while [ -e victim ]; do sleep 0.02; done",
        outsider.id()
    );
    let run = common::abm_run(&dir, &ws, &["--cgroup"], &["sh", "-c", &script]);
    let _ = outsider.wait();
    assert!(run.output.status.success(), "{}", run.stderr());
    let header = &run.records[0];
    let cg = header["extra"]["cgroup"]
        .as_str()
        .expect("cgroup in the header")
        .to_owned();
    assert!(
        !Path::new(&cg).exists(),
        "the run's cgroup {cg} was not removed"
    );
    let victim = ws.join("victim").display().to_string();
    let mine = ws.join("mine").display().to_string();
    run.one("unlink", &mine);
    let e = run.one("unlink", &victim);
    // `rm` is a child of the outsider, forked after it joined the cgroup.
    assert_eq!(e["ppid"].as_u64().unwrap(), outsider.id() as u64);
    assert_eq!(e["cgroup_id"], header["extra"]["cgroup_id"]);
    verify(run.trace.to_str().unwrap());
}

#[test]
fn deploy_files_are_valid() {
    use yaml_rust2::{Yaml, YamlLoader};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("deploy/kubernetes/daemonset.yaml")).unwrap();
    let docs = YamlLoader::load_from_str(&text).expect("the manifest parses as YAML");
    let kind = |d: &Yaml| d["kind"].as_str().unwrap_or("").to_owned();
    let ds = docs
        .iter()
        .find(|d| kind(d) == "DaemonSet")
        .expect("a DaemonSet");
    assert_eq!(ds["apiVersion"].as_str(), Some("apps/v1"));
    let spec = &ds["spec"];
    let sel = &spec["selector"]["matchLabels"];
    let labels = &spec["template"]["metadata"]["labels"];
    let sel_h = sel.as_hash().expect("spec.selector.matchLabels");
    assert!(!sel_h.is_empty());
    for (k, v) in sel_h {
        assert_eq!(
            &labels[k.as_str().unwrap()],
            v,
            "the pod template carries the selector's labels"
        );
    }
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["hostPID"].as_bool(), Some(true), "hostPID");
    let containers = pod["containers"].as_vec().expect("containers");
    let abm = containers
        .iter()
        .find(|c| {
            c["command"]
                .as_vec()
                .is_some_and(|v| v.iter().any(|a| a.as_str() == Some("daemon")))
        })
        .expect("a container running `abm daemon`");
    assert_eq!(
        abm["securityContext"]["privileged"].as_bool(),
        Some(true),
        "privileged"
    );
    let mounts: Vec<(String, String)> = abm["volumeMounts"]
        .as_vec()
        .expect("volumeMounts")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_owned(),
                m["mountPath"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let volumes = pod["volumes"].as_vec().expect("volumes");
    let host_path_of = |name: &str| {
        volumes
            .iter()
            .find(|v| v["name"].as_str() == Some(name))
            .and_then(|v| v["hostPath"]["path"].as_str())
            .map(str::to_owned)
    };
    for needed in ["/sys/fs/bpf", "/sys/kernel", "/sys/fs/cgroup"] {
        let m = mounts
            .iter()
            .find(|(n, _)| host_path_of(n).as_deref() == Some(needed))
            .unwrap_or_else(|| panic!("no mount of the node's {needed}: {mounts:?}"));
        assert!(m.1.starts_with('/'), "{m:?}");
    }
    // The agent pods' label selector reaches the daemon's config.
    let cm = docs
        .iter()
        .find(|d| kind(d) == "ConfigMap")
        .expect("a ConfigMap");
    let toml_text = cm["data"]["abm.toml"]
        .as_str()
        .expect("abm.toml in the ConfigMap");
    let cfg = monitor::daemon::config::Config::parse(toml_text, "configmap").unwrap();
    let k = cfg.kubernetes.expect("[kubernetes] in the config");
    assert!(k.pod_selector.contains('='), "{}", k.pod_selector);
    assert!(cfg.stdout, "events go to stdout in a cluster");
    let cgroup_root = cfg.cgroup_root.expect("cgroup_root");
    assert!(
        mounts.iter().any(|(_, p)| Path::new(p) == cgroup_root),
        "cgroup_root {cgroup_root:?} is mounted"
    );
    // The sidecar that resolves the selector has the pod list in common.
    let pods_dir = k.pods_file.parent().unwrap().to_path_buf();
    let sidecar = containers
        .iter()
        .find(|c| !std::ptr::eq(*c, abm))
        .expect("the selector sidecar");
    assert!(sidecar["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .any(|m| Path::new(m["mountPath"].as_str().unwrap()) == pods_dir));
    assert!(
        docs.iter().any(|d| kind(d) == "ClusterRole"),
        "RBAC to list pods"
    );

    let unit = std::fs::read_to_string(root.join("deploy/abm.service")).unwrap();
    for needed in [
        "ExecStart=/usr/local/bin/abm daemon --config /etc/abm/abm.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillSignal=SIGTERM",
        "[Install]",
    ] {
        assert!(unit.contains(needed), "abm.service lacks {needed}");
    }
    monitor::daemon::config::Config::load(&root.join("deploy/abm.toml")).unwrap();
}

/// A target's trace that reaches `rotate_bytes` is sealed and continued in
/// a new file naming its seal; `abm verify` checks the files one by one and
/// as a sequence, and a file left out breaks it.
#[test]
fn a_target_trace_rotates_into_a_verified_sequence() {
    require_kernel!();
    let dir = TempDir::new("daemon-rotate");
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut d = Daemon::start(&dir, &config(&dir, "rotate_bytes = 4096\n"));
    let script = "while [ ! -e go ]; do sleep 0.05; done; \
                  for r in 1 2 3; do for i in $(seq 200); do : > f$i; rm f$i; done; sleep 1.2; done";
    let mut child = Command::new("sh")
        .args(["-c", script])
        .current_dir(&ws)
        .spawn()
        .unwrap();
    let add = d.abm(&["watch", "add", "rot", "--pid", &child.id().to_string()]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(child.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(d.stop(), 0, "{}", d.log_text());

    let part = |p: &Path| {
        common::read_records(p)[0]["extra"]["continues"]["part"]
            .as_u64()
            .unwrap_or(0)
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("rot-"))
        .collect();
    files.sort_by_key(|p| part(p));
    assert!(
        files.len() >= 3,
        "3 bursts of 400 calls in 4 KiB files: {files:?}"
    );
    let parts: Vec<u64> = files.iter().map(|p| part(p)).collect();
    assert_eq!(parts, (0..files.len() as u64).collect::<Vec<_>>());
    // Every call is in exactly one file.
    let unlinks: usize = files
        .iter()
        .map(|f| {
            records(&f.to_string_lossy())
                .iter()
                .filter(|r| {
                    r["type"] == "event"
                        && r["op"] == "unlink"
                        && r["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with(&dir.s("ws/f")))
                })
                .count()
        })
        .sum();
    assert_eq!(unlinks, 600, "unlinks over {} files", files.len());

    let verify_all = |fs: &[PathBuf]| {
        let o = Command::new(ABM).arg("verify").args(fs).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, out) = verify_all(&files);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("every link holds"), "{out}");
    // A file left out of the middle breaks the sequence.
    let mut gap = files.clone();
    gap.remove(1);
    let (code, out) = verify_all(&gap);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("a file is missing or out of order"), "{out}");
    // One rotated file alone verifies, and says what it continues.
    let (code, out) = verify_all(&files[1..2]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("part 1 of a rotated trace"), "{out}");
}
