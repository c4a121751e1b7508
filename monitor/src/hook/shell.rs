//! Splitting a shell command line into simple commands, as far as that can
//! be done without running a shell.
//!
//! Handled: words with `'…'`, `"…"` and `\` quoting; the separators `;`,
//! `&&`, `||`, `|`, `&` and newlines; `#` comments; `VAR=value` prefixes;
//! redirections (`>`/`>|` targets are truncations, `>>` appends, the others
//! are skipped); `sh|bash|zsh|dash -c 'STRING'` (the string is split in
//! turn); and the wrappers `sudo`, `env`, `nohup`, `time`, `command`,
//! `exec`, `nice`, `timeout` (the wrapped command is judged).
//!
//! Not handled, and reported as "not fully parsed" (the words that can be
//! read are still judged): command and process substitution (`$(…)`,
//! backquotes, `<(…)`: their text is split and judged too, but what they
//! print is unknown), parameter expansion (`$VAR`, `${…}`), globs, brace
//! expansion, here-documents, functions, aliases, `eval`, `source` and
//! control structures (`if`, `for`, `while`, `case`: their keywords are
//! skipped, their commands judged).
use std::fmt;

/// One simple command: its words after expansion-free parsing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Simple {
    pub argv: Vec<String>,
    /// Files a redirection truncates (`>`) or appends to (`>>`).
    pub truncates: Vec<String>,
    pub appends: Vec<String>,
}

/// The result of splitting a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub commands: Vec<Simple>,
    /// Why the line was not fully understood (empty: fully parsed).
    pub unparsed: Vec<String>,
}

impl Parsed {
    pub fn fully_parsed(&self) -> bool {
        self.unparsed.is_empty()
    }
    fn note(&mut self, why: impl Into<String>) {
        let w = why.into();
        if !self.unparsed.contains(&w) {
            self.unparsed.push(w);
        }
    }
}

impl fmt::Display for Simple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.argv.join(" "))
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    /// `;`, `&&`, `||`, `|`, `&`, newline.
    Sep,
    /// A redirection operator (`>`, `>>`, `<`, `2>`, `&>`, ...).
    Redir(String),
}

const MAX_DEPTH: usize = 4;

/// Splits `line` into simple commands.
pub fn split(line: &str) -> Parsed {
    let mut p = Parsed::default();
    split_into(line, &mut p, 0);
    p
}

fn split_into(line: &str, p: &mut Parsed, depth: usize) {
    if depth > MAX_DEPTH {
        p.note("nested too deeply");
        return;
    }
    let (toks, subs) = lex(line, p);
    for s in subs {
        split_into(&s, p, depth + 1);
    }
    let mut cur = Simple::default();
    let mut pending: Option<String> = None;
    let flush = |cur: &mut Simple, p: &mut Parsed| {
        let c = std::mem::take(cur);
        for s in unwrap(c, p, depth) {
            p.commands.push(s);
        }
    };
    for t in toks {
        match t {
            Tok::Sep => flush(&mut cur, p),
            Tok::Redir(op) => pending = Some(op),
            Tok::Word(w) => {
                if let Some(op) = pending.take() {
                    if op.ends_with(">>") {
                        cur.appends.push(w);
                    } else if op.ends_with('>') || op.ends_with(">|") {
                        cur.truncates.push(w);
                    }
                    continue;
                }
                cur.argv.push(w);
            }
        }
    }
    if pending.is_some() {
        p.note("a redirection without a target");
    }
    flush(&mut cur, p);
}

/// Shell keywords that start or end a compound command.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac", "{",
    "}", "!", "in", "function",
];

