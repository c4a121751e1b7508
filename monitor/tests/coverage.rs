//! Detection coverage suite: which destructive actions of real tools the
//! monitor sees, with which path, on this kernel.
//!
//! Every case is data (see [`cases`]): a setup script run outside the
//! monitor, one action run for real under `abm run`, the events the trace
//! must hold (operation, exact absolute path, result, acting process), a
//! shell check proving the action really happened, and the gaps a backend is
//! known to have. One driver runs the cases with limited parallelism, checks
//! every trace, and writes `docs/coverage.md` from what it observed, so the
//! table can never drift from the truth.
//!
//! A case expected to work fails the test when it regresses. A documented
//! gap does not fail the test, but the observation must match the
//! documentation exactly (a gap that closes fails too, so its entry is
//! updated and the case then guards the fix).
mod common;

use std::{
    ffi::{OsStr, OsString},
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use base64::Engine as _;
use common::{have, kernel_unavailable, TempDir, ABM};
use serde_json::Value;

/// A detection backend the suite drives: its name in the table and gap
/// entries, and the `abm run` options that select it.
struct Backend {
    name: &'static str,
    abm_args: &'static [&'static str],
}

const TRACEPOINT: &str = "tracepoint";

/// The backends the cases run on. Another backend (`lsm`, `seccomp`) adds
/// an entry here and gap entries (`.gap("lsm", ...)`) where it differs; its
/// rows then appear in the same table.
const BACKENDS: &[Backend] = &[Backend {
    name: TRACEPOINT,
    abm_args: &[],
}];
/// Cases run at the same time (the suite shares a small machine).
const WORKERS: usize = 3;
/// Upper bound for one `abm run`; the run is interrupted after it.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Case data
// ---------------------------------------------------------------------------

