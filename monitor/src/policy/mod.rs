//! Policy engine (stub: to be implemented).
use std::path::PathBuf;

use crate::record::{Action, Irreversibility, Scope, Treatment, Verdict};

/// Where an action happens: the named roots policies anchor globs to.
#[derive(Clone, Debug, Default)]
pub struct Context {
    pub workspace: PathBuf,
    pub home: PathBuf,
    /// The trace file being written (always protected).
    pub trace_path: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct Policy {}

impl Policy {
    pub fn default_pack() -> Policy {
        Policy {}
    }
    pub fn digest(&self) -> String {
        String::new()
    }
    pub fn evaluate(&self, _action: &Action, _ctx: &Context) -> Verdict {
        Verdict {
            rule: "default".into(),
            treatment: Treatment::Accept,
            irreversibility: Irreversibility::Reversible,
            scope: Scope::Workspace,
            reason: String::new(),
        }
    }
}

pub mod cmd {
    #[derive(Debug, clap::Args)]
    pub struct PolicyArgs {}
    #[derive(Debug, clap::Args)]
    pub struct ReplayArgs {}
    pub fn policy(_a: PolicyArgs) -> anyhow::Result<i32> {
        anyhow::bail!("not implemented")
    }
    pub fn replay(_a: ReplayArgs) -> anyhow::Result<i32> {
        anyhow::bail!("not implemented")
    }
}
