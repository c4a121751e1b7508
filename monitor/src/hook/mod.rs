//! `abm hook`: the agent harness's side of the loop.
//!
//! A harness (Claude Code, or any agent loop with a pre/post tool-call
//! hook) runs `abm hook claude-code` (or `abm hook json`) with a JSON
//! description of the tool call on stdin:
//!
//! - before a shell command runs (PreToolUse), abm splits the command line
//!   into simple commands ([`shell`]), judges each one's argv with the
//!   policy's exec rules (each `>` target as a truncation, and the file
//!   operands of `rm`, `rmdir`, `mv`, `chmod`... as the calls they would
//!   make, see [`file_effects`]) and answers
//!   `deny` (a `deny` verdict), `ask` (a `confirm` verdict) or `allow`,
//!   with the rule ids and reasons, in the harness's own JSON. A line that
//!   could not be fully parsed is never answered `allow`: the harness's
//!   own permission flow decides, and the reason says what was not parsed.
//! - after it ran (PostToolUse), abm asks the enforcing run's control
//!   socket for the verdicts and enforcement decisions of the actions in
//!   the call's time window (from the PreToolUse of the same tool call to
//!   now) and returns them as context for the model; a refused call turns
//!   into `decision: "block"` with the reason.
//!
//! docs/agents.md shows the wiring.
use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::{
    core::monotonic_ns,
    policy::{Context, Policy},
    record::{Op, Treatment, Verdict},
};

mod effects;
pub mod shell;

use effects::{exec_action, file_action, file_effects, join};

/// `abm hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub format: Format,
}

#[derive(Debug, clap::Subcommand)]
pub enum Format {
    /// Claude Code hook (PreToolUse/PostToolUse of the Bash tool): reads
    /// the hook input JSON on stdin, writes the hook output JSON on stdout.
    ClaudeCode(Opts),
    /// Generic form: stdin `{"phase":"pre"|"post","command":"...",
    /// "cwd":"...","call_id":"..."}`, stdout
    /// `{"decision":"allow"|"ask"|"deny"|"none","reason":"...",...}`.
    Json(Opts),
}

#[derive(Debug, Clone, clap::Args)]
pub struct Opts {
    /// Policy file(s), merged in order. Default: the built-in pack.
    #[arg(long = "policy", value_name = "FILE")]
    pub policy: Vec<PathBuf>,
    /// The `${workspace}` root. Default: the tool call's `cwd`.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Control socket of the enforcing run (PostToolUse). Default: every
    /// live run under /run/abm.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Never answer `allow` (only `ask`/`deny`, or no decision): the
    /// harness's own permission rules stay in charge of everything else.
    #[arg(long)]
    pub no_allow: bool,
    /// Where PreToolUse remembers when a call started, for PostToolUse.
    /// Default: /run/abm/hooks as root, else $TMPDIR/abm-hooks-<uid>.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// PostToolUse without a matching PreToolUse: look this many seconds
    /// back.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub window: f64,
}

/// The judgment of one command line.
#[derive(Debug)]
pub struct Judged {
    pub decision: &'static str,
    /// The worst treatment of the judged actions: what the run gives.
    pub treatment: Treatment,
    pub reason: String,
    pub commands: Vec<Value>,
    pub unparsed: Vec<String>,
}