/// Expected result of the call.
#[derive(Clone, Copy, Debug)]
enum Res {
    /// `result == 0`.
    Zero,
    /// `result >= 0` (opens return an fd).
    NonNeg,
    /// Failed with this errno.
    Errno(&'static str),
}

/// One event the trace must hold. Paths are bytes with placeholders
/// (`{ws}`, `{shm}`, `{long}`, `{deep}`); a trailing `*` matches any rest
/// (temporary names chosen by the tool).
#[derive(Clone, Debug)]
struct Expect {
    op: &'static str,
    path: &'static [u8],
    path2: Option<&'static [u8]>,
    container_path: Option<&'static str>,
    syscall: Option<&'static str>,
    result: Res,
    /// Acting process; a trailing `*` matches any rest (`python3*`).
    comm: &'static str,
}

fn ev(op: &'static str, path: &'static str, comm: &'static str) -> Expect {
    evb(op, path.as_bytes(), comm)
}

fn evb(op: &'static str, path: &'static [u8], comm: &'static str) -> Expect {
    let result = if matches!(op, "write" | "truncate") {
        Res::NonNeg
    } else {
        Res::Zero
    };
    Expect {
        op,
        path,
        path2: None,
        container_path: None,
        syscall: None,
        result,
        comm,
    }
}

impl Expect {
    fn dest(self, path2: &'static str) -> Self {
        self.dest_b(path2.as_bytes())
    }
    fn dest_b(mut self, path2: &'static [u8]) -> Self {
        self.path2 = Some(path2);
        self
    }
    fn sys(mut self, s: &'static str) -> Self {
        self.syscall = Some(s);
        self
    }
    fn res(mut self, r: Res) -> Self {
        self.result = r;
        self
    }
    fn container(mut self, c: &'static str) -> Self {
        self.container_path = Some(c);
        self
    }
}

/// What a case needs besides the monitor.
#[derive(Clone, Copy, Debug)]
enum Need {
    /// A program on PATH.
    Prog(&'static str),
    /// The C helper (tests/coverage/helper.c), built with `cc`.
    Helper,
    /// `/dev/shm` on another file system than the workspace.
    OtherFs,
}

/// A documented gap of one backend: what the suite observes instead of a
/// correct event, and why.
#[derive(Clone, Debug)]
struct Gap {
    backend: &'static str,
    detected: bool,
    path_correct: bool,
    cause: &'static str,
}

/// Extra content checks on the parsed trace events; returns problems.
type Check = fn(&Ctx, &[Value]) -> Vec<String>;

struct Case {
    name: &'static str,
    needs: Vec<Need>,
    /// Shell run in the workspace before the action, outside the monitor.
    setup: &'static str,
    /// Shell run in the workspace under `abm run -- sh -c ACTION`.
    action: &'static str,
    abm_args: Vec<&'static str>,
    /// Exit code of the action.
    exit: i32,
    expect: Vec<Expect>,
    /// Shell run in the workspace after the run; must succeed: proof that
    /// the action really happened.
    after: &'static str,
    check: Option<Check>,
    gaps: Vec<Gap>,
    note: &'static str,
}

fn case(name: &'static str, setup: &'static str, action: &'static str) -> Case {
    Case {
        name,
        needs: Vec::new(),
        setup,
        action,
        abm_args: Vec::new(),
        exit: 0,
        expect: Vec::new(),
        after: "true",
        check: None,
        gaps: Vec::new(),
        note: "",
    }
}

impl Case {
    fn expect(mut self, e: Expect) -> Self {
        self.expect.push(e);
        self
    }
    fn needs(mut self, n: Need) -> Self {
        self.needs.push(n);
        self
    }
    fn prog(self, p: &'static str) -> Self {
        self.needs(Need::Prog(p))
    }
    fn after(mut self, s: &'static str) -> Self {
        self.after = s;
        self
    }
    fn exit(mut self, code: i32) -> Self {
        self.exit = code;
        self
    }
    fn abm(mut self, a: &'static str) -> Self {
        self.abm_args.push(a);
        self
    }
    fn check(mut self, c: Check) -> Self {
        self.check = Some(c);
        self
    }
    fn gap(
        mut self,
        backend: &'static str,
        detected: bool,
        path_correct: bool,
        cause: &'static str,
    ) -> Self {
        self.gaps.push(Gap {
            backend,
            detected,
            path_correct,
            cause,
        });
        self
    }
    fn note(mut self, n: &'static str) -> Self {
        self.note = n;
        self
    }
}

/// Content of the dangling blob `git gc --prune=now` deletes, and its name.
const DANGLING_BLOB: &str = "4b/a8ea6005dd588634e40a8bee8a71243af8625e";

const GIT_REPO: &str =
    "git init -q -b main . && echo 1 > a && echo 1 > b && git add a b && git commit -qm init";

const CHROOT_SETUP: &str = "mkdir -p root/usr root/data && ln -s usr/bin root/bin && ln -s usr/lib root/lib \
                            && ln -s usr/lib64 root/lib64 && ln -s usr/sbin root/sbin && touch root/data/f root/data/g";

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    vec![
        // -- coreutils -------------------------------------------------------
        case("rm FILE", "echo x > victim", "rm victim")
            .expect(ev("unlink", "{ws}/victim", "rm").sys("unlinkat"))
            .after("test ! -e victim"),
        case("rm -r DIR", "mkdir -p tree/sub && touch tree/sub/f tree/g", "rm -r tree")
            .expect(ev("unlink", "{ws}/tree/sub/f", "rm"))
            .expect(ev("unlink", "{ws}/tree/g", "rm"))
            .expect(ev("rmdir", "{ws}/tree/sub", "rm"))
            .expect(ev("rmdir", "{ws}/tree", "rm"))
            .after("test ! -e tree"),
        case("rm of a missing file (ENOENT)", "", "rm missing")
            .exit(1)
            .expect(ev("unlink", "{ws}/missing", "rm").res(Res::Errno("ENOENT")))
            .note("a failed call carries its errno"),
        case("rm with an absolute path", "touch f", "rm {ws}/f")
            .expect(ev("unlink", "{ws}/f", "rm"))
            .after("test ! -e f"),
        case("rmdir", "mkdir empty", "rmdir empty")
            .expect(ev("rmdir", "{ws}/empty", "rmdir"))
            .after("test ! -e empty"),
        case("unlink (coreutils)", "touch f", "unlink f")
            .expect(ev("unlink", "{ws}/f", "unlink").sys("unlink"))
            .after("test ! -e f"),
        case("mv (rename)", "echo x > a", "mv a b")
            .expect(ev("rename", "{ws}/a", "mv").dest("{ws}/b"))
            .after("test ! -e a && test -e b"),
        case("mv across file systems", "echo x > f", "mv f {shm}/f")
            .needs(Need::OtherFs)
            .expect(ev("rename", "{ws}/f", "mv").dest("{shm}/f").res(Res::Errno("EXDEV")))
            .expect(ev("unlink", "{ws}/f", "mv"))
            .after("test ! -e f && test -e {shm}/f")
            .note("rename fails with EXDEV, mv copies then unlinks the source"),
        case("cp --remove-destination", "echo new > src && echo old > dst", "cp --remove-destination src dst")
            .expect(ev("unlink", "{ws}/dst", "cp"))
            .expect(ev("write", "{ws}/dst", "cp"))
            .after("test \"$(cat dst)\" = new"),
        case("install over an existing file", "echo new > src && echo old > dst", "install -m 600 src dst")
            .expect(ev("unlink", "{ws}/dst", "install"))
            .expect(ev("chmod", "{ws}/dst", "install"))
            .after("test \"$(cat dst)\" = new"),
        case("ln -sf over an existing link", "touch t1 t2 && ln -s t1 link", "ln -sf t2 link")
            .expect(ev("rename", "{ws}/*", "ln").dest("{ws}/link"))
            .after("test \"$(readlink link)\" = t2")
            .note("ln makes a temporary link and renames it over the old one"),
        case("shred -u", "echo secret > secret.txt", "shred -u secret.txt")
            .expect(ev("write", "{ws}/secret.txt", "shred"))
            .expect(ev("rename", "{ws}/secret.txt", "shred").dest("{ws}/0000000000"))
            .expect(ev("unlink", "{ws}/0", "shred"))
            .after("test -z \"$(ls)\"")
            .note("overwrite, renames to ever shorter names, unlink of the last name"),
        case("truncate -s 0", "echo data > f", "truncate -s 0 f")
            .expect(ev("truncate", "{ws}/f", "truncate").sys("ftruncate"))
            .after("test ! -s f"),
        case("chmod", "touch f", "chmod 600 f")
            .expect(ev("chmod", "{ws}/f", "chmod"))
            .check(|_, evs| want(evs, "chmod", |e| e["mode"] == 0o600, "mode 0o600"))
            .after("test \"$(stat -c %a f)\" = 600"),
        case("chown", "touch f", "chown 1234:5678 f")
            .expect(ev("chown", "{ws}/f", "chown"))
            .check(|_, evs| want(evs, "chown", |e| e["owner_uid"] == 1234 && e["owner_gid"] == 5678, "owner 1234:5678"))
            .after("test \"$(stat -c %u:%g f)\" = 1234:5678"),
        case("find -delete", "mkdir -p x/y && touch x/y/old.log x/keep.txt", "find x -name '*.log' -delete")
            .expect(ev("unlink", "{ws}/x/y/old.log", "find"))
            .after("test ! -e x/y/old.log && test -e x/keep.txt")
            .note("unlinkat relative to a directory fd"),
        case("rsync --delete", "mkdir -p src dst && touch src/keep dst/stale", "rsync -a --delete src/ dst/")
            .prog("rsync")
            .expect(ev("unlink", "{ws}/dst/stale", "rsync"))
            .after("test ! -e dst/stale && test -e dst/keep"),
        case("tar --remove-files", "mkdir d && echo 1 > d/f", "tar cf out.tar --remove-files d")
            .prog("tar")
            .expect(ev("unlink", "{ws}/d/f", "tar"))
            .expect(ev("rmdir", "{ws}/d", "tar"))
            .after("test ! -e d && test -s out.tar"),
        case("dd of=", "echo old-contents > out", "dd if=/dev/zero of=out bs=1 count=1 2>/dev/null")
            .expect(ev("truncate", "{ws}/out", "dd").sys("openat"))
            .after("test \"$(stat -c %s out)\" = 1")
            .note("open with O_TRUNC"),
        case("shell redirection >", "echo old > f", "echo new > f")
            .expect(ev("truncate", "{ws}/f", "sh"))
            .after("test \"$(cat f)\" = new"),
        case("shell redirection >| (noclobber)", "echo old > f", "bash -c 'set -o noclobber; echo new >| f'")
            .prog("bash")
            .expect(ev("truncate", "{ws}/f", "bash"))
            .after("test \"$(cat f)\" = new"),
        case("shell redirection >> (append)", "echo 1 > log", "echo 2 >> log")
            .expect(ev("write", "{ws}/log", "sh"))
            .after("test \"$(wc -l < log)\" = 2")
            .note("a write open without O_TRUNC is op `write`"),
        case("sed -i", "echo abc > f", "sed -i s/a/X/ f")
            .expect(ev("rename", "{ws}/sed*", "sed").dest("{ws}/f"))
            .after("test \"$(cat f)\" = Xbc")
            .note("a temporary file renamed over the original"),
        // -- git -------------------------------------------------------------
        case("git branch -D", "git init -q -b main . && git commit -q --allow-empty -m init && git branch old", "git branch -D old")
            .prog("git")
            .expect(ev("unlink", "{ws}/.git/refs/heads/old", "git"))
            .after("! git rev-parse -q --verify refs/heads/old"),
        case("git tag -d", "git init -q -b main . && git commit -q --allow-empty -m init && git tag v1", "git tag -d v1")
            .prog("git")
            .expect(ev("unlink", "{ws}/.git/refs/tags/v1", "git"))
            .after("! git rev-parse -q --verify refs/tags/v1"),
        case("git stash drop", "git init -q -b main . && echo 1 > a && git add a && git commit -qm init && echo 2 > a && git stash -q", "git stash drop -q")
            .prog("git")
            .expect(ev("unlink", "{ws}/.git/refs/stash", "git"))
            .after("! git rev-parse -q --verify refs/stash"),
        case("git clean -fdx", "git init -q -b main . && echo junk > untracked.txt && mkdir build && touch build/out.o", "git clean -q -fdx")
            .prog("git")
            .expect(ev("unlink", "{ws}/untracked.txt", "git"))
            .expect(ev("unlink", "{ws}/build/out.o", "git"))
            .expect(ev("rmdir", "{ws}/build", "git"))
            .after("test ! -e untracked.txt && test ! -e build"),
        case("git reset --hard", "GIT_REPO && echo 2 > a", "git reset -q --hard")
            .prog("git")
            .expect(ev("unlink", "{ws}/a", "git"))
            .expect(ev("write", "{ws}/a", "git"))
            .after("test \"$(cat a)\" = 1")
            .note("a modified tracked file is unlinked and written anew"),
        case("git checkout -- FILE", "GIT_REPO && echo 2 > b", "git checkout -- b")
            .prog("git")
            .expect(ev("unlink", "{ws}/b", "git"))
            .after("test \"$(cat b)\" = 1"),
        case("git worktree remove", "GIT_REPO && git worktree add -q wt", "git worktree remove wt")
            .prog("git")
            .expect(ev("unlink", "{ws}/wt/a", "git"))
            .expect(ev("rmdir", "{ws}/wt", "git"))
            .after("test ! -e wt"),
        case("git gc --prune=now", "GIT_REPO && echo dangling | git hash-object -w --stdin >/dev/null", "git gc -q --prune=now")
            .prog("git")
            .expect(ev("unlink", "{ws}/.git/objects/{blob}", "git"))
            .after("test ! -e .git/objects/{blob}")
            .note("a dangling loose object is pruned"),
        // -- build tools -----------------------------------------------------
        case("make clean", "mkdir build && touch build/out.o && printf 'clean:\\n\\trm -rf build\\n' > Makefile", "make -s clean")
            .prog("make")
            .expect(ev("unlink", "{ws}/build/out.o", "rm"))
            .expect(ev("rmdir", "{ws}/build", "rm"))
            .after("test ! -e build"),
        case("cargo clean", "cargo new -q --vcs none hello && cd hello && cargo build -q --offline", "cd hello && cargo clean -q")
            .prog("cargo")
            .expect(ev("unlink", "{ws}/hello/target/debug/hello", "cargo"))
            .expect(ev("rmdir", "{ws}/hello/target", "cargo"))
            .after("test ! -e hello/target")
            .note("a tiny project built before the run"),
        // -- interpreters ----------------------------------------------------
        case("python os.remove", "touch f", "python3 -c 'import os; os.remove(\"f\")'")
            .prog("python3")
            .expect(ev("unlink", "{ws}/f", "python3*"))
            .after("test ! -e f"),
        case("python os.rename", "touch a", "python3 -c 'import os; os.rename(\"a\", \"b\")'")
            .prog("python3")
            .expect(ev("rename", "{ws}/a", "python3*").dest("{ws}/b"))
            .after("test ! -e a && test -e b"),
        case("python shutil.rmtree", "mkdir -p tree/sub && touch tree/sub/g tree/h", "python3 -c 'import shutil; shutil.rmtree(\"tree\")'")
            .prog("python3")
            .expect(ev("unlink", "{ws}/tree/sub/g", "python3*"))
            .expect(ev("unlink", "{ws}/tree/h", "python3*"))
            .expect(ev("rmdir", "{ws}/tree/sub", "python3*"))
            .expect(ev("rmdir", "{ws}/tree", "python3*"))
            .after("test ! -e tree")
            .note("fd-based: unlinkat relative to directory fds"),
        case("python pathlib.Path.unlink", "touch f", "python3 -c 'import pathlib; pathlib.Path(\"f\").unlink()'")
            .prog("python3")
            .expect(ev("unlink", "{ws}/f", "python3*"))
            .after("test ! -e f"),
        case("python os.chmod", "touch f", "python3 -c 'import os; os.chmod(\"f\", 0o600)'")
            .prog("python3")
            .expect(ev("chmod", "{ws}/f", "python3*"))
            .check(|_, evs| want(evs, "chmod", |e| e["mode"] == 0o600, "mode 0o600"))
            .after("test \"$(stat -c %a f)\" = 600"),
        case("python open(..., \"w\")", "echo old > f", "python3 -c 'open(\"f\", \"w\").close()'")
            .prog("python3")
            .expect(ev("truncate", "{ws}/f", "python3*"))
            .after("test ! -s f"),
        case("python os.truncate", "echo old > f", "python3 -c 'import os; os.truncate(\"f\", 0)'")
            .prog("python3")
            .expect(ev("truncate", "{ws}/f", "python3*").sys("truncate"))
            .after("test ! -s f"),
        case("perl unlink", "touch f", "perl -e 'unlink(\"f\") or die'")
            .prog("perl")
            .expect(ev("unlink", "{ws}/f", "perl"))
            .after("test ! -e f"),
        case("node fs.rmSync", "mkdir nd && touch nd/a", "node -e 'require(\"fs\").rmSync(\"nd\", { recursive: true })'")
            .prog("node")
            .expect(ev("unlink", "{ws}/nd/a", "node"))
            .expect(ev("rmdir", "{ws}/nd", "node"))
            .after("test ! -e nd"),
        case("busybox rm", "touch f", "busybox rm f")
            .prog("busybox")
            .expect(ev("unlink", "{ws}/f", "busybox"))
            .after("test ! -e f"),
        // -- syscall shapes --------------------------------------------------
        case("execveat of an fd (AT_EMPTY_PATH)", "mkdir bin && cp /bin/true bin/prog", "{helper} execveat-fd bin/prog prog one")
            .needs(Need::Helper)
            .expect(ev("exec", "{ws}/bin/prog", "covhelper").sys("execveat"))
            .check(|_, evs| want(evs, "exec", |e| e["syscall"] == "execveat"
                && e["argv"] == serde_json::json!(["prog", "one"])
                && has(e, "flag_names", "AT_EMPTY_PATH"), "argv [prog, one] and AT_EMPTY_PATH")),
        case("execveat with a dirfd and a relative name", "mkdir bin && cp /bin/true bin/prog", "{helper} execveat-dirfd bin prog prog two")
            .needs(Need::Helper)
            .expect(ev("exec", "{ws}/bin/prog", "covhelper").sys("execveat"))
            .check(|_, evs| want(evs, "exec", |e| e["syscall"] == "execveat" && e["raw_path"] == "prog"
                && e["argv"] == serde_json::json!(["prog", "two"]), "raw_path prog, argv [prog, two]")),
        case("unlinkat through a dirfd", "mkdir d && touch d/x", "{helper} unlinkat-dirfd d x")
            .needs(Need::Helper)
            .expect(ev("unlink", "{ws}/d/x", "covhelper").sys("unlinkat"))
            .check(|_, evs| want(evs, "unlink", |e| e["raw_path"] == "x" && e["fd"].as_i64().is_some_and(|fd| fd >= 0),
                "raw_path x with a real dirfd"))
            .after("test ! -e d/x"),
        case("renameat2 RENAME_EXCHANGE", "echo A > a && echo B > b", "{helper} rename-exchange a b")
            .needs(Need::Helper)
            .expect(ev("rename", "{ws}/a", "covhelper").dest("{ws}/b").sys("renameat2"))
            .check(|_, evs| want(evs, "rename", |e| has(e, "flag_names", "RENAME_EXCHANGE"), "RENAME_EXCHANGE"))
            .after("test \"$(cat a)\" = B"),
        case("delete through a symlinked directory", "mkdir real && touch real/h && ln -s real link", "rm link/h")
            .expect(ev("unlink", "{ws}/real/h", "rm"))
            .check(|_, evs| want(evs, "unlink", |e| e["raw_path"] == "link/h", "raw_path link/h"))
            .after("test ! -e real/h")
            .note("path is the real location; raw_path keeps the argument"),
        case("delete of a symlink (not its target)", "mkdir real && touch real/f && ln -s real/f link", "rm link")
            .expect(ev("unlink", "{ws}/link", "rm"))
            .after("test ! -L link && test -e real/f"),
        case("path with .. components", "mkdir -p a b && touch b/f", "rm a/../b/f")
            .expect(ev("unlink", "{ws}/b/f", "rm"))
            .after("test ! -e b/f"),
        case("path with .. after a symlinked directory", "mkdir -p real/sub && touch real/f && ln -s real/sub sublink", "rm sublink/../f")
            .expect(ev("unlink", "{ws}/real/f", "rm"))
            .after("test ! -e real/f")
            .note("the kernel resolves `sublink` before `..`; so does the resolver"),
        case("relative path from a changed cwd", "mkdir -p sub && touch f", "cd sub && rm ../f")
            .expect(ev("unlink", "{ws}/f", "rm"))
            .after("test ! -e f"),
        case("file name with a newline and non-UTF-8 bytes", "touch \"$(printf 'odd\\nname\\377\\376.txt')\"", "rm odd*")
            .expect(evb("unlink", b"{ws}/odd\nname\xff\xfe.txt", "rm"))
            .check(check_odd_name)
            .after("test -z \"$(ls)\"")
            .note("exact bytes in `path_b64`; the trace stays valid JSON lines"),
        case("rename to a non-UTF-8 name", "touch plain", "mv plain \"$(printf 'new\\001\\377')\"")
            .expect(ev("rename", "{ws}/plain", "mv").dest_b(b"{ws}/new\x01\xff"))
            .check(|_, evs| want(evs, "rename", |e| e["path2_b64"].is_string(), "path2_b64"))
            .after("test ! -e plain"),
        case("path longer than 1024 bytes (raw argument)", "mkdir -p {long} && touch {long}/f", "rm {long}/f")
            .expect(ev("unlink", "{ws}/{long}/f", "rm"))
            .check(no_path_issues)
            .after("test ! -e {long}/f"),
        case("path longer than 1024 bytes (deep cwd)", "mkdir -p {long} && touch {long}/g", "cd {long} && rm g")
            .expect(ev("unlink", "{ws}/{long}/g", "rm"))
            .check(no_path_issues)
            .after("test ! -e {long}/g"),
        case("cwd 60 directories deep", "mkdir -p {deep60} && touch {deep60}/g", "cd {deep60} && rm g")
            .expect(ev("unlink", "{ws}/{deep60}/g", "rm"))
            .check(no_path_issues)
            .after("test ! -e {deep60}/g"),
        case("cwd deeper than 128 directories", "mkdir -p {deep} && touch {deep}/g", "cd {deep} && rm g")
            .expect(ev("unlink", "{ws}/{deep}/g", "rm"))
            .check(|_, evs| want(evs, "unlink", |e| has(e, "path_issues", "depth_limit"), "path_issues depth_limit"))
            .after("test ! -e {deep}/g")
            .gap(TRACEPOINT, true, false,
                "the kernel walk of the base directory stops after MAX_PATH_DEPTH (128) components; \
                 the event is flagged `depth_limit` and its path lacks the top components"),
        case("absolute path string in a page not yet faulted in", "touch m && printf '%s/m\\0' \"$PWD\" > mpath", "{helper} unlink-mmap mpath")
            .needs(Need::Helper)
            .expect(ev("unlink", "{ws}/m", "covhelper").sys("unlink"))
            .check(|_, evs| want(evs, "unlink", |e| e["comm"] == "covhelper" && e["path_issues"].is_null(), "no path_issues"))
            .after("test ! -e m")
            .note("the path argument lives in an untouched file mapping, unreadable at syscall entry; \
                   it is read again at exit"),
        case("relative path string in a page not yet faulted in", "touch m && printf 'm\\0' > mpath", "{helper} unlink-mmap mpath")
            .needs(Need::Helper)
            .expect(ev("unlink", "{ws}/m", "covhelper").sys("unlink"))
            .check(|_, evs| want(evs, "unlink", |e| e["comm"] == "covhelper" && e["raw_path"] == "m"
                && e["path_issues"].is_null(), "raw_path m, no path_issues"))
            .after("test ! -e m"),
        // -- process tree and namespaces -----------------------------------
        case("delete by a double-forked daemon's grandchild", "touch victim", "(setsid sh -c 'sleep 0.5; rm victim' &) ; exit 0")
            .abm("--linger")
            .abm("5")
            .expect(ev("unlink", "{ws}/victim", "rm"))
            .after("test ! -e victim")
            .note("`abm run --linger 5`; the command exits first"),
        case("delete in a mount namespace with another root", CHROOT_SETUP,
             "unshare -m --propagation private sh -c 'mount --bind /usr root/usr && mount -o remount,bind,ro root/usr \
              && chroot root rm /data/f && chroot root sh -c \"cd /data && rm g\"'")
            .prog("unshare")
            .prog("chroot")
            .prog("mount")
            .expect(ev("unlink", "{ws}/root/data/f", "rm").container("/data/f"))
            .expect(ev("unlink", "{ws}/root/data/g", "rm").container("/data/g"))
            .after("test ! -e root/data/f && test ! -e root/data/g")
            .note("`unshare -m` + `chroot`; host path in `path`, in-root path in `container_path`"),
        case("delete through a symlinked directory inside a chroot",
             "CHROOT_SETUP && mkdir root/data/real && touch root/data/real/h && ln -s real root/data/link",
             "unshare -m --propagation private sh -c 'mount --bind /usr root/usr && mount -o remount,bind,ro root/usr \
              && chroot root rm /data/link/h'")
            .prog("unshare")
            .prog("chroot")
            .prog("mount")
            .expect(ev("unlink", "{ws}/root/data/real/h", "rm").container("/data/real/h"))
            .after("test ! -e root/data/real/h")
            .gap(TRACEPOINT, true, false,
                "symlinks in the raw argument are resolved (in userspace) only when the process's root \
                 is the host root, so the path keeps the link: `{ws}/root/data/link/h`"),
        // -- io_uring ----------------------------------------------------------
        case("io_uring IORING_OP_UNLINKAT", "touch u", "{helper} uring-unlink u")
            .needs(Need::Helper)
            .expect(ev("unlink", "{ws}/u", "covhelper"))
            .check(uring_flagged)
            .after("test ! -e u")
            .gap(TRACEPOINT, false, false,
                "ring operations run without a syscall, so the syscall tracepoints never see them; \
                 the trace flags the process with an `io_uring_setup` event"),
        case("io_uring IORING_OP_RENAMEAT", "touch r", "{helper} uring-rename r r2")
            .needs(Need::Helper)
            .expect(ev("rename", "{ws}/r", "covhelper").dest("{ws}/r2"))
            .check(uring_flagged)
            .after("test ! -e r && test -e r2")
            .gap(TRACEPOINT, false, false,
                "ring operations run without a syscall, so the syscall tracepoints never see them; \
                 the trace flags the process with an `io_uring_setup` event"),
    ]
}

// ---------------------------------------------------------------------------
// Extra checks
// ---------------------------------------------------------------------------

fn has(e: &Value, field: &str, item: &str) -> bool {
    e[field]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == item))
}

