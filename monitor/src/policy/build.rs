//! Building one compiled condition from a matcher's expanded values.

use regex::{Regex, RegexSet};

use super::compile::{compile_paths, Ctx, Item, Loc, Value};
use super::error::{nearest, ErrorKind, PolicyError};
use super::matcher::{
    Condition, Field, FieldKind, FlagSpec, NumberTest, Operator, PathTest, Test, TextGlobs,
    TextTest, Word, RESULT_FAILURE, RESULT_SUCCESS, RESULT_UNKNOWN,
};

/// Build one condition from expanded values. `whole` is where the value
/// list as a whole is written (for errors about the list).
pub(crate) fn build(
    cx: &Ctx<'_>,
    field: Field,
    operator: Operator,
    names: Vec<Item>,
    values: Vec<(Value, Loc)>,
    whole: &Loc,
) -> Result<Condition, PolicyError> {
    let kind = field.kind();
    if !Operator::allowed(kind).contains(&operator) {
        let ok: Vec<&str> = Operator::allowed(kind).iter().map(|o| o.name()).collect();
        return Err(cx.err(
            whole,
            ErrorKind::BadMatcher,
            format!("operator `{operator}` does not apply to field `{field}`"),
            Some(format!("operators for `{field}`: {}", ok.join(", "))),
        ));
    }
    if values.is_empty() {
        return Err(cx.err(
            whole,
            ErrorKind::Invalid,
            format!("`{field}` matcher has no values"),
            Some("give at least one value (an empty list would never match)".to_owned()),
        ));
    }
    // Type check: numbers for numeric fields, text elsewhere.
    let mut texts: Vec<(String, Loc)> = Vec::new();
    let mut ints: Vec<(i64, Loc)> = Vec::new();
    for (v, l) in values {
        match (v, kind == FieldKind::Number) {
            (Value::Int(n), true) => ints.push((n, l)),
            (Value::Text(s), false) => texts.push((s, l)),
            (Value::Int(n), false) => {
                return Err(cx.err(
                    &l,
                    ErrorKind::Type,
                    format!("`{field}` takes text values, not the number {n}"),
                    Some(format!("quote it: \"{n}\"")),
                ))
            }
            (Value::Text(s), true) => {
                return Err(cx.err(
                    &l,
                    ErrorKind::Type,
                    format!("`{field}` takes numbers, not the text \"{s}\""),
                    Some("write the number without quotes (0o755 for modes)".to_owned()),
                ))
            }
        }
    }
    let shown: Vec<String> = if kind == FieldKind::Number {
        ints.iter().map(|(n, _)| n.to_string()).collect()
    } else {
        texts.iter().map(|(s, _)| s.clone()).collect()
    };
    let pos = operator.positive();
    let test = match kind {
        FieldKind::Path => match pos {
            Operator::Glob => {
                let items: Vec<Item> = texts
                    .into_iter()
                    .map(|(value, loc)| Item { value, loc })
                    .collect();
                Test::Path(PathTest::Glob(Box::new(compile_paths(cx, &items)?)))
            }
            _ => Test::Path(PathTest::Regex(regex_set(cx, &texts)?)),
        },
        FieldKind::Text => Test::Text(match pos {
            Operator::Equal => TextTest::Equal(strings(texts)),
            Operator::Prefix => TextTest::Prefix(strings(texts)),
            Operator::Suffix => TextTest::Suffix(strings(texts)),
            Operator::Glob => TextTest::Glob(glob_set(cx, &texts)?),
            _ => TextTest::Regex(regex_set(cx, &texts)?),
        }),
        FieldKind::Number => Test::Number(match pos {
            Operator::Equal => NumberTest::Equal(ints.into_iter().map(|(n, _)| n).collect()),
            Operator::Mask => NumberTest::Mask(ints.into_iter().map(|(n, _)| n).collect()),
            Operator::Lt | Operator::Gt => {
                if ints.len() != 1 {
                    return Err(cx.err(
                        whole,
                        ErrorKind::BadMatcher,
                        format!(
                            "`{operator}` compares with exactly one value, got {}",
                            ints.len()
                        ),
                        Some("write values = [N]".to_owned()),
                    ));
                }
                if pos == Operator::Lt {
                    NumberTest::Lt(ints[0].0)
                } else {
                    NumberTest::Gt(ints[0].0)
                }
            }
            _ => unreachable!("operators are checked against the field kind"),
        }),
        FieldKind::Subcommand => {
            let mut alts = Vec::new();
            for (s, l) in &texts {
                let words: Vec<&str> = s.split_whitespace().collect();
                if words.is_empty() {
                    return Err(cx.err(
                        l,
                        ErrorKind::Invalid,
                        "empty subcommand",
                        Some(
                            "write the words after the program name, e.g. \"push\" or \"s3 rm\""
                                .to_owned(),
                        ),
                    ));
                }
                let mut ms = Vec::new();
                for w in words {
                    ms.push(Word::new(w).map_err(|m| {
                        cx.err(
                            l,
                            ErrorKind::BadGlob,
                            format!("{m} in `{s}`"),
                            Some(super::paths::GLOB_HINT.to_owned()),
                        )
                    })?);
                }
                alts.push(ms);
            }
            Test::Subcommand(alts)
        }
        FieldKind::Flag => {
            let mut specs = Vec::new();
            for (s, l) in &texts {
                specs.push(FlagSpec::parse(s).map_err(|m| {
                    cx.err(
                        l,
                        ErrorKind::BadMatcher,
                        m.to_string(),
                        Some(
                            "write flags as on the command line: \"--force\", \"-f\", \"-rf\""
                                .to_owned(),
                        ),
                    )
                })?);
            }
            Test::Flags(specs)
        }
        FieldKind::Option => {
            for n in &names {
                if !n.value.starts_with('-') || n.value.len() < 2 {
                    return Err(cx.err(
                        &n.loc,
                        ErrorKind::BadMatcher,
                        format!("option name `{}` must start with `-`", n.value),
                        Some(
                            "write names as on the command line: \"--context\", \"-n\"".to_owned(),
                        ),
                    ));
                }
            }
            if names.is_empty() {
                return Err(cx.err(
                    whole,
                    ErrorKind::Invalid,
                    "option matcher has no names",
                    Some("add names = [\"--context\"]".to_owned()),
                ));
            }
            Test::Option(glob_set(cx, &texts)?)
        }
        FieldKind::Result => {
            let mut mask = 0u8;
            for (s, l) in &texts {
                mask |= match s.as_str() {
                    "success" => RESULT_SUCCESS,
                    "failure" => RESULT_FAILURE,
                    "unknown" => RESULT_UNKNOWN,
                    other => {
                        let all = ["success", "failure", "unknown"];
                        return Err(cx.err(
                            l,
                            ErrorKind::Type,
                            format!("unknown result `{other}`"),
                            Some(match nearest(other, &all) {
                                Some(n) => format!(
                                    "did you mean `{n}`? results: success, failure, unknown"
                                ),
                                None => "results: success, failure, unknown".to_owned(),
                            }),
                        ));
                    }
                };
            }
            Test::Result(mask)
        }
    };
    Ok(Condition {
        field,
        operator,
        names: names.into_iter().map(|n| n.value).collect(),
        values: shown,
        test,
    })
}

