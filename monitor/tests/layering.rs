//! The layering of `monitor/src`: dependencies between top-level modules
//! point one way (docs/architecture.md). This reads the sources, drops
//! comments, string and character literals and `#[cfg(test)]` items, builds
//! the graph of `crate::X` references between top-level modules and fails
//! naming every cycle, with the files that make each edge. It also fails
//! naming every `Result<_, String>` in the same code: library errors are
//! enums (docs/architecture.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module -> (used module -> files that use it).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Source text without comments, without the contents of string and
/// character literals (a literal becomes `""`), so that neither can make
/// an edge. Line breaks inside a removed block comment or literal are kept
/// (after it), so the text has as many lines as the source.
fn strip_comments_and_literals(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &s[i..];
        let start = i;
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if s[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if s[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            keep_line_breaks(&s[start..i.min(s.len())], &mut out);
        } else if let Some(len) = raw_string_len(rest) {
            out.push_str("\"\"");
            i += len;
            keep_line_breaks(&s[start..i], &mut out);
        } else if b[i] == b'"' || rest.starts_with("b\"") {
            i += if b[i] == b'"' { 1 } else { 2 };
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            keep_line_breaks(&s[start..i.min(s.len())], &mut out);
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}', '"') or a lifetime.
            if let Some(len) = char_literal_len(rest) {
                out.push_str("' '");
                i += len;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// One `\n` in `out` for each line break in `removed`.
fn keep_line_breaks(removed: &str, out: &mut String) {
    out.extend(removed.matches('\n').map(|_| '\n'));
}

/// Length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start
/// of `s`, if there is one there.
fn raw_string_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("br").or_else(|| s.strip_prefix('r'))?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    if !body[hashes..].starts_with('"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let start = s.len() - body.len() + hashes + 1;
    let end = s[start..].find(&close)?;
    Some(start + end + close.len())
}

fn char_literal_len(s: &str) -> Option<usize> {
    let mut chars = s.char_indices().skip(1);
    let (_, c) = chars.next()?;
    if c == '\\' {
        // The escaped character itself may be a quote: `'\''`.
        let close = s.get(3..)?.find('\'')?;
        return Some(3 + close + 1);
    }
    let (j, next) = chars.next()?;
    (next == '\'').then_some(j + 1)
}

/// The text with every item under `#[cfg(test)]` removed (up to its `;`
/// or its balanced `{…}` block). The line breaks of a removed item are
/// kept, so the text has as many lines as the source.
fn strip_cfg_test(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (j, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        keep_line_breaks(&item[..end], &mut out);
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_at(s: &str) -> &str {
    let s = s.trim_start();
    &s[..s.find(|c: char| !is_ident(c)).unwrap_or(s.len())]
}

/// The top-level modules a (stripped) source text names through `crate::`,
/// including the first segment of each branch of `crate::{a::…, b, …}`.
fn crate_references(s: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = s[from..].find("crate::") {
        let at = from + at;
        from = at + "crate::".len();
        let before = s[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == '$') {
            continue; // `$crate::` in macros, `my_crate::`
        }
        let after = s[from..].trim_start();
        if let Some(group) = after.strip_prefix('{') {
            // The first identifier of each comma-separated branch at depth 1.
            let mut depth = 1usize;
            let mut branch_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => branch_start = true,
                    c if branch_start && is_ident(c) && depth == 1 => {
                        names.insert(ident_at(&group[j..]).to_string());
                        branch_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(after);
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// `mod name;` declarations under `#[cfg(test)]` in a source text.
fn test_only_modules(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let mut item = rest.trim_start();
        while item.starts_with("#[") {
            item = item[item.find(']').map_or(item.len(), |e| e + 1)..].trim_start();
        }
        let item = item
            .strip_prefix("pub(crate) ")
            .or_else(|| item.strip_prefix("pub(super) "))
            .or_else(|| item.strip_prefix("pub "))
            .unwrap_or(item);
        if let Some(decl) = item.strip_prefix("mod ") {
            let name = ident_at(decl);
            if decl.trim_start()[name.len()..]
                .trim_start()
                .starts_with(';')
            {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The graph of one source tree given as (path relative to `src`, text).
fn graph(files: &[(String, String)]) -> Graph {
    let stripped: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| (p.clone(), strip_comments_and_literals(t)))
        .collect();
    let test_only = test_only_files(files);
    let tops: BTreeSet<String> = files
        .iter()
        .map(|(p, _)| top_module(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut g = Graph::new();
    for (p, t) in &stripped {
        let top = top_module(p);
        if top == "lib" || top == "main" {
            continue;
        }
        if test_only.contains(p) {
            continue;
        }
        let code = strip_cfg_test(t);
        for used in crate_references(&code) {
            if used != top && tops.contains(&used) {
                g.entry(top.clone())
                    .or_default()
                    .entry(used)
                    .or_default()
                    .insert(p.clone());
            }
        }
    }
    g
}

fn top_module(rel: &str) -> String {
    rel.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = g
        .iter()
        .flat_map(|(a, m)| std::iter::once(a.as_str()).chain(m.keys().map(|b| b.as_str())))
        .collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// Every cycle, each edge inside it with the files that make it.
fn describe(g: &Graph, cycles: &[Vec<String>]) -> String {
    let mut s = String::new();
    for comp in cycles {
        s.push_str(&format!("cycle between {}:\n", comp.join(", ")));
        for a in comp {
            for b in comp {
                if let Some(files) = g.get(a).and_then(|m| m.get(b)) {
                    let files: Vec<&str> = files.iter().map(|f| f.as_str()).collect();
                    s.push_str(&format!("  {a} -> {b}  ({})\n", files.join(", ")));
                }
            }
        }
    }
    s
}

fn monitor_src() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

fn uses(g: &Graph, a: &str, b: &str) -> bool {
    g.get(a).is_some_and(|m| m.contains_key(b))
}

#[test]
fn top_level_modules_of_monitor_have_no_dependency_cycle() {
    let g = graph(&monitor_src());
    // The reading sees the edges the layers are made of; a graph read wrong
    // (say, empty) would pass the cycle check for nothing.
    for (a, b) in [
        ("run", "trace"),
        ("run", "kernel"),
        ("daemon", "pipeline"),
        ("pipeline", "kernel"),
        ("pipeline", "action"),
        ("action", "policy"),
        ("policy", "record"),
        ("trace", "record"),
        ("cli", "cmd"),
        ("cmd", "action"),
        ("cmd", "policy"),
        ("cmd", "oracle"),
        ("cmd", "trace"),
        ("cmd", "enforce"),
        ("report", "oracle"),
    ] {
        assert!(uses(&g, a, b), "expected {a} -> {b} in the graph: {g:#?}");
    }
    let found = cycles(&g);
    assert!(found.is_empty(), "{}", describe(&g, &found));
}

#[test]
fn ground_layers_use_nothing_above_and_commands_not_each_other() {
    let g = graph(&monitor_src());
    for bottom in ["core", "record"] {
        assert!(
            g.get(bottom).is_none_or(|m| m.is_empty()),
            "{bottom} must use no other module of monitor/src: {:#?}",
            g.get(bottom)
        );
    }
    for (a, b) in [("run", "daemon"), ("daemon", "run")] {
        assert!(
            !uses(&g, a, b),
            "{a} uses {b}: {:?}",
            g.get(a).and_then(|m| m.get(b))
        );
    }
    // `cmd/` holds the small commands: it uses no other command, and only
    // the dispatch in `cli` uses it.
    for other in COMMANDS.iter().filter(|c| **c != "cmd") {
        assert!(
            !uses(&g, "cmd", other),
            "cmd uses the command {other}: {:?}",
            g.get("cmd").and_then(|m| m.get(*other))
        );
    }
    for (m, used) in &g {
        assert!(
            m == "cli" || !used.contains_key("cmd"),
            "{m} uses cmd ({:?}); commands are reached through cli only",
            used.get("cmd")
        );
    }
}

/// The top-level modules of the command layer (docs/architecture.md).
const COMMANDS: &[&str] = &["cli", "cli_gen", "cmd", "daemon", "hook", "report", "run"];

/// The reading itself, on a small made-up tree: a cycle is found and
/// named; comments, strings and test-only code make no edge.
#[test]
fn the_reading_finds_a_cycle_and_ignores_comments_strings_and_tests() {
    let files = |a_mod: &str| {
        vec![
            (
                "lib.rs".to_string(),
                "pub mod a; pub mod b; pub mod c;".to_string(),
            ),
            ("a/mod.rs".to_string(), a_mod.to_string()),
            (
                "a/tests.rs".to_string(),
                "use crate::c::Z; // test-only file".to_string(),
            ),
            (
                "b.rs".to_string(),
                "use crate::{c::{X, Y}, a as _};\nfn f() -> char { '\"' }".to_string(),
            ),
            (
                "c.rs".to_string(),
                concat!(
                    "// use crate::a;\n/* crate::b /* nested */ crate::a */\n",
                    "const S: &str = \"crate::a\"; const R: &str = r#\"crate::b\"#;\n",
                    "fn g<'a>(x: &'a str) -> &'a str { x }\n",
                    "#[cfg(test)]\nmod tests { use crate::a::T; fn t() { crate::b::f(); } }\n",
                )
                .to_string(),
            ),
        ]
    };
    // Character literals that hold quotes do not hide the `use` after them.
    let g = graph(&files(concat!(
        "pub mod x; #[cfg(test)]\nmod tests;\n",
        "const Q: [char; 3] = ['\\'', '\"', '\\u{22}'];\n",
        "use crate::b::Y;",
    )));
    assert!(uses(&g, "a", "b"), "{g:#?}");
    assert!(uses(&g, "b", "c") && uses(&g, "b", "a"), "{g:#?}");
    assert!(!uses(&g, "a", "c"), "a/tests.rs is test-only: {g:#?}");
    assert!(
        !g.contains_key("c"),
        "c's references are comments, strings, tests: {g:#?}"
    );
    let found = cycles(&g);
    assert_eq!(found, vec![vec!["a".to_string(), "b".to_string()]]);
    let text = describe(&g, &found);
    assert!(text.contains("a -> b  (a/mod.rs)"), "{text}");
    assert!(text.contains("b -> a  (b.rs)"), "{text}");
    // Without the back edge there is no cycle.
    let g = graph(&files("pub mod x; #[cfg(test)]\nmod tests;"));
    assert!(cycles(&g).is_empty(), "{g:#?}");
}

/// docs/architecture.md's table of edges (`| `module` | `a`, `b` |`, or
/// `nothing`) is the graph read from the sources, module for module.
#[test]
fn architecture_doc_lists_the_edges_of_the_sources() {
    let g = graph(&monitor_src());
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let at = doc
        .find("The edges as they are today")
        .expect("docs/architecture.md: the table of edges is missing");
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| module"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = line.split('|').collect();
        assert!(cells.len() >= 3, "bad table row: {line}");
        documented.insert(
            names(cells[1]).into_iter().next().unwrap_or_default(),
            names(cells[2]),
        );
    }
    let mut tops: BTreeSet<String> = monitor_src()
        .iter()
        .map(|(p, _)| top_module(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    tops.extend(g.keys().cloned());
    let actual: BTreeMap<String, BTreeSet<String>> = tops
        .iter()
        .map(|m| {
            let uses = g
                .get(m)
                .map(|u| u.keys().cloned().collect())
                .unwrap_or_default();
            (m.clone(), uses)
        })
        .collect();
    if documented != actual {
        let mut table = String::new();
        for (m, uses) in &actual {
            let cell = if uses.is_empty() {
                "nothing".to_owned()
            } else {
                uses.iter()
                    .map(|u| format!("`{u}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            table.push_str(&format!("| `{m}` | {cell} |\n"));
        }
        panic!(
            "{}: the table of edges differs from the sources; it should read:\n{table}",
            doc_path.display()
        );
    }
}

/// The most lines of code a source file may have outside its tests: a file
/// past it usually holds two rooms (docs/architecture.md).
const MAX_LINES: usize = 800;

/// Files allowed past [`MAX_LINES`] for now, each with the reason. Temporary:
/// an entry goes when its file is split, and no entry may be added without
/// a plan to remove it.
const OVER_MAX_FOR_NOW: &[(&str, &str)] = &[];

/// Lines of code in a source text, as the size gate counts them: the
/// non-blank lines left after removing comments (doc comments included)
/// and every `#[cfg(test)]` item wherever it is in the file. A multi-line
/// string literal counts all its lines.
fn code_lines(text: &str) -> usize {
    strip_cfg_test(&strip_comments_and_literals(text))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

#[test]
fn code_lines_skips_comments_blank_lines_and_test_items_anywhere() {
    let text = "//! doc\n\nfn a() {}\n/* x\n y */\n#[cfg(test)]\nmod t {\n    fn b() {}\n}\n\
                fn c() {\n    \"s\n t\"\n}\n#[cfg(test)]\nfn d() {}\nfn e() {}\n";
    // a, c (3 lines, the literal's two among them), e
    assert_eq!(code_lines(text), 5);
}

/// Every Rust source file of the workspace's crates and of `monitor-ebpf`
/// (test-only files aside) has at most [`MAX_LINES`] lines of code outside
/// its tests, as [`code_lines`] counts them.
#[test]
fn no_source_file_is_over_800_lines_before_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut over = Vec::new();
    let mut exempt_seen = BTreeSet::new();
    let mut seen = 0;
    for krate in ["monitor", "monitor-common", "monitor-ebpf", "xtask"] {
        let src = root.join(krate).join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files: Vec<(String, String)> = paths
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                (rel, std::fs::read_to_string(p).unwrap())
            })
            .collect();
        let test_only = test_only_files(&files);
        for (rel, text) in &files {
            if test_only.contains(rel) {
                continue;
            }
            seen += 1;
            let path = format!("{krate}/src/{rel}");
            let code = code_lines(text);
            if OVER_MAX_FOR_NOW.iter().any(|(p, _)| *p == path) {
                exempt_seen.insert(path.clone());
                if code <= MAX_LINES {
                    over.push(format!(
                        "{path}: {code} lines of code, no longer needs its place in OVER_MAX_FOR_NOW"
                    ));
                }
            } else if code > MAX_LINES {
                over.push(format!("{path}: {code} lines of code outside its tests"));
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} source files found under {}",
        root.display()
    );
    for (path, _) in OVER_MAX_FOR_NOW {
        if !exempt_seen.contains(*path) {
            over.push(format!("{path}: in OVER_MAX_FOR_NOW but not found"));
        }
    }
    assert!(
        over.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        over.join("\n")
    );
}

/// Files compiled only for tests: `#[cfg(test)] mod x;` makes x.rs (or
/// x/mod.rs and everything under x/) test-only.
fn test_only_files(files: &[(String, String)]) -> BTreeSet<String> {
    let mut prefixes = BTreeSet::new();
    for (p, t) in files {
        let dir = match p.rsplit_once('/') {
            Some((d, "mod.rs")) => d.to_string(),
            Some((d, f)) => format!("{d}/{}", f.trim_end_matches(".rs")),
            None if p == "lib.rs" || p == "main.rs" || p == "mod.rs" => String::new(),
            None => p.trim_end_matches(".rs").to_string(),
        };
        for m in test_only_modules(&strip_comments_and_literals(t)) {
            prefixes.insert(if dir.is_empty() {
                m
            } else {
                format!("{dir}/{m}")
            });
        }
    }
    files
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| {
            prefixes
                .iter()
                .any(|x| *p == format!("{x}.rs") || p.starts_with(&format!("{x}/")))
        })
        .collect()
}

/// `Result<T, String>` types in a (stripped) source text: the 1-based line
/// of each and the type as written, spaces collapsed.
fn string_results(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = s[from..].find("Result<") {
        let start = from + found;
        from = start + "Result<".len();
        if s[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        // The generic arguments: up to the matching `>` (an arrow's `>`
        // is not one), split at commas outside nested brackets.
        let (mut depth, mut args, mut arg) = (1usize, Vec::new(), String::new());
        let mut prev = '<';
        let mut end = s.len();
        for (j, c) in s[from..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' if prev == '-' => {}
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 1 => {
                    args.push(std::mem::take(&mut arg));
                    prev = c;
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                end = from + j + 1;
                break;
            }
            arg.push(c);
            prev = c;
        }
        args.push(arg);
        if args.last().is_some_and(|a| a.trim().is_empty()) {
            args.pop(); // a trailing comma
        }
        let err: String = args
            .last()
            .map_or("", |a| a.as_str())
            .split_whitespace()
            .collect();
        if args.len() == 2 && matches!(err.as_str(), "String" | "std::string::String") {
            let text = s[start..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            out.push((s[..start].matches('\n').count() + 1, text));
        }
    }
    out
}

/// `Result<_, String>` types in the code of `monitor/src` (tests left
/// out), as `file:line: type`.
fn string_errors_in(files: &[(String, String)]) -> Vec<String> {
    let test_only = test_only_files(files);
    let mut found = Vec::new();
    for (p, t) in files {
        if test_only.contains(p) {
            continue;
        }
        let code = strip_cfg_test(&strip_comments_and_literals(t));
        for (line, ty) in string_results(&code) {
            found.push(format!("src/{p}:{line}: {ty}"));
        }
    }
    found
}

#[test]
fn library_errors_are_types_not_strings() {
    let found = string_errors_in(&monitor_src());
    assert!(
        found.is_empty(),
        "`Result<_, String>` in monitor/src: give the module a \
         thiserror enum whose variants say what went wrong (commands in cmd/ and cli.rs \
         may use anyhow::Result):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_string_error_check_finds_signatures_over_lines_and_skips_tests() {
    let files = vec![
        (
            "a.rs".to_string(),
            "fn f() -> Result<(), String> { Ok(()) }\n\
             fn g(\n) -> Result<\n    Map<String, Value>,\n    String,\n> { todo!() }\n\
             fn h(x: impl Fn() -> u8) -> Result<Vec<u8>, std::string::String> { todo!() }\n\
             fn ok() -> Result<String, Error> { todo!() }\n\
             fn io() -> io::Result<String> { todo!() }\n\
             // fn c() -> Result<(), String>\n\
             const S: &str = \"Result<(), String>\";\n\
             #[cfg(test)]\nmod tests {\n    fn t() -> Result<(), String> { Ok(()) }\n}\n\
             fn after() -> MyResult<u8, String> { todo!() }\n"
                .to_string(),
        ),
        (
            "enforce/x.rs".to_string(),
            "fn f() -> Result<(), String> { Ok(()) }\n".to_string(),
        ),
        (
            "b/mod.rs".to_string(),
            "#[cfg(test)]\nmod tests;\n".to_string(),
        ),
        (
            "b/tests.rs".to_string(),
            "fn f() -> Result<(), String> { Ok(()) }\n".to_string(),
        ),
    ];
    assert_eq!(
        string_errors_in(&files),
        [
            "src/a.rs:1: Result<(), String>",
            "src/a.rs:3: Result< Map<String, Value>, String, >",
            "src/a.rs:7: Result<Vec<u8>, std::string::String>",
            "src/enforce/x.rs:1: Result<(), String>",
        ]
    );
}