/// Some event of `op` satisfies `pred`.
fn want(evs: &[Value], op: &str, pred: impl Fn(&Value) -> bool, what: &str) -> Vec<String> {
    if evs.iter().any(|e| e["op"] == op && pred(e)) {
        Vec::new()
    } else {
        vec![format!("no {op} event with {what}")]
    }
}

fn no_path_issues(_: &Ctx, evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["op"] == "unlink" && e["comm"] == "rm" && e["path_issues"].is_array())
        .map(|e| format!("unlink flagged {}", e["path_issues"]))
        .collect()
}

fn check_odd_name(_: &Ctx, evs: &[Value]) -> Vec<String> {
    let name = b"odd\nname\xff\xfe.txt";
    let mut out = Vec::new();
    let Some(e) = evs
        .iter()
        .find(|e| e["op"] == "unlink" && e["comm"] == "rm")
    else {
        return vec!["no unlink by rm".into()];
    };
    match b64_field(e, "raw_path") {
        Some(raw) if raw == name => {}
        other => out.push(format!(
            "raw_path bytes {:?}",
            other.map(|b| String::from_utf8_lossy(&b).into_owned())
        )),
    }
    if e["path_b64"].as_str().is_none() {
        out.push("no path_b64 for a non-UTF-8 path".into());
    }
    let lossy = e["path"].as_str().unwrap_or("");
    if !lossy.ends_with("/odd\nname\u{fffd}\u{fffd}.txt") {
        out.push(format!("lossy path {lossy:?}"));
    }
    out
}

