//! Engine tests: loading, errors with positions, precedence, matching
//! semantics. The default pack's rules are tested in `pack_tests.rs`.

use super::pack_tests::{act, ctx};
use super::*;

fn pol(src: &str) -> Policy {
    Policy::from_str(src, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn err(src: &str) -> PolicyError {
    match Policy::from_str(src, "t.toml") {
        Ok(_) => panic!("policy unexpectedly loaded:\n{src}"),
        Err(e) => e,
    }
}

/// Assert kind, position and that the message mentions `needle`.
#[track_caller]
fn assert_err(src: &str, kind: ErrorKind, line: usize, col: usize, needle: &str) -> String {
    let e = err(src);
    let text = e.to_string();
    assert_eq!(e.kind(), Some(kind), "{text}");
    assert_eq!(e.position(), Some((line, col)), "{text}");
    assert!(
        text.starts_with(&format!("t.toml:{line}:{col}: ")),
        "{text}"
    );
    assert!(text.contains(needle), "`{needle}` not in: {text}");
    text
}

const RULE: &str = "version = 1\n[[rule]]\nid = \"r\"\nreason = \"x\"\ntreatment = \"deny\"\n";

// ---------------------------------------------------------------------------
// Load errors, each at its exact position.

#[test]
fn error_unknown_field_with_suggestion() {
    let src = format!("{RULE}pathz = [\"/etc/**\"]\n");
    let text = assert_err(
        &src,
        ErrorKind::UnknownField,
        6,
        1,
        "unknown field `pathz`, expected one of",
    );
    assert!(text.ends_with("(hint: did you mean `paths`?)"), "{text}");
}

#[test]
fn error_unknown_top_level_table() {
    let text = assert_err(
        "version = 1\n\n[[rules]]\nid = \"x\"\n",
        ErrorKind::UnknownField,
        3,
        3,
        "unknown field `rules`",
    );
    assert!(text.contains("did you mean `rule`?"), "{text}");
}

#[test]
fn error_unknown_field_in_when() {
    let src =
        format!("{RULE}when = [{{ field = \"comm\", operator = \"equal\", valuez = [\"rm\"] }}]\n");
    assert_err(
        &src,
        ErrorKind::UnknownField,
        6,
        47,
        "unknown field `valuez`",
    );
}

#[test]
fn error_bad_glob() {
    let src =
        format!("{RULE}ops = [\"unlink\"]\npaths = [\"/etc/**\", \"${{workspace}}/src/[a-\"]\n");
    let text = assert_err(&src, ErrorKind::BadGlob, 7, 21, "bad glob");
    assert!(text.contains("${workspace}/src/[a-"), "{text}");
    assert!(text.contains("(hint: globs use"), "{text}");
}

#[test]
fn error_unanchored_glob() {
    let src = format!("{RULE}paths = [\"src/**\"]\n");
    let text = assert_err(
        &src,
        ErrorKind::BadGlob,
        6,
        10,
        "path pattern `src/**` is not anchored",
    );
    assert!(text.contains("hint: start it with ${workspace}/"), "{text}");
}

#[test]
fn error_unknown_root() {
    let src = format!("{RULE}paths = [\"${{tmp}}/x\"]\n");
    assert_err(&src, ErrorKind::BadGlob, 6, 10, "unknown root `${tmp}`");
}

#[test]
fn error_bad_regex() {
    let src = format!(
        "{RULE}program = [\"psql\"]\nwhen = [\n  {{ field = \"argv\", operator = \"regex\", values = [\"ok\", \"drop(table\"] }},\n]\n"
    );
    let text = assert_err(
        &src,
        ErrorKind::BadRegex,
        8,
        57,
        "bad regex `drop(table`: unclosed group",
    );
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn error_duplicate_rule_id() {
    let src = format!("{RULE}\n[[rule]]\nid = \"r\"\nreason = \"y\"\ntreatment = \"accept\"\n");
    let text = assert_err(&src, ErrorKind::DuplicateId, 8, 6, "duplicate rule id `r`");
    assert!(text.contains("first defined at t.toml:3:6"), "{text}");
}

#[test]
fn error_duplicate_rule_id_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, RULE).unwrap();
    std::fs::write(&b, format!("\n\n{RULE}")).unwrap();
    let e = Policy::load(&[a.clone(), b.clone()]).unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::DuplicateId));
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{}:5:6: ", b.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("first defined at {}:3:6", a.display())),
        "{text}"
    );
}

#[test]
fn error_unknown_list_reference() {
    let src =
        format!("{RULE}paths = [\"@protected_dir\"]\n\n[lists]\nprotected_dirs = [\"/etc/**\"]\n");
    let text = assert_err(
        &src,
        ErrorKind::UnknownList,
        6,
        10,
        "unknown list `@protected_dir`",
    );
    assert!(text.contains("did you mean `@protected_dirs`?"), "{text}");
}

#[test]
fn error_list_cycle() {
    let src = "version = 1\n[lists]\na = [\"@b\"]\nb = [\"x\", \"@a\"]\n";
    let text = assert_err(
        src,
        ErrorKind::UnknownList,
        4,
        11,
        "list `b` includes itself through `@a`",
    );
    assert!(text.contains("a -> b -> a"), "{text}");
}

