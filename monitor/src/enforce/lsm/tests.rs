//! The compiled tables are checked against the policy engine itself: a
//! userspace model of the kernel's decision (the same walk, on real
//! inodes) must give the verdict `Policy::evaluate` gives.
use std::fs;

use monitor_common::EventKind;

use super::*;

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        for d in ["protected/allowed", "protected/sub/deep", "scratch", "keep"] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        for f in [
            "protected/a",
            "protected/allowed/x",
            "protected/sub/deep/y",
            "scratch/a",
            "keep/k",
            "trace.jsonl",
        ] {
            fs::write(dir.path().join(f), "x").unwrap();
        }
        Ws { dir }
    }
    fn p(&self, rel: &str) -> String {
        self.dir.path().join(rel).to_string_lossy().into_owned()
    }
    fn ctx(&self) -> Context {
        Context {
            workspace: self.dir.path().to_path_buf(),
            home: PathBuf::from("/nonexistent-home"),
            trace_path: Some(self.dir.path().join("trace.jsonl")),
        }
    }
}

/// The kernel's file decision, modelled: bits from the target (lstat),
/// its parent and ancestors (stat), lowest bit decides.
fn model_file(c: &Compiled, op: Op, paths: &[&str]) -> Option<(u32, u32)> {
    let cand = c.config.op_rules[op.kind() as usize];
    if cand == 0 {
        return None;
    }
    let (mut m, mut x) = (cand & c.config.any_path, 0u64);
    for p in paths {
        let mut cur = PathBuf::from(p);
        let mut level = 0;
        loop {
            if let Some(k) = inode_of(&cur, level > 0) {
                if let Some(e) = c.protect.get(&k) {
                    if level == 0 {
                        m |= e.self_;
                        x |= e.excl_self;
                    } else {
                        m |= e.desc;
                        x |= e.excl_desc;
                        if level == 1 {
                            m |= e.child;
                            x |= e.excl_child;
                        }
                    }
                }
            }
            if !cur.pop() {
                break;
            }
            level += 1;
        }
    }
    let bits = m & !x & cand;
    if bits == 0 {
        return None;
    }
    let low = bits & bits.wrapping_neg();
    let t = if low & c.config.deny != 0 {
        treatment::DENY
    } else if low & c.config.confirm != 0 {
        treatment::CONFIRM
    } else if low & c.config.preserve != 0 {
        treatment::PRESERVE
    } else {
        treatment::ALLOW
    };
    Some((low.trailing_zeros(), t))
}

/// The kernel's exec decision, modelled (sys_enter_exec_rules).
fn model_exec(c: &Compiled, argv: &[&str]) -> Option<(u32, u32)> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
    let mut progs = c.config.exec_any_program;
    progs |= c
        .exec_programs
        .get(&fnv1a(base(argv[0]).as_bytes()))
        .copied()
        .unwrap_or(0);
    let (mut seen, mut letters) = (0u64, 0u128);
    for a in &argv[1..] {
        seen |= c
            .exec_tokens
            .get(&fnv1a(a.as_bytes()))
            .copied()
            .unwrap_or(0);
        let b = a.as_bytes();
        if b.len() >= 2
            && b[0] == b'-'
            && b[1] != b'-'
            && b[1..].iter().all(u8::is_ascii_alphanumeric)
        {
            for ch in &b[1..] {
                letters |= 1u128 << ch;
            }
        }
    }
    for (j, r) in c.exec_rules.iter().enumerate() {
        if progs & (1 << j) == 0 {
            continue;
        }
        let ok = (0..EXEC_CLAUSES)
            .filter(|ci| r.used & (1 << ci) != 0)
            .all(|ci| {
                let l =
                    r.letters[ci as usize][0] as u128 | (r.letters[ci as usize][1] as u128) << 64;
                let sat = seen & (1 << (j as u32 * EXEC_CLAUSES + ci)) != 0
                    || (l != 0 && letters & l == l);
                sat != (r.negated & (1 << ci) != 0)
            });
        if ok {
            return Some((r.index, r.treatment));
        }
    }
    None
}

