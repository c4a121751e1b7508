//! The policy file as written: TOML deserialized with spans, before
//! validation and compilation (see `compile.rs`). docs/policy.md documents
//! every field here.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::record::{Irreversibility, Scope, Treatment};

/// The format version this build reads.
pub const FORMAT_VERSION: i64 = 1;

pub(crate) type SStr = Spanned<String>;
pub(crate) type SList = Spanned<Vec<SStr>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    pub version: Spanned<i64>,
    #[serde(default)]
    #[allow(dead_code)] // documentation for humans only
    pub description: Option<String>,
    /// Named reusable string lists, referenced as `@name`.
    #[serde(default)]
    pub lists: BTreeMap<SStr, SList>,
    /// Items appended to lists defined in this or another loaded file.
    #[serde(default)]
    pub extend_lists: BTreeMap<SStr, SList>,
    /// Per-program command-line syntax.
    #[serde(default)]
    pub cli: BTreeMap<SStr, RawCli>,
    /// Scope classification.
    #[serde(default)]
    pub scopes: Option<RawScopes>,
    /// Rule ids (from any loaded file) to switch off.
    #[serde(default)]
    pub disable: Option<SList>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Spanned<RawRule>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCli {
    /// Options that take their value in the next argument (`-n prod`).
    #[serde(default)]
    pub value_options: Vec<SStr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScopes {
    #[serde(default)]
    pub protected: Vec<SStr>,
    #[serde(default)]
    pub protected_except: Vec<SStr>,
    /// Files whose read-only opens `abm run` records (beside its default
    /// set and `--sensitive`).
    #[serde(default)]
    pub sensitive: Vec<SStr>,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// The severity a rule gets when it does not name one.
    pub fn for_treatment(t: Treatment) -> Severity {
        match t {
            Treatment::Accept => Severity::Info,
            Treatment::Audit => Severity::Low,
            Treatment::Preserve => Severity::Medium,
            Treatment::Confirm => Severity::High,
            Treatment::Deny => Severity::Critical,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    pub id: SStr,
    pub reason: SStr,
    pub treatment: Spanned<Treatment>,
    #[serde(default)]
    pub scope: Option<Scope>,
    #[serde(default)]
    pub irreversibility: Option<Irreversibility>,
    #[serde(default)]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub tags: Vec<SStr>,
    #[serde(default)]
    pub priority: Option<Spanned<i64>>,
    #[serde(default)]
    pub ops: Option<SList>,

    // Shorthand matchers.
    #[serde(default)]
    pub paths: Option<SList>,
    #[serde(default)]
    pub not_paths: Option<SList>,
    #[serde(default)]
    pub program: Option<SList>,
    #[serde(default)]
    pub subcommand: Option<SList>,
    #[serde(default)]
    pub flags: Option<SList>,
    #[serde(default)]
    pub not_flags: Option<SList>,
    #[serde(default)]
    pub args: Option<SList>,
    #[serde(default)]
    pub options: Vec<Spanned<RawOption>>,
    #[serde(default)]
    pub result: Option<SList>,

    // General matchers.
    #[serde(default)]
    pub when: Vec<Spanned<RawWhen>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOption {
    pub names: SList,
    pub values: SList,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWhen {
    pub field: SStr,
    pub operator: SStr,
    pub values: Spanned<Vec<Spanned<toml::Value>>>,
    /// Option names, for `field = "option"` only.
    #[serde(default)]
    pub names: Option<SList>,
}