#[test]
fn error_duplicate_list() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "version = 1\n[lists]\nnames = [\"x\"]\n").unwrap();
    std::fs::write(&b, "version = 1\n\n[lists]\nnames = [\"y\"]\n").unwrap();
    let e = Policy::load(&[a, b]).unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::DuplicateList));
    assert_eq!(e.position(), Some((4, 1)));
    assert!(e.to_string().contains("[extend_lists]"), "{e}");
}

#[test]
fn error_unknown_op_name() {
    let src = format!("{RULE}ops = [\"unlink\", \"unlnk\"]\n");
    let text = assert_err(
        &src,
        ErrorKind::UnknownOp,
        6,
        18,
        "unknown operation `unlnk`",
    );
    assert!(text.contains("did you mean `unlink`?"), "{text}");
}

#[test]
fn error_type_mismatch() {
    let src = "version = 1\n[[rule]]\nid = \"r\"\nreason = \"x\"\ntreatment = \"deny\"\nops = \"unlink\"\n";
    let text = assert_err(
        src,
        ErrorKind::Type,
        6,
        7,
        "invalid type: string \"unlink\", expected a sequence",
    );
    assert!(text.contains("hint: write a list"), "{text}");
    let src = "version = 1\n[[rule]]\nid = 7\n";
    assert_err(
        src,
        ErrorKind::Type,
        3,
        6,
        "invalid type: integer `7`, expected a string",
    );
}

#[test]
fn error_unknown_treatment() {
    let src = "version = 1\n[[rule]]\nid = \"r\"\nreason = \"x\"\ntreatment = \"confrim\"\n";
    let text = assert_err(src, ErrorKind::Type, 5, 13, "unknown variant `confrim`");
    assert!(text.contains("did you mean `confirm`?"), "{text}");
}

#[test]
fn error_number_for_text_field() {
    let src =
        format!("{RULE}when = [{{ field = \"comm\", operator = \"equal\", values = [0] }}]\n");
    assert_err(
        &src,
        ErrorKind::Type,
        6,
        57,
        "takes text values, not the number 0",
    );
}

#[test]
fn error_unsupported_version() {
    let text = assert_err(
        "# policy\nversion = 2\n",
        ErrorKind::UnsupportedVersion,
        2,
        11,
        "unsupported policy format version 2",
    );
    assert!(text.contains("reads version 1"), "{text}");
}

#[test]
fn error_missing_version_and_fields() {
    let text = assert_err(
        "description = \"x\"\n",
        ErrorKind::MissingField,
        1,
        1,
        "missing field `version`",
    );
    assert!(text.contains("start the file with `version = 1`"), "{text}");
    let text = assert_err(
        "version = 1\n[[rule]]\nid = \"r\"\n",
        ErrorKind::MissingField,
        2,
        1,
        "missing field `reason`",
    );
    assert!(text.contains("one-line `reason`"), "{text}");
}

#[test]
fn error_syntax() {
    assert_err(
        "version = 1\n[[rule]\n",
        ErrorKind::Syntax,
        2,
        7,
        "invalid table header",
    );
}

#[test]
fn error_operator_not_for_field() {
    let src =
        format!("{RULE}when = [{{ field = \"uid\", operator = \"glob\", values = [\"0\"] }}]\n");
    let text = assert_err(
        &src,
        ErrorKind::BadMatcher,
        6,
        37,
        "operator `glob` does not apply to field `uid`",
    );
    assert!(
        text.contains("operators for `uid`: equal, not_equal, lt, gt, mask"),
        "{text}"
    );
}

#[test]
fn error_unknown_matcher_field() {
    let src =
        format!("{RULE}when = [{{ field = \"pth\", operator = \"glob\", values = [\"/x\"] }}]\n");
    let text = assert_err(
        &src,
        ErrorKind::BadMatcher,
        6,
        19,
        "unknown matcher field `pth`",
    );
    assert!(text.contains("did you mean `path`?"), "{text}");
}

#[test]
fn error_exec_matcher_on_file_ops() {
    let src = format!("{RULE}ops = [\"unlink\"]\nprogram = [\"rm\"]\n");
    assert_err(
        &src,
        ErrorKind::BadMatcher,
        7,
        11,
        "`program` only applies to exec",
    );
}

#[test]
fn error_bad_flag_and_reserved_id() {
    let src = format!("{RULE}program = [\"rm\"]\nflags = [\"force\"]\n");
    assert_err(
        &src,
        ErrorKind::BadMatcher,
        7,
        10,
        "flag `force` must start with `-`",
    );
    let src = "version = 1\n[[rule]]\nid = \"builtin.x\"\nreason = \"x\"\ntreatment = \"deny\"\n";
    assert_err(
        src,
        ErrorKind::Invalid,
        3,
        6,
        "rule id `builtin.x` is reserved",
    );
    let src = "version = 1\n[[rule]]\nid = \"Bad Id\"\nreason = \"x\"\ntreatment = \"deny\"\n";
    assert_err(src, ErrorKind::Invalid, 3, 6, "bad rule id `Bad Id`");
}