/// Strips assignments, keywords and wrappers; expands `sh -c STRING`.
fn unwrap(mut c: Simple, p: &mut Parsed, depth: usize) -> Vec<Simple> {
    let mut i = 0;
    while i < c.argv.len() {
        let w = &c.argv[i];
        if KEYWORDS.contains(&w.as_str()) {
            if matches!(w.as_str(), "for" | "case" | "while" | "until" | "function") {
                p.note(format!("control structure `{w}`"));
            }
            if matches!(w.as_str(), "for" | "case") {
                // `for x in ...; do` / `case x in`: the words are no command.
                return Vec::new();
            }
            i += 1;
        } else if is_assignment(w) {
            i += 1;
        } else {
            break;
        }
    }
    c.argv.drain(..i);
    // Wrappers that run their arguments as a command.
    while let Some(first) = c.argv.first() {
        let base = first.rsplit('/').next().unwrap_or(first).to_owned();
        let skip = match base.as_str() {
            "sudo" | "doas" | "nohup" | "time" | "command" | "exec" | "nice" | "env"
            | "timeout" | "stdbuf" | "ionice" | "chronic" => {
                let mut j = 1;
                while j < c.argv.len() {
                    let a = &c.argv[j];
                    if a == "--" {
                        j += 1;
                        break;
                    }
                    if a.starts_with('-') || (base == "env" && is_assignment(a)) {
                        // Options with a separate value we know of.
                        if (base == "sudo" && matches!(a.as_str(), "-u" | "-g" | "-C" | "-D"))
                            || (base == "nice" && a == "-n")
                            || (base == "env" && matches!(a.as_str(), "-u" | "-C"))
                            || (base == "timeout" && matches!(a.as_str(), "-s" | "-k"))
                        {
                            j += 1;
                        }
                        j += 1;
                        continue;
                    }
                    break;
                }
                // timeout DURATION CMD
                if base == "timeout" && j < c.argv.len() {
                    j += 1;
                }
                Some(j)
            }
            _ => None,
        };
        match skip {
            Some(j) if j < c.argv.len() => {
                c.argv.drain(..j);
            }
            Some(_) => break,
            None => break,
        }
    }
    let Some(first) = c.argv.first() else {
        return if c.truncates.is_empty() && c.appends.is_empty() {
            Vec::new()
        } else {
            vec![c]
        };
    };
    let base = first.rsplit('/').next().unwrap_or(first);
    if matches!(base, "sh" | "bash" | "dash" | "zsh" | "ksh") {
        if let Some(pos) = c.argv.iter().position(|a| {
            a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
        }) {
            if let Some(script) = c.argv.get(pos + 1).cloned() {
                let mut out = vec![c];
                let mut inner = Parsed::default();
                split_into(&script, &mut inner, depth + 1);
                for u in inner.unparsed {
                    p.note(u);
                }
                out.extend(inner.commands);
                return out;
            }
        }
    }
    if matches!(
        base,
        "eval" | "source" | "." | "xargs" | "find" | "parallel"
    ) {
        p.note(format!("`{base}` runs commands abm cannot see in the line"));
    }
    vec![c]
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Tokens, and the texts of substitutions to split separately.
fn lex(line: &str, p: &mut Parsed) -> (Vec<Tok>, Vec<String>) {
    let c: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut subs = Vec::new();
    let mut w = String::new();
    let mut in_word = false;
    let mut i = 0;
    let end_word = |w: &mut String, in_word: &mut bool, toks: &mut Vec<Tok>| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(w)));
            *in_word = false;
        }
    };
    while i < c.len() {
        let ch = c[i];
        match ch {
            ' ' | '\t' => {
                end_word(&mut w, &mut in_word, &mut toks);
                i += 1;
            }
            '\n' | ';' => {
                end_word(&mut w, &mut in_word, &mut toks);
                toks.push(Tok::Sep);
                i += 1;
            }
            '&' | '|' => {
                // `2>&1` is part of a redirection, handled under '>'.
                end_word(&mut w, &mut in_word, &mut toks);
                if ch == '&' && c.get(i + 1) == Some(&'>') {
                    let op = if c.get(i + 2) == Some(&'>') {
                        "&>>"
                    } else {
                        "&>"
                    };
                    i += op.len();
                    toks.push(Tok::Redir(op.into()));
                    continue;
                }
                toks.push(Tok::Sep);
                i += if c.get(i + 1) == Some(&ch) { 2 } else { 1 };
            }
            '#' if !in_word => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '<' | '>' => {
                if c.get(i + 1) == Some(&'(') {
                    // Process substitution.
                    end_word(&mut w, &mut in_word, &mut toks);
                    let (inner, next) = balanced(&c, i + 1);
                    p.note("process substitution");
                    subs.push(inner);
                    toks.push(Tok::Word("<(…)".into()));
                    i = next;
                    continue;
                }
                // A word of digits right before is the fd number.
                let fd_prefix = in_word && w.chars().all(|d| d.is_ascii_digit());
                if fd_prefix {
                    w.clear();
                    in_word = false;
                } else {
                    end_word(&mut w, &mut in_word, &mut toks);
                }
                let mut op = String::from(ch);
                i += 1;
                while i < c.len() && matches!(c[i], '>' | '<' | '|' | '&') {
                    op.push(c[i]);
                    i += 1;
                }
                if ch == '<' && op.starts_with("<<") {
                    p.note("here-document");
                }
                if op.ends_with('&') {
                    // `>&2`, `2>&1`: a descriptor, not a file.
                    while i < c.len() && (c[i].is_ascii_digit() || c[i] == '-') {
                        i += 1;
                    }
                    continue;
                }
                toks.push(Tok::Redir(op));
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    w.push(c[i]);
                    i += 1;
                }
                if i >= c.len() {
                    p.note("unterminated quote");
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' && matches!(c.get(i + 1), Some('"' | '\\' | '$' | '`')) {
                        w.push(c[i + 1]);
                        i += 2;
                        continue;
                    }
                    if c[i] == '$' || c[i] == '`' {
                        i = dollar(&c, i, &mut w, &mut subs, p);
                        continue;
                    }
                    w.push(c[i]);
                    i += 1;
                }
                if i >= c.len() {
                    p.note("unterminated quote");
                }
                i += 1;
            }
            '\\' => {
                in_word = true;
                if let Some(&n) = c.get(i + 1) {
                    if n != '\n' {
                        w.push(n);
                    }
                }
                i += 2;
            }
            '$' | '`' => {
                in_word = true;
                i = dollar(&c, i, &mut w, &mut subs, p);
            }
            '(' | ')' => {
                end_word(&mut w, &mut in_word, &mut toks);
                toks.push(Tok::Sep);
                p.note("subshell or group");
                i += 1;
            }
            '*' | '?' | '[' if true => {
                if ch != '[' || c.get(i + 1).is_some_and(|n| *n != ' ') {
                    p.note("glob (matched files unknown)");
                }
                in_word = true;
                w.push(ch);
                i += 1;
            }
            _ => {
                in_word = true;
                w.push(ch);
                i += 1;
            }
        }
    }
    end_word(&mut w, &mut in_word, &mut toks);
    (toks, subs)
}

