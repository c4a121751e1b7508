//! The expression of a `find ... -delete` command, evaluated on the files
//! a preview walks: what it selects is what it destroys. Tests abm cannot
//! evaluate (times, sizes, regular expressions, `-exec`) count as true, so
//! a preview never counts fewer files than find would delete.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

#[derive(Debug)]
enum Node {
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// `a , b`: both evaluated, the value is b's.
    Comma(Box<Node>, Box<Node>),
    Not(Box<Node>),
    /// Base name matches.
    Name(GlobMatcher),
    /// The path as find prints it matches.
    PathGlob(GlobMatcher),
    /// `-type f|d|l|...`.
    Type(char),
    Empty,
    Const(bool),
    Delete,
}

/// A parsed `find` expression with its global options.
#[derive(Debug)]
pub struct Expr {
    root: Node,
    pub max_depth: Option<usize>,
    pub min_depth: usize,
}

/// Tests and actions that take one argument (not evaluated: true).
const ONE_ARG: &[&str] = &[
    "-newer",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-size",
    "-user",
    "-group",
    "-perm",
    "-regex",
    "-iregex",
    "-regextype",
    "-printf",
    "-fprint",
    "-fprint0",
    "-fls",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-samefile",
    "-newermt",
    "-newerct",
    "-newerat",
    "-fstype",
    "-context",
    "-lname",
    "-ilname",
    "-used",
];

impl Expr {
    pub fn parse(args: &[&str]) -> Expr {
        let mut p = Parser {
            args,
            i: 0,
            max_depth: None,
            min_depth: 0,
        };
        let root = p.comma().unwrap_or(Node::Const(true));
        Expr {
            root,
            max_depth: p.max_depth,
            min_depth: p.min_depth,
        }
    }

    /// Whether evaluating the expression on this file reaches `-delete`.
    pub fn deletes(&self, path: &Path, shown: &str, meta: &std::fs::Metadata) -> bool {
        eval(&self.root, path, shown, meta).1
    }
}

/// (value, reached -delete)
fn eval(n: &Node, path: &Path, shown: &str, meta: &std::fs::Metadata) -> (bool, bool) {
    match n {
        Node::And(l, r) => {
            let (vl, dl) = eval(l, path, shown, meta);
            if !vl {
                return (false, dl);
            }
            let (vr, dr) = eval(r, path, shown, meta);
            (vr, dl || dr)
        }
        Node::Or(l, r) => {
            let (vl, dl) = eval(l, path, shown, meta);
            if vl {
                return (true, dl);
            }
            let (vr, dr) = eval(r, path, shown, meta);
            (vr, dl || dr)
        }
        Node::Comma(l, r) => {
            let (_, dl) = eval(l, path, shown, meta);
            let (vr, dr) = eval(r, path, shown, meta);
            (vr, dl || dr)
        }
        Node::Not(e) => {
            let (v, d) = eval(e, path, shown, meta);
            (!v, d)
        }
        Node::Name(g) => (
            path.file_name().is_some_and(|n| g.is_match(Path::new(n))),
            false,
        ),
        Node::PathGlob(g) => (g.is_match(shown), false),
        Node::Type(c) => {
            let t = meta.file_type();
            let v = match c {
                'f' => t.is_file(),
                'd' => t.is_dir(),
                'l' => t.is_symlink(),
                _ => !t.is_file() && !t.is_dir() && !t.is_symlink(),
            };
            (v, false)
        }
        Node::Empty => (meta.len() == 0, false),
        Node::Const(v) => (*v, false),
        Node::Delete => (true, true),
    }
}

struct Parser<'a> {
    args: &'a [&'a str],
    i: usize,
    max_depth: Option<usize>,
    min_depth: usize,
}

fn glob(pat: &str, fold: bool) -> Node {
    match GlobBuilder::new(pat)
        .literal_separator(false)
        .case_insensitive(fold)
        .backslash_escape(true)
        .build()
    {
        Ok(g) => Node::Name(g.compile_matcher()),
        Err(_) => Node::Const(true),
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.args.get(self.i).copied()
    }

    fn comma(&mut self) -> Option<Node> {
        let mut l = self.or()?;
        while self.peek() == Some(",") {
            self.i += 1;
            let Some(r) = self.or() else { break };
            l = Node::Comma(Box::new(l), Box::new(r));
        }
        Some(l)
    }

    fn or(&mut self) -> Option<Node> {
        let mut l = self.and()?;
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.i += 1;
            let Some(r) = self.and() else { break };
            l = Node::Or(Box::new(l), Box::new(r));
        }
        Some(l)
    }

    fn and(&mut self) -> Option<Node> {
        let mut l = self.unary()?;
        loop {
            match self.peek() {
                Some("-a" | "-and") => self.i += 1,
                Some("-o" | "-or" | "," | ")") | None => break,
                _ => {}
            }
            let Some(r) = self.unary() else { break };
            l = Node::And(Box::new(l), Box::new(r));
        }
        Some(l)
    }

    fn unary(&mut self) -> Option<Node> {
        match self.peek()? {
            "!" | "-not" => {
                self.i += 1;
                Some(Node::Not(Box::new(self.unary()?)))
            }
            "(" => {
                self.i += 1;
                let e = self.comma();
                if self.peek() == Some(")") {
                    self.i += 1;
                }
                e
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Option<Node> {
        let t = self.peek()?;
        self.i += 1;
        let mut arg = || {
            let a = self.args.get(self.i).copied().unwrap_or("");
            self.i += 1;
            a
        };
        Some(match t {
            "-name" => glob(arg(), false),
            "-iname" => glob(arg(), true),
            "-path" | "-wholename" => match glob(arg(), false) {
                Node::Name(g) => Node::PathGlob(g),
                n => n,
            },
            "-ipath" | "-iwholename" => match glob(arg(), true) {
                Node::Name(g) => Node::PathGlob(g),
                n => n,
            },
            "-type" | "-xtype" => Node::Type(arg().chars().next().unwrap_or('f')),
            "-maxdepth" => {
                self.max_depth = arg().parse().ok();
                Node::Const(true)
            }
            "-mindepth" => {
                self.min_depth = arg().parse().unwrap_or(0);
                Node::Const(true)
            }
            "-empty" => Node::Empty,
            "-false" => Node::Const(false),
            "-delete" => Node::Delete,
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                while let Some(a) = self.args.get(self.i) {
                    self.i += 1;
                    if *a == ";" || *a == "+" {
                        break;
                    }
                }
                Node::Const(true)
            }
            t if ONE_ARG.contains(&t) => {
                arg();
                Node::Const(true)
            }
            // -print, -true, -depth, -xdev, -readable ...: true.
            _ => Node::Const(true),
        })
    }
}
