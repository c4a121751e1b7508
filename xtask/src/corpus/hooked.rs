//! The hook against the run: a session run once more, unmonitored, with a
//! bash DEBUG trap that gives every simple command, as written, to `abm
//! hook json` just before it runs (as an agent harness's PreToolUse hook
//! does), and the answers compared with the treatment the observe run gave
//! the same command in the same state (sessions are deterministic: the
//! hooked run reaches every command in the state the observe run did).
//!
//! Matching: each command the hook judged as a program (`argv`) is paired
//! with the observe run's next action of the same command line in the same
//! directory (actions in the order they began); each file effect the shell
//! itself makes (a `>` target) with the run's next record of that path.
//! The hook's treatment of the simple command (the worst over what it
//! judged) is compared with the worst the run gave what it was paired
//! with. Commands the run never executed (shell builtins), and commands
//! whose text has words the hook cannot read (`$x`, globs), are counted as
//! not comparable, not as differences.
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::Value;

/// The bash text that installs the trap: `abm hook json` for each simple
/// command, its answer appended to `log` as `{"command","cwd","answer"}`.
/// `args` go to `abm hook json` as they go to `abm run` (`--workspace`,
/// `--policy`). The hook remembers its session in `state` (objects the
/// session made are its own, as a run's are).
pub fn trap_script(abm: &Path, args: &[String], log: &Path, state: &Path, session: &str) -> String {
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let args: String = args
        .iter()
        .map(|a| format!(" {}", shell_quote(a)))
        .collect();
    format!(
        r#"__abm_json() {{ local s=$1; s=${{s//\\/\\\\}}; s=${{s//\"/\\\"}}; s=${{s//$'\n'/\\n}}; s=${{s//$'\t'/\\t}}; s=${{s//$'\r'/\\r}}; printf '%s' "$s"; }}
__abm_hook() {{
  local c=$BASH_COMMAND d=$PWD a
  case $c in __abm_*|session|'set -T'|'trap '*) return 0 ;; esac
  c=$(__abm_json "$c"); d=$(__abm_json "$d")
  a=$(printf '{{"phase":"pre","command":"%s","cwd":"%s","call_id":"c%s","session":"{session}"}}' "$c" "$d" "$RANDOM$RANDOM" | {abm} hook json{args} --state-dir {state} 2>/dev/null) || a=null
  printf '{{"command":"%s","cwd":"%s","answer":%s}}\n' "$c" "$d" "${{a:-null}}" >> {log}
}}
set -T
trap '__abm_hook' DEBUG
"#,
        abm = q(abm),
        state = q(state),
        log = q(log),
        session = session
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect::<String>(),
    )
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Treatments in the order of their strength (as `Treatment`'s `Ord`).
fn rank(t: &str) -> u8 {
    match t {
        "accept" => 0,
        "audit" => 1,
        "confirm" => 2,
        "preserve" => 3,
        "deny" => 4,
        _ => 0,
    }
}

/// The hook against the run for one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookCompare {
    /// Simple commands compared: those the run executed, and those the
    /// hook did not let pass although the run never executed them.
    pub compared: u64,
    /// Simple commands the run never executed as judged (builtins), or
    /// that the hook could not fully read.
    pub not_comparable: u64,
    /// `command (in cwd): hook TREATMENT (rule) -> run TREATMENT (rule)`.
    pub differences: Vec<String>,
}

struct RunAction {
    treatment: String,
    rule: String,
}