fn file_action(op: Op, path: &str, path2: Option<&str>) -> Action {
    Action {
        op: Some(op),
        path: Some(path.into()),
        path2: path2.map(Into::into),
        ..Default::default()
    }
}

/// The policy engine's verdict as (rule id, kernel treatment), `None`
/// for the default verdict.
fn engine(policy: &Policy, ctx: &Context, a: &Action) -> Option<(String, u32)> {
    let v = policy.evaluate(a, ctx);
    (v.rule != "default").then(|| (v.rule, kernel_treatment(v.treatment)))
}

const FILE_POLICY: &str = r#"
version = 1

[[rule]]
id = "t.accept-allowed"
reason = "an earlier accept wins"
ops = ["unlink"]
paths = ["${workspace}/protected/allowed/**"]
treatment = "accept"

[[rule]]
id = "t.protect"
reason = "protected tree"
paths = ["${workspace}/protected/**"]
not_paths = ["${workspace}/protected/sub/deep/**"]
treatment = "deny"

[[rule]]
id = "t.children"
reason = "direct entries of keep"
ops = ["unlink", "truncate"]
paths = ["${workspace}/keep/*"]
treatment = "preserve"

[[rule]]
id = "t.confirm-self"
reason = "one file"
ops = ["chmod"]
paths = ["${workspace}/scratch/a"]
treatment = "confirm"
"#;

#[test]
fn file_rules_decide_like_the_policy_engine() {
    let ws = Ws::new();
    let ctx = ws.ctx();
    let policy = Policy::from_str(FILE_POLICY, "test.toml").unwrap();
    let c = compile(&policy, &ctx).unwrap();
    let cases: Vec<(Op, String, Option<String>)> = vec![
        (Op::Unlink, ws.p("protected/a"), None),
        (Op::Unlink, ws.p("protected/allowed/x"), None),
        (Op::Unlink, ws.p("protected/sub/deep/y"), None),
        (Op::Rmdir, ws.p("protected/sub"), None),
        (Op::Rmdir, ws.p("protected"), None),
        (Op::Write, ws.p("protected/new-file"), None),
        (Op::Chmod, ws.p("protected/a"), None),
        (Op::Rename, ws.p("scratch/a"), Some(ws.p("protected/b"))),
        (Op::Rename, ws.p("protected/a"), Some(ws.p("scratch/b"))),
        (Op::Rename, ws.p("scratch/a"), Some(ws.p("scratch/b"))),
        (Op::Unlink, ws.p("keep/k"), None),
        (Op::Truncate, ws.p("keep/k"), None),
        (Op::Chmod, ws.p("keep/k"), None),
        (Op::Chmod, ws.p("scratch/a"), None),
        (Op::Unlink, ws.p("scratch/a"), None),
        (Op::Write, ws.p("trace.jsonl"), None),
    ];
    for (op, p, p2) in cases {
        let a = file_action(op, &p, p2.as_deref());
        let want = engine(&policy, &ctx, &a);
        let mut paths = vec![p.as_str()];
        paths.extend(p2.as_deref());
        let got = model_file(&c, op, &paths).map(|(bit, t)| (c.rules[&bit].0.clone(), t));
        // Accept verdicts and no verdict both let the call through.
        let norm = |v: Option<(String, u32)>| v.filter(|(_, t)| *t != treatment::ALLOW);
        assert_eq!(norm(got), norm(want), "{op:?} {p} {p2:?}");
    }
    // The model is not trivially permissive.
    let rule_of =
        |op, p: &str| model_file(&c, op, &[p]).map(|(bit, t)| (c.rules[&bit].0.as_str(), t));
    assert_eq!(
        rule_of(Op::Unlink, &ws.p("protected/a")),
        Some(("t.protect", treatment::DENY))
    );
    assert_eq!(
        rule_of(Op::Unlink, &ws.p("protected/allowed/x")),
        Some(("t.accept-allowed", treatment::ALLOW))
    );
    assert_eq!(rule_of(Op::Unlink, &ws.p("protected/sub/deep/y")), None);
    assert_eq!(
        rule_of(Op::Truncate, &ws.p("keep/k")),
        Some(("t.children", treatment::PRESERVE))
    );
    assert_eq!(
        rule_of(Op::Write, &ws.p("trace.jsonl")),
        Some(("builtin.trace-integrity", treatment::DENY))
    );
    let fid: HashMap<&str, &Fidelity> = c
        .report
        .iter()
        .map(|r| (r.rule.as_str(), &r.fidelity))
        .collect();
    assert_eq!(fid["t.protect"], &Fidelity::Exact);
    assert_eq!(fid["t.children"], &Fidelity::Exact);
    assert!(
        matches!(fid["builtin.trace-integrity"], Fidelity::Partial(_)),
        "{:?}",
        fid["builtin.trace-integrity"]
    );
}

