//! The policy commands: `abm policy check|explain|show` and `abm replay`.
//!
//! They sit above [`crate::policy`] and [`crate::action`]: the policy
//! engine judges one action, these commands read arguments and traces,
//! build the action's facts and print what the engine decided.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::policy::{absolute, home_dir, Context, Explanation, Policy, Rule, RuleCheck};
use crate::record::{Action, Irreversibility, Op, Scope, Treatment};

pub mod replay;

/// Validate, explain and list policies.
#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, clap::Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum PolicyCommand {
    /// Validate policy files. Prints `ok FILE (N rules, digest D)` or the
    /// error (file:line:column: message) for each; exits 1 if any is invalid.
    Check(CheckArgs),
    /// Show which rule decides an action and why: the tests that matched,
    /// rules that also matched but come later, and near misses.
    Explain(ExplainArgs),
    /// List a policy's rules in the order they are tried.
    Show(ShowArgs),
}

/// Which policy to use; the built-in default pack when no file is given.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicySelect {
    /// Policy file to use instead of the built-in default pack. Repeat to
    /// merge several files in order.
    #[arg(long = "policy", value_name = "FILE")]
    pub policy: Vec<PathBuf>,
    /// Load the --policy files on top of the built-in default pack instead
    /// of replacing it.
    #[arg(long = "policy-on-default")]
    pub on_default: bool,
}

impl PolicySelect {
    pub fn load(&self) -> anyhow::Result<Policy> {
        let p = match (self.policy.is_empty(), self.on_default) {
            (true, _) => Policy::default_pack(),
            (false, false) => Policy::load(&self.policy)?,
            (false, true) => Policy::load_on_default(&self.policy)?,
        };
        Ok(p)
    }
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Policy files to validate. Each is checked on its own unless
    /// --on-default is given.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Check each file loaded after the built-in default pack, as an overlay
    /// that uses the pack's lists or disables its rules is loaded.
    #[arg(long)]
    pub on_default: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub select: PolicySelect,
    /// Operation: unlink, rmdir, rename, chmod, chown, truncate, write, exec
    /// (default: exec when --argv is given).
    #[arg(long, value_name = "OP", value_parser = parse_op)]
    pub op: Option<Op>,
    /// Path the operation acts on (for exec: the executable; default
    /// argv[0]). Relative paths are taken relative to --workspace.
    #[arg(long, value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Destination path of a rename.
    #[arg(long, value_name = "PATH")]
    pub dest: Option<PathBuf>,
    /// The task's workspace directory, `${workspace}` (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Home directory, `${home}` (default: $HOME).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Trace file of the session, `${trace}`.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Working directory of an exec (default: the workspace).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Name of the acting process (comm), e.g. `git` or `rm`.
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// User id of the acting process (default: the current user).
    #[arg(long, value_name = "UID")]
    pub uid: Option<u32>,
    /// Watch target the process belongs to.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// Mode of a chmod, in octal (e.g. 755 or 0o4755).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<u32>,
    /// Result of the call: success, failure, unknown (as when judged before
    /// it runs, the default) or a number (0 or -errno).
    #[arg(long, value_name = "RESULT", default_value = "unknown", value_parser = parse_result)]
    pub result: CallResult,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Command line of an exec, argv[0] first. Takes every following
    /// argument, so give it last: `--argv kubectl --context prod delete pod x`.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "ARG")]
    pub argv: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub select: PolicySelect,
    /// Print the policy's source files instead of the rule list (e.g. to
    /// start a custom policy from the built-in pack).
    #[arg(long)]
    pub source: bool,
    /// Print the rules as JSON.
    #[arg(long, conflicts_with = "source")]
    pub json: bool,
}

/// Re-judge a recorded trace with a (new) policy.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub select: PolicySelect,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory, `${workspace}` (default: the trace header's
    /// `workspace`).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Home directory, `${home}` (default: the trace header's `home`, else
    /// $HOME).
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// List only events whose treatment differs from the recorded verdict.
    #[arg(long)]
    pub changed: bool,
    /// Trace file (JSON lines, as written by `abm run`).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
}

fn parse_op(s: &str) -> anyhow::Result<Op> {
    Op::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
        anyhow::anyhow!("unknown operation `{s}`; one of: {}", names.join(", "))
    })
}