/// Compares the hook log of the hooked run with the observe run's trace.
pub fn compare(hook_log: &str, trace: &str) -> Result<HookCompare> {
    // The observe run: actions by command line and directory, in the order
    // they began; records by path, in trace order.
    let mut notes: Vec<(u64, String, RunAction)> = Vec::new();
    let mut by_path: BTreeMap<String, VecDeque<RunAction>> = BTreeMap::new();
    for (i, line) in trace.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("observe trace line {}: not JSON", i + 1))?;
        if v["type"] == "note" && v["kind"] == "action" {
            let b = &v["body"];
            notes.push((
                b["action"].as_u64().unwrap_or(u64::MAX),
                key(&b["argv"], b["cwd"].as_str().unwrap_or("")),
                RunAction {
                    treatment: b["treatment"].as_str().unwrap_or("accept").into(),
                    rule: b["rule"].as_str().unwrap_or("?").into(),
                },
            ));
        } else if v["type"] == "event" && v["op"] != "exec" {
            if let (Some(p), Some(t)) = (v["path"].as_str(), v["verdict"]["treatment"].as_str()) {
                by_path
                    .entry(p.to_owned())
                    .or_default()
                    .push_back(RunAction {
                        treatment: t.into(),
                        rule: v["verdict"]["rule"].as_str().unwrap_or("?").into(),
                    });
            }
        }
    }
    notes.sort_by_key(|(id, _, _)| *id);
    let mut by_cmd: BTreeMap<String, VecDeque<RunAction>> = BTreeMap::new();
    for (_, k, a) in notes {
        by_cmd.entry(k).or_default().push_back(a);
    }

    let mut out = HookCompare::default();
    for (i, line) in hook_log.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("hook log line {}: not JSON", i + 1))?;
        let answer = &v["answer"];
        let command = v["command"].as_str().unwrap_or("?");
        let cwd = v["cwd"].as_str().unwrap_or("");
        if answer.is_null() {
            out.compared += 1;
            out.differences
                .push(format!("{command} (in {cwd}): the hook gave no answer"));
            continue;
        }
        let fully = answer["fully_parsed"].as_bool().unwrap_or(false);
        let hook_t = answer["treatment"].as_str().unwrap_or("accept");
        // What the run gave the same command: the worst over its pairs.
        let mut run: Option<RunAction> = None;
        for c in answer["commands"].as_array().into_iter().flatten() {
            let paired = if c["argv"].is_array() {
                by_cmd
                    .get_mut(&key(&c["argv"], cwd))
                    .and_then(VecDeque::pop_front)
            } else {
                c["path"]
                    .as_str()
                    .and_then(|p| by_path.get_mut(p))
                    .and_then(VecDeque::pop_front)
            };
            if let Some(p) = paired {
                if run
                    .as_ref()
                    .is_none_or(|r| rank(&p.treatment) > rank(&r.treatment))
                {
                    run = Some(p);
                }
            }
        }
        let hook_rule = answer["commands"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["treatment"] == hook_t)
            .find_map(|c| c["rule"].as_str())
            .unwrap_or("-");
        match run {
            // A line the hook could not read: nothing to compare.
            _ if !fully => out.not_comparable += 1,
            Some(r) => {
                out.compared += 1;
                if rank(&r.treatment) != rank(hook_t) {
                    out.differences.push(format!(
                        "{command} (in {cwd}): hook {hook_t} ({hook_rule}) -> run {} ({})",
                        r.treatment, r.rule
                    ));
                }
            }
            // A builtin (nothing executed) that the hook passes.
            None if rank(hook_t) == 0 => out.not_comparable += 1,
            None => {
                out.compared += 1;
                out.differences.push(format!(
                    "{command} (in {cwd}): hook {hook_t} ({hook_rule}) -> the run recorded nothing for it"
                ))
            }
        }
    }
    Ok(out)
}