const EXEC_POLICY: &str = r#"
version = 1

[[rule]]
id = "t.lease-ok"
reason = "force-with-lease is fine"
program = ["git"]
subcommand = ["push"]
flags = ["--force-with-lease"]
treatment = "accept"

[[rule]]
id = "t.force-push"
reason = "rewrites history"
program = ["git"]
subcommand = ["push"]
flags = ["--force", "-f"]
treatment = "deny"

[[rule]]
id = "t.kubectl"
reason = "deletes resources"
program = ["kubectl"]
subcommand = ["delete", "drain"]
treatment = "confirm"

[[rule]]
id = "t.rm-rf"
reason = "recursive forced delete"
program = ["rm"]
flags = ["-rf"]
not_flags = ["--interactive"]
treatment = "deny"
"#;

#[test]
fn exec_rules_decide_like_the_policy_engine() {
    let ws = Ws::new();
    let ctx = ws.ctx();
    let policy = Policy::from_str(EXEC_POLICY, "test.toml").unwrap();
    let c = compile(&policy, &ctx).unwrap();
    let cases: &[&[&str]] = &[
        &["git", "push", "--force", "origin", "main"],
        &["/usr/bin/git", "push", "-f"],
        &["git", "push", "-fq"],
        &["git", "push", "origin", "main"],
        &["git", "push", "--force-with-lease"],
        &["git", "push", "--force-with-lease", "--force"],
        &["kubectl", "delete", "pod", "x"],
        &["kubectl", "drain", "node-1"],
        &["kubectl", "get", "pods"],
        &["rm", "-rf", "/tmp/x"],
        &["rm", "-r", "-f", "/tmp/x"],
        &["rm", "-fr", "--interactive", "/tmp/x"],
        &["rm", "-r", "/tmp/x"],
        &["ls", "-rf"],
    ];
    for argv in cases {
        let a = Action {
            op: Some(Op::Exec),
            path: Some(format!("/usr/bin/{}", argv[0].rsplit('/').next().unwrap())),
            argv: Some(argv.iter().map(|s| s.to_string()).collect()),
            cwd: Some(ws.p("")),
            ..Default::default()
        };
        let want = engine(&policy, &ctx, &a).filter(|(_, t)| *t != treatment::ALLOW);
        let got = model_exec(&c, argv)
            .filter(|(_, t)| *t != treatment::ALLOW)
            .map(|(i, t)| (c.rules[&i].0.clone(), t));
        assert_eq!(got, want, "{argv:?}");
    }
    let rule_of = |argv: &[&str]| model_exec(&c, argv).map(|(i, t)| (c.rules[&i].0.as_str(), t));
    assert_eq!(
        rule_of(&["git", "push", "-f"]),
        Some(("t.force-push", treatment::DENY))
    );
    assert_eq!(
        rule_of(&["kubectl", "drain", "n"]),
        Some(("t.kubectl", treatment::CONFIRM))
    );
    assert_eq!(
        rule_of(&["rm", "-r", "-f", "x"]),
        Some(("t.rm-rf", treatment::DENY))
    );
    assert_eq!(rule_of(&["git", "push"]), None);
    // The kernel's own exec refusals (and kills) name builtin rules.
    assert_eq!(
        c.rules.get(&EXEC_INDEX_ARGV_UNREAD),
        Some(&(RULE_ARGV_UNREAD.to_owned(), Treatment::Deny))
    );
    assert_eq!(
        c.rules.get(&EXEC_INDEX_UNDECIDED),
        Some(&(RULE_EXEC_UNDECIDED.to_owned(), Treatment::Deny))
    );
    assert_eq!(hook::name(hook::SCHED_PROCESS_EXEC), "sched_process_exec");
}