/// The process that ran the helper set up an io_uring, and the trace says so.
fn uring_flagged(_: &Ctx, evs: &[Value]) -> Vec<String> {
    let helper_pids: Vec<&Value> = evs
        .iter()
        .filter(|e| {
            e["op"] == "exec"
                && e["result"] == 0
                && e["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("/covhelper"))
        })
        .map(|e| &e["pid"])
        .collect();
    if helper_pids.is_empty() {
        return vec!["no exec of covhelper".into()];
    }
    let flagged = evs.iter().any(|e| {
        e["op"] == "io_uring_setup"
            && e["syscall"] == "io_uring_setup"
            && e["comm"] == "covhelper"
            && e["result"] == 0
            && helper_pids.contains(&&e["pid"])
    });
    if flagged {
        Vec::new()
    } else {
        vec!["no io_uring_setup event from the helper process".into()]
    }
}

// ---------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------

/// What one case runs with.
struct Ctx {
    ws: TempDir,
    shm: Option<PathBuf>,
    subs: Vec<(&'static [u8], Vec<u8>)>,
}

impl Ctx {
    /// Replaces the placeholders in `s`.
    fn sub(&self, s: &[u8]) -> Vec<u8> {
        let mut out = s.to_vec();
        for (k, v) in &self.subs {
            out = replace(&out, k, v);
        }
        out
    }
    fn sub_os(&self, s: &str) -> OsString {
        OsString::from_vec(self.sub(s.as_bytes()))
    }
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// `pattern` with a trailing `*` matches any rest.
fn glob(actual: &[u8], pattern: &[u8]) -> bool {
    match pattern.strip_suffix(b"*") {
        Some(prefix) => actual.starts_with(prefix),
        None => actual == pattern,
    }
}

fn basename(p: &[u8]) -> &[u8] {
    p.rsplit(|&b| b == b'/').next().unwrap_or(p)
}

/// Exact bytes of a string field: its `_b64` sibling when present.
fn b64_field(e: &Value, field: &str) -> Option<Vec<u8>> {
    if let Some(b) = e[format!("{field}_b64")].as_str() {
        return base64::engine::general_purpose::STANDARD.decode(b).ok();
    }
    e[field].as_str().map(|s| s.as_bytes().to_vec())
}

fn result_ok(e: &Value, r: Res) -> bool {
    match r {
        Res::Zero => e["result"] == 0,
        Res::NonNeg => e["result"].as_i64().is_some_and(|v| v >= 0),
        Res::Errno(name) => e["result"].as_i64().is_some_and(|v| v < 0) && e["errno"] == name,
    }
}

fn show(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

/// Observed outcome of one expectation.
struct Seen {
    detected: bool,
    path_correct: bool,
    problems: Vec<String>,
}

/// Matches one expectation against the events. Detected: an event of the
/// operation by the expected process that belongs to this action (same
/// final name, or a path the monitor flagged as unresolved). Path correct:
/// such an event with the exact path (and second path, container path).
/// Problems: no such event also has the expected result and syscall.
fn observe(cx: &Ctx, evs: &[Value], x: &Expect) -> Seen {
    let path = cx.sub(x.path);
    let path2 = x.path2.map(|p| cx.sub(p));
    let ours: Vec<&Value> = evs
        .iter()
        .filter(|e| {
            e["op"] == x.op
                && e["comm"]
                    .as_str()
                    .is_some_and(|c| glob(c.as_bytes(), x.comm.as_bytes()))
        })
        .filter(|e| {
            let same_name =
                b64_field(e, "path").is_some_and(|p| glob(basename(&p), basename(&path)));
            same_name || e["path_issues"].as_array().is_some_and(|a| !a.is_empty())
        })
        .collect();
    let exact: Vec<&&Value> = ours
        .iter()
        .filter(|e| b64_field(e, "path").is_some_and(|p| glob(&p, &path)))
        .filter(|e| match &path2 {
            Some(p2) => b64_field(e, "path2").is_some_and(|p| glob(&p, p2)),
            None => true,
        })
        .filter(|e| x.container_path.is_none_or(|c| e["container_path"] == c))
        .collect();
    let mut problems = Vec::new();
    let want = format!(
        "{} {}{} by {}",
        x.op,
        show(&path),
        path2
            .as_ref()
            .map(|p| format!(" -> {}", show(p)))
            .unwrap_or_default(),
        x.comm
    );
    if ours.is_empty() {
        problems.push(format!("not detected: {want}"));
    } else if exact.is_empty() {
        let got: Vec<String> = ours
            .iter()
            .map(|e| {
                format!(
                    "{}{} {}",
                    show(&b64_field(e, "path").unwrap_or_default()),
                    b64_field(e, "path2")
                        .map(|p| format!(" -> {}", show(&p)))
                        .unwrap_or_default(),
                    e["container_path"]
                        .as_str()
                        .map(|c| format!("(container {c})"))
                        .unwrap_or_default()
                )
            })
            .collect();
        problems.push(format!("wrong path: want {want}, got {}", got.join(", ")));
    } else if !exact
        .iter()
        .any(|e| result_ok(e, x.result) && x.syscall.is_none_or(|s| e["syscall"] == s))
    {
        let got: Vec<String> = exact
            .iter()
            .map(|e| format!("{} result {} {}", e["syscall"], e["result"], e["errno"]))
            .collect();
        problems.push(format!(
            "{want}: want result {:?}{}, got {}",
            x.result,
            x.syscall.map(|s| format!(" via {s}")).unwrap_or_default(),
            got.join(", ")
        ));
    }
    Seen {
        detected: !ours.is_empty(),
        path_correct: !exact.is_empty(),
        problems,
    }
}

/// Parses a trace strictly: valid UTF-8, one JSON object per line, header
/// first, seal last, dense sequence numbers.
fn parse_trace(trace: &Path) -> (Vec<Value>, Vec<String>) {
    let mut problems = Vec::new();
    let bytes = match std::fs::read(trace) {
        Ok(b) => b,
        Err(e) => return (Vec::new(), vec![format!("cannot read the trace: {e}")]),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), vec![format!("trace is not UTF-8: {e}")]),
    };
    if !text.ends_with('\n') {
        problems.push("trace does not end with a newline".into());
    }
    let mut records = Vec::new();
    for (i, line) in text.split_terminator('\n').enumerate() {
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => records.push(v),
            Ok(_) => problems.push(format!("trace line {} is not an object", i + 1)),
            Err(e) => problems.push(format!("trace line {} is not JSON: {e}", i + 1)),
        }
    }
    if records.first().is_none_or(|r| r["type"] != "header") {
        problems.push("trace does not start with a header".into());
    }
    if records.last().is_none_or(|r| r["type"] != "seal") {
        problems.push("trace is not sealed".into());
    }
    if records
        .iter()
        .enumerate()
        .any(|(i, r)| r["seq"] != i as u64)
    {
        problems.push("sequence numbers are not dense".into());
    }
    (records, problems)
}

/// One row of the table.
struct Row {
    name: &'static str,
    backend: &'static str,
    /// `None`: skipped, with the reason in `note`.
    detected: Option<bool>,
    path_correct: Option<bool>,
    note: String,
    /// Why the case fails the test, if it does.
    failure: Option<String>,
    /// Cause of the documented gap of this backend, if any.
    gap: Option<String>,
    /// The case ran (it was not skipped for want of a program or file system).
    ran: bool,
}

struct Env {
    helper: Option<PathBuf>,
    helper_error: String,
    other_fs: bool,
    traces: PathBuf,
}

/// The feature (as named in `ABM_TEST_SKIP`) and reason a case cannot run here.
fn missing(env: &Env, c: &Case) -> Option<(String, String)> {
    for n in &c.needs {
        match n {
            Need::Prog(p) if !have(p) => {
                return Some((format!("prog:{p}"), format!("{p} not installed")))
            }
            Need::Helper if env.helper.is_none() => {
                return Some(("helper".into(), env.helper_error.clone()))
            }
            Need::OtherFs if !env.other_fs => {
                return Some((
                    "other-fs".into(),
                    "/dev/shm is not a separate file system".into(),
                ))
            }
            _ => {}
        }
    }
    None
}

fn shell(script: &OsStr, cwd: &Path) -> std::io::Result<std::process::Output> {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .envs(case_env())
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .output()
}

/// Environment of setups, actions and checks: deterministic git identity
/// and messages.
fn case_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("LC_ALL", "C"),
        ("GIT_AUTHOR_NAME", "abm"),
        ("GIT_AUTHOR_EMAIL", "abm@example.invalid"),
        ("GIT_COMMITTER_NAME", "abm"),
        ("GIT_COMMITTER_EMAIL", "abm@example.invalid"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ]
}

