//! `abm oracle` and `abm score`.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;

use anyhow::{anyhow, Context as _};

use crate::oracle::input::{load_trace, InputError};
use crate::oracle::judge::{judge, JudgeContext};
use crate::oracle::pattern::Roots;
use crate::oracle::reward::{exit_status, reward_json, Expr, NON_ACTIONS};
use crate::oracle::score::{parse_verdicts, read_verdict_path, score as score_verdicts};
use crate::oracle::spec::TaskSpec;

/// Exit code of `abm oracle` when the trace is refused because it did not
/// verify (see `--unverified`).
pub const EXIT_REFUSED: i32 = 3;

/// Judge one run: read a task spec and the run's trace, print the verdict
/// as JSON.
///
/// The trace must verify intact (and, when signed, be authenticated with
/// `--key`); otherwise it is refused with exit code 3 unless `--unverified`
/// is given. Exit code 0 means a verdict was produced, whatever its value.
#[derive(Debug, clap::Args)]
pub struct OracleArgs {
    /// Task specification (TOML; the format is in docs/oracle.md).
    #[arg(long, value_name = "FILE")]
    pub task: PathBuf,
    /// Trace of the run, as written by `abm run --trace`.
    #[arg(value_name = "TRACE", required_unless_present = "check")]
    pub trace: Option<PathBuf>,
    /// Key file of a signed (hmac-sha256) trace, to authenticate its records.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Judge the trace even if it is unsealed, broken or not authenticated;
    /// the verdict's `trace.status` says which.
    #[arg(long)]
    pub unverified: bool,
    /// Add a label to the verdict (repeatable); overrides the spec's labels.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Directory that `${workspace}` stands for [default: the trace header's
    /// `workspace`].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// Directory that `${home}` stands for [default: the trace header's
    /// `extra.home`, else $HOME].
    #[arg(long, value_name = "DIR")]
    pub home: Option<String>,
    /// Only validate the task spec, print a summary and exit.
    #[arg(long)]
    pub check: bool,
    /// Write the verdict to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the verdict on one line (for JSON-lines files) instead of
    /// indented.
    #[arg(long)]
    pub compact: bool,
    /// Also write a Harbor/Terminal-Bench reward file: a JSON object with
    /// `reward` and every signal as a number.
    #[arg(long, value_name = "FILE")]
    pub reward: Option<PathBuf>,
    /// The scalar `reward`: an expression over the signals with numbers,
    /// `+ - *`, `!x` (1 - x), min(a, b), max(a, b) and parentheses.
    #[arg(long, value_name = "EXPR", default_value = "safe_success", value_parser = Expr::parse)]
    pub reward_of: Expr,
    /// Exit with a status that reflects the verdict: 0 safe success, 4
    /// overstep (wrong target or over-scope), 5 intended action not done.
    #[arg(long)]
    pub exit_code: bool,
    /// What the harness says the agent did instead of acting:
    /// clarification, refusal or deferment. The oracle reads only the
    /// trace and cannot see the conversation; the harness decides.
    #[arg(long, value_name = "KIND", value_parser = parse_non_action)]
    pub non_action: Option<String>,
}

fn parse_non_action(s: &str) -> anyhow::Result<String> {
    if NON_ACTIONS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(anyhow!("`{s}` is not one of {}", NON_ACTIONS.join(", ")))
    }
}

fn parse_label(s: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(anyhow!(
            "`{s}` is not KEY=VALUE (for example --label scenario=safe)"
        )),
    }
}

/// Output format of `abm score`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScoreFormat {
    Table,
    Json,
    Csv,
}

/// Aggregate verdicts into Safe Success, Wrong Target, OverScope, Overstep
/// and Under Completion rates, overall and per group.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Verdict files (`abm oracle` output: JSON objects or JSON lines),
    /// directories of `*.json`/`*.jsonl` files, or `-` for standard input.
    #[arg(value_name = "VERDICT", required = true)]
    pub verdicts: Vec<PathBuf>,
    /// Group by this label (or the built-in `task` or `route`); repeat to
    /// group by several labels together.
    #[arg(long, value_name = "LABEL")]
    pub by: Vec<String>,
    /// Compute rates over the runs that acted only.
    #[arg(long)]
    pub acted: bool,
    #[arg(long, value_enum, default_value_t = ScoreFormat::Table)]
    pub format: ScoreFormat,
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn summarize_spec(spec: &TaskSpec) -> String {
    let evidence: usize = spec.intended.iter().map(|i| i.evidence.len()).sum();
    let mut s = format!(
        "{}: ok: task `{}`: {} ({}), {}, {}, {}; {}, {}, {}",
        spec.source.display(),
        spec.id,
        count(spec.intended.len(), "intended object", "intended objects"),
        count(evidence, "evidence rule", "evidence rules"),
        count(spec.over_scope.len(), "over-scope rule", "over-scope rules"),
        count(spec.allowed.len(), "allowed rule", "allowed rules"),
        count(spec.constraints.len(), "constraint", "constraints"),
        count(spec.world.len(), "world pattern", "world patterns"),
        count(spec.ignore.len(), "ignore pattern", "ignore patterns"),
        count(
            spec.protected.len(),
            "protected pattern",
            "protected patterns"
        ),
    );
    if !spec.routes.is_empty() {
        let names: Vec<&str> = spec.routes.iter().map(|r| r.name.as_str()).collect();
        s.push_str(&format!("; routes: {}", names.join(", ")));
    }
    if spec.world.is_empty() && spec.protected.is_empty() {
        s.push_str(
            "\nnote: no [world] objects and no [protected] paths: wrong_target can never be 1",
        );
    }
    s
}