/// `$…` or a backquote at `i`: substitutions are queued for splitting,
/// expansions noted; the word keeps a placeholder. Returns the next index.
fn dollar(c: &[char], i: usize, w: &mut String, subs: &mut Vec<String>, p: &mut Parsed) -> usize {
    if c[i] == '`' {
        let mut j = i + 1;
        let mut s = String::new();
        while j < c.len() && c[j] != '`' {
            s.push(c[j]);
            j += 1;
        }
        p.note("command substitution");
        subs.push(s);
        w.push_str("$(…)");
        return j + 1;
    }
    match c.get(i + 1) {
        Some('(') if c.get(i + 2) == Some(&'(') => {
            let (_, next) = balanced(c, i + 1);
            p.note("arithmetic expansion");
            w.push_str("$((…))");
            next
        }
        Some('(') => {
            let (inner, next) = balanced(c, i + 1);
            p.note("command substitution");
            subs.push(inner);
            w.push_str("$(…)");
            next
        }
        Some('{') => {
            let mut j = i + 2;
            while j < c.len() && c[j] != '}' {
                j += 1;
            }
            p.note("parameter expansion");
            w.extend(&c[i..(j + 1).min(c.len())]);
            j + 1
        }
        Some(n)
            if n.is_ascii_alphanumeric()
                || matches!(n, '_' | '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
        {
            let mut j = i + 1;
            if n.is_ascii_alphabetic() || *n == '_' {
                while j < c.len() && (c[j].is_ascii_alphanumeric() || c[j] == '_') {
                    j += 1;
                }
            } else {
                j += 1;
            }
            p.note("parameter expansion");
            w.extend(&c[i..j]);
            j
        }
        _ => {
            w.push('$');
            i + 1
        }
    }
}

/// The text inside the parentheses opening at `open`; index after the
/// closing one.
fn balanced(c: &[char], open: usize) -> (String, usize) {
    let mut depth = 0;
    let mut s = String::new();
    let mut j = open;
    let mut quote: Option<char> = None;
    while j < c.len() {
        let ch = c[j];
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '\'' || ch == '"' => quote = Some(ch),
            None if ch == '(' => {
                depth += 1;
                if depth == 1 {
                    j += 1;
                    continue;
                }
            }
            None if ch == ')' => {
                depth -= 1;
                if depth == 0 {
                    return (s, j + 1);
                }
            }
            None => {}
        }
        s.push(ch);
        j += 1;
    }
    (s, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(p: &Parsed) -> Vec<String> {
        p.commands.iter().map(|c| c.argv.join(" ")).collect()
    }

    #[test]
    fn splits_lists_and_pipelines() {
        let p = split("cd /w && git reset --hard HEAD; rm -rf 'my dir' | tee log || echo \"a b\"");
        assert_eq!(
            argvs(&p),
            [
                "cd /w",
                "git reset --hard HEAD",
                "rm -rf my dir",
                "tee log",
                "echo a b"
            ]
        );
        assert!(p.fully_parsed(), "{:?}", p.unparsed);
    }

    #[test]
    fn keeps_case_and_quoting() {
        let p = split(r#"git branch -D X-Upper3 && git commit -m "fix: a \"b\"" "#);
        assert_eq!(
            argvs(&p),
            ["git branch -D X-Upper3", r#"git commit -m fix: a "b""#]
        );
    }

    #[test]
    fn redirections_are_file_effects_not_words() {
        let p = split("echo hi > .git/HEAD 2>&1; cat a >> log; sort < in");
        assert_eq!(argvs(&p), ["echo hi", "cat a", "sort"]);
        assert_eq!(p.commands[0].truncates, [".git/HEAD"]);
        assert_eq!(p.commands[1].appends, ["log"]);
        assert!(p.fully_parsed(), "{:?}", p.unparsed);
    }

    #[test]
    fn wrappers_and_shells_are_unwrapped() {
        let p = split("sudo -u root env FOO=1 nohup rm -rf /etc");
        assert_eq!(argvs(&p), ["rm -rf /etc"]);
        let p = split("FOO=bar bash -c 'git clean -fdx && make'");
        assert_eq!(
            argvs(&p),
            ["bash -c git clean -fdx && make", "git clean -fdx", "make"]
        );
        let p = split("timeout 10 git push --force origin main");
        assert_eq!(argvs(&p), ["git push --force origin main"]);
    }

    #[test]
    fn substitutions_are_judged_and_reported() {
        let p = split("echo $(rm -rf build) `git stash drop` $HOME");
        assert!(!p.fully_parsed());
        let a = argvs(&p);
        assert!(a.contains(&"rm -rf build".to_owned()), "{a:?}");
        assert!(a.contains(&"git stash drop".to_owned()), "{a:?}");
        assert!(p.unparsed.iter().any(|u| u == "command substitution"));
        assert!(p.unparsed.iter().any(|u| u == "parameter expansion"));
        let p = split("for f in *.txt; do rm \"$f\"; done");
        assert!(!p.fully_parsed());
        assert!(
            argvs(&p).iter().any(|c| c.starts_with("rm ")),
            "{:?}",
            argvs(&p)
        );
    }
}