/// Runs `abm run --trace T --workspace WS [args] -- sh -c ACTION` in the
/// workspace, interrupting it after [`RUN_TIMEOUT`]. Returns the exit code
/// and stderr.
fn abm_run(cx: &Ctx, trace: &Path, args: &[&str], action: &OsStr) -> (Option<i32>, String) {
    let err_path = trace.with_extension("stderr");
    let err_file = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = Command::new(ABM)
        .arg("run")
        .arg("--quiet")
        .arg("--trace")
        .arg(trace)
        .arg("--workspace")
        .arg(cx.ws.path())
        .args(args)
        .arg("--")
        .arg("sh")
        .arg("-c")
        .arg(action)
        .current_dir(cx.ws.path())
        .envs(case_env())
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .expect("spawn abm");
    let start = Instant::now();
    let mut interrupted = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for abm") {
            break s;
        }
        if start.elapsed() > RUN_TIMEOUT && !interrupted {
            // abm stops the watched tree and seals the trace on SIGINT.
            // SAFETY: kill(2) takes no pointers; the pid is a process this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            interrupted = true;
        }
        if start.elapsed() > RUN_TIMEOUT + Duration::from_secs(10) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if interrupted {
        stderr.push_str("\n(timed out: interrupted)");
    }
    (status.code(), stderr)
}