fn parse_mode(s: &str) -> anyhow::Result<u32> {
    let digits = s.trim_start_matches("0o");
    u32::from_str_radix(digits, 8).map_err(|_| anyhow::anyhow!("`{s}` is not an octal mode"))
}

/// `--result`: the call's return value, `None` when not known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallResult(pub Option<i64>);

fn parse_result(s: &str) -> anyhow::Result<CallResult> {
    match s {
        "unknown" => Ok(CallResult(None)),
        "success" => Ok(CallResult(Some(0))),
        "failure" => Ok(CallResult(Some(-1))),
        n => n
            .parse()
            .map(|n| CallResult(Some(n)))
            .map_err(|_| anyhow::anyhow!("`{s}` is not success, failure, unknown or a number")),
    }
}

pub fn policy(a: PolicyArgs) -> anyhow::Result<i32> {
    match a.command {
        PolicyCommand::Check(c) => check(c),
        PolicyCommand::Explain(e) => explain(e),
        PolicyCommand::Show(s) => show(s),
    }
}

fn user_rules(p: &Policy) -> usize {
    p.rules()
        .iter()
        .filter(|r| !r.id.starts_with("builtin."))
        .count()
}

fn check(a: CheckArgs) -> anyhow::Result<i32> {
    let mut failed = false;
    for f in &a.files {
        let loaded = if a.on_default {
            Policy::load_on_default(std::slice::from_ref(f))
        } else {
            Policy::load(std::slice::from_ref(f))
        };
        match loaded {
            Ok(p) => println!(
                "ok {} ({} rules, digest {})",
                f.display(),
                user_rules(&p),
                p.digest()
            ),
            Err(e) => {
                failed = true;
                println!("error {e}");
            }
        }
    }
    Ok(i32::from(failed))
}

pub(crate) fn treatment_name(t: Treatment) -> &'static str {
    match t {
        Treatment::Accept => "accept",
        Treatment::Audit => "audit",
        Treatment::Confirm => "confirm",
        Treatment::Preserve => "preserve",
        Treatment::Deny => "deny",
    }
}

pub(crate) fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Workspace => "workspace",
        Scope::Shared => "shared",
        Scope::Protected => "protected",
        Scope::Production => "production",
    }
}

pub(crate) fn irreversibility_name(i: Irreversibility) -> &'static str {
    match i {
        Irreversibility::Reversible => "reversible",
        Irreversibility::Recoverable => "recoverable",
        Irreversibility::Irreversible => "irreversible",
    }
}

fn explain(a: ExplainArgs) -> anyhow::Result<i32> {
    print!("{}", explain_output(&a)?);
    Ok(0)
}

/// What `abm policy explain` prints.
fn explain_output(a: &ExplainArgs) -> anyhow::Result<String> {
    let policy = a.select.load()?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let workspace = absolute(a.workspace.as_deref().unwrap_or(&cwd));
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            workspace.join(p)
        }
    };
    let op = match (a.op, a.argv.is_empty()) {
        (Some(op), _) => op,
        (None, false) => Op::Exec,
        (None, true) => bail!("give --op (and --path), or --argv for an exec"),
    };
    let mut action = Action {
        op: Some(op),
        syscall: op.name().into(),
        comm: a.comm.clone().unwrap_or_default(),
        uid: a.uid.unwrap_or_else(current_uid),
        target: a.target.clone(),
        mode: a.mode,
        result: a.result.0,
        ..Default::default()
    };
    action.path = a.path.as_deref().map(|p| resolve(p).display().to_string());
    action.path2 = a.dest.as_deref().map(|p| resolve(p).display().to_string());
    if op == Op::Exec {
        if a.argv.is_empty() {
            bail!("an exec needs its command line: --argv PROGRAM ARGS...");
        }
        if action.path.is_none() {
            action.path = Some(a.argv[0].clone());
        }
        action.argv = Some(a.argv.clone());
        action.cwd = Some(
            a.cwd
                .as_deref()
                .map(resolve)
                .unwrap_or_else(|| workspace.clone())
                .display()
                .to_string(),
        );
    } else {
        if !a.argv.is_empty() {
            bail!("--argv only applies to --op exec");
        }
        if action.path.is_none() {
            bail!("--op {op} needs --path");
        }
        if op == Op::Rename && action.path2.is_none() {
            bail!("--op rename needs --dest");
        }
    }
    let ctx = Context {
        workspace,
        home: a.home.clone().unwrap_or_else(home_dir),
        trace_path: a.trace.as_deref().map(absolute),
    };
    // The action model: measure the path now, preview an exec's blast.
    let (facts, blast) = crate::action::standalone(&mut action, &ctx);
    let e = policy.explain_with(&action, &ctx, Some(&facts));
    if a.json {
        let mut j = explain_json(&policy, &action, &e);
        j["measured"] = json!(action.measured);
        j["blast"] = json!(blast);
        let mut out = serde_json::to_string_pretty(&j)?;
        out.push('\n');
        Ok(out)
    } else {
        let mut out = explain_text(&policy, &action, &e);
        if let Some(m) = &action.measured {
            let _ = writeln!(
                out,
                "measured   {} ({}, {}): {}",
                m.recovery.name(),
                m.object.name(),
                m.location.name(),
                m.why
            );
        }
        if let Some(b) = &blast {
            let _ = writeln!(out, "blast      {}", b.describe());
        }
        Ok(out)
    }
}

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