fn key(argv: &Value, cwd: &str) -> String {
    let words: Vec<&str> = argv
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!("{} (in {cwd})", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(action: u64, argv: &[&str], treatment: &str, rule: &str) -> String {
        json!({"type": "note", "kind": "action", "body": {"action": action, "argv": argv,
            "cwd": "/w", "treatment": treatment, "rule": rule}})
        .to_string()
    }

    fn hooked(command: &str, fully: bool, treatment: &str, commands: Value) -> String {
        json!({"command": command, "cwd": "/w", "answer": {"fully_parsed": fully,
            "treatment": treatment, "commands": commands}})
        .to_string()
    }

    #[test]
    fn commands_pair_with_the_runs_actions_in_order_and_differences_are_listed() {
        let trace = [
            // Notes come when actions end; pairing follows their start.
            note(9, &["git", "status"], "accept", "default"),
            note(4, &["git", "reset", "--hard"], "confirm", "repo.reset-hard"),
            json!({"type": "event", "op": "open", "path": "/w/c.yaml",
                "verdict": {"treatment": "confirm", "rule": "action.delete-work"}})
            .to_string(),
            note(12, &["git", "status"], "confirm", "x.odd"),
        ]
        .join("\n");
        let log = [
            hooked(
                "git reset --hard",
                true,
                "confirm",
                json!([{"argv": ["git", "reset", "--hard"], "treatment": "confirm", "rule": "repo.reset-hard"}]),
            ),
            hooked(
                "git status",
                true,
                "accept",
                json!([{"argv": ["git", "status"], "treatment": "accept", "rule": "default"}]),
            ),
            hooked(
                ": > c.yaml",
                true,
                "accept",
                json!([{"argv": [":"], "treatment": "accept", "rule": "default"},
                       {"argv": null, "path": "/w/c.yaml", "treatment": "accept", "rule": "default"}]),
            ),
            hooked(
                "git status",
                true,
                "accept",
                json!([{"argv": ["git", "status"], "treatment": "accept", "rule": "default"}]),
            ),
            hooked(
                "rm -rf \"$d\"",
                false,
                "accept",
                json!([{"argv": ["rm", "-rf", "$d"], "treatment": "accept", "rule": "default"}]),
            ),
            hooked(
                "cd sub",
                true,
                "accept",
                json!([{"argv": ["cd", "sub"], "treatment": "accept", "rule": "default"}]),
            ),
            hooked(
                "rm -rf keep",
                true,
                "confirm",
                json!([{"argv": ["rm", "-rf", "keep"], "treatment": "confirm", "rule": "action.delete-work"}]),
            ),
        ]
        .join("\n");
        let c = compare(&log, &trace).unwrap();
        assert_eq!(c.compared, 5, "{c:?}");
        assert_eq!(c.not_comparable, 2, "{c:?}");
        assert_eq!(
            c.differences,
            vec![
                ": > c.yaml (in /w): hook accept (default) -> run confirm (action.delete-work)",
                "git status (in /w): hook accept (default) -> run confirm (x.odd)",
                "rm -rf keep (in /w): hook confirm (action.delete-work) -> the run recorded nothing for it",
            ]
        );
        assert!(compare("not json", &trace).is_err());
    }

    #[test]
    fn the_trap_quotes_its_paths_and_session() {
        let t = trap_script(
            Path::new("/x/a bm"),
            &["--workspace".into(), "/w s".into()],
            Path::new("/l/o'g"),
            Path::new("/s"),
            "n1'\"x",
        );
        assert!(
            t.contains("| '/x/a bm' hook json '--workspace' '/w s' --state-dir '/s'"),
            "{t}"
        );
        assert!(t.contains(r#">> '/l/o'\''g'"#), "{t}");
        assert!(t.contains(r#""session":"n1x"}"#), "{t}");
        assert!(t.contains("trap '__abm_hook' DEBUG"));
    }

    /// The trap, run by a real bash, logs each simple command once with
    /// its directory, escapes what JSON needs, and leaves the session's
    /// exit status and `set -e` alone.
    #[test]
    fn the_trap_logs_each_simple_command_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("abm");
        std::fs::write(
            &fake,
            "#!/bin/sh\ncat >/dev/null; echo '{\"treatment\":\"accept\",\"fully_parsed\":true,\"commands\":[]}'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let log = dir.path().join("hook.jsonl");
        let script = format!(
            "set -euo pipefail\nsession() {{\n  printf 'a\\tb \"q\"\\n' > f.txt\n  cd /\n  false || true\n}}\n{}session\n",
            trap_script(&fake, &[], &log, dir.path(), "s")
        );
        let st = std::process::Command::new("bash")
            .args(["-c", &script])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(st.success());
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let cmds: Vec<&str> = lines
            .iter()
            .map(|l| l["command"].as_str().unwrap())
            .collect();
        assert_eq!(
            cmds,
            vec![r#"printf 'a\tb "q"\n' > f.txt"#, "cd /", "false", "true"],
            "{text}"
        );
        assert_eq!(lines[0]["cwd"], dir.path().display().to_string());
        assert_eq!(lines[2]["cwd"], "/");
        assert_eq!(lines[0]["answer"]["treatment"], "accept");
    }
}