#[test]
fn what_the_kernel_cannot_test_is_audited_not_blocked() {
    let ws = Ws::new();
    let src = r#"
version = 1

[[rule]]
id = "t.by-comm"
reason = "only some processes"
ops = ["unlink"]
paths = ["${workspace}/protected/**"]
when = [{ field = "comm", operator = "equal", values = ["python3"] }]
treatment = "deny"

[[rule]]
id = "t.regex"
reason = "regex paths"
ops = ["unlink"]
when = [{ field = "path", operator = "regex", values = ["\\.env$"] }]
treatment = "deny"

[[rule]]
id = "t.accept-regex"
reason = "accepts by regex"
ops = ["rmdir"]
when = [{ field = "path", operator = "regex", values = ["^/tmp/"] }]
treatment = "accept"

[[rule]]
id = "t.deep-glob"
reason = "any .git"
paths = ["/**/.git/**"]
treatment = "deny"

[[rule]]
id = "t.prog-glob"
reason = "terraform-ish"
program = ["terraform*"]
subcommand = ["destroy"]
treatment = "deny"
"#;
    let policy = Policy::from_str(src, "t.toml").unwrap();
    let c = compile(&policy, &ws.ctx()).unwrap();
    let fid: HashMap<&str, &Fidelity> = c
        .report
        .iter()
        .map(|r| (r.rule.as_str(), &r.fidelity))
        .collect();
    assert!(matches!(fid["t.by-comm"], Fidelity::AuditOnly(_)));
    assert!(matches!(fid["t.regex"], Fidelity::AuditOnly(_)));
    assert!(matches!(fid["t.accept-regex"], Fidelity::Shadow(_)));
    assert!(matches!(
        fid["t.deep-glob"],
        Fidelity::AuditOnly(_) | Fidelity::Partial(_)
    ));
    assert!(matches!(fid["t.prog-glob"], Fidelity::AuditOnly(_)));
    // Nothing audit-only reached the kernel's blocking tables.
    for r in c
        .report
        .iter()
        .filter(|r| matches!(r.fidelity, Fidelity::AuditOnly(_)))
    {
        assert!(r.index.is_none(), "{}", r.rule);
    }
    // The shadow accept rule matches any rmdir (it can only let more through).
    let bit = c
        .report
        .iter()
        .find(|r| r.rule == "t.accept-regex")
        .unwrap()
        .index
        .unwrap();
    assert_ne!(c.config.any_path & (1 << bit), 0);
    assert_eq!(c.config.deny & (1 << bit), 0);
}

#[test]
fn kernel_dev_is_mkdev() {
    assert_eq!(kernel_dev(libc::makedev(8, 1)), (8 << 20) | 1);
    assert_eq!(kernel_dev(libc::makedev(259, 300)), (259 << 20) | 300);
}

#[test]
fn decision_records_decode() {
    use monitor_common::{field_tag, EventHeader, FieldHeader};
    let hdr = EventHeader {
        kind: EventKind::Rename as u32,
        syscall: 0,
        ktime_ns: 5,
        tid: 7,
        pid: 7,
        ppid: 1,
        uid: 0,
        gid: 0,
        payload_len: 0,
        cgroup_id: 1,
        comm: *b"mv\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        result: -1,
        flags: 0,
        mode: u32::MAX,
        owner_uid: u32::MAX,
        owner_gid: u32::MAX,
        fd: 0,
        hflags: 0,
        _pad: 0,
    };
    let d = LsmDecision {
        rule: 3,
        decision: decision::DENIED,
        hook: hook::PATH_RENAME,
        dev: 9,
        ino: 42,
    };
    // SAFETY: plain repr(C) data.
    let dbytes = unsafe {
        std::slice::from_raw_parts(
            &d as *const LsmDecision as *const u8,
            std::mem::size_of::<LsmDecision>(),
        )
    };
    let f = |tag, data: &[u8]| crate::kernel::events::Field {
        tag,
        flags: 0,
        data: data.to_vec().into(),
    };
    let bytes = crate::kernel::events::encode(
        &hdr,
        &[
            f(field::DECISION, dbytes),
            f(field_tag::FD_PATH, b"a\0protected\0ws\0tmp\0"),
            f(field::TARGET2, b"b\0scratch\0ws\0tmp\0"),
            f(field_tag::ROOT, b""),
        ],
    );
    let _ = std::mem::size_of::<FieldHeader>();
    let (a, got) = decode(&bytes).unwrap();
    assert_eq!(got, d);
    assert_eq!(a.op, Some(Op::Rename));
    assert_eq!(a.path.as_deref(), Some("/tmp/ws/protected/a"));
    assert_eq!(a.path2.as_deref(), Some("/tmp/ws/scratch/b"));
    assert_eq!(a.errno.as_deref(), Some("EPERM"));
}