/// Judges a shell command line before it runs, with the judge the run
/// uses ([`crate::action::Judge`], as the seccomp supervisor does before a
/// call): each simple command's exec (its blast radius previewed on the
/// tree as it is now: `git reset --hard`, `git checkout .`, `git clean`,
/// `rm -r`), then the calls it would make, measured on the file system
/// (each `>` target as a truncating open, the files an `rm -r` would
/// unlink, the destinations of `mv`, `cp`, `dd`, `tee`, `sed -i`). The
/// worst verdict decides, so the answer is the treatment the run then
/// gives the same action. Git objects written and files born since
/// `since` (the agent session's start) are the session's own, as a run's
/// are its own.
pub fn judge_command(
    command: &str,
    cwd: &Path,
    policy: &Policy,
    ctx: &Context,
    allow: bool,
    since: Option<std::time::SystemTime>,
) -> Judged {
    let parsed = shell::split(command);
    let mut judge = crate::action::Judge::ahead(ctx);
    if let Some(t) = since {
        judge.measurer.since = t;
        // What the session created since is its own (the run sees each
        // creation; the hook sees the file's birth time).
        judge.measurer.born_own = true;
    }
    let mut worst: Option<(Treatment, Verdict, String)> = None;
    let mut commands = Vec::new();
    let mut flagged = Vec::new();
    // Each simple command is its own process (and so its own action);
    // the shell's redirections are the shell's.
    let shell_pid = 1 << 30;
    for (i, c) in parsed.commands.iter().enumerate() {
        let pid = shell_pid + 1 + i as u32;
        let mut acts = Vec::new();
        if !c.argv.is_empty() {
            acts.push(exec_action(&c.argv, cwd, pid));
        }
        acts.extend(file_effects(&c.argv, cwd, pid));
        for (paths, op, flags) in [
            (
                &c.truncates,
                Op::Truncate,
                &["O_WRONLY", "O_CREAT", "O_TRUNC"][..],
            ),
            (
                &c.appends,
                Op::Write,
                &["O_WRONLY", "O_CREAT", "O_APPEND"][..],
            ),
        ] {
            for p in paths.iter().filter(|p| !p.starts_with("/dev/")) {
                acts.push(file_action(op, &join(cwd, p), None, flags, shell_pid));
            }
        }
        for mut a in acts {
            judge.judge(&mut a, policy, ctx);
            let v = a.verdict.take().unwrap_or_else(|| policy.evaluate(&a, ctx));
            let what = match a.op {
                Some(Op::Exec) => c.to_string(),
                Some(Op::Rename) => format!(
                    "rename {} -> {}",
                    a.path.as_deref().unwrap_or(""),
                    a.path2.as_deref().unwrap_or("")
                ),
                Some(op) => format!("{op} {}", a.path.as_deref().unwrap_or("")),
                None => String::new(),
            };
            commands.push(json!({
                "command": what,
                "argv": a.argv,
                "path": a.path,
                "rule": v.rule,
                "treatment": v.treatment,
                "reason": v.reason,
                "measured": a.measured,
            }));
            if v.treatment >= Treatment::Audit && flagged.len() < 20 {
                flagged.push(format!(
                    "`{what}`: {} by {} ({})",
                    format!("{:?}", v.treatment).to_lowercase(),
                    v.rule,
                    v.reason
                ));
            }
            if worst.as_ref().is_none_or(|(t, _, _)| v.treatment > *t) {
                worst = Some((v.treatment, v, what));
            }
        }
    }
    let unparsed_note = if parsed.fully_parsed() {
        String::new()
    } else {
        format!(
            " Not fully parsed ({}): only the words abm could read were judged.",
            parsed.unparsed.join(", ")
        )
    };
    let (decision, reason) = match &worst {
        Some((Treatment::Deny, v, what)) => (
            "deny",
            format!(
                "abm: the policy denies `{what}` ({}: {}). Do not retry or work around it; ask the user.{unparsed_note}",
                v.rule, v.reason
            ),
        ),
        Some((Treatment::Confirm, v, what)) => (
            "ask",
            format!(
                "abm: `{what}` needs the user's confirmation ({}: {}).{unparsed_note}",
                v.rule, v.reason
            ),
        ),
        // The run keeps a copy before the call (`--enforce`) and lets it
        // through: the harness need not ask, but the model is told.
        Some((Treatment::Preserve, v, what)) if parsed.fully_parsed() && allow => (
            "allow",
            format!(
                "abm: `{what}` destroys work that exists nowhere else; the run keeps a copy first ({}: {}).",
                v.rule, v.reason
            ),
        ),
        _ if !parsed.fully_parsed() || !allow => (
            "none",
            format!(
                "abm: nothing in the command is denied or needs confirmation.{unparsed_note}"
            ),
        ),
        _ => (
            "allow",
            "abm: nothing in the command is denied or needs confirmation.".to_owned(),
        ),
    };
    let reason = if flagged.len() < 2 {
        reason
    } else {
        format!("{reason} Judged: {}.", flagged.join("; "))
    };
    Judged {
        decision,
        treatment: worst.as_ref().map_or(Treatment::Accept, |(t, _, _)| *t),
        reason,
        commands,
        unparsed: parsed.unparsed,
    }
}