/// Mount points at or under `dir` in this mount namespace.
fn mounts_under(dir: &Path) -> Vec<String> {
    let prefix = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_owned))
        .filter(|m| m == &prefix || m.starts_with(&format!("{prefix}/")))
        .collect()
}

fn run_case(env: &Env, idx: usize, backend: &Backend, c: &Case) -> Row {
    let mut row = Row {
        name: c.name,
        backend: backend.name,
        detected: None,
        path_correct: None,
        note: String::new(),
        failure: None,
        gap: None,
        ran: false,
    };
    if let Some((feature, why)) = missing(env, c) {
        row.note = format!("skipping: {why}");
        if !common::may_skip(&feature) {
            row.failure = Some(format!(
                "cannot run: {why} (ABM_REQUIRE_EBPF=1; set ABM_TEST_SKIP={feature} to skip it)"
            ));
        }
        return row;
    }
    row.ran = true;
    let gap = c.gaps.iter().find(|g| g.backend == backend.name);
    row.gap = gap.map(|g| g.cause.replace("{ws}", "WS"));
    let ws = TempDir::new(&format!("cov{idx}"));
    let shm = c.needs.iter().any(|n| matches!(n, Need::OtherFs)).then(|| {
        let d = PathBuf::from(format!("/dev/shm/abm-cov-{}-{idx}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).expect("create /dev/shm dir");
        d
    });
    let long: Vec<String> = (0..25)
        .map(|i| format!("d{i:02}_{}", "x".repeat(44)))
        .collect();
    let deep = vec!["d"; 140].join("/");
    let deep60 = vec!["d"; 60].join("/");
    let mut subs: Vec<(&'static [u8], Vec<u8>)> = vec![
        (b"{ws}", ws.path().as_os_str().as_bytes().to_vec()),
        (b"{long}", long.join("/").into_bytes()),
        (b"{deep}", deep.into_bytes()),
        (b"{deep60}", deep60.into_bytes()),
        (b"{blob}", DANGLING_BLOB.as_bytes().to_vec()),
        (b"GIT_REPO", GIT_REPO.as_bytes().to_vec()),
        (b"CHROOT_SETUP", CHROOT_SETUP.as_bytes().to_vec()),
    ];
    if let Some(h) = &env.helper {
        subs.push((b"{helper}", h.as_os_str().as_bytes().to_vec()));
    }
    if let Some(s) = &shm {
        subs.push((b"{shm}", s.as_os_str().as_bytes().to_vec()));
    }
    let cx = Ctx { ws, shm, subs };
    let failure = drive(env, idx, backend, c, &cx, gap, &mut row);
    row.failure = failure;
    let left = mounts_under(cx.ws.path());
    if !left.is_empty() {
        // Never remove a tree with a mount inside (it could be /usr).
        row.failure
            .get_or_insert_with(|| format!("mounts left behind: {left:?}"));
        std::mem::forget(cx.ws);
    }
    if let Some(s) = &cx.shm {
        let _ = std::fs::remove_dir_all(s);
    }
    row
}

/// Runs one case and fills `row`; returns why it fails, if it does.
fn drive(
    env: &Env,
    idx: usize,
    backend: &Backend,
    c: &Case,
    cx: &Ctx,
    gap: Option<&Gap>,
    row: &mut Row,
) -> Option<String> {
    let setup = shell(&cx.sub_os(c.setup), cx.ws.path()).expect("run setup");
    if !setup.status.success() {
        row.note = "setup failed".into();
        return Some(format!(
            "setup failed: {}",
            String::from_utf8_lossy(&setup.stderr)
        ));
    }
    let trace = env
        .traces
        .join(format!("case-{idx:02}-{}.jsonl", backend.name));
    let args: Vec<&str> = backend
        .abm_args
        .iter()
        .chain(&c.abm_args)
        .copied()
        .collect();
    let (code, stderr) = abm_run(cx, &trace, &args, &cx.sub_os(c.action));
    let (records, mut problems) = parse_trace(&trace);
    let events: Vec<Value> = records
        .into_iter()
        .filter(|r| r["type"] == "event")
        .collect();
    if code != Some(c.exit) {
        problems.push(format!(
            "action exited {code:?}, want {}: {}",
            c.exit,
            stderr.trim()
        ));
    }
    let after = shell(&cx.sub_os(c.after), cx.ws.path()).expect("run check");
    if !after.status.success() {
        problems.push(format!("the action did not happen (`{}` failed)", c.after));
    }
    let mut detected = true;
    let mut path_correct = true;
    let mut seen_problems = Vec::new();
    for x in &c.expect {
        let s = observe(cx, &events, x);
        detected &= s.detected;
        path_correct &= s.path_correct;
        seen_problems.extend(s.problems);
    }
    if let Some(check) = c.check {
        problems.extend(check(cx, &events));
    }
    let path_correct = detected && path_correct;
    row.detected = Some(detected);
    row.path_correct = Some(path_correct);
    let mut note = c.note.to_owned();
    let failures = judge(gap, detected, path_correct, seen_problems, problems);
    if !failures.is_empty() {
        let tag = if gap.is_none() {
            "REGRESSION"
        } else {
            "FAILED"
        };
        note = join_note(&note, &format!("{tag}: {}", failures.join("; ")));
    }
    row.note = note
        .replace("{ws}", "WS")
        .replace(&*cx.ws.path().to_string_lossy(), "WS");
    if failures.is_empty() {
        None
    } else {
        Some(format!(
            "{}\n  trace: {}",
            failures.join("\n  "),
            trace.display()
        ))
    }
}

fn join_note(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}; {b}")
    }
}

