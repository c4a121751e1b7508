//! Load errors: every problem in a policy file is reported with the file,
//! line and column it was found at, and a hint on how to fix it.

use std::ops::Range;
use std::path::PathBuf;

/// What kind of problem a policy file has. Stable for tests and tooling; the
/// human text is in [`PolicyError`]'s `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not valid TOML.
    Syntax,
    /// A key the format does not have.
    UnknownField,
    /// A required key is missing.
    MissingField,
    /// A value of the wrong type, or a name outside a closed set
    /// (treatment, scope, severity, ...).
    Type,
    /// `version` is not one this build understands.
    UnsupportedVersion,
    /// An operation name that is not one of the `Op` names.
    UnknownOp,
    /// A glob that does not compile, or a path glob that is not anchored.
    BadGlob,
    /// A regular expression that does not compile.
    BadRegex,
    /// A rule id used twice.
    DuplicateId,
    /// A list defined twice.
    DuplicateList,
    /// `@name` naming no list, or a list that includes itself.
    UnknownList,
    /// `disable` naming no rule.
    UnknownRule,
    /// A matcher field, operator or value combination the format does not have.
    BadMatcher,
    /// Any other invalid value (rule id syntax, empty lists, ...).
    Invalid,
}

/// Why a policy could not be loaded. Nothing is loaded when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{}: cannot read policy file: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no policy files given (hint: pass at least one file; policies/default.toml is the default pack)")]
    NoFiles,
    #[error("{origin}:{line}:{column}: {message}{}", hint_suffix(.hint))]
    Invalid {
        /// File name as given to `load` (or the origin passed to `from_str`).
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        kind: ErrorKind,
        message: String,
        hint: Option<String>,
    },
}

fn hint_suffix(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!(" (hint: {h})"),
        None => String::new(),
    }
}

impl PolicyError {
    /// The error kind, for `Invalid` errors.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            PolicyError::Invalid { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// `(line, column)`, for `Invalid` errors.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            PolicyError::Invalid { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

/// 1-based line and character column of a byte offset.
pub(crate) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Build an `Invalid` error at a byte span of a source.
pub(crate) fn at(
    origin: &str,
    src: &str,
    span: Range<usize>,
    kind: ErrorKind,
    message: impl Into<String>,
    hint: Option<String>,
) -> PolicyError {
    let (line, column) = line_col(src, span.start);
    PolicyError::Invalid {
        origin: origin.to_owned(),
        line,
        column,
        kind,
        message: message.into(),
        hint,
    }
}

/// Turn a TOML/serde error into a positioned error with a hint.
pub(crate) fn from_toml(origin: &str, src: &str, err: &toml::de::Error) -> PolicyError {
    let raw = err.message().trim();
    // TOML syntax messages span several lines; keep them on one.
    let message = raw
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let (kind, hint) = classify(raw);
    let span = err.span().unwrap_or(0..0);
    at(origin, src, span, kind, message, hint)
}

fn classify(msg: &str) -> (ErrorKind, Option<String>) {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or("");
        let expected = backticked(rest.split_once("expected").map_or("", |(_, e)| e));
        let hint = match nearest(name, &expected) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("this table takes: {}", expected.join(", ")),
        };
        return (ErrorKind::UnknownField, Some(hint));
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let name = rest.split('`').next().unwrap_or("");
        let expected = backticked(rest.split_once("expected").map_or("", |(_, e)| e));
        let hint = match nearest(name, &expected) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("use one of: {}", expected.join(", ")),
        };
        return (ErrorKind::Type, Some(hint));
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or("");
        let hint = match name {
            "id" => "every [[rule]] needs a unique `id`, e.g. id = \"repo.force-push\"".to_owned(),
            "reason" => "every [[rule]] needs a one-line `reason` shown to humans".to_owned(),
            "treatment" => {
                "every [[rule]] needs a `treatment`: accept, audit, confirm, preserve or deny"
                    .to_owned()
            }
            "version" => "start the file with `version = 1`".to_owned(),
            other => format!("add `{other} = ...` to this table"),
        };
        return (ErrorKind::MissingField, Some(hint));
    }
    if msg.starts_with("invalid type") {
        let hint = if msg.contains("expected a sequence") {
            Some("write a list, e.g. [\"value\"]".to_owned())
        } else if msg.contains("expected a string") {
            Some("quote the value, e.g. \"value\"".to_owned())
        } else if msg.contains("expected i64") || msg.contains("expected i32") {
            Some("write a whole number without quotes".to_owned())
        } else {
            None
        };
        return (ErrorKind::Type, hint);
    }
    (
        ErrorKind::Syntax,
        Some("see docs/policy.md for the file format".to_owned()),
    )
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, w)| w.to_owned())
        .collect()
}

/// The candidate closest to `name` by edit distance, when it is close enough
/// to be a plausible typo.
pub(crate) fn nearest<S: AsRef<str>>(name: &str, candidates: &[S]) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let c = c.as_ref();
        let d = edit_distance(name, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (name.chars().count().max(c.chars().count()) / 3).max(1);
    (d <= limit).then(|| c.to_owned())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_chars_from_one() {
        let src = "ab\ncdé f\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 1));
        // 'f' is after a two-byte character: byte 8, column 5.
        assert_eq!(line_col(src, src.find('f').unwrap()), (2, 5));
    }

    #[test]
    fn nearest_suggests_typos_only() {
        assert_eq!(
            nearest("pathz", &["paths", "ops"]).as_deref(),
            Some("paths")
        );
        assert_eq!(
            nearest("confrim", &["confirm", "deny"]).as_deref(),
            Some("confirm")
        );
        assert_eq!(nearest("zzzzzz", &["paths", "ops"]), None);
    }
}