#[test]
fn renaming_an_ancestor_of_a_protected_object_is_refused() {
    let ws = Ws::new();
    let ctx = ws.ctx();
    let policy = Policy::from_str(FILE_POLICY, "test.toml").unwrap();
    let c = compile(&policy, &ctx).unwrap();
    let anc = |rel: &str| {
        let k = inode_of(Path::new(&ws.p(rel)), true).unwrap();
        c.protect.get(&k).map_or(0, |e| e.anc)
    };
    let bit = |id: &str| {
        let (n, _) = c.rules.iter().find(|(_, (r, _))| r == id).unwrap();
        1u64 << n
    };
    let (protect, trace) = (bit("t.protect"), bit("builtin.trace-integrity"));
    // `protected/**`: the directory itself and everything above it.
    assert_ne!(anc("protected") & protect, 0);
    assert_ne!(anc("") & protect, 0);
    assert_ne!(anc("..") & protect, 0);
    // The trace's directory (the workspace here) and its parents.
    assert_ne!(anc("") & trace, 0);
    // Not an ancestor of anything protected; rules that do not name
    // rename (t.children) or do not block (t.accept-allowed) add nothing.
    assert_eq!(anc("scratch"), 0);
    assert_eq!(anc("protected/sub"), 0);
    assert_eq!(anc("keep"), 0);
    assert_eq!(anc("protected") & bit("t.accept-allowed"), 0);
    // The rename hook sees the rule for the directory.
    assert_ne!(c.config.op_rules[Op::Rename.kind() as usize] & protect, 0);
}

#[test]
fn metadata_operations_compile_for_the_hooks() {
    let ws = Ws::new();
    let ctx = ws.ctx();
    let policy = Policy::from_str(FILE_POLICY, "test.toml").unwrap();
    let c = compile(&policy, &ctx).unwrap();
    let trace = c
        .rules
        .iter()
        .find(|(_, (r, _))| r == "builtin.trace-integrity")
        .map(|(n, _)| 1u64 << n)
        .unwrap();
    for op in [Op::Link, Op::Symlink, Op::Utimes, Op::Xattr, Op::Setflags] {
        assert_ne!(
            c.config.op_rules[op.kind() as usize] & trace,
            0,
            "{op:?} is not decided for the trace"
        );
    }
}

#[test]
fn hook_arguments_from_the_kernel_btf() {
    // Signatures that are the same on every kernel abm supports.
    assert_eq!(btf::hook_args("path_link").unwrap(), 3);
    assert_eq!(btf::hook_args("path_symlink").unwrap(), 3);
    assert_eq!(btf::hook_args("inode_removexattr").unwrap(), 3);
    assert_eq!(btf::hook_args("inode_setxattr").unwrap(), 6);
    let n = btf::hook_args("inode_setattr").unwrap();
    assert!(n == 2 || n == 3, "inode_setattr has {n} arguments");
    assert!(btf::hook_args("no_such_hook")
        .unwrap_err()
        .to_string()
        .contains("no LSM hook no_such_hook"));
    assert!(btf::func_params(b"not btf at all, not btf at all", "x").is_err());
}