/// Why a case fails, from what was observed. `seen_problems` are the
/// mismatches of the expected events; `problems` everything else (exit code,
/// the action did not happen, extra checks, trace validity), which fails a
/// case whether or not it is a known gap. A case without a gap fails on any
/// mismatch; a known gap fails when the observation differs from what is
/// documented, in either direction.
fn judge(
    gap: Option<&Gap>,
    detected: bool,
    path_correct: bool,
    seen_problems: Vec<String>,
    mut problems: Vec<String>,
) -> Vec<String> {
    match gap {
        None => problems.extend(seen_problems),
        Some(g) => {
            if (g.detected, g.path_correct) != (detected, path_correct) {
                problems.push(format!(
                    "documented gap says detected={} path_correct={}, observed detected={detected} \
                     path_correct={path_correct} ({}): update the case",
                    g.detected,
                    g.path_correct,
                    seen_problems.join("; ")
                ));
            }
        }
    }
    problems
}

/// Builds the C helper with `cc`.
fn build_helper(dir: &Path) -> Result<PathBuf, String> {
    if !have("cc") {
        return Err("cc not installed (needed for the C helper)".into());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/coverage/helper.c");
    let out = dir.join("covhelper");
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "cannot build {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(out)
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "skipped",
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

const INTRO: &str = r#"# Detection coverage

<!-- Generated by `cargo test --release -p monitor --test coverage`;
     do not edit by hand: every run of the suite rewrites this file. -->

Which destructive actions of real tools `abm` records, and whether the
recorded path is exact. Each row is one case of
`monitor/tests/coverage.rs`: the action is performed for real under
`abm run`, and the trace must hold the expected event with its operation,
fully resolved absolute path (the second path for renames, the in-root path
for a chroot), result and acting process (`comm`). The suite also checks
that the action really happened and that the trace is valid, sealed JSON
lines. The table shows what the monitor did on the machine that last ran
the suite.

- **detected**: the trace has an event of the expected operation, by the
  expected process, for this action (same file name, or a path the monitor
  flagged as unresolved in `path_issues`).
- **path correct**: that event has the exact expected path(s).
- Result, syscall and extra content (mode, owner, flags, argv) are asserted
  too; a mismatch is marked REGRESSION in the note.
- **known gap**: a documented limitation of the backend (see
  [below](#known-gaps)). The suite asserts that a gap shows exactly as
  documented; any other row that stops working fails the test.
"#;

const OUTRO: &str = r#"
## Names with odd bytes

File names are bytes. A path that is valid UTF-8 is written as a JSON
string with the standard JSON escapes (`\n` for a newline, `\u0001` for
other control characters), so a trace line never contains a raw newline. A
path that is not valid UTF-8 is written twice: the string field holds a
lossy rendering (each invalid sequence becomes U+FFFD) and a sibling field
with the suffix `_b64` holds the exact bytes in standard base64 (`path_b64`,
`raw_path_b64`, `path2_b64`, `argv_b64`). Consumers that need the exact
bytes decode the `_b64` field when it is present. The odd-name cases assert
both. See [the trace format](trace.md#strings-and-non-utf-8-names).

## Adding a case or a backend

A case is one entry of `cases()` in `monitor/tests/coverage.rs`: a setup
script, the action, the expected events (`op`, path with `{ws}`
placeholders, result, `comm`), a shell check that the action happened, and
known gaps per backend. Actions that no common tool performs (io_uring,
`execveat`, unusual syscall shapes) are done by `tests/coverage/helper.c`,
built with `cc` when the suite runs. Another backend (`lsm`, `seccomp`)
runs the same cases with its own gap entries; its rows carry its name in
the backend column.

Cases whose tool is not installed are listed as skipped. The Debian
packages they need: `rsync` (rsync), `busybox-static` (busybox).
"#;

fn render(rows: &[Row], kernel: &str) -> String {
    let ran = rows.iter().filter(|r| r.detected.is_some()).count();
    let good = rows
        .iter()
        .filter(|r| r.detected == Some(true) && r.path_correct == Some(true))
        .count();
    let gaps: Vec<&Row> = rows
        .iter()
        .filter(|r| r.gap.is_some() && r.detected.is_some())
        .collect();
    let mut s = String::from(INTRO);
    s.push_str(&format!(
        "\nLast run: kernel {kernel}, backends {}. {} rows (case × backend): {good} detected with \
         the correct path, {} known gaps, {} skipped.\n\n",
        BACKENDS
            .iter()
            .map(|b| format!("`{}`", b.name))
            .collect::<Vec<_>>()
            .join(", "),
        rows.len(),
        gaps.len(),
        rows.len() - ran
    ));
    s.push_str("| case | backend | detected | path correct | note |\n|---|---|---|---|---|\n");
    for r in rows {
        let mut note = r.note.clone();
        if r.gap.is_some() {
            note = join_note(&note, "known gap, see below");
        }
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            cell(r.name),
            r.backend,
            yes_no(r.detected),
            yes_no(r.path_correct),
            cell(&note)
        ));
    }
    s.push_str("\n## Known gaps\n\nWith their cause (`WS` is the case's workspace directory):\n\n");
    for r in &gaps {
        s.push_str(&format!(
            "- **{}** (`{}`): {}\n",
            r.name,
            r.backend,
            r.gap.as_deref().unwrap_or("")
        ));
    }
    s.push_str(OUTRO);
    s
}

#[test]
fn detection_coverage() {
    if let Some(why) = kernel_unavailable() {
        common::skip_or_fail("ebpf", &why);
        return;
    }
    let work = TempDir::new("coverage");
    let traces = work.join("traces");
    std::fs::create_dir(&traces).unwrap();
    let (helper, helper_error) = match build_helper(work.path()) {
        Ok(h) => (Some(h), String::new()),
        Err(e) => (None, e),
    };
    let other_fs = {
        use std::os::unix::fs::MetadataExt;
        match (
            std::fs::metadata("/dev/shm"),
            std::fs::metadata(work.path()),
        ) {
            (Ok(a), Ok(b)) => a.is_dir() && a.dev() != b.dev(),
            _ => false,
        }
    };
    let env = Env {
        helper,
        helper_error,
        other_fs,
        traces,
    };
    let cases = cases();
    let names: std::collections::BTreeSet<_> = cases.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), cases.len(), "case names are unique");

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let jobs: Vec<(&Backend, &Case)> = BACKENDS
        .iter()
        .flat_map(|b| cases.iter().map(move |c| (b, c)))
        .collect();
    let rows: Mutex<Vec<Option<Row>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(b, c)) = jobs.get(i) else { break };
                let t = Instant::now();
                let row = run_case(&env, i, b, c);
                eprintln!(
                    "coverage: {:<10} {:<55} detected={:<7} path_correct={:<7} {:>5.2}s{}",
                    b.name,
                    c.name,
                    yes_no(row.detected),
                    yes_no(row.path_correct),
                    t.elapsed().as_secs_f64(),
                    if row.failure.is_some() {
                        "  FAILED"
                    } else {
                        ""
                    }
                );
                rows.lock().unwrap()[i] = Some(row);
            });
        }
    });
    let rows: Vec<Row> = rows
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every case ran"))
        .collect();
    eprintln!(
        "coverage: {} cases in {:.1}s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );

    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let doc = render(&rows, kernel.trim());
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/coverage.md");
    std::fs::write(&doc_path, &doc)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", doc_path.display()));

    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.failure
                .as_ref()
                .map(|f| format!("{} ({}):\n  {f}", r.name, r.backend))
        })
        .collect();
    // Keep the traces of failed cases for inspection.
    if !failures.is_empty() {
        std::mem::forget(work);
    }
    assert!(
        failures.is_empty(),
        "{} of {} coverage cases failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    // Count what ran, not what is defined: a case skipped for want of a
    // program does not cover anything.
    let ran: std::collections::BTreeSet<&str> =
        rows.iter().filter(|r| r.ran).map(|r| r.name).collect();
    eprintln!("coverage: {} of {} cases ran", ran.len(), cases.len());
    assert!(
        ran.len() >= 40,
        "only {} cases ran (at least 40 must)",
        ran.len()
    );
}