/// A tool call, in harness-independent form.
struct Call {
    phase: Phase,
    command: Option<String>,
    cwd: PathBuf,
    /// Session and call ids: the key PreToolUse and PostToolUse share.
    key: Option<String>,
    /// The agent session (Claude Code's `session_id`, the JSON format's
    /// `session`): what it made since its first call is its own.
    session: Option<String>,
    /// The tool's outcome (PostToolUse), as the harness gave it.
    response: Value,
    /// Whether the tool is a shell (Claude Code: `Bash`).
    shell_tool: bool,
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Phase {
    Pre,
    Post,
    Other,
}

fn read_stdin() -> anyhow::Result<Value> {
    let mut s = String::new();
    std::io::stdin()
        .take(16 << 20)
        .read_to_string(&mut s)
        .context("reading the hook input on stdin")?;
    serde_json::from_str(&s).with_context(|| {
        format!(
            "the hook input on stdin is not JSON (got {} bytes starting {:?})",
            s.len(),
            s.chars().take(60).collect::<String>()
        )
    })
}

fn claude_call(v: &Value) -> anyhow::Result<Call> {
    let event = v["hook_event_name"].as_str().with_context(|| {
        "the hook input has no `hook_event_name` (is this a Claude Code hook input?)"
    })?;
    let phase = match event {
        "PreToolUse" => Phase::Pre,
        "PostToolUse" | "PostToolUseFailure" => Phase::Post,
        _ => Phase::Other,
    };
    let key = match (v["session_id"].as_str(), v["tool_use_id"].as_str()) {
        (Some(s), Some(t)) => Some(format!("{s}-{t}")),
        (Some(s), None) => Some(s.to_owned()),
        _ => None,
    };
    Ok(Call {
        phase,
        command: v["tool_input"]["command"].as_str().map(str::to_owned),
        cwd: v["cwd"]
            .as_str()
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))),
        key,
        session: v["session_id"].as_str().map(str::to_owned),
        response: v["tool_response"].clone(),
        shell_tool: v["tool_name"].as_str() == Some("Bash"),
    })
}

fn json_call(v: &Value) -> anyhow::Result<Call> {
    let phase = match v["phase"].as_str() {
        Some("pre") => Phase::Pre,
        Some("post") => Phase::Post,
        other => bail!("`phase` must be \"pre\" or \"post\" (got {other:?})"),
    };
    Ok(Call {
        phase,
        command: v["command"].as_str().map(str::to_owned),
        cwd: v["cwd"]
            .as_str()
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))),
        key: v["call_id"].as_str().map(str::to_owned),
        session: v["session"].as_str().map(str::to_owned),
        response: Value::Null,
        shell_tool: true,
    })
}

/// `abm hook ...`: prints the answer JSON; exit code 0.
pub fn hook(a: HookArgs) -> anyhow::Result<i32> {
    let input = read_stdin()?;
    let (claude, opts) = match &a.format {
        Format::ClaudeCode(o) => (true, o),
        Format::Json(o) => (false, o),
    };
    let call = if claude {
        claude_call(&input)?
    } else {
        json_call(&input)?
    };
    let out = match call.phase {
        Phase::Pre => pre(&call, opts, claude)?,
        Phase::Post => post(&call, opts, claude)?,
        Phase::Other => json!({}),
    };
    crate::outln!("{out}")?;
    Ok(0)
}

