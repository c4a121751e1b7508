//! The red-team suite: attacks a root-owned watched tree can make on abm,
//! its trace and a protected directory, as data (one table, [`attacks`])
//! with one driver. Each attack runs as root inside `abm run` on every
//! backend this machine has (the tracepoint backend in observe mode; the
//! seccomp backend under `--enforce`), and the test asserts the outcome the
//! table names for that backend: blocked, recorded with the right path,
//! recorded with its path flagged as unresolved, detected by `abm verify`,
//! or a documented gap. The table in docs/security.md is generated from
//! the run (between its `attacks` markers), never written by hand.
//!
//! The policy of every run denies any change under `WS/protected`.
mod common;

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
};

use common::{kernel_unavailable, TempDir, ABM};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The effect did not happen.
    Blocked,
    /// It happened and the trace names it with the right path.
    Recorded,
    /// It happened and the trace has it with its path marked unresolved
    /// (`path_issues`) or unknown.
    Flagged,
    /// It happened to the trace, and `abm verify` reports the trace broken.
    Detected,
    /// It happened and the trace names another path without saying so.
    Misattributed,
    /// It happened and nothing in the trace shows it.
    Missed,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Blocked => "blocked",
            Outcome::Recorded => "recorded",
            Outcome::Flagged => "flagged",
            Outcome::Detected => "detected",
            Outcome::Misattributed => "misattributed",
            Outcome::Missed => "missed",
        }
    }
}

use Outcome::*;