// ---------------------------------------------------------------------------
// Self-tests of the driver: each check must be able to fail.
// ---------------------------------------------------------------------------

#[test]
fn matcher_rejects_wrong_events() {
    use serde_json::json;
    let cx = Ctx {
        ws: TempDir::new("covself"),
        shm: None,
        subs: vec![(b"{ws}", b"/w".to_vec())],
    };
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let seen = |evs: Vec<Value>, x: Expect| {
        let s = observe(&cx, &evs, &x);
        (s.detected, s.path_correct, s.problems.is_empty())
    };
    let good =
        json!({"op": "unlink", "syscall": "unlinkat", "comm": "rm", "path": "/w/f", "result": 0});
    let rm = || ev("unlink", "{ws}/f", "rm");
    assert_eq!(seen(vec![good.clone()], rm()), (true, true, true));
    assert_eq!(
        seen(vec![good.clone()], rm().sys("unlinkat")),
        (true, true, true)
    );
    // Wrong process, operation, path, result, syscall.
    let with = |k: &str, v: Value| {
        let mut e = good.clone();
        e[k] = v;
        vec![e]
    };
    assert_eq!(seen(with("comm", json!("mv")), rm()), (false, false, false));
    assert_eq!(
        seen(with("op", json!("rmdir")), rm()),
        (false, false, false)
    );
    assert_eq!(
        seen(with("path", json!("/w/x/f")), rm()),
        (true, false, false)
    );
    assert_eq!(
        seen(with("path", json!("/w/g")), rm()),
        (false, false, false)
    );
    assert_eq!(seen(with("result", json!(-2)), rm()), (true, true, false));
    assert_eq!(seen(with("result", Value::Null), rm()), (true, true, false));
    assert_eq!(
        seen(vec![good.clone()], rm().sys("unlink")),
        (true, true, false)
    );
    assert_eq!(
        seen(vec![good.clone()], rm().res(Res::Errno("ENOENT"))),
        (true, true, false)
    );
    let enoent =
        json!({"op": "unlink", "comm": "rm", "path": "/w/f", "result": -2, "errno": "ENOENT"});
    assert_eq!(
        seen(vec![enoent.clone()], rm().res(Res::Errno("ENOENT"))),
        (true, true, true)
    );
    assert_eq!(
        seen(vec![enoent], rm().res(Res::Errno("EPERM"))),
        (true, true, false)
    );
    // An unresolved (flagged) path counts as detected with a wrong path.
    let flagged = json!({"op": "unlink", "comm": "rm", "path": "/w", "path_issues": ["read_failed"], "result": 0});
    assert_eq!(seen(vec![flagged], rm()), (true, false, false));
    // Exact bytes come from the _b64 sibling.
    let odd = json!({"op": "unlink", "comm": "rm", "path": "/w/a\u{fffd}", "path_b64": b64(b"/w/a\xff"), "result": 0});
    assert_eq!(
        seen(vec![odd.clone()], evb("unlink", b"{ws}/a\xff", "rm")),
        (true, true, true)
    );
    assert_eq!(
        seen(vec![odd.clone()], evb("unlink", b"{ws}/a\xfe", "rm")),
        (false, false, false)
    );
    assert_eq!(
        seen(vec![odd], evb("unlink", b"{ws}/x/a\xff", "rm")),
        (true, false, false)
    );
    // Second path, container path, globs.
    let mv = json!({"op": "rename", "comm": "mv", "path": "/w/sedX1", "path2": "/w/f", "result": 0,
                    "container_path": "/f"});
    assert_eq!(
        seen(
            vec![mv.clone()],
            ev("rename", "{ws}/sed*", "mv").dest("{ws}/f")
        ),
        (true, true, true)
    );
    assert_eq!(
        seen(
            vec![mv.clone()],
            ev("rename", "{ws}/sed*", "m*").dest("{ws}/f")
        ),
        (true, true, true)
    );
    assert_eq!(
        seen(
            vec![mv.clone()],
            ev("rename", "{ws}/sed*", "mv").dest("{ws}/g")
        ),
        (true, false, false)
    );
    assert_eq!(
        seen(
            vec![mv.clone()],
            ev("rename", "{ws}/tmp*", "mv").dest("{ws}/f")
        ),
        (false, false, false)
    );
    assert_eq!(
        seen(
            vec![mv.clone()],
            ev("rename", "{ws}/sed*", "mv").container("/f")
        ),
        (true, true, true)
    );
    assert_eq!(
        seen(vec![mv], ev("rename", "{ws}/sed*", "mv").container("/g")),
        (true, false, false)
    );
    assert_eq!(seen(vec![], rm()), (false, false, false));
}

#[test]
fn judge_fails_regressions_and_undocumented_changes() {
    let works = judge(None, true, true, vec![], vec![]);
    assert!(works.is_empty());
    assert!(!judge(None, true, false, vec!["wrong path".into()], vec![]).is_empty());
    assert!(!judge(
        None,
        true,
        true,
        vec![],
        vec!["action did not happen".into()]
    )
    .is_empty());
    let g = Gap {
        backend: TRACEPOINT,
        detected: false,
        path_correct: false,
        cause: "",
    };
    assert!(judge(Some(&g), false, false, vec!["not detected".into()], vec![]).is_empty());
    assert!(
        !judge(Some(&g), true, false, vec![], vec![]).is_empty(),
        "a changed gap fails"
    );
    assert!(
        !judge(Some(&g), true, true, vec![], vec![]).is_empty(),
        "a closed gap fails"
    );
    assert!(!judge(
        Some(&g),
        false,
        false,
        vec![],
        vec!["no io_uring_setup".into()]
    )
    .is_empty());
}

#[test]
fn trace_parser_rejects_broken_traces() {
    let dir = TempDir::new("covparse");
    let write = |name: &str, body: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        parse_trace(&p).1
    };
    let ok = b"{\"type\":\"header\",\"seq\":0}\n{\"type\":\"event\",\"seq\":1,\"path\":\"a\\nb\"}\n{\"type\":\"seal\",\"seq\":2}\n";
    assert!(write("ok", ok).is_empty());
    assert!(!write("raw-newline", b"{\"type\":\"header\",\"seq\":0}\n{\"type\":\"event\",\"seq\":1,\"path\":\"a\nb\"}\n{\"type\":\"seal\",\"seq\":2}\n").is_empty());
    assert!(!write("unsealed", b"{\"type\":\"header\",\"seq\":0}\n").is_empty());
    assert!(!write(
        "gap",
        b"{\"type\":\"header\",\"seq\":0}\n{\"type\":\"seal\",\"seq\":2}\n"
    )
    .is_empty());
    assert!(!write(
        "not-utf8",
        b"{\"type\":\"header\",\"seq\":0,\"p\":\"\xff\"}\n"
    )
    .is_empty());
    assert!(!write(
        "no-newline",
        b"{\"type\":\"header\",\"seq\":0}\n{\"type\":\"seal\",\"seq\":1}"
    )
    .is_empty());
}

#[test]
fn every_case_asserts_content() {
    let cases = cases();
    assert!(cases.len() >= 40);
    for c in &cases {
        assert!(!c.expect.is_empty(), "{}: no expected event", c.name);
        for x in &c.expect {
            assert!(
                x.path.starts_with(b"{ws}/") || x.path.starts_with(b"{shm}/"),
                "{}: path must be absolute",
                c.name
            );
            assert!(
                !x.comm.is_empty() && x.comm != "*",
                "{}: the acting process is asserted",
                c.name
            );
        }
        assert!(
            c.gaps.iter().all(|g| !g.cause.is_empty()),
            "{}: a gap says why",
            c.name
        );
    }
}