#[test]
fn error_disable_unknown_rule() {
    let src = format!("{RULE}\n[[rule]]\nid = \"other\"\nreason = \"x\"\ntreatment = \"deny\"\n")
        .replacen("version = 1\n", "version = 1\ndisable = [\"othr\"]\n", 1);
    let text = assert_err(
        &src,
        ErrorKind::UnknownRule,
        2,
        12,
        "`disable` names rule `othr`",
    );
    assert!(text.contains("did you mean `other`?"), "{text}");
    let text = assert_err(
        "version = 1\ndisable = [\"builtin.trace-integrity\"]\n",
        ErrorKind::UnknownRule,
        2,
        12,
        "builtin.trace-integrity",
    );
    assert!(text.contains("built-in rules cannot be disabled"), "{text}");
}

#[test]
fn error_empty_ops_and_multiline_reason() {
    assert_err(
        &format!("{RULE}ops = []\n"),
        ErrorKind::Invalid,
        6,
        7,
        "`ops` is empty",
    );
    let src =
        "version = 1\n[[rule]]\nid = \"r\"\nreason = \"\"\"\na\nb\"\"\"\ntreatment = \"deny\"\n";
    assert_err(
        src,
        ErrorKind::Invalid,
        4,
        10,
        "`reason` must be one non-empty line",
    );
}

#[test]
fn bad_file_never_half_loads() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&good, RULE).unwrap();
    std::fs::write(
        &bad,
        "version = 1\n[[rule]]\nid = \"x\"\nreason = \"x\"\ntreatment = \"nope\"\n",
    )
    .unwrap();
    assert!(Policy::load(&[good.clone(), bad]).is_err());
    let missing = dir.path().join("missing.toml");
    let e = Policy::load(&[good.clone(), missing.clone()]).unwrap_err();
    assert!(matches!(e, PolicyError::Read { .. }));
    assert!(e
        .to_string()
        .starts_with(&format!("{}: cannot read policy file", missing.display())));
    assert!(matches!(Policy::load(&[]), Err(PolicyError::NoFiles)));
    // The good file alone still loads.
    assert_eq!(Policy::load(&[good]).unwrap().rules().len(), 2);
}

// ---------------------------------------------------------------------------
// Shipped policy files.

fn policy_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_shipped_policy_file_loads() {
    let files = policy_files();
    assert!(
        files.iter().any(|f| f.ends_with("policies/default.toml")),
        "{files:?}"
    );
    let default = files
        .iter()
        .find(|f| f.ends_with("policies/default.toml"))
        .cloned()
        .unwrap();
    for f in &files {
        // The default pack stands alone; every other file is an overlay.
        let one = std::slice::from_ref(f);
        let p = if *f == default {
            Policy::load(one)
        } else {
            Policy::load_on_default(one)
        }
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(p.rules().len() > 1, "{} has no rules", f.display());
    }
}

#[test]
fn embedded_pack_is_the_shipped_file() {
    for (name, text) in DEFAULT_PACK {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), *text, "{name}");
    }
    let from_file =
        Policy::load(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies/default.toml")])
            .unwrap();
    assert_eq!(from_file.digest(), Policy::default_pack().digest());
}