fn load_policy(files: &[PathBuf]) -> anyhow::Result<Policy> {
    if files.is_empty() {
        Ok(Policy::default_pack())
    } else {
        Policy::load(files).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

fn pre(call: &Call, opts: &Opts, claude: bool) -> anyhow::Result<Value> {
    if let Some(k) = &call.key {
        remember_start(opts, k);
    }
    let Some(command) = call.command.as_deref().filter(|_| call.shell_tool) else {
        // Not a shell command: nothing for abm to judge.
        return Ok(json!({}));
    };
    let policy = load_policy(&opts.policy)?;
    let workspace = opts.workspace.clone().unwrap_or_else(|| call.cwd.clone());
    let ctx = Context {
        workspace,
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root")),
        trace_path: None,
    };
    let since = call.session.as_deref().map(|s| session_start(opts, s));
    let j = judge_command(command, &call.cwd, &policy, &ctx, !opts.no_allow, since);
    Ok(if claude {
        if j.decision == "none" {
            json!({ "hookSpecificOutput": { "hookEventName": "PreToolUse", "additionalContext": j.reason } })
        } else {
            json!({ "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": j.decision,
                "permissionDecisionReason": j.reason,
            } })
        }
    } else {
        json!({
            "decision": j.decision,
            "treatment": j.treatment,
            "reason": j.reason,
            "fully_parsed": j.unparsed.is_empty(),
            "not_parsed": j.unparsed,
            "commands": j.commands,
        })
    })
}

fn state_dir(opts: &Opts) -> PathBuf {
    opts.state_dir.clone().unwrap_or_else(|| {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        if uid == 0 {
            PathBuf::from("/run/abm/hooks")
        } else {
            std::env::temp_dir().join(format!("abm-hooks-{uid}"))
        }
    })
}

fn state_file(opts: &Opts, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(200)
        .collect();
    state_dir(opts).join(safe)
}

/// When the agent session `session` started, as this hook first saw it
/// (kept in the state directory): what the session made since is its own.
fn session_start(opts: &Opts, session: &str) -> std::time::SystemTime {
    use std::time::{Duration, UNIX_EPOCH};
    let f = state_file(opts, &format!("session-{session}"));
    if let Some(ns) = std::fs::read_to_string(&f)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
    {
        return UNIX_EPOCH + Duration::from_nanos(ns);
    }
    // The clock birth times are stamped with: a file the session makes at
    // once is not born "before" its start.
    let now = crate::core::clock::realtime_coarse();
    let ns = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    write_state(&f, ns, "the start of the session");
    now
}

/// Writes `value` to state file `f` (its directory made private first);
/// `what` names it in the warning when that fails.
fn write_state(f: &Path, value: u64, what: &str) {
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(d) = f.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(d);
    }
    if let Err(e) = std::fs::write(f, value.to_string()) {
        tracing::warn!("cannot remember {what} in {}: {e}", f.display());
    }
}

/// PreToolUse: when this call started (CLOCK_MONOTONIC), for PostToolUse.
fn remember_start(opts: &Opts, key: &str) {
    write_state(
        &state_file(opts, key),
        monotonic_ns(),
        "the start of the tool call",
    );
}

