//! The BPF stack bound, checked on the host before any kernel sees the
//! object: the verifier adds up the stack of a program and of every
//! function on its deepest chain of calls, each frame rounded up to 32
//! bytes, and refuses more than 512 ("combined stack size of N calls is
//! M. Too large"). Newer kernels can accept more (a private stack for
//! tracing programs), so a host test run alone does not catch an object
//! that Linux 6.1 refuses; only the VM tests did, half an hour later.
//!
//! The count is static: a function's frame is the deepest `r10` offset its
//! code uses, and its callees are the functions its `call` relocations
//! name (from `llvm-objdump -dr`). That is an upper bound of what the
//! verifier counts (it only counts the slots of the paths it explores).
use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    process::Command,
};

use anyhow::{bail, Context as _, Result};

use crate::{root, setup::LLVM_BIN, vm::output};

/// The verifier's bound (MAX_BPF_STACK).
const MAX_STACK: u64 = 512;

/// One function of the object: its frame, its callees, its section.
#[derive(Default)]
struct Func {
    frame: u64,
    calls: BTreeSet<String>,
    section: String,
}

/// The newest BPF object `cargo build --release -p monitor` made.
fn object() -> Result<PathBuf> {
    let build = root().join("target/release/build");
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(&build).with_context(|| format!("reading {}", build.display()))? {
        let p = e?
            .path()
            .join("out/aya-build/target/monitor-ebpf/bpfel-unknown-none/release/monitor");
        if let Ok(m) = std::fs::metadata(&p) {
            let t = m.modified()?;
            if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                newest = Some((t, p));
            }
        }
    }
    newest
        .map(|(_, p)| p)
        .with_context(|| format!("no BPF object under {}: build first", build.display()))
}

/// `r10 - N` offsets and `rX = r10; rX += -N` address computations.
fn frame_use(line: &str, from_r10: &mut BTreeSet<String>, frame: &mut u64) {
    let num = |s: &str| {
        let s = s.trim();
        s.strip_prefix("0x")
            .map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
    };
    let mut rest = line;
    while let Some(i) = rest.find("r10 - ") {
        rest = &rest[i + 6..];
        let n: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if let Some(n) = num(&n) {
            *frame = (*frame).max(n);
        }
    }
    let insn = line.split(':').nth(1).unwrap_or("").trim();
    if let Some((dst, src)) = insn.split_once(" = ") {
        if src.trim() == "r10" {
            from_r10.insert(dst.trim().to_owned());
        } else {
            from_r10.remove(dst.trim());
        }
    } else if let Some((dst, n)) = insn.split_once(" += -") {
        if from_r10.remove(dst.trim()) {
            if let Some(n) = num(n) {
                *frame = (*frame).max(n);
            }
        }
    }
}

fn parse(disasm: &str) -> BTreeMap<String, Func> {
    let mut funcs: BTreeMap<String, Func> = BTreeMap::new();
    let mut section = String::new();
    let mut cur: Option<String> = None;
    let mut from_r10 = BTreeSet::new();
    for line in disasm.lines() {
        if let Some(s) = line.strip_prefix("Disassembly of section ") {
            section = s.trim_end_matches(':').to_owned();
            continue;
        }
        // `0000000000009038 <mountns_emit>:`
        if let Some(name) = line
            .split_once(" <")
            .filter(|(addr, _)| !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit()))
            .and_then(|(_, rest)| rest.strip_suffix(">:"))
        {
            funcs.entry(name.to_owned()).or_default().section = section.clone();
            cur = Some(name.to_owned());
            from_r10.clear();
            continue;
        }
        let Some(f) = cur.as_ref().and_then(|c| funcs.get_mut(c)) else {
            continue;
        };
        if let Some(i) = line.find("R_BPF_64_32") {
            if let Some(callee) = line[i..].split_whitespace().nth(1) {
                f.calls.insert(callee.to_owned());
            }
            continue;
        }
        frame_use(line, &mut from_r10, &mut f.frame);
    }
    funcs
}