pub fn oracle(a: OracleArgs) -> anyhow::Result<i32> {
    let spec = TaskSpec::load(&a.task).map_err(|e| anyhow!("{e}"))?;
    if a.check {
        println!("{}", summarize_spec(&spec));
        return Ok(0);
    }
    let trace_path = a
        .trace
        .clone()
        .ok_or_else(|| anyhow!("no TRACE given (or pass --check to only validate the spec)"))?;
    let key = match &a.key {
        Some(k) => Some(crate::trace::read_key(k)?),
        None => None,
    };
    let (loaded, mut summary) = match load_trace(&trace_path, key.as_deref(), a.unverified) {
        Ok(x) => x,
        Err(e @ InputError::Refused { .. }) => {
            eprintln!("abm: error: {e}");
            return Ok(EXIT_REFUSED);
        }
        Err(e) => return Err(e.into()),
    };
    let workspace = a
        .workspace
        .clone()
        .or_else(|| loaded.workspace.clone())
        .ok_or_else(|| {
            anyhow!(
                "{}: the trace header has no workspace; pass --workspace DIR",
                trace_path.display()
            )
        })?;
    let home = a
        .home
        .clone()
        .or_else(|| loaded.home.clone())
        .or_else(|| std::env::var("HOME").ok())
        .unwrap_or_default();
    let roots = Roots::new(&workspace, &home);
    summary.workspace = roots.workspace.clone();
    if !summary.verified {
        eprintln!(
            "abm oracle: warning: judging a trace that is {} (--unverified)",
            summary.status
        );
    }
    if summary.lost > 0 {
        eprintln!(
            "abm oracle: warning: the monitor lost {} events during this run; the verdict may \
             miss actions",
            summary.lost
        );
    }
    let ctx = JudgeContext {
        roots,
        labels: a.labels.iter().cloned().collect(),
        trace: summary,
    };
    let mut verdict = judge(&spec, &loaded.events, &ctx);
    if let Some(na) = &a.non_action {
        if verdict.acted == 1 {
            eprintln!(
                "abm oracle: warning: the harness labels this run `{na}`, but the run acted \
                 (records {:?}); the label is kept",
                verdict.evidence.acted
            );
        }
        verdict.non_action = Some(na.clone());
    }
    let mut text = if a.compact {
        serde_json::to_string(&verdict)?
    } else {
        serde_json::to_string_pretty(&verdict)?
    };
    text.push('\n');
    match &a.output {
        Some(p) => std::fs::write(p, text)
            .with_context(|| format!("cannot write the verdict to {}", p.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    if let Some(p) = &a.reward {
        let r = serde_json::to_string_pretty(&reward_json(&verdict, &a.reward_of))? + "\n";
        std::fs::write(p, r)
            .with_context(|| format!("cannot write the reward file {}", p.display()))?;
    }
    Ok(if a.exit_code {
        exit_status(&verdict)
    } else {
        0
    })
}

pub fn score(a: ScoreArgs) -> anyhow::Result<i32> {
    let mut verdicts = Vec::new();
    for p in &a.verdicts {
        if p.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read verdicts from standard input")?;
            verdicts.extend(parse_verdicts("<stdin>", &text)?);
        } else {
            verdicts.extend(read_verdict_path(p)?);
        }
    }
    if verdicts.is_empty() {
        anyhow::bail!("no verdicts found in the input; write them with `abm oracle`");
    }
    let table = score_verdicts(&verdicts, &a.by, a.acted);
    let out = match a.format {
        ScoreFormat::Table => table.to_table(),
        ScoreFormat::Csv => table.to_csv(),
        ScoreFormat::Json => serde_json::to_string_pretty(&table)? + "\n",
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse() {
        assert_eq!(
            parse_label("axis.target=B2").unwrap(),
            ("axis.target".to_owned(), "B2".to_owned())
        );
        assert_eq!(parse_label("k=a=b").unwrap().1, "a=b");
        assert!(parse_label("novalue").is_err());
        assert!(parse_label("=x").is_err());
    }
}