pub(crate) fn describe(a: &Action) -> String {
    let op = a.op.map_or("-", Op::name);
    match subject(a) {
        Some(s) => format!("{op} {s}"),
        None => op.to_owned(),
    }
}

/// What the call acts on, as `abm policy explain` and `abm replay` show
/// it: an exec's words quoted for a shell, `from -> to` for a call with two
/// paths, its path otherwise.
pub(crate) fn subject(a: &Action) -> Option<String> {
    match (&a.argv, &a.path, &a.path2) {
        (Some(argv), _, _) if a.op == Some(Op::Exec) => Some(shell_words(argv)),
        (_, Some(p), Some(d)) => Some(format!("{p} -> {d}")),
        (_, Some(p), None) => Some(p.clone()),
        _ => None,
    }
}

pub(crate) fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%^".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn explain_text(p: &Policy, a: &Action, e: &Explanation) -> String {
    let rules = p.rules();
    let v = &e.verdict;
    let mut s = String::new();
    let _ = writeln!(s, "action     {}", describe(a));
    if let Some(cwd) = &a.cwd {
        let _ = writeln!(s, "           cwd {cwd}");
    }
    if !a.comm.is_empty() {
        let _ = writeln!(s, "           comm {}  uid {}", a.comm, a.uid);
    }
    let _ = writeln!(
        s,
        "verdict    {}  (scope {}, {})",
        treatment_name(v.treatment),
        scope_name(v.scope),
        irreversibility_name(v.irreversibility)
    );
    match e.decided_by.map(|i| &rules[i]) {
        Some(r) => {
            let _ = writeln!(
                s,
                "rule       {}  ({}, severity {})",
                r.id,
                r.origin,
                r.severity.name()
            );
            let _ = writeln!(s, "reason     {}", r.reason);
            let _ = writeln!(s, "matched    ops [{}]", ops_list(r));
            for c in &r.conditions {
                let _ = writeln!(s, "           \u{2713} {c}");
            }
            if r.scope.is_none() || r.irreversibility.is_none() {
                let _ = writeln!(
                    s,
                    "           (scope{} derived from the action)",
                    if r.irreversibility.is_none() {
                        " and irreversibility"
                    } else {
                        ""
                    }
                );
            }
        }
        None => {
            let _ = writeln!(s, "rule       default (no rule matched)");
            let _ = writeln!(s, "reason     {}", v.reason);
        }
    }
    let shadowed: Vec<&Rule> = e.matched.iter().skip(1).map(|m| &rules[m.rule]).collect();
    if !shadowed.is_empty() {
        let _ = writeln!(s, "also matched, later in precedence:");
        for r in shadowed {
            let _ = writeln!(
                s,
                "  {} -> {}  ({})",
                r.id,
                treatment_name(r.treatment),
                r.origin
            );
        }
    }
    if !e.near_misses.is_empty() {
        let _ = writeln!(s, "near misses (one test failed):");
        for m in e.near_misses.iter().take(8) {
            let r = &rules[m.rule];
            let _ = writeln!(
                s,
                "  {} -> {}  ({})",
                r.id,
                treatment_name(r.treatment),
                r.origin
            );
            if !m.op_matched {
                let _ = writeln!(s, "      \u{2717} ops [{}]", ops_list(r));
            }
            for (c, ok) in r.conditions.iter().zip(&m.conditions) {
                if !ok {
                    let _ = writeln!(s, "      \u{2717} {c}");
                }
            }
        }
        if e.near_misses.len() > 8 {
            let _ = writeln!(s, "  ... and {} more", e.near_misses.len() - 8);
        }
    }
    s
}

