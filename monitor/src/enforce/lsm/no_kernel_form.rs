//! The BPF LSM compiler's reasons why a pattern has no kernel form.

use super::*;

/// Why a path pattern or an exec condition has no kernel form; its text
/// goes into the compile report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoKernelForm {
    #[error("`{0}` is not anchored")]
    NotAnchored(String),
    /// The glob does not parse (globset's text).
    #[error("{0}")]
    Glob(String),
    #[error(
        "`{0}`: only literal paths, DIR/*, DIR/** and (for blocking rules) DIR/NAME-GLOB compile"
    )]
    PathShape(String),
    #[error("`{0}` is a pattern")]
    Pattern(String),
    #[error("`{0}` is longer than {max} bytes", max = MAX_TOKEN)]
    TooLong(String),
    #[error("several multi-word subcommands")]
    MultiWordSubcommands,
    #[error("several multi-flag alternatives")]
    MultiFlagAlternatives,
    #[error("`{0}` has no kernel form")]
    Condition(String),
    /// The flag does not parse (the policy parser's text).
    #[error("{0}")]
    Flag(String),
}