/// The deepest chain from `f`: its bytes (frames rounded up to 32) and
/// the functions on it with their frames.
fn deepest(funcs: &BTreeMap<String, Func>, f: &str, seen: &mut Vec<String>) -> (u64, Vec<String>) {
    let Some(func) = funcs.get(f) else {
        return (0, Vec::new());
    };
    if seen.iter().any(|s| s == f) {
        return (0, Vec::new());
    }
    seen.push(f.to_owned());
    let mut best = (0, Vec::new());
    for c in &func.calls {
        let d = deepest(funcs, c, seen);
        if d.0 > best.0 {
            best = d;
        }
    }
    seen.pop();
    let mut chain = vec![format!("{f} ({})", func.frame)];
    chain.extend(best.1);
    (func.frame.max(1).div_ceil(32) * 32 + best.0, chain)
}

/// Checks every program of the newest object (a section other than
/// `.text`) against the bound; prints the deepest chain.
pub fn check() -> Result<()> {
    let obj = object()?;
    let objdump = format!("{LLVM_BIN}/llvm-objdump");
    let disasm = output(
        Command::new(&objdump)
            .args(["-dr", "--no-show-raw-insn"])
            .arg(&obj),
    )
    .with_context(|| {
        format!(
            "{objdump} (llvm-22, from `cargo xtask setup`) on {}",
            obj.display()
        )
    })?;
    let funcs = parse(&disasm);
    let mut worst: Vec<(u64, String, Vec<String>)> = funcs
        .iter()
        .filter(|(_, f)| !f.section.is_empty() && !f.section.starts_with(".text"))
        .map(|(name, f)| {
            let (bytes, chain) = deepest(&funcs, name, &mut Vec::new());
            (bytes, f.section.clone(), chain)
        })
        .collect();
    if worst.is_empty() {
        bail!("no BPF program found in {}", obj.display());
    }
    worst.sort_by_key(|w| std::cmp::Reverse(w.0));
    let over: Vec<String> = worst
        .iter()
        .filter(|w| w.0 > MAX_STACK)
        .map(|(b, s, c)| format!("  {s}: {b} bytes: {}", c.join(" -> ")))
        .collect();
    if !over.is_empty() {
        bail!(
            "BPF programs over the verifier's {MAX_STACK}-byte stack bound across calls \
             (Linux 6.1 refuses them; frames rounded up to 32 bytes):\n{}",
            over.join("\n")
        );
    }
    let (b, s, c) = &worst[0];
    eprintln!(
        "xtask: BPF stack: deepest chain {b} of {MAX_STACK} bytes ({s}: {})",
        c.join(" -> ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISASM: &str = "
Disassembly of section raw_tp/sys_enter:

0000000000000000 <sys_enter>:
       0:\tr1 = r10
       1:\tr1 += -0xf8
       2:\tcall -0x1
\t\t0000000000000010:  R_BPF_64_32\tmountns_sync
       3:\texit

Disassembly of section .text:

0000000000000100 <mountns_sync>:
      10:\t*(u64 *)(r10 - 0x10) = r1
      11:\tcall -0x1
\t\t0000000000000110:  R_BPF_64_32\twalk_path
      12:\texit

0000000000000200 <walk_path>:
      20:\t*(u32 *)(r10 - 88) = w1
      21:\texit
";

    #[test]
    fn frames_and_chains_as_the_verifier_adds_them() {
        let funcs = parse(DISASM);
        assert_eq!(funcs["sys_enter"].frame, 0xf8);
        assert_eq!(funcs["mountns_sync"].frame, 0x10);
        assert_eq!(funcs["walk_path"].frame, 88);
        assert_eq!(funcs["sys_enter"].section, "raw_tp/sys_enter");
        let (bytes, chain) = deepest(&funcs, "sys_enter", &mut Vec::new());
        // 248 -> 256, 16 -> 32, 88 -> 96
        assert_eq!(bytes, 384);
        assert_eq!(chain.len(), 3);
        assert_eq!(chain[2], "walk_path (88)");
    }
}