fn ops_list(r: &Rule) -> String {
    r.ops
        .iter()
        .map(|o| o.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn rule_json(r: &Rule) -> Value {
    json!({
        "id": r.id,
        "reason": r.reason,
        "ops": r.ops,
        "treatment": r.treatment,
        "scope": r.scope,
        "irreversibility": r.irreversibility,
        "severity": r.severity,
        "tags": r.tags,
        "priority": r.priority,
        "origin": r.origin,
        "conditions": r.conditions.iter().map(|c| json!({
            "field": c.field.name(),
            "operator": c.operator.name(),
            "names": c.names,
            "values": c.values,
        })).collect::<Vec<_>>(),
    })
}

fn explain_json(p: &Policy, a: &Action, e: &Explanation) -> Value {
    let rules = p.rules();
    let check = |m: &RuleCheck| {
        let r = &rules[m.rule];
        json!({
            "rule": r.id,
            "origin": r.origin,
            "treatment": r.treatment,
            "op_matched": m.op_matched,
            "conditions": r.conditions.iter().zip(&m.conditions).map(|(c, ok)| json!({
                "test": c.to_string(),
                "matched": ok,
            })).collect::<Vec<_>>(),
        })
    };
    json!({
        "action": a,
        "verdict": e.verdict,
        "decided_by": e.decided_by.map(|i| rule_json(&rules[i])),
        "matched": e.matched.iter().map(check).collect::<Vec<_>>(),
        "near_misses": e.near_misses.iter().map(check).collect::<Vec<_>>(),
        "policy_digest": p.digest(),
    })
}

fn show(a: ShowArgs) -> anyhow::Result<i32> {
    let p = a.select.load()?;
    if a.source {
        for (origin, text) in p.sources() {
            println!("# ---- {origin}");
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
        }
        return Ok(0);
    }
    if a.json {
        let out = json!({
            "digest": p.digest(),
            "rules": p.rules().iter().map(rule_json).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!(
        "{:<4} {:<40} {:<9} {:<11} {:<9} {:<8} ORIGIN",
        "#", "RULE", "TREATMENT", "SCOPE", "SEVERITY", "PRIORITY"
    );
    for (i, r) in p.rules().iter().enumerate() {
        println!(
            "{:<4} {:<40} {:<9} {:<11} {:<9} {:<8} {}",
            i + 1,
            r.id,
            treatment_name(r.treatment),
            r.scope.map_or("(derived)", scope_name),
            r.severity.name(),
            r.priority,
            r.origin
        );
    }
    println!("{} rules, digest {}", p.rules().len(), p.digest());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::replay::{replay, replay_json, replay_report, replay_text, ENVELOPE};
    use super::*;
    use clap::Parser;
    use std::collections::BTreeMap;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Cmd {
        Policy(PolicyArgs),
        Replay(ReplayArgs),
    }

    #[test]
    fn cli_definitions_are_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn argv_takes_the_rest_of_the_line() {
        let cli = Cli::try_parse_from([
            "abm",
            "policy",
            "explain",
            "--workspace",
            "/w",
            "--argv",
            "kubectl",
            "--context",
            "prod",
            "delete",
            "pod",
            "x",
        ])
        .unwrap();
        let Cmd::Policy(PolicyArgs {
            command: PolicyCommand::Explain(e),
        }) = cli.cmd
        else {
            panic!("wrong command")
        };
        assert_eq!(
            e.argv,
            ["kubectl", "--context", "prod", "delete", "pod", "x"]
        );
        assert_eq!(e.workspace.as_deref(), Some(Path::new("/w")));
        assert_eq!(e.result, CallResult(None));
    }

    #[test]
    fn explain_text_names_rule_and_tests() {
        let p = Policy::default_pack();
        let a = crate::policy::pack_tests::act("exec kubectl --context prod delete deploy api", "");
        let e = p.explain(&a, &crate::policy::pack_tests::ctx());
        let text = explain_text(&p, &a, &e);
        assert!(
            text.contains("verdict    confirm  (scope production, irreversible)"),
            "{text}"
        );
        assert!(
            text.contains("rule       deploy.kubectl-delete-prod  (policies/default.toml:"),
            "{text}"
        );
        assert!(
            text.contains("\u{2713} subcommand equal [delete, drain]"),
            "{text}"
        );
        assert!(
            text.contains("also matched, later in precedence:\n  deploy.kubectl-delete -> audit"),
            "{text}"
        );
        assert!(
            text.contains("\u{2717} subcommand equal [apply, create,"),
            "{text}"
        );
    }

    /// The `abm policy explain` examples in docs/policy.md are real output.
    #[test]
    fn documented_explain_examples_are_current() {
        let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policy.md");
        let doc = std::fs::read_to_string(&doc_path).unwrap();
        let mut checked = 0;
        for block in doc.split("```text\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let Some(rest) = block.strip_prefix("$ abm policy explain ") else {
                continue;
            };
            let (cmd, shown) = rest.split_once('\n').unwrap();
            let mut argv = vec!["abm", "policy", "explain"];
            argv.extend(cmd.split_whitespace());
            let Cmd::Policy(PolicyArgs {
                command: PolicyCommand::Explain(e),
            }) = Cli::try_parse_from(&argv).unwrap().cmd
            else {
                panic!("not an explain command: {cmd}")
            };
            let actual = explain_output(&e).unwrap();
            assert_eq!(
                shown, actual,
                "docs/policy.md is out of date for `abm policy explain {cmd}`; replace the example with:\n{actual}"
            );
            checked += 1;
        }
        assert!(checked >= 3, "found {checked} examples");
    }

    fn write_trace(dir: &Path) -> PathBuf {
        let path = dir.join("trace.jsonl");
        let lines = [
            json!({"type": "header", "v": 1, "seq": 0, "workspace": "/home/dev/proj", "home": "/home/dev"}),
            json!({"type": "event", "seq": 1, "prev": "00", "hash": "aa", "op": "exec", "syscall": "execve",
                   "ktime_ns": 1, "time": "t", "pid": 2, "tid": 2, "ppid": 1, "uid": 1000, "gid": 1000,
                   "comm": "bash", "cgroup_id": 7, "path": "/usr/bin/git", "cwd": "/home/dev/proj",
                   "argv": ["git", "push", "--force", "origin", "main"], "result": 0,
                   "verdict": {"rule": "default", "treatment": "accept", "irreversibility": "reversible",
                               "scope": "workspace", "reason": "old"}}),
            json!({"type": "event", "seq": 2, "prev": "aa", "hash": "bb", "op": "fork", "syscall": "",
                   "ktime_ns": 2, "time": "t", "pid": 3, "tid": 3, "ppid": 2, "uid": 1000, "gid": 1000,
                   "comm": "bash", "cgroup_id": 7, "result": 0}),
            json!({"type": "event", "seq": 3, "prev": "bb", "hash": "cc", "op": "unlink", "syscall": "unlinkat",
                   "ktime_ns": 3, "time": "t", "pid": 3, "tid": 3, "ppid": 2, "uid": 1000, "gid": 1000,
                   "comm": "rm", "cgroup_id": 7, "path": "/home/dev/proj/src/a.rs", "result": 0}),
            json!({"type": "loss", "seq": 4, "lost": 3}),
        ];
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str("{not json\n");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn replay_args(trace: PathBuf) -> ReplayArgs {
        ReplayArgs {
            select: PolicySelect {
                policy: vec![],
                on_default: false,
            },
            json: false,
            workspace: None,
            home: None,
            changed: false,
            trace,
        }
    }

    #[test]
    fn replay_rejudges_events_with_the_header_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let args = replay_args(write_trace(dir.path()));
        let policy = Policy::default_pack();
        let r = replay_report(&args, &policy).unwrap();
        assert_eq!(r.ctx.workspace, Path::new("/home/dev/proj"));
        assert_eq!(r.ctx.home, Path::new("/home/dev"));
        assert_eq!((r.rows.len(), r.lifecycle, r.bad_lines.len()), (2, 1, 1));
        assert!(r.bad_lines[0].starts_with("line 6: "), "{:?}", r.bad_lines);
        let push = &r.rows[0];
        assert_eq!(push.seq, Some(1));
        assert_eq!(push.new.rule, "repo.push-force-protected");
        assert_eq!(push.old.as_ref().unwrap().treatment, Treatment::Accept);
        assert!(push.changed());
        let unlink = &r.rows[1];
        assert_eq!(
            (unlink.new.rule.as_str(), unlink.new.scope),
            ("default", Scope::Workspace)
        );
        assert!(!unlink.changed());
        assert_eq!(r.changed(), 1);
        assert_eq!(
            r.by_treatment(),
            BTreeMap::from([("accept", 1), ("confirm", 1)])
        );

        let text = replay_text(&args, &r);
        assert!(
            text.contains("*accept    repo.push-force-protected"),
            "{text}"
        );
        assert!(
            text.contains("by scope:     shared 1, workspace 1"),
            "{text}"
        );
        let mut only_changed = replay_args(args.trace.clone());
        only_changed.changed = true;
        let json = replay_json(&only_changed, &r);
        assert_eq!(json["events"].as_array().unwrap().len(), 1);
        assert_eq!(json["events"][0]["new"]["treatment"], "confirm");
        assert_eq!(json["total"], 2);
        assert_eq!(replay(args).unwrap(), 0);
    }

    /// The verdict of an exec decided on its preview (`git reset --hard`
    /// over a modified file) is decided again on the preview the record
    /// carries, not on today's file system (where the repository is gone).
    #[test]
    fn replay_decides_an_exec_on_the_preview_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let exec = |seq: u64, pid: u32, preview: Option<Value>| {
            let mut e = json!({"type": "event", "seq": seq, "op": "exec", "syscall": "execve",
                "ktime_ns": seq, "time": "t", "pid": pid, "tid": pid, "ppid": 1, "uid": 0, "gid": 0,
                "comm": "bash", "cgroup_id": 7, "path": "/usr/bin/git", "cwd": "/gone/proj",
                "argv": ["git", "reset", "--hard"], "result": 0,
                "verdict": {"rule": "repo.reset-hard", "treatment": "confirm",
                            "irreversibility": "irreversible", "scope": "workspace", "reason": "r"}});
            if let Some(p) = preview {
                e["preview"] = p;
            }
            e
        };
        let lines = [
            json!({"type": "header", "v": 1, "seq": 0, "workspace": "/gone/proj", "home": "/gone"}),
            exec(
                1,
                2,
                Some(
                    json!({"files": 3, "irreversible": 1, "untracked": 0, "modified": 1,
                "git_internal": 0, "outside": 0, "recoverable": 2, "reversible": 0, "unmeasured": 0}),
                ),
            ),
            exec(2, 3, None),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let r = replay_report(&replay_args(path), &Policy::default_pack()).unwrap();
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].new.rule, "repo.reset-hard");
        assert_eq!(r.rows[0].new.treatment, Treatment::Confirm);
        assert!(!r.rows[0].changed());
        assert!(
            r.rows[0].new.reason.contains("1 modified since the index"),
            "{}",
            r.rows[0].new.reason
        );
        // No preview recorded: nothing known to be lost.
        assert_eq!(r.rows[1].new.treatment, Treatment::Accept);
        assert!(r.rows[1].changed());
    }

    #[test]
    fn replay_workspace_flag_overrides_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut args = replay_args(write_trace(dir.path()));
        args.workspace = Some("/elsewhere".into());
        let r = replay_report(&args, &Policy::default_pack()).unwrap();
        assert_eq!(r.rows[1].new.scope, Scope::Shared);
    }

    #[test]
    fn replay_envelope_is_stripped_before_decoding() {
        let line = json!({"type": "event", "seq": 9, "prev": "x", "hash": "y", "v": 1, "mac": "z",
                          "op": "write", "syscall": "openat", "ktime_ns": 0, "time": "", "pid": 1, "tid": 1,
                          "ppid": 0, "uid": 0, "gid": 0, "comm": "sh", "cgroup_id": 0, "path": "/tmp/x"});
        let Value::Object(mut obj) = line else {
            unreachable!()
        };
        for k in ENVELOPE {
            obj.remove(k);
        }
        let a: Action = serde_json::from_value(Value::Object(obj)).unwrap();
        assert_eq!(a.path.as_deref(), Some("/tmp/x"));
    }
}
