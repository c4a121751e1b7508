//! The one parser of how a path pattern is anchored (`${workspace}/...`,
//! `${home}/...`, `/...`, `**/...`), shared by the policy's path globs
//! (`policy::paths`), the oracle's task-spec patterns (`oracle::pattern`)
//! and the sensitive-file patterns (`kernel::sensitive`). Each caller
//! says which variables it knows and which anchors it accepts, and words
//! its own errors.

/// How a path pattern starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor<'a> {
    /// One of the known variables (`${workspace}`, ...): its index in the
    /// list given to [`split`], and what follows it (see [`bad_after_var`]).
    Var(usize, &'a str),
    /// An absolute path (`/...`).
    Absolute,
    /// Anywhere: `**` or `**/...`.
    AnyDepth,
    /// `~` and what follows it (`~/...` is the home directory).
    Tilde(&'a str),
    /// `${name}` with a name not in the list.
    UnknownVar(&'a str),
    /// The empty pattern.
    Empty,
    /// Anything else: a relative path.
    Relative,
}

/// How `pattern` is anchored, given the variables (`"${workspace}"`, ...)
/// the caller knows. The forms are disjoint, so the order of the checks
/// does not matter.
pub fn split<'a>(pattern: &'a str, vars: &[&str]) -> Anchor<'a> {
    for (i, v) in vars.iter().enumerate() {
        if let Some(rest) = pattern.strip_prefix(v) {
            return Anchor::Var(i, rest);
        }
    }
    if let Some(after) = pattern.strip_prefix("${") {
        Anchor::UnknownVar(after.split('}').next().unwrap_or(after))
    } else if pattern.starts_with('/') {
        Anchor::Absolute
    } else if pattern == "**" || pattern.starts_with("**/") {
        Anchor::AnyDepth
    } else if let Some(rest) = pattern.strip_prefix('~') {
        Anchor::Tilde(rest)
    } else if pattern.is_empty() {
        Anchor::Empty
    } else {
        Anchor::Relative
    }
}

/// Whether what follows a directory variable is neither nothing nor `/...`
/// (`${workspace}x`), which would glue a name to the directory's.
pub fn bad_after_var(rest: &str) -> bool {
    !rest.is_empty() && !rest.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form() {
        let v = ["${workspace}", "${home}"];
        assert_eq!(split("${workspace}/a", &v), Anchor::Var(0, "/a"));
        assert_eq!(split("${home}", &v), Anchor::Var(1, ""));
        assert_eq!(split("${tmp}/x", &v), Anchor::UnknownVar("tmp"));
        assert_eq!(split("${oops", &v), Anchor::UnknownVar("oops"));
        assert_eq!(split("/etc/x", &v), Anchor::Absolute);
        assert_eq!(split("**", &v), Anchor::AnyDepth);
        assert_eq!(split("**/x", &v), Anchor::AnyDepth);
        assert_eq!(split("**x", &v), Anchor::Relative);
        assert_eq!(split("~/x", &v), Anchor::Tilde("/x"));
        assert_eq!(split("", &v), Anchor::Empty);
        assert_eq!(split("src/x", &v), Anchor::Relative);
        assert!(bad_after_var("x"));
        assert!(!bad_after_var("/x"));
        assert!(!bad_after_var(""));
    }
}