/// What happened, as the driver checks it after the run.
#[derive(Clone, Copy)]
enum Effect {
    /// This shell test (run in WS) succeeds.
    Test(&'static str),
    /// The trace is not sealed (abm died).
    Unsealed,
    /// `abm verify` does not report the trace intact.
    TraceBroken,
    /// The script ran tests/truth/race.c on `WS/d` with this operation: a
    /// second thread flipped the path between `d/rNNNN` and `d/fNNNN`.
    /// The outcome is judged per record: every one must name the file the
    /// call acted on, or say in `path_issues` that it cannot vouch for it.
    Race(&'static str),
}

struct Attack {
    name: &'static str,
    /// Shell script run in WS by the watched tree (`$TRACE`: the trace,
    /// `$TDIR`: its directory; `$PPID` of the script is abm).
    script: &'static str,
    effect: Effect,
    /// The record that shows it: (op, field, path relative to WS).
    shows: Option<(&'static str, &'static str, &'static str)>,
    /// Expected outcome: tracepoint observe, seccomp enforce.
    expect: [Outcome; 2],
    /// Why an outcome is a gap, when it is.
    gap: &'static str,
    /// Shell script run in WS before `abm run` starts (after the
    /// protected files are made; `$TRUTH`: a directory with the programs
    /// of tests/truth built).
    setup: &'static str,
}

const BACKENDS: [&str; 2] = ["tracepoint (observe)", "seccomp (--enforce)"];

const PY_PTRACE: &str = r#"python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(16, int(sys.argv[1]), None, None) == 0:
    open("owned", "w").write("attached")
' $PPID"#;

const PY_VM_READ: &str = r#"python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
loc = iov(ctypes.cast(buf, ctypes.c_void_p), 8)
# The start of abm'"'"'s stack mapping.
for l in open("/proc/%s/maps" % sys.argv[1]):
    if "[stack]" in l:
        addr = int(l.split("-")[0], 16)
rem = iov(addr, 8)
libc.process_vm_readv.restype = ctypes.c_ssize_t
if libc.process_vm_readv(int(sys.argv[1]), ctypes.byref(loc), 1, ctypes.byref(rem), 1, 0) == 8:
    open("owned", "w").write("read")
' $PPID"#;

/// Reads 8 bytes of abm's stack through `/proc/<abm pid>/mem`.
const PY_MEM_READ: &str = r#"python3 -c '
import sys
for l in open("/proc/%s/maps" % sys.argv[1]):
    if "[stack]" in l:
        addr = int(l.split("-")[0], 16)
with open("/proc/%s/mem" % sys.argv[1], "rb") as m:
    m.seek(addr)
    if len(m.read(8)) == 8:
        open("owned", "w").write("read")
' $PPID"#;

/// Opens `/proc/<abm pid>/mem` for writing.
const PY_MEM_WRITE: &str = r#"python3 -c '
import os, sys
os.open("/proc/%s/mem" % sys.argv[1], os.O_WRONLY)
open("owned", "w").write("open for writing")
' $PPID"#;

/// SIGKILL through a descriptor of abm's `/proc` directory (a pidfd).
const PY_PIDFD_DIR: &str = r#"python3 -c '
import os, signal, sys
fd = os.open("/proc/%s" % sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
signal.pidfd_send_signal(fd, signal.SIGKILL)
' $PPID; sleep 1"#;

/// Takes BPF links, maps and programs of the host by id (bpf() as root):
/// with one of abm's, a process could detach its programs or rewrite its
/// scope map. Only the descriptors are taken, nothing is detached.
const PY_BPF_BY_ID: &str = r#"python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_long]
def bpf(cmd, attr):
    return libc.syscall(321, cmd, ctypes.addressof(attr), ctypes.sizeof(attr))
got = 0
# (GET_NEXT_ID, GET_FD_BY_ID) for links, maps, programs.
for nxt, get in ((31, 30), (12, 14), (11, 13)):
    a = (ctypes.c_uint32 * 3)()
    while bpf(nxt, a) == 0:
        b = (ctypes.c_uint32 * 3)(a[1], 0, 0)
        if bpf(get, b) >= 0:
            got += 1
        a[0] = a[1]
if got:
    open("owned", "w").write(str(got))
'"#;

const PY_KILL: &str = r#"python3 -c 'import os, sys; os.kill(int(sys.argv[1]), 9)' $PPID; sleep 1"#;

/// openat2(O_WRONLY|O_TRUNC) whose `open_how` sits in a file-backed page
/// this process never touched: unreadable for the tracepoint at entry.
const PY_OPENAT2_COLD: &str = r#"python3 -c '
import ctypes, os, struct
open("how.bin", "wb").write(struct.pack("QQQ", os.O_WRONLY | os.O_TRUNC, 0, 0) + b"\0" * 4072)
f = open("how.bin", "rb")
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
how = libc.mmap(None, 4096, 1, 2, f.fileno(), 0)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(437, -100, b"protected/f", ctypes.c_void_p(how), ctypes.c_size_t(24))
'"#;

const PY_BY_HANDLE: &str = r#"python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class fh(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("h", ctypes.c_ubyte * 128)]
h = fh(); h.bytes = 128
mnt = ctypes.c_int()
if libc.name_to_handle_at(-100, b"protected/f", ctypes.byref(h), ctypes.byref(mnt), 0) == 0:
    mfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_WRONLY | os.O_TRUNC)
'"#;

/// unlink("protected/key") through `int 0x80` (ia32 syscall 10).
const PY_INT80: &str = r#"python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
buf = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # RWX, private, anonymous, 32-bit
path = b"protected/key\0"
ctypes.memmove(buf + 256, path, len(path))
code = b"\x53\xb8\x0a\x00\x00\x00\xbb" + (buf + 256).to_bytes(4, "little") + b"\xcd\x80\x5b\xc3"
ctypes.memmove(buf, code, len(code))
ctypes.CFUNCTYPE(ctypes.c_int)(buf)()
'"#;

const PY_SETCAP: &str = r#"python3 -c '
import os, struct
os.setxattr("protected/f", "security.capability", struct.pack("<IIIII", 0x02000000, 1 << 13, 0, 0, 0))
'"#;

fn attacks() -> Vec<Attack> {
    vec![
        Attack {
            name: "kill -9 abm (the tree's parent)",
            script: "kill -9 $PPID; sleep 1",
            effect: Effect::Unsealed,
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "python os.kill(abm, SIGKILL)",
            script: PY_KILL,
            effect: Effect::Unsealed,
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "ptrace(PTRACE_ATTACH, abm)",
            script: PY_PTRACE,
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "process_vm_readv of abm's memory",
            script: PY_VM_READ,
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "read abm's memory through /proc/<abm pid>/mem",
            script: PY_MEM_READ,
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "open /proc/<abm pid>/mem for writing",
            script: PY_MEM_WRITE,
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "reach abm's descriptors (trace, anchor) through /proc/<abm pid>/fd",
            script: "for f in /proc/$PPID/fd/*; do readlink \"$f\" >/dev/null && touch owned; done; true",
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "pidfd_send_signal(SIGKILL) on a descriptor of /proc/<abm pid>",
            script: PY_PIDFD_DIR,
            effect: Effect::Unsealed,
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "take abm's BPF links and maps by id (bpf() *_GET_FD_BY_ID)",
            script: PY_BPF_BY_ID,
            effect: Effect::Test("test -e owned"),
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "hard link to the trace, then truncate the link",
            script: "ln \"$TRACE\" h && : > h",
            effect: Effect::TraceBroken,
            shows: None,
            expect: [Blocked, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "chattr -a the trace, then truncate it",
            script: "chattr -a \"$TRACE\" && : > \"$TRACE\"",
            effect: Effect::TraceBroken,
            shows: None,
            expect: [Detected, Blocked],
            gap: "observe mode: root may clear the flag (CAP_LINUX_IMMUTABLE); verify then reports the trace broken",
            setup: "",
        },
        Attack {
            name: "truncate the trace through /proc/self/fd/N",
            script: "exec 3<\"$TRACE\"; chattr -a \"$TRACE\"; : > /proc/self/fd/3",
            effect: Effect::TraceBroken,
            shows: None,
            expect: [Detected, Blocked],
            gap: "observe mode: as above",
            setup: "",
        },
        Attack {
            name: "rename the trace's directory",
            script: "mv \"$TDIR\" \"$TDIR.moved\"",
            effect: Effect::Test("test ! -e \"$TDIR\""),
            shows: Some(("rename", "path", "TDIR")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "rm /proc/self/cwd/protected/key",
            script: "rm /proc/self/cwd/protected/key",
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("unlink", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: ": > /proc/self/fd/N (reopen for truncation)",
            script: "exec 3<protected/f; : > /proc/self/fd/3",
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: ": > link (symlink to a protected file)",
            script: "ln -s protected/f link && : > link",
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "chmod 000 link (symlink to a protected file)",
            script: "ln -s protected/f link && chmod 000 link",
            effect: Effect::Test("test \"$(stat -c %a protected/f)\" = 0"),
            shows: Some(("chmod", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "exec rm /proc/$$/cwd/protected/key (own pid)",
            script: "sh -c 'exec rm /proc/$$/cwd/protected/key'",
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("unlink", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "rm /proc/self/fd/N/key (a directory's fd)",
            script: "exec 3<protected; rm /proc/self/fd/3/key",
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("unlink", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "mv /proc/self/cwd/protected/key /proc/self/cwd/stolen",
            script: "mv /proc/self/cwd/protected/key /proc/self/cwd/stolen",
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("rename", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: ": > /dev/fd/N (truncation through /dev/fd)",
            script: "exec 3<protected/f; : > /dev/fd/3",
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "truncate -s 0 link (truncate(2) through a symlink)",
            script: "ln -s protected/f link && truncate -s 0 link",
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "mv protected moved; rm moved/key (rename an ancestor)",
            script: "mv protected moved && rm moved/key",
            effect: Effect::Test("test ! -e protected/key && test ! -e moved/key"),
            shows: Some(("unlink", "path", "moved/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "chattr +i on a protected file",
            script: "chattr +i protected/f",
            effect: Effect::Test("lsattr protected/f | cut -c1-20 | grep -q i"),
            shows: Some(("setflags", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "touch -d 2001-01-01 (timestamp forgery)",
            script: "touch -d 2001-01-01 protected/f",
            effect: Effect::Test("test \"$(stat -c %Y protected/f)\" -lt 1000000000"),
            shows: Some(("utimes", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "setxattr security.capability (file capability)",
            script: PY_SETCAP,
            effect: Effect::Test("getfattr -n security.capability protected/f >/dev/null 2>&1 || python3 -c 'import os; os.getxattr(\"protected/f\", \"security.capability\")'"),
            shows: Some(("xattr", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "ln protected/f (hard link around a path rule)",
            script: "ln protected/f hardlink",
            effect: Effect::Test("test -e hardlink"),
            shows: Some(("link", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "ln -s into a protected directory",
            script: "ln -s /etc/passwd protected/evil",
            effect: Effect::Test("test -L protected/evil"),
            shows: Some(("symlink", "path2", "protected/evil")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "openat2(O_TRUNC) with open_how in an unfaulted page",
            script: PY_OPENAT2_COLD,
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "open_by_handle_at(O_TRUNC)",
            script: PY_BY_HANDLE,
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "protected/f")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "unlink through int 0x80 (32-bit compat syscall)",
            script: PY_INT80,
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("unlink", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: "mv deep elsewhere; rm elsewhere/protected/key (rename a directory above)",
            script: "mv deep elsewhere && rm elsewhere/protected/key",
            effect: Effect::Test(
                "test ! -e deep/protected/key && test ! -e elsewhere/protected/key",
            ),
            shows: Some(("unlink", "path", "elsewhere/protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "mkdir -p deep/protected && echo secret > deep/protected/key",
        },
        Attack {
            name: "a second thread rewrites unlink's path argument during the call",
            script: "\"$TRUTH/race\" \"$PWD/d\" 1000 unlink",
            effect: Effect::Race("unlink"),
            shows: None,
            expect: [Flagged, Flagged],
            gap: "",
            setup: "mkdir d",
        },
        Attack {
            name: "a second thread rewrites chmod's path argument during the call",
            script: "\"$TRUTH/race\" \"$PWD/d\" 300 chmod",
            effect: Effect::Race("chmod"),
            shows: None,
            expect: [Flagged, Flagged],
            gap: "",
            setup: "mkdir d",
        },
        Attack {
            name: "the same against truncate, the named file already empty",
            script: "\"$TRUTH/race\" \"$PWD/d\" 300 truncate noop",
            effect: Effect::Race("truncate"),
            shows: None,
            expect: [Flagged, Flagged],
            gap: "",
            setup: "mkdir d",
        },
        Attack {
            name: "rm alias/key (a bind mount of the protected directory made in the tree)",
            script: "mkdir alias && mount --bind protected alias && rm alias/key",
            effect: Effect::Test("test ! -e protected/key"),
            shows: Some(("unlink", "path", "protected/key")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "",
        },
        Attack {
            name: ": > hardlink (made before the run) of a protected file",
            script: ": > hardlink",
            effect: Effect::Test("test ! -s protected/f"),
            shows: Some(("truncate", "path", "hardlink")),
            expect: [Recorded, Blocked],
            gap: "",
            setup: "ln protected/f hardlink",
        },
    ]
}

const POLICY: &str = r#"
version = 1
[[rule]]
id = "redteam.protected"
reason = "the protected directory"
ops = ["unlink", "rmdir", "rename", "chmod", "chown", "truncate", "write", "link", "symlink", "utimes", "xattr", "setflags", "compat_syscall"]
paths = ["${workspace}/protected", "${workspace}/protected/**", "${workspace}/deep/protected", "${workspace}/deep/protected/**"]
treatment = "deny"
"#;

struct Row {
    attack: usize,
    backend: usize,
    outcome: Outcome,
    detail: String,
}

fn shell(script: &str, ws: &Path, trace: &Path) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(ws)
        .env("TRACE", trace)
        .env("TDIR", trace.parent().unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run_one(i: usize, a: &Attack, backend: usize) -> Row {
    let t = TempDir::new(&format!("adv{i}-{backend}"));
    let ws = TempDir::new(&format!("adv{i}-{backend}-ws"));
    let tdir = t.join("traces");
    std::fs::create_dir(&tdir).unwrap();
    let trace = tdir.join("run.jsonl");
    common::sh(
        "mkdir protected && echo secret > protected/key && echo data > protected/f",
        ws.path(),
    );
    if !a.setup.is_empty() {
        common::sh(a.setup, ws.path());
    }
    let policy = t.join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let mut cmd = Command::new(ABM);
    cmd.arg("run")
        .arg("--quiet")
        .args(["--linger", "0"])
        .arg("--trace")
        .arg(&trace)
        .arg("--workspace")
        .arg(ws.path())
        .arg("--policy")
        .arg(&policy);
    if backend == 1 {
        cmd.args(["--enforce", "--enforce-backend", "seccomp", "--no-prompt"])
            .arg("--quarantine")
            .arg(t.join("q"))
            .arg("--control-socket")
            .arg(t.join("ctl.sock"));
    }
    // abm's own working directory is not the workspace: `/proc/self`
    // resolved in abm's process would name the wrong directory.
    let script = format!("cd '{}' && {}", ws.path().display(), a.script);
    let out = cmd
        .arg("--")
        .args(["sh", "-c", &script])
        .env("TRACE", &trace)
        .env("TDIR", &tdir)
        .env("TRUTH", truth_programs())
        .current_dir(t.path())
        .stdin(Stdio::null())
        .output()
        .expect("run abm");
    // The trace may have been moved by the attack.
    let moved = t.join("traces.moved/run.jsonl");
    let trace_now = if trace.exists() { trace.clone() } else { moved };
    let _ = Command::new("chattr").arg("-a").arg(&trace_now).output();
    let records = read_records_lenient(&trace_now);
    let happened = match a.effect {
        Effect::Test(test) => shell(test, ws.path(), &trace),
        Effect::Unsealed => records.last().is_none_or(|r| r["type"] != "seal"),
        Effect::Race(_) => true,
        Effect::TraceBroken => {
            let v = Command::new(ABM)
                .arg("verify")
                .arg(&trace_now)
                .output()
                .unwrap();
            !String::from_utf8_lossy(&v.stdout).contains("INTACT")
        }
    };
    unmount_under(ws.path());
    let ws_s = ws.path().to_string_lossy().into_owned();
    let events: Vec<&Value> = records.iter().filter(|r| r["type"] == "event").collect();
    let (outcome, detail) = if let Effect::Race(op) = a.effect {
        race_outcome(op, &events, &ws.join("d"))
    } else if !happened {
        (Blocked, String::new())
    } else if matches!(a.effect, Effect::TraceBroken) {
        (Detected, "abm verify: not intact".into())
    } else if let Some((op, field, rel)) = a.shows {
        let want = match rel {
            "TDIR" => tdir.to_string_lossy().into_owned(),
            "" => String::new(),
            r => format!("{ws_s}/{r}"),
        };
        let same_op: Vec<&&Value> = events.iter().filter(|e| e["op"] == op).collect();
        let right = same_op
            .iter()
            .find(|e| !want.is_empty() && e[field].as_str() == Some(want.as_str()));
        let flagged = same_op
            .iter()
            .find(|e| e["path_issues"].as_array().is_some_and(|v| !v.is_empty()));
        match (right, flagged) {
            (Some(e), _) => match identity_mismatch(e, Path::new(&want)) {
                None => (Recorded, format!("{} {}", e["syscall"], e[field])),
                Some(why) => (Misattributed, why),
            },
            (None, Some(e)) => (
                Flagged,
                format!("{} {} {}", e["syscall"], e[field], e["path_issues"]),
            ),
            (None, None) if !same_op.is_empty() => (
                Misattributed,
                format!("{} {}", same_op[0]["syscall"], same_op[0][field]),
            ),
            _ => (Missed, missed_detail(&records)),
        }
    } else {
        (Missed, missed_detail(&records))
    };
    let _ = out;
    Row {
        attack: i,
        backend,
        outcome,
        detail,
    }
}

/// The programs of tests/truth, built once for the whole suite into the
/// build's own scratch directory (a static is never dropped, so a
/// temporary directory would be left behind).
fn truth_programs() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adv-truth");
        std::fs::create_dir_all(&d).unwrap();
        common::race::build_c("race", &d, &["-pthread"]);
        d
    })
}

/// Lazily unmounts what an attack mounted inside the workspace.
fn unmount_under(ws: &Path) {
    let prefix = format!("{}/", ws.display());
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<&str> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Command::new("umount").arg("-l").arg(p).status();
    }
}

/// The outcome of a path-argument race (tests/truth/race.c on `dir`):
/// `misattributed` when a record names a file the call did not act on
/// without a flag, `flagged` when every such record says so, `recorded`
/// when the race never made the kernel see the other name.
fn race_outcome(op: &str, events: &[&Value], dir: &Path) -> (Outcome, String) {
    let (t, other) = if op == "unlink" {
        // A successful unlink can only have removed an rNNNN: a record
        // naming an fNNNN is the other name.
        let t = common::race::tally_race(events, dir);
        let other = t.wrong_flagged + t.wrong_unflagged;
        (t, other)
    } else {
        let n = std::fs::read_dir(dir).map_or(0, |d| d.count()) / 2;
        common::race::tally_attr_race(events, dir, op, n)
    };
    let detail = format!(
        "{} records: {} confirmed, {} flagged ({} naming a file not acted on), {} wrong and unflagged; {other} calls saw the other name",
        t.total, t.confirmed, t.flagged, t.wrong_flagged, t.wrong_unflagged
    );
    let outcome = if t.wrong_unflagged > 0 {
        Misattributed
    } else if t.wrong_flagged > 0 || t.flagged > 0 {
        Flagged
    } else {
        Recorded
    };
    (outcome, detail)
}

/// Why the identity of a record naming `path` is wrong: a successful open
/// must carry the file's (`dev`, `ino`); any identity given must be the
/// file's as `stat` reports it (when the file is still there).
fn identity_mismatch(e: &Value, path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let syscall = e["syscall"].as_str().unwrap_or("");
    let opened = (syscall.starts_with("open") || syscall == "creat")
        && e["result"].as_i64().is_some_and(|r| r >= 0);
    match (e["dev"].as_u64(), e["ino"].as_u64()) {
        (Some(dev), Some(ino)) => {
            let m = std::fs::metadata(path).ok()?;
            ((m.dev(), m.ino()) != (dev, ino)).then(|| {
                format!(
                    "{syscall}: identity ({dev}, {ino}) is not {}'s ({}, {})",
                    path.display(),
                    m.dev(),
                    m.ino()
                )
            })
        }
        _ if opened => Some(format!("{syscall}: no dev/ino for the opened file")),
        _ => None,
    }
}

/// Trace lines as JSON, skipping what a destroyed trace leaves (NUL runs).
/// What a trace that missed an attack holds: its events by operation and
/// its loss records, so that a miss can be told from a recorded loss.
fn missed_detail(records: &[Value]) -> String {
    let mut ops = std::collections::BTreeMap::<String, usize>::new();
    for r in records.iter().filter(|r| r["type"] == "event") {
        *ops.entry(r["op"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let losses: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "loss")
        .map(|r| r.to_string())
        .collect();
    let sealed = records.last().is_some_and(|r| r["type"] == "seal");
    format!(
        "{} records, events by op {ops:?}, losses {losses:?}, sealed {sealed}",
        records.len()
    )
}

fn read_records_lenient(trace: &Path) -> Vec<Value> {
    let bytes = std::fs::read(trace).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str(l.trim_matches('\0')).ok())
        .collect()
}

fn render(attacks: &[Attack], rows: &[Row], kernel: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Generated by `monitor/tests/adversarial.rs` on kernel {kernel}; every attack runs as root inside `abm run`.\n"
    );
    let _ = writeln!(
        s,
        "| attack | {} | {} | BPF LSM (VMs) |\n| --- | --- | --- | --- |",
        BACKENDS[0], BACKENDS[1]
    );
    for (i, a) in attacks.iter().enumerate() {
        let cell = |b: usize| {
            rows.iter()
                .find(|r| r.attack == i && r.backend == b)
                .map_or("not run", |r| r.outcome.name())
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | see the next table |",
            a.name,
            cell(0),
            cell(1)
        );
    }
    let count = |b: usize| {
        let mut c = std::collections::BTreeMap::new();
        for r in rows.iter().filter(|r| r.backend == b) {
            *c.entry(r.outcome.name()).or_insert(0) += 1;
        }
        c.iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (c0, c1) = (count(0), count(1));
    let _ = writeln!(s, "\nTotals: {}: {c0}; {}: {c1}.", BACKENDS[0], BACKENDS[1]);
    let gaps: Vec<&Attack> = attacks.iter().filter(|a| !a.gap.is_empty()).collect();
    if !gaps.is_empty() {
        let _ = writeln!(s, "\nGaps, with their cause:\n");
        for a in gaps {
            let _ = writeln!(s, "- **{}**: {}", a.name, a.gap);
        }
    }
    s
}

#[test]
fn red_team_attacks_as_root() {
    if let Some(why) = kernel_unavailable() {
        common::skip_or_fail("ebpf", &why);
        return;
    }
    let backends: Vec<usize> = if common::seccomp_user_notif() {
        vec![0, 1]
    } else {
        common::skip_or_fail("seccomp", "no seccomp user notification in this kernel");
        vec![0]
    };
    let attacks = attacks();
    let jobs: Vec<(usize, usize)> = (0..attacks.len())
        .flat_map(|i| backends.iter().map(move |b| (i, *b)))
        .collect();
    let next = AtomicUsize::new(0);
    let rows = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(i, b)) = jobs.get(k) else { break };
                let mut row = run_one(i, &attacks[i], b);
                // A miss of an attack whose record the kernel writes at the
                // call is run once more, and the first run's trace is
                // printed: a miss that repeats fails the test; one that
                // does not is reported here for whoever reads the log.
                if row.outcome == Missed && attacks[i].expect[b] != Missed {
                    eprintln!(
                        "adversarial: RETRY {} on {}: the first run missed it: {}",
                        attacks[i].name, BACKENDS[b], row.detail
                    );
                    row = run_one(i, &attacks[i], b);
                }
                eprintln!(
                    "adversarial: {:<22} {:<58} {:<13} {}",
                    BACKENDS[b],
                    attacks[i].name,
                    row.outcome.name(),
                    row.detail
                );
                rows.lock().unwrap().push(row);
            });
        }
    });
    let rows = rows.into_inner().unwrap();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let table = render(&attacks, &rows, kernel.trim());
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/security.md");
    let text = std::fs::read_to_string(&doc).expect("docs/security.md");
    let (begin, end) = ("<!-- attacks:begin -->\n", "<!-- attacks:end -->");
    let (a, b) = (
        text.find(begin)
            .expect("docs/security.md has the attacks:begin marker"),
        text.find(end)
            .expect("docs/security.md has the attacks:end marker"),
    );
    let new = format!("{}{begin}{table}{}", &text[..a], &text[b..]);
    std::fs::write(&doc, new).expect("write docs/security.md");
    let wrong: Vec<String> = rows
        .iter()
        // A `flagged` expectation is met by `recorded` too: userspace
        // resolving `/proc/<tid>/…` after the call wins the race against
        // the caller's exit on some runs, and then names the file exactly.
        .filter(|r| {
            let want = attacks[r.attack].expect[r.backend];
            r.outcome != want && !(want == Flagged && r.outcome == Recorded)
        })
        .map(|r| {
            format!(
                "{} on {}: {} (expected {}) {}",
                attacks[r.attack].name,
                BACKENDS[r.backend],
                r.outcome.name(),
                attacks[r.attack].expect[r.backend].name(),
                r.detail
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(rows.len(), jobs.len(), "every attack ran on every backend");
}

/// The tracepoint backend names the file a call really touched, decided in
/// the kernel at the time of the call, with its identity: `/proc/self`
/// links resolved for the caller, an open's file walked from its new fd,
/// a symlink's target when a call without fd followed it (flagged). Every
/// `dev`/`ino` is checked against `stat` of the real file.
#[test]
fn records_name_the_file_really_touched_with_its_identity() {
    use std::os::unix::fs::MetadataExt;
    if let Some(why) = kernel_unavailable() {
        common::skip_or_fail("ebpf", &why);
        return;
    }
    let t = TempDir::new("ident");
    let ws = TempDir::new("ident-ws");
    common::sh(
        "mkdir d && echo 1 > d/a && echo 2 > d/b && echo 3 > d/c && echo 4 > d/t && echo 5 > d/x && ln -s d/t tl && ln -s d/b bl",
        ws.path(),
    );
    let script = format!(
        "cd '{}' && : > tl && exec 3<d/a && : > /proc/self/fd/3 && rm /proc/self/cwd/d/c \
         && chmod 600 bl && sh -c 'exec mv /proc/$$/cwd/d/b d/b2' && cd d && rm /proc/self/cwd/x \
         && (rm -f /dev/fd/3; true)",
        ws.path().display()
    );
    let st = |p: &str| {
        let m = std::fs::metadata(ws.join(p)).unwrap();
        (m.dev(), m.ino())
    };
    let (t_id, a_id, d_id, c_id) = (st("d/t"), st("d/a"), st("d"), st("d/c"));
    let run = common::abm_run(&t, ws.path(), &["--linger", "0"], &["sh", "-c", &script]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let id = |e: &Value| (e["dev"].as_u64(), e["ino"].as_u64());
    let dir_id = |e: &Value| (e["dir_dev"].as_u64(), e["dir_ino"].as_u64());
    let some = |(d, i): (u64, u64)| (Some(d), Some(i));

    // `: > tl`: the open followed the link; the fd names the target.
    let e = run.one("truncate", &ws.s("d/t"));
    assert_eq!(e["raw_path"], "tl");
    assert_eq!(id(e), some(t_id));
    assert!(e["path_issues"].is_null(), "{e}");
    // `: > /proc/self/fd/3`: the reopened file, not /proc/<tid>/fd/3.
    let e = run
        .find("truncate", &ws.s("d/a"))
        .into_iter()
        .find(|e| e["raw_path"] == "/proc/self/fd/3")
        .expect("truncation through /proc/self/fd/3 recorded as d/a");
    assert_eq!(id(e), some(a_id));
    // `rm /proc/self/cwd/d/c`: the caller's cwd, resolved in the kernel.
    let e = run.one("unlink", &ws.s("d/c"));
    assert_eq!(e["raw_path"], "/proc/self/cwd/d/c");
    assert!(e["path_issues"].is_null(), "{e}");
    // `chmod 600 bl`: no fd; the target read after the call, flagged.
    let e = run.one("chmod", &ws.s("d/b"));
    assert_eq!(e["raw_path"], "bl");
    assert_eq!(
        e["path_issues"],
        serde_json::json!(["symlink_resolved_late"])
    );
    // `exec mv /proc/$$/cwd/d/b d/b2`: its own pid's link.
    let e = run.one("rename", &ws.s("d/b"));
    assert_eq!(e["path2"], ws.s("d/b2"));
    // `cd d && rm /proc/self/cwd/x`: one component below the cwd, whose
    // identity the kernel read at entry.
    let e = run.one("unlink", &ws.s("d/x"));
    assert_eq!(dir_id(e), some(d_id));
    // Two components below the cwd: the kernel's lookup names the object
    // and its directory.
    let e = run.one("unlink", &ws.s("d/c"));
    assert_eq!((id(e), dir_id(e)), (some(c_id), some(d_id)));
    // `rm /dev/fd/3`: unlink does not follow its final component, so it
    // acts on the /proc entry (and fails), never on the fd's file d/a.
    let e = run
        .events()
        .find(|e| e["op"] == "unlink" && e["raw_path"] == "/dev/fd/3")
        .expect("unlink of /dev/fd/3 recorded");
    assert_ne!(e["path"], ws.s("d/a"), "{e}");
    assert!(e["result"].as_i64().is_some_and(|r| r < 0), "{e}");
    assert_eq!(
        e["path_issues"],
        serde_json::json!(["proc_magic_link"]),
        "{e}"
    );
    assert_eq!(id(e), (None, None));
}

/// The kernel looks every path argument up in the dentry cache at syscall
/// entry: deletes, `rmdir`, a rename over an existing file, `chmod`,
/// `truncate` and `link` at any depth carry the identity of the object
/// itself and of its directory, as `stat` reported them before the call.
/// A symlinked directory on the way is followed in the kernel, so the
/// attack "delete through a symlinked directory, then repoint it" is
/// matched by identity; a symlink whose target the kernel does not keep in
/// memory yields no identity and says why, never a wrong one.
#[test]
fn kernel_lookup_gives_the_object_and_its_directory_at_any_depth() {
    use std::os::unix::fs::MetadataExt;
    if let Some(why) = kernel_unavailable() {
        common::skip_or_fail("ebpf", &why);
        return;
    }
    let t = TempDir::new("lookup");
    let ws = TempDir::new("lookup-ws");
    // `L` points at `slow` through a target longer than ext4 and tmpfs keep
    // inline (60 and 128 bytes): the kernel has no target in memory.
    let long = format!("{}slow", "./".repeat(70));
    common::sh(
        &format!(
            "mkdir -p a/b/e real slow other && echo f > a/b/f && echo m > a/b/m && echo t > a/b/t \
             && echo s > src && echo d > dst && echo h > real/hosts && echo o > other/hosts \
             && echo g > slow/g && ln -s real A && ln -s '{long}' L"
        ),
        ws.path(),
    );
    let st = |p: &str| {
        let m = std::fs::symlink_metadata(ws.join(p)).unwrap();
        (Some(m.dev()), Some(m.ino()))
    };
    let before: std::collections::HashMap<&str, (Option<u64>, Option<u64>)> = [
        ".",
        "a",
        "a/b",
        "a/b/f",
        "a/b/e",
        "a/b/m",
        "a/b/t",
        "src",
        "dst",
        "real",
        "real/hosts",
        "other/hosts",
    ]
    .into_iter()
    .map(|p| (p, st(p)))
    .collect();
    let script = format!(
        "cd '{}' && rm a/b/f && rmdir a/b/e && mv src dst && chmod 600 a/b/m \
         && python3 -c 'import os; os.truncate(\"a/b/t\", 0)' && ln a/b/m a/m2 \
         && rm A/hosts && ln -sfn other A && rm L/g",
        ws.path().display()
    );
    let run = common::abm_run(&t, ws.path(), &["--linger", "0"], &["sh", "-c", &script]);
    assert!(run.output.status.success(), "{}", run.stderr());
    let id = |e: &Value| (e["dev"].as_u64(), e["ino"].as_u64());
    let dir_id = |e: &Value| (e["dir_dev"].as_u64(), e["dir_ino"].as_u64());
    let by_raw = |op: &str, raw: &str| -> Vec<Value> {
        run.events()
            .filter(|e| e["op"] == op && e["raw_path"] == raw)
            .cloned()
            .collect()
    };
    let one = |op: &str, raw: &str| -> Value {
        let v = by_raw(op, raw);
        assert!(!v.is_empty(), "no {op} of {raw}");
        v.into_iter()
            .find(|e| e["result"] == 0)
            .unwrap_or_else(|| panic!("no successful {op} of {raw}"))
    };

    let e = one("unlink", "a/b/f");
    assert_eq!(
        (id(&e), dir_id(&e)),
        (before["a/b/f"], before["a/b"]),
        "{e}"
    );
    assert!(e["identity_gap"].is_null(), "{e}");
    let e = one("rmdir", "a/b/e");
    assert_eq!(
        (id(&e), dir_id(&e)),
        (before["a/b/e"], before["a/b"]),
        "{e}"
    );
    // The rename: the source, and the target it replaced, each with its
    // directory.
    let e = one("rename", "src");
    assert_eq!((id(&e), dir_id(&e)), (before["src"], before["."]), "{e}");
    assert_eq!(
        (e["dst_dev"].as_u64(), e["dst_ino"].as_u64()),
        before["dst"],
        "{e}"
    );
    assert_eq!(
        (e["dst_dir_dev"].as_u64(), e["dst_dir_ino"].as_u64()),
        before["."],
        "{e}"
    );
    let e = one("chmod", "a/b/m");
    assert_eq!(
        (id(&e), dir_id(&e)),
        (before["a/b/m"], before["a/b"]),
        "{e}"
    );
    let e = one("truncate", "a/b/t");
    assert_eq!(e["syscall"], "truncate", "{e}");
    assert_eq!(
        (id(&e), dir_id(&e)),
        (before["a/b/t"], before["a/b"]),
        "{e}"
    );
    // link: the object that gains a name, and where the new name goes; no
    // object was at the new name (a name never looked up is not in the
    // dentry cache: the lookup says so rather than claim it absent).
    let e = one("link", "a/b/m");
    assert_eq!(id(&e), before["a/b/m"], "{e}");
    assert_eq!(
        (e["dst_dir_dev"].as_u64(), e["dst_dir_ino"].as_u64()),
        before["a"],
        "{e}"
    );
    assert!(e["dst_ino"].is_null(), "{e}");
    assert!(
        e["dst_identity_gap"].is_null() || e["dst_identity_gap"] == "not_cached",
        "{e}"
    );
    // `rm A/hosts` then `ln -sfn other A`: whatever path is read later,
    // the identity is the file really deleted, in the directory A named
    // at the call.
    let e = one("unlink", "A/hosts");
    assert_eq!(
        (id(&e), dir_id(&e)),
        (before["real/hosts"], before["real"]),
        "{e}"
    );
    assert_ne!(id(&e), before["other/hosts"]);
    if e["path"] != ws.s("real/hosts") {
        assert!(
            e["path_issues"]
                .as_array()
                .is_some_and(|v| v.contains(&"path_changed".into())),
            "a path resolved after A was repointed is flagged: {e}"
        );
    }
    // `rm L/g`: a symlink the kernel cannot follow in memory: no identity,
    // and the record says why.
    let e = by_raw("unlink", "L/g")
        .pop()
        .expect("unlink of L/g recorded");
    assert_eq!((id(&e), dir_id(&e)), ((None, None), (None, None)), "{e}");
    assert_eq!(e["identity_gap"], "symlink", "{e}");
}
