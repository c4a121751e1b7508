//! What a command line would do to files, as the calls the run would
//! record: the actions `abm hook` judges before the command runs, with the
//! same judge as the run ([`super::judge_command`]).
use std::path::{Path, PathBuf};

use crate::record::{Action, Op};

/// Entries an `rm -r` expansion lists at most; the exec's blast preview
/// counts the rest.
const EXPAND_LIMIT: usize = 5000;

/// The file effects a few well-known programs announce in their argv, as
/// the calls they would make: `rm` (unlink of each file, and with `-r`
/// every file below each directory, then the directories), `unlink`,
/// `shred`, `rmdir`, `truncate`, `chmod`, `chown`, `mv` (rename of each
/// source to the destination, or into it when it is a directory), `cp`,
/// `install`, `dd of=`, `tee` (truncating opens of the destination) and
/// `sed -i` (a temporary file renamed over each file). Other programs are
/// judged by their exec and its preview.
pub(super) fn file_effects(argv: &[String], cwd: &Path, pid: u32) -> Vec<Action> {
    let Some(prog) = argv.first().map(|p| p.rsplit('/').next().unwrap_or(p)) else {
        return Vec::new();
    };
    let mut opts_done = false;
    let mut flags = Vec::new();
    let mut paths = Vec::new();
    for a in &argv[1..] {
        if !opts_done && a == "--" {
            opts_done = true;
        } else if !opts_done && a.starts_with('-') && a.len() > 1 {
            flags.push(a.as_str());
        } else {
            paths.push(join(cwd, a));
        }
    }
    let short = |c: char, long: &str| {
        flags
            .iter()
            .any(|f| *f == long || (!f.starts_with("--") && f[1..].contains(c)))
    };
    let recursive = short('r', "--recursive") || short('R', "--recursive");
    let act = |op: Op, path: &str, path2: Option<&str>| file_action(op, path, path2, &[], pid);
    let trunc = |path: &str| {
        file_action(
            Op::Truncate,
            path,
            None,
            &["O_WRONLY", "O_CREAT", "O_TRUNC"],
            pid,
        )
    };
    let into = |dst: &str, src: &str| -> String {
        if Path::new(dst).is_dir() {
            let base = Path::new(src)
                .file_name()
                .map(|b| b.to_string_lossy().into_owned());
            format!("{}/{}", dst.trim_end_matches('/'), base.unwrap_or_default())
        } else {
            dst.to_owned()
        }
    };
    let mut out = Vec::new();
    match prog {
        "rm" => {
            for p in &paths {
                let dir = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
                if dir && recursive {
                    expand_tree(Path::new(p), &act, &mut out);
                } else if !dir {
                    out.push(act(Op::Unlink, p, None));
                } else if short('d', "--dir") {
                    out.push(act(Op::Rmdir, p, None));
                }
            }
        }
        "unlink" | "shred" => out.extend(paths.iter().map(|p| act(Op::Unlink, p, None))),
        "rmdir" => out.extend(paths.iter().map(|p| act(Op::Rmdir, p, None))),
        "truncate" => out.extend(paths.iter().map(|p| act(Op::Truncate, p, None))),
        // The first operand is the mode/owner.
        "chmod" => out.extend(paths.iter().skip(1).map(|p| act(Op::Chmod, p, None))),
        "chown" | "chgrp" => out.extend(paths.iter().skip(1).map(|p| act(Op::Chown, p, None))),
        "mv" if paths.len() >= 2 => {
            let (dst, srcs) = paths.split_last().expect("two or more");
            out.extend(srcs.iter().map(|p| act(Op::Rename, p, Some(&into(dst, p)))));
        }
        "cp" | "install" if paths.len() >= 2 && !recursive => {
            let (dst, srcs) = paths.split_last().expect("two or more");
            out.extend(srcs.iter().map(|p| trunc(&into(dst, p))));
        }
        "tee" if !short('a', "--append") => out.extend(paths.iter().map(|p| trunc(p))),
        "dd" => {
            let notrunc = argv
                .iter()
                .any(|a| a.starts_with("conv=") && a.contains("notrunc"));
            for a in &argv[1..] {
                if let Some(f) = a.strip_prefix("of=") {
                    let p = join(cwd, f);
                    out.push(if notrunc {
                        file_action(Op::Write, &p, None, &["O_WRONLY", "O_CREAT"], pid)
                    } else {
                        trunc(&p)
                    });
                }
            }
        }
        "sed"
            if flags.iter().any(|f| {
                *f == "-i"
                    || f.starts_with("--in-place")
                    || (f.starts_with("-i") && !f.starts_with("--"))
            }) =>
        {
            // Without -e/-f the first operand is the script.
            let script_given = flags.iter().any(|f| {
                *f == "-e" || *f == "-f" || f.starts_with("--expression") || f.starts_with("--file")
            });
            for p in paths.iter().skip(usize::from(!script_given)) {
                let dir = Path::new(p).parent().unwrap_or(Path::new("/"));
                let tmp = dir.join(format!("sed{:06}", pid % 1_000_000));
                let mut a = act(Op::Rename, &tmp.to_string_lossy(), Some(p));
                a.created_by_call = false;
                out.push(a);
            }
        }
        _ => {}
    }
    out
}

/// The calls `rm -r` makes for a tree: an unlink per file (depth first),
/// an rmdir per directory after its entries.
fn expand_tree(p: &Path, act: &dyn Fn(Op, &str, Option<&str>) -> Action, out: &mut Vec<Action>) {
    if out.len() >= EXPAND_LIMIT {
        return;
    }
    let s = p.to_string_lossy();
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            if let Ok(rd) = std::fs::read_dir(p) {
                let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                entries.sort();
                for e in entries {
                    expand_tree(&e, act, out);
                }
            }
            out.push(act(Op::Rmdir, &s, None));
        }
        Ok(_) => out.push(act(Op::Unlink, &s, None)),
        Err(_) => {}
    }
}

/// A file call of process `pid`, before it runs (`result` unknown).
pub(super) fn file_action(
    op: Op,
    path: &str,
    path2: Option<&str>,
    flags: &[&'static str],
    pid: u32,
) -> Action {
    Action {
        op: Some(op),
        path: Some(path.to_owned()),
        path2: path2.map(str::to_owned),
        flag_names: flags
            .iter()
            .map(|f| std::borrow::Cow::Borrowed(*f))
            .collect(),
        pid,
        tid: pid,
        ..Default::default()
    }
}

pub(super) fn join(cwd: &Path, p: &str) -> String {
    let p = p.strip_prefix("~/").map_or_else(
        || PathBuf::from(p),
        |rest| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/root"))
                .join(rest)
        },
    );
    cwd.join(p).to_string_lossy().into_owned()
}

/// The exec record the command would produce: argv, cwd and the program
/// PATH would find (or argv[0] made absolute).
pub(super) fn exec_action(argv: &[String], cwd: &Path, pid: u32) -> Action {
    let prog = &argv[0];
    let path = if prog.contains('/') {
        join(cwd, prog)
    } else {
        std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(prog))
                    .find(|c| c.is_file())
            })
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("/usr/bin/{prog}"))
    };
    Action {
        op: Some(Op::Exec),
        syscall: "execve".into(),
        path: Some(path.clone()),
        exe: Some(path),
        argv: Some(argv.to_vec()),
        cwd: Some(cwd.to_string_lossy().into_owned()),
        pid,
        tid: pid,
        ..Default::default()
    }
}