fn strings(v: Vec<(String, Loc)>) -> Vec<String> {
    v.into_iter().map(|(s, _)| s).collect()
}

fn glob_set(cx: &Ctx<'_>, texts: &[(String, Loc)]) -> Result<TextGlobs, PolicyError> {
    let patterns: Vec<String> = texts.iter().map(|(s, _)| s.clone()).collect();
    TextGlobs::compile(&patterns).map_err(|(i, m)| {
        let (s, l) = &texts[i.min(texts.len() - 1)];
        cx.err(
            l,
            ErrorKind::BadGlob,
            format!("{m} in `{s}`"),
            Some(super::paths::GLOB_HINT.to_owned()),
        )
    })
}

fn regex_set(cx: &Ctx<'_>, texts: &[(String, Loc)]) -> Result<RegexSet, PolicyError> {
    for (s, l) in texts {
        if let Err(e) = Regex::new(s) {
            // regex's messages span lines, pointing into the pattern; keep
            // the final description.
            let text = e.to_string();
            let what = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_owned();
            return Err(cx.err(
                l,
                ErrorKind::BadRegex,
                format!("bad regex `{s}`: {what}"),
                Some("regexes use Rust regex syntax; escape literal characters such as ( . + with \\\\".to_owned()),
            ));
        }
    }
    RegexSet::new(texts.iter().map(|(s, _)| s)).map_err(|e| {
        cx.err(
            &texts[0].1,
            ErrorKind::BadRegex,
            format!("bad regex set: {e}"),
            None,
        )
    })
}