#[test]
fn examples_extend_the_default_pack() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let p = Policy::load(&[
        root.join("default.toml"),
        root.join("examples/team-overrides.toml"),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let c = ctx();
    // The example accepts force-pushes to the team's own agent/* branches.
    let v = p.evaluate(&act("exec git push --force origin agent/fix-login", ""), &c);
    assert_eq!(
        (v.rule.as_str(), v.treatment),
        ("team.agent-branches-force-push", Treatment::Accept)
    );
    let v = p.evaluate(&act("exec git push --force origin feature/x", ""), &c);
    assert_eq!(v.rule, "repo.push-force");
}

// ---------------------------------------------------------------------------
// Semantics.

#[test]
fn first_match_wins_in_file_order() {
    let p = pol(r#"
version = 1
[[rule]]
id = "first"
reason = "first"
ops = ["unlink"]
paths = ["/data/**"]
treatment = "audit"

[[rule]]
id = "second"
reason = "second"
ops = ["unlink"]
paths = ["/data/keep/**"]
treatment = "deny"
"#);
    let v = p.evaluate(&act("unlink /data/keep/x", ""), &ctx());
    assert_eq!((v.rule.as_str(), v.treatment), ("first", Treatment::Audit));
    let ids: Vec<&str> = p.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["builtin.trace-integrity", "first", "second"]);
}

#[test]
fn priority_beats_file_order_and_ties_keep_order() {
    let p = pol(r#"
version = 1
[[rule]]
id = "broad"
reason = "broad"
ops = ["unlink"]
paths = ["/data/**"]
treatment = "audit"

[[rule]]
id = "narrow"
reason = "narrow"
ops = ["unlink"]
paths = ["/data/keep/**"]
treatment = "deny"
priority = 10

[[rule]]
id = "also-10"
reason = "later with the same priority"
ops = ["unlink"]
paths = ["/data/**"]
treatment = "accept"
priority = 10
"#);
    let ids: Vec<&str> = p.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["builtin.trace-integrity", "narrow", "also-10", "broad"]
    );
    let c = ctx();
    assert_eq!(
        p.evaluate(&act("unlink /data/keep/x", ""), &c).rule,
        "narrow"
    );
    assert_eq!(
        p.evaluate(&act("unlink /data/other", ""), &c).rule,
        "also-10"
    );
}

#[test]
fn builtin_trace_rule_precedes_any_priority() {
    let p = pol(r#"
version = 1
[[rule]]
id = "allow-all"
reason = "allow everything"
treatment = "accept"
priority = 1000
"#);
    let v = p.evaluate(&act("truncate $TRACE", ""), &ctx());
    assert_eq!(
        (v.rule.as_str(), v.treatment),
        ("builtin.trace-integrity", Treatment::Deny)
    );
    // Without a trace path the built-in rule has nothing to protect.
    let mut c = ctx();
    c.trace_path = None;
    assert_eq!(
        p.evaluate(&act("truncate $TRACE", ""), &c).rule,
        "allow-all"
    );
}

#[test]
fn rename_matches_source_or_destination() {
    let p = pol(r#"
version = 1
[[rule]]
id = "keep"
reason = "keep"
ops = ["rename"]
paths = ["/keep/**"]
treatment = "confirm"

[[rule]]
id = "src-only"
reason = "source only"
ops = ["rename"]
when = [{ field = "source", operator = "glob", values = ["/src/**"] }]
treatment = "audit"

[[rule]]
id = "not-keep"
reason = "neither path in /keep"
ops = ["rename"]
not_paths = ["/keep/**"]
treatment = "accept"
"#);
    let c = ctx();
    assert_eq!(
        p.evaluate(&act("rename /keep/a /tmp/a", ""), &c).rule,
        "keep"
    );
    assert_eq!(
        p.evaluate(&act("rename /tmp/a /keep/a", ""), &c).rule,
        "keep"
    );
    assert_eq!(
        p.evaluate(&act("rename /src/a /tmp/a", ""), &c).rule,
        "src-only"
    );
    assert_eq!(
        p.evaluate(&act("rename /tmp/a /src/a", ""), &c).rule,
        "not-keep"
    );
}

#[test]
fn source_and_dest_of_single_path_operations() {
    let p = pol(r#"
version = 1
[[rule]]
id = "writes-keep"
reason = "x"
when = [{ field = "dest", operator = "glob", values = ["/keep/**"] }]
treatment = "audit"
"#);
    let c = ctx();
    // For operations with one path, source and dest are that path.
    assert_eq!(
        p.evaluate(&act("truncate /keep/a", ""), &c).rule,
        "writes-keep"
    );
    assert_eq!(
        p.evaluate(&act("rename /tmp/a /keep/a", ""), &c).rule,
        "writes-keep"
    );
    assert_eq!(
        p.evaluate(&act("rename /keep/a /tmp/a", ""), &c).rule,
        "default"
    );
}

#[test]
fn negated_operators_are_the_complement() {
    let p = pol(r#"
version = 1
[[rule]]
id = "not-root"
reason = "x"
ops = ["unlink"]
when = [{ field = "uid", operator = "not_equal", values = [0] }]
treatment = "audit"
"#);
    let c = ctx();
    assert_eq!(
        p.evaluate(&act("unlink /x", "uid=1000"), &c).rule,
        "not-root"
    );
    assert_eq!(p.evaluate(&act("unlink /x", "uid=0"), &c).rule, "default");
    // A field the action lacks: the positive test fails, its negation holds.
    let p = pol(r#"
version = 1
[[rule]]
id = "no-target"
reason = "x"
ops = ["unlink"]
when = [{ field = "target", operator = "not_equal", values = ["ci"] }]
treatment = "audit"
"#);
    assert_eq!(p.evaluate(&act("unlink /x", ""), &c).rule, "no-target");
    assert_eq!(
        p.evaluate(&act("unlink /x", "target=ci"), &c).rule,
        "default"
    );
}

#[test]
fn numeric_and_text_operators() {
    let p = pol(r#"
version = 1
[[rule]]
id = "lt"
reason = "x"
ops = ["unlink"]
when = [{ field = "uid", operator = "lt", values = [1000] }, { field = "comm", operator = "prefix", values = ["py"] }]
treatment = "audit"

[[rule]]
id = "mask"
reason = "x"
ops = ["chmod"]
when = [{ field = "mode", operator = "mask", values = [0o002] }]
treatment = "audit"

[[rule]]
id = "suffix"
reason = "x"
ops = ["unlink"]
when = [{ field = "comm", operator = "suffix", values = ["sh"] }]
treatment = "audit"
"#);
    let c = ctx();
    assert_eq!(
        p.evaluate(&act("unlink /x", "uid=0 comm=python3"), &c).rule,
        "lt"
    );
    assert_eq!(
        p.evaluate(&act("unlink /x", "uid=1000 comm=python3"), &c)
            .rule,
        "default"
    );
    assert_eq!(
        p.evaluate(&act("unlink /x", "uid=1000 comm=bash"), &c).rule,
        "suffix"
    );
    assert_eq!(p.evaluate(&act("chmod /x 0o757", ""), &c).rule, "mask");
    assert_eq!(p.evaluate(&act("chmod /x 0o755", ""), &c).rule, "default");
}

#[test]
fn result_filter() {
    let p = pol(r#"
version = 1
[[rule]]
id = "done"
reason = "x"
ops = ["unlink"]
result = ["success"]
treatment = "audit"
"#);
    let c = ctx();
    assert_eq!(p.evaluate(&act("unlink /x", "result=0"), &c).rule, "done");
    assert_eq!(
        p.evaluate(&act("unlink /x", "result=-2"), &c).rule,
        "default"
    );
    assert_eq!(
        p.evaluate(&act("unlink /x", "result=none"), &c).rule,
        "default"
    );
    let e = err(&format!(
        "{RULE}ops = [\"unlink\"]\nresult = [\"succes\"]\n"
    ));
    assert!(e.to_string().contains("did you mean `success`?"), "{e}");
}

#[test]
fn lists_nest_and_extend_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(
        &a,
        r#"version = 1
[lists]
tools = ["rm", "@shredders"]
shredders = ["shred"]
[[rule]]
id = "tools"
reason = "x"
program = ["@tools"]
treatment = "audit"
"#,
    )
    .unwrap();
    std::fs::write(&b, "version = 1\n[extend_lists]\ntools = [\"srm\"]\n").unwrap();
    let p = Policy::load(&[a, b]).unwrap();
    let c = ctx();
    for prog in ["rm", "shred", "srm"] {
        assert_eq!(
            p.evaluate(&act(&format!("exec {prog} x"), ""), &c).rule,
            "tools",
            "{prog}"
        );
    }
    assert_eq!(p.rules()[1].conditions[0].values, ["rm", "shred", "srm"]);
}

#[test]
fn disable_removes_a_rule_from_an_earlier_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, RULE).unwrap();
    std::fs::write(&b, "version = 1\ndisable = [\"r\"]\n").unwrap();
    let p = Policy::load(&[a, b]).unwrap();
    assert!(p.rules().iter().all(|r| r.id != "r"));
}

#[test]
fn exec_defaults_and_cli_value_options() {
    let p = pol(r#"
version = 1
[cli.tool]
value_options = ["--target"]
[[rule]]
id = "deploy"
reason = "x"
program = ["tool"]
subcommand = ["deploy"]
treatment = "confirm"
"#);
    let r = &p.rules()[1];
    assert_eq!(r.ops, [Op::Exec]);
    assert_eq!(r.severity, Severity::High);
    let c = ctx();
    assert_eq!(
        p.evaluate(&act("exec tool --target deploy status", ""), &c)
            .rule,
        "default"
    );
    assert_eq!(
        p.evaluate(&act("exec tool --target prod deploy", ""), &c)
            .rule,
        "deploy"
    );
    // The program is matched on argv[0] too (busybox-style multi-call binaries).
    let mut a = act("exec tool deploy", "");
    a.path = Some("/bin/busybox".into());
    assert_eq!(p.evaluate(&a, &c).rule, "deploy");
}

#[test]
fn rules_without_ops_cover_file_operations_only() {
    let p = pol("version = 1\n[[rule]]\nid = \"all\"\nreason = \"x\"\ntreatment = \"audit\"\n");
    let r = &p.rules()[1];
    assert_eq!(
        r.ops,
        [
            Op::Unlink,
            Op::Rmdir,
            Op::Rename,
            Op::Chmod,
            Op::Chown,
            Op::Truncate,
            Op::Write
        ]
    );
    assert_eq!(p.evaluate(&act("exec ls", ""), &ctx()).rule, "default");
}

#[test]
fn container_paths_are_matched_too() {
    let p = pol("version = 1\n[[rule]]\nid = \"etc\"\nreason = \"x\"\nops = [\"unlink\"]\npaths = [\"/etc/**\"]\ntreatment = \"audit\"\n");
    let mut a = act("unlink /var/lib/docker/overlay2/abc/merged/etc/passwd", "");
    assert_eq!(p.evaluate(&a, &ctx()).rule, "default");
    a.container_path = Some("/etc/passwd".into());
    assert_eq!(p.evaluate(&a, &ctx()).rule, "etc");
}

#[test]
fn default_verdict_without_op_or_rules() {
    let p = pol("version = 1\n");
    let v = p.evaluate(&Action::default(), &ctx());
    assert_eq!(
        (v.rule.as_str(), v.treatment),
        ("default", Treatment::Accept)
    );
    let v = p.evaluate(&act("unlink $WS/a", ""), &ctx());
    assert_eq!(
        (v.scope, v.irreversibility),
        (Scope::Workspace, Irreversibility::Irreversible)
    );
    assert_eq!(
        v.reason,
        "no rule matched; the action stays in the workspace"
    );
    // Without [scopes], only the trace file is protected.
    let v = p.evaluate(&act("unlink /etc/x", ""), &ctx());
    assert_eq!(v.scope, Scope::Shared);
    let v = p.evaluate(&act("write $TRACE", ""), &ctx());
    assert_eq!(
        (v.rule.as_str(), v.scope),
        ("builtin.trace-integrity", Scope::Protected)
    );
}

#[test]
fn workspace_prefix_is_a_path_boundary() {
    let p = pol("version = 1\n");
    let v = p.evaluate(&act("unlink /home/dev/proj2/x", ""), &ctx());
    assert_eq!(v.scope, Scope::Shared);
    let mut c = ctx();
    c.workspace = "/home/dev/proj/".into();
    assert_eq!(
        p.evaluate(&act("unlink /home/dev/proj/x", ""), &c).scope,
        Scope::Workspace
    );
}

#[test]
fn digest_is_stable_and_content_based() {
    let a = pol(RULE);
    let b = Policy::from_str(RULE, "other-name.toml").unwrap();
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.digest().len(), 64);
    let crlf = Policy::from_str(&RULE.replace('\n', "\r\n"), "x").unwrap();
    assert_eq!(a.digest(), crlf.digest());
    let c = pol(&RULE.replace("deny", "audit"));
    assert_ne!(a.digest(), c.digest());
    // sha256("48\n" + RULE)
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update(format!("{}\n{RULE}", RULE.len()));
    assert_eq!(a.digest(), hex::encode(h.finalize()));
}

#[test]
fn explain_reports_matches_and_near_misses() {
    let p = Policy::default_pack();
    let a = act("exec kubectl --context prod delete deployment api", "");
    let e = p.explain(&a, &ctx());
    let rules = p.rules();
    let decided = &rules[e.decided_by.unwrap()];
    assert_eq!(decided.id, "deploy.kubectl-delete-prod");
    assert_eq!(e.verdict.rule, decided.id);
    // The generic delete rule also matched but was shadowed.
    let matched: Vec<&str> = e
        .matched
        .iter()
        .map(|m| rules[m.rule].id.as_str())
        .collect();
    assert_eq!(matched[0], "deploy.kubectl-delete-prod");
    assert!(matched.contains(&"deploy.kubectl-delete"), "{matched:?}");
    // kubectl-change-prod differs only in its subcommand.
    let near: Vec<&str> = e
        .near_misses
        .iter()
        .map(|m| rules[m.rule].id.as_str())
        .collect();
    assert!(near.contains(&"deploy.kubectl-change-prod"), "{near:?}");
    let nm = e
        .near_misses
        .iter()
        .find(|m| rules[m.rule].id == "deploy.kubectl-change-prod")
        .unwrap();
    let failed: Vec<String> = rules[nm.rule]
        .conditions
        .iter()
        .zip(&nm.conditions)
        .filter(|(_, ok)| !**ok)
        .map(|(c, _)| c.field.to_string())
        .collect();
    assert_eq!(failed, ["subcommand"]);
}

#[test]
fn condition_display_is_readable() {
    let p = Policy::default_pack();
    let r = p
        .rules()
        .iter()
        .find(|r| r.id == "deploy.kubectl-delete-prod")
        .unwrap();
    let shown: Vec<String> = r.conditions.iter().map(|c| c.to_string()).collect();
    assert_eq!(shown[0], "program glob [kubectl, oc]");
    assert_eq!(shown[1], "subcommand equal [delete, drain]");
    assert_eq!(shown[2], "flag absent [--dry-run]");
    assert!(
        shown[3].starts_with(
            "option --context|--cluster|--namespace|-n|--kube-context glob [prod, production,"
        ),
        "{}",
        shown[3]
    );
    assert!(shown[3].ends_with(" more]"), "{}", shown[3]);
}

#[test]
fn policy_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Policy>();
    let p = Policy::default_pack();
    let handle = std::thread::spawn(move || p.evaluate(&act("exec terraform destroy", ""), &ctx()));
    assert_eq!(handle.join().unwrap().rule, "infra.iac-destroy");
}

#[test]
fn compiled_rules_expose_their_patterns() {
    // Consumers that compile rules further (kernel or seccomp filters) see
    // the expanded, unsubstituted patterns and the operations.
    let p = Policy::default_pack();
    let r = p
        .rules()
        .iter()
        .find(|r| r.id == "repo.git-state-delete")
        .unwrap();
    assert_eq!(r.ops, [Op::Unlink, Op::Rmdir, Op::Rename]);
    assert!(r.applies_to(Op::Rmdir) && !r.applies_to(Op::Write));
    let source = &r.conditions[0];
    assert_eq!(
        (source.field, source.operator),
        (Field::Source, Operator::Glob)
    );
    assert!(
        source.values.iter().any(|v| v == "**/.git/objects/**"),
        "{:?}",
        source.values
    );
    let builtin = &p.rules()[0];
    assert_eq!(builtin.conditions[0].values, ["${trace}*"]);
}

// ---------------------------------------------------------------------------
// The merged path index answers as each test does on its own.

/// Every path condition of every rule, and the protected-path test, give
/// the same answer through the policy's merged glob sets as through each
/// condition's own sets, for paths at, under and beside every root.
#[test]
fn merged_path_index_matches_like_each_test() {
    use super::pack_tests::{HOME, TRACE, WS};
    let custom = Policy::load_on_default(&[]).unwrap();
    // One rule per glob of each form the index splits (see IndexSet).
    let split_forms = [
        "${workspace}/**/.git/**/*.tmp",
        "/etc/**/*.dpkg-*",
        "${home}/.ssh/*.pem",
        "**/{a,b/c}/*.x",
        "${workspace}/a*/**",
        "**/*",
        "${workspace}/**/src/**",
        "${home}/.*history",
        "${workspace}/*",
        "${workspace}/CHANGE{LOG,S}*",
        "${home}/?bashrc",
        "/usr/lib/p*/**/__pycache__/**",
        "${workspace}/**/[st]arget/*",
        r"${workspace}/x\\*/*.rs",
        "**/.git/hooks/**",
        "${workspace}/{src,tests/ui}/**",
        "${workspace}/*/*.c",
        "**/d?/**",
        "${workspace}/**/",
        "/**",
    ];
    let split_rules: String = split_forms
        .iter()
        .enumerate()
        .map(|(i, g)| {
            format!(
                "[[rule]]\nid = \"split-forms-{i}\"\nreason = \"x\"\ntreatment = \"confirm\"\npaths = [\"{g}\"]\n\n"
            )
        })
        .collect();
    let extra = pol(&("version = 1\n".to_owned()
        + &split_rules
        + r#"
[[rule]]
id = "roots"
reason = "x"
treatment = "confirm"
paths = ["${workspace}", "${home}", "${trace}*", "/", "**/*.db", "/etc/{passwd,shadow}"]


[[rule]]
id = "cwd"
reason = "x"
treatment = "deny"
ops = ["exec"]
when = [
  { field = "cwd", operator = "glob", values = ["${home}/**"] },
  { field = "cwd", operator = "not_glob", values = ["${home}/ok/**"] },
  { field = "dest", operator = "glob", values = ["${trace}", "${workspace}/**"] },
]
"#));
    let mut paths: Vec<String> = [
        "/",
        "/etc/passwd",
        "/etc/shadow",
        "/usr/bin/git",
        "/tmp/x",
        "/etc/apt/a.dpkg-old",
        "/etc/a.dpkg-new",
        "/usr/lib/python3/x/__pycache__/a.pyc",
        "/usr/lib/python3/__pycache__/",
        "relative/a.x",
        "q.x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for root in [WS, HOME, TRACE, "/home/devx", "/var/log/abm"] {
        for rest in [
            "",
            "/",
            ".idx",
            ".1",
            "/.git",
            "/.git/config",
            "/.git/objects/ab/cd",
            "/src/main.rs",
            "/target/debug/app",
            "/.ssh/id_rsa",
            "/.env",
            "/node_modules/a/b.js",
            "/.cargo/registry/x",
            "/a/b/c/d.db",
            "/.bashrc",
            "/CHANGELOG.md",
            "/CHANGES",
            "/docs/CHANGELOG.md",
            "/.zsh_history",
            "/ok/x",
            "/Cargo.lock",
            "//src//a.rs",
            "/src/",
            "/a/b/.git/x/y.tmp",
            "/.git/y.tmp",
            "/.git/hooks/pre-commit",
            "/b/c/q.x",
            "/a/q.x",
            "/target/q",
            "/tests/ui/x/y",
            "/x*/m.rs",
            "/ab/cd/e.c",
            "/d1/",
            "/d1/z",
            "/.zsh_history",
            "/.ssh/k.pem",
        ] {
            paths.push(format!("{root}{rest}"));
        }
    }
    let c = ctx();
    let mut compared = 0;
    // How often the split forms' rule matched and did not.
    let mut split_seen = [0; 2];
    for policy in [custom, extra] {
        let indexed: usize = policy
            .rules()
            .iter()
            .flat_map(|r| &r.conditions)
            .filter(|c| matches!(&c.test, matcher::Test::Path(matcher::PathTest::Glob(g)) if g.id.is_some()))
            .count();
        assert!(indexed > 0, "no path test was indexed");
        for (i, p) in paths.iter().enumerate() {
            let q = &paths[(i * 7 + 3) % paths.len()];
            for op in Op::ALL {
                let mut a = act(&format!("unlink {p}"), &format!("cwd={q}"));
                a.op = Some(op);
                a.path2 = Some(q.clone());
                a.container_path = Some(q.clone());
                let with = policy.view(&a, op, &c);
                let roots = Roots::new(&c.workspace, &c.home, c.trace_path.as_deref());
                let without = View::new(&a, op, roots, |x| policy.value_options(x));
                for r in policy.rules() {
                    for cond in &r.conditions {
                        if r.id.starts_with("split-forms") {
                            split_seen[usize::from(cond.matches(&with))] += 1;
                        }
                        assert_eq!(
                            cond.matches(&with),
                            cond.matches(&without),
                            "rule {} condition {cond} on {op:?} {p} / {q}",
                            r.id
                        );
                        compared += 1;
                    }
                }
                for s in 0..4 {
                    let plain = without
                        .subject(s)
                        .is_some_and(|x| policy.protected_in(x, &roots));
                    assert_eq!(policy.protected_at(&with, s), plain, "protected {p} / {q}");
                }
            }
        }
    }
    assert!(compared > 10_000, "{compared}");
    assert!(split_seen.iter().all(|n| *n > 100), "{split_seen:?}");
}

/// Root-relative globs are compiled without the `/` after the root, and
/// paths are matched the same way: what they match is unchanged, through a
/// test's own sets and through the merged index alike.
#[test]
fn root_relative_globs_match_beneath_the_root_only() {
    use super::paths::{PathGlobs, PathIndex};
    let pats = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "${workspace}/**/*.tf",
            &["/w/main.tf", "/w/a/b/main.tf"],
            &[
                "/w",
                "/w/",
                "/w2/main.tf",
                "/wmain.tf",
                "/w/main.tfx",
                "/x/w/main.tf",
            ],
        ),
        (
            "${workspace}/**",
            &["/w/", "/w/a", "/w/a/b"],
            &["/w", "/w2", "/w2/a"],
        ),
        (
            "${workspace}/*.pem",
            &["/w/k.pem"],
            &["/w/a/k.pem", "/w2/k.pem", "/w"],
        ),
        (
            "${home}/.ssh",
            &["/h/.ssh"],
            &["/h/.ssh/x", "/h2/.ssh", "/h"],
        ),
        (
            "${home}/.ssh/**",
            &["/h/.ssh/id", "/h/.ssh/a/b"],
            &["/h/.ssh", "/h/.sshx/a"],
        ),
        (
            "${trace}*",
            &["/t/run.abm", "/t/run.abm.seal"],
            &["/t/x/run.abm"],
        ),
        ("${workspace}", &["/w"], &["/w/", "/w/a", "/w2"]),
    ];
    for (pattern, yes, no) in cases {
        let mut g = PathGlobs::compile(&pats(&[pattern])).unwrap();
        let roots = Roots::new(
            Path::new("/w"),
            Path::new("/h"),
            Some(Path::new("/t/run.abm")),
        );
        let index = PathIndex::build(&mut [&mut g]);
        for (paths, want) in [(yes, true), (no, false)] {
            for p in paths.iter() {
                assert_eq!(g.is_match(p, &roots), want, "{pattern} on {p}");
                assert_eq!(
                    index.hits(p, &roots).has(0),
                    want,
                    "{pattern} on {p} (index)"
                );
            }
        }
    }
}

/// The merged index remembers the hits of recent paths for the roots they
/// were matched under: the same path under other roots is matched again.
#[test]
fn remembered_hits_belong_to_the_roots_they_were_matched_under() {
    use super::paths::{PathGlobs, PathIndex, Roots};
    use std::path::Path;
    let mut g = PathGlobs::compile(&["${workspace}/**/*.env".to_string()]).unwrap();
    let index = PathIndex::build(&mut [&mut g]);
    let a = Roots::new(Path::new("/a"), Path::new("/h"), None);
    let b = Roots::new(Path::new("/b"), Path::new("/h"), None);
    for _ in 0..2 {
        assert!(index.hits("/a/x.env", &a).has(0));
        assert!(!index.hits("/a/x.env", &b).has(0));
        assert!(index.hits("/b/c/y.env", &b).has(0));
        assert!(!index.hits("/a/x.txt", &a).has(0));
    }
}

/// The merged index says of every test what the test's own globs say, for
/// every form it splits globs into (component, name, beneath, exact,
/// top-level name, whole), with repeated globs shared between tests, and
/// again when its remembered hits and parts answer.
#[test]
fn the_merged_index_agrees_with_each_test() {
    use super::paths::{PathGlobs, PathIndex};
    let tests: &[&[&str]] = &[
        &["**/node_modules/**", "${workspace}/**/.venv/**"],
        &["**/*.pem", "${home}/.ssh/*"],
        &["**/*.pem"],
        &[
            "${workspace}/CHANGELOG*",
            "${workspace}/.github/workflows/**",
        ],
        &["${workspace}/CHANGELOG*"],
        &["${home}/.*history", "${home}/.ssh"],
        &["/etc/**", "/etc/cron*/**", "/etc/**/*.dpkg-*"],
        &["/home/*/.bashrc", "/usr/lib/python3*/**/__pycache__/**"],
        &["${trace}*"],
        &[
            "${workspace}/{a,b}*",
            "${workspace}/src/*.rs",
            "${workspace}/x?",
        ],
        &["${workspace}", "${home}/.config/**"],
        &["/tmp/*", "${workspace}/**/target/**/*.o"],
    ];
    let mut globs: Vec<PathGlobs> = tests
        .iter()
        .map(|t| PathGlobs::compile(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap())
        .collect();
    let mut refs: Vec<&mut PathGlobs> = globs.iter_mut().collect();
    let index = PathIndex::build(&mut refs);
    let roots = Roots::new(
        Path::new("/w"),
        Path::new("/h"),
        Some(Path::new("/t/run.abm")),
    );
    let names = [
        "a",
        "ab",
        "b1",
        "x1",
        "xy",
        "CHANGELOG",
        "CHANGELOG.md",
        "k.pem",
        ".bash_history",
        ".bashrc",
        "m.o",
        "lib.rs",
        "c.dpkg-old",
        "crontab",
        "run.abm",
        "run.abm.seal",
        "",
    ];
    let dirs = [
        "/w",
        "/w/src",
        "/w/a",
        "/w/node_modules/x",
        "/w/.venv/lib",
        "/w/.github/workflows",
        "/w/target/debug/deps",
        "/h",
        "/h/.ssh",
        "/h/.config/gh",
        "/etc",
        "/etc/cron.d",
        "/etc/apt/sources.list.d",
        "/home/u",
        "/usr/lib/python3.11/x/__pycache__",
        "/tmp",
        "/t",
        "/t/x",
        "/",
    ];
    for round in 0..2 {
        for d in dirs {
            for n in names {
                let p = format!("{}/{n}", d.trim_end_matches('/'));
                let hits = index.hits(&p, &roots);
                for (i, g) in globs.iter().enumerate() {
                    assert_eq!(
                        hits.has(i as u32),
                        g.is_match(&p, &roots),
                        "test {i} {:?} on {p} (round {round})",
                        tests[i]
                    );
                }
            }
        }
    }
}