fn post(call: &Call, opts: &Opts, claude: bool) -> anyhow::Result<Value> {
    let now = monotonic_ns();
    let since = call
        .key
        .as_ref()
        .and_then(|k| {
            let f = state_file(opts, k);
            let t = std::fs::read_to_string(&f).ok()?.trim().parse::<u64>().ok();
            let _ = std::fs::remove_file(&f);
            t
        })
        .unwrap_or_else(|| now.saturating_sub((opts.window.max(0.0) * 1e9) as u64));
    let sockets = match &opts.socket {
        Some(s) => vec![s.clone()],
        None => crate::enforce::live_sockets(),
    };
    let mut records = Vec::new();
    let mut pending = Vec::new();
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    for s in &sockets {
        let req = json!({ "op": "recent", "since_ns": since, "until_ns": now });
        match crate::enforce::control::request(s, &req) {
            Ok(v) if v["ok"] == true => {
                runs.push(v["run"].as_str().unwrap_or("?").to_owned());
                records.extend(v["records"].as_array().cloned().unwrap_or_default());
                pending.extend(v["pending"].as_array().cloned().unwrap_or_default());
            }
            Ok(v) => errors.push(format!(
                "{}: {}",
                s.display(),
                v["error"].as_str().unwrap_or("error")
            )),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if opts.socket.is_some() {
        if let Some(e) = errors.first() {
            bail!("{e}");
        }
    }
    let report = summarize(&records, &pending);
    let _ = &call.response;
    Ok(if claude {
        let mut out = json!({});
        if let Some(ctx) = &report.context {
            out["hookSpecificOutput"] =
                json!({ "hookEventName": "PostToolUse", "additionalContext": ctx });
        }
        if let Some(r) = &report.block {
            out["decision"] = json!("block");
            out["reason"] = json!(r);
        }
        out
    } else {
        json!({
            "runs": runs,
            "refused": report.refused,
            "flagged": report.flagged,
            "records": records,
            "pending": pending,
            "context": report.context,
            "block_reason": report.block,
        })
    })
}

struct Report {
    context: Option<String>,
    block: Option<String>,
    refused: usize,
    flagged: usize,
}

/// The lines the model reads after a call.
fn summarize(records: &[Value], pending: &[Value]) -> Report {
    let mut lines = Vec::new();
    let mut refused = Vec::new();
    let mut flagged = 0;
    for r in records {
        let v = &r["verdict"];
        let e = &r["enforcement"];
        let treatment = v["treatment"].as_str().unwrap_or("accept");
        if treatment == "accept" && e.is_null() {
            continue;
        }
        flagged += 1;
        let what = match r["op"].as_str() {
            Some("exec") => r["argv"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default(),
            Some("rename") => format!(
                "{} -> {}",
                r["path"].as_str().unwrap_or("?"),
                r["path2"].as_str().unwrap_or("?")
            ),
            _ => r["path"].as_str().unwrap_or("").to_owned(),
        };
        let decision = e["decision"].as_str();
        let line = format!(
            "{} {what}: {treatment} by {} ({}){}",
            r["op"].as_str().unwrap_or("?"),
            v["rule"].as_str().unwrap_or("?"),
            v["reason"].as_str().unwrap_or(""),
            decision
                .map(|d| format!(
                    ", enforcement: {d}{}",
                    e["request"]
                        .as_u64()
                        .map(|i| format!(" (request {i})"))
                        .unwrap_or_default()
                ))
                .unwrap_or_default()
        );
        if matches!(
            decision,
            Some("denied" | "timeout" | "refused" | "pending_confirmation")
        ) {
            let hint = match (decision, e["request"].as_u64()) {
                (Some("denied"), None) => {
                    " No approval path: ask the user to change the policy.".to_owned()
                }
                (_, Some(id)) => format!(" The user can allow it with: abm approve {id}"),
                _ => String::new(),
            };
            refused.push(format!("{line}.{hint}"));
        }
        if lines.len() < 30 {
            lines.push(line);
        }
    }
    if flagged > lines.len() {
        lines.push(format!("... and {} more", flagged - lines.len()));
    }
    for p in pending {
        lines.push(format!(
            "waiting for the user: request {} {} ({}: {})",
            p["id"],
            p["what"].as_str().unwrap_or(""),
            p["rule"].as_str().unwrap_or(""),
            p["reason"].as_str().unwrap_or("")
        ));
    }
    let context = (!lines.is_empty())
        .then(|| format!("abm recorded during this call:\n{}", lines.join("\n")));
    let block = (!refused.is_empty()).then(|| {
        format!(
            "abm refused {} action(s) of this command; do not retry or work around them, ask the user:\n{}",
            refused.len(),
            refused.join("\n")
        )
    });
    Report {
        context,
        block,
        refused: refused.len(),
        flagged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(cmd: &str) -> Judged {
        let ctx = Context {
            workspace: PathBuf::from("/w"),
            home: PathBuf::from("/root"),
            trace_path: None,
        };
        judge_command(
            cmd,
            Path::new("/w"),
            &Policy::default_pack(),
            &ctx,
            true,
            None,
        )
    }

    /// A session's scratch file is its own to remove, as the run judges a
    /// file it saw created; a file from before the session is not.
    #[test]
    fn files_born_in_the_session_are_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let git = |args: &[&str]| {
            let st = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
                .arg(&ws)
                .args(args)
                .output()
                .unwrap();
            assert!(st.status.success(), "{st:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(ws.join("tracked.txt"), "t").unwrap();
        git(&["add", "tracked.txt"]);
        git(&["commit", "-q", "-m", "i"]);
        std::fs::write(ws.join("notes.txt"), "the user's").unwrap();
        // Birth times come from a coarse clock: let it pass the start.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let since = std::time::SystemTime::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        std::fs::write(ws.join("scratch.py"), "print(1)").unwrap();
        let ctx = Context {
            workspace: ws.clone(),
            home: tmp.path().join("home"),
            trace_path: None,
        };
        let policy = Policy::default_pack();
        let j = |cmd: &str, since| judge_command(cmd, &ws, &policy, &ctx, true, since);
        let born = std::fs::metadata(ws.join("scratch.py")).and_then(|m| m.created());
        assert!(born.is_ok(), "the test's file system keeps no birth time");
        assert_eq!(j("rm scratch.py", Some(since)).decision, "allow");
        assert_eq!(j("rm scratch.py", None).decision, "ask");
        assert_eq!(j("rm notes.txt", Some(since)).decision, "ask");
    }

    #[test]
    fn default_pack_answers() {
        let j = judge("git status && git push --force origin main");
        assert_eq!(j.decision, "ask", "{}", j.reason);
        assert!(j.reason.contains("repo.push-force"), "{}", j.reason);
        let j = judge("ls -la && cat README.md");
        assert_eq!(j.decision, "allow", "{}", j.reason);
        let j = judge("echo $(git push --force origin main)");
        assert_eq!(j.decision, "ask", "{}", j.reason);
        assert!(
            j.reason.contains("Not fully parsed (command substitution"),
            "{}",
            j.reason
        );
        let j = judge("ls $DIR");
        assert_eq!(j.decision, "none", "{}", j.reason);
        // A path rule answers for `rm` of a system directory's files.
        let j = judge("sudo rm -rf /usr/lib/python3");
        assert_ne!(j.decision, "allow", "{}", j.reason);
        assert!(j.reason.contains("host."), "{}", j.reason);
        let j = judge("echo hi > /dev/null");
        assert_eq!(j.decision, "allow", "{}", j.reason);
    }

    #[test]
    fn post_summary_blocks_on_refusals() {
        let recs = vec![
            json!({"op":"unlink","path":"/w/.git/HEAD","verdict":{"rule":"r.x","treatment":"deny","reason":"why"},
                   "enforcement":{"decision":"denied"}}),
            json!({"op":"exec","argv":["ls"],"verdict":{"rule":"default","treatment":"accept","reason":""}}),
        ];
        let r = summarize(&recs, &[]);
        assert_eq!(r.refused, 1);
        assert_eq!(r.flagged, 1);
        let b = r.block.unwrap();
        assert!(
            b.contains("unlink /w/.git/HEAD: deny by r.x (why), enforcement: denied"),
            "{b}"
        );
        assert!(b.contains("No approval path"), "{b}");
        let r = summarize(&recs[1..], &[]);
        assert!(r.block.is_none() && r.context.is_none());
    }
}
