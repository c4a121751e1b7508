//! Exec rules: `sys_enter_exec_rules` hashes the program's base name and
//! arguments at execve entry and stores the matching rule per thread;
//! `bprm_check_security` refuses before the point of no return.

use super::*;

/// LSM_HOOK(int, 0, bprm_check_security, struct linux_binprm *bprm): runs
/// for the program and again for each interpreter (`#!`), all before the
/// point of no return (begin_new_exec).
#[lsm(hook = "bprm_check_security")]
pub fn lsm_bprm_check_security(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 1) {
        return -EPERM;
    }
    let tid = bpf_get_current_pid_tgid() as u32;
    // SAFETY: a map lookup; the value is read at once, within this program run.
    let Some(v) = (unsafe { LSM_EXEC_VERDICT.get(&tid) }).copied() else {
        return 0;
    };
    if v.treatment == treatment::ALLOW {
        return 0;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_bprm_file(arg(&ctx, 0) as *const c_void) };
    let (d, m) = file_path(f as u64);
    let r = apply(
        EventKind::Exec as u32,
        hook::BPRM_CHECK_SECURITY,
        v.rule,
        v.treatment,
        d,
        m,
        0,
        0,
    );
    if r == 0 {
        // An allowance was used: let the interpreter levels through too.
        let _ = LSM_EXEC_VERDICT.remove(&tid);
    }
    r
}

/// Hashes a user string (FNV-1a, at most [`MAX_TOKEN`] bytes; longer or
/// unreadable strings give 0, which no token has). With `basename`, only
/// the part after the last `/` counts. Also records, in the per-CPU
/// scratch, the letters of a short-option cluster (`-rf`).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_hash_token(ptr: u64, basename: u64) -> u64 {
    let Some(s) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's entry of a per-CPU array (non-null from the
    // lookup); programs do not nest on one CPU.
    let s = unsafe { &mut *s };
    s.letters = [0, 0];
    // SAFETY: the helper checks the user address; `buf` holds MAX_TOKEN + 1 bytes.
    let n = unsafe {
        bpf_probe_read_user_str(
            s.buf.as_mut_ptr() as *mut c_void,
            (MAX_TOKEN + 1) as u32,
            ptr as *const c_void,
        )
    };
    if n <= 0 || n as usize > MAX_TOKEN {
        return 0;
    }
    let len = (n - 1) as usize;
    let mut h = FNV_OFFSET;
    let mut l0 = 0u64;
    let mut l1 = 0u64;
    let mut cluster = len >= 2 && s.buf[0] == b'-' && s.buf[1] != b'-';
    let mut i = 0usize;
    while i < MAX_TOKEN {
        if i >= len {
            break;
        }
        let c = s.buf[i & 511];
        i += 1;
        if basename != 0 && c == b'/' {
            h = FNV_OFFSET;
            continue;
        }
        h ^= c as u64;
        h = h.wrapping_mul(FNV_PRIME);
        if cluster && i >= 2 {
            if c.is_ascii_alphanumeric() {
                if c < 64 {
                    l0 |= 1 << c;
                } else {
                    l1 |= 1 << (c - 64);
                }
            } else {
                cluster = false;
            }
        }
    }
    if cluster {
        s.letters = [l0, l1];
    }
    h
}

/// Reads the argument at `slot` (the address of an `argv[i]`): 0 at the
/// end of argv (or an unreadable slot); otherwise hashes it and adds its
/// clause bits and option letters to this CPU's scratch (`seen`,
/// `all_letters`), and returns 1. A function of its own so that the
/// verifier checks the argument loop's body once.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_scan_arg(slot: u64) -> u64 {
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let p = unsafe { bpf_probe_read_user(slot as *const u64) }.unwrap_or(0);
    if p == 0 {
        return 0;
    }
    let h = lsm_hash_token(p, 0);
    // SAFETY: a map lookup; the value is read at once, within this program run.
    let bits = unsafe { LSM_EXEC_TOKENS.get(&h) }.copied().unwrap_or(0);
    let Some(s) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's scratch entry, written by lsm_hash_token above;
    // programs do not nest on one CPU.
    let s = unsafe { &mut *s };
    s.seen |= bits;
    s.all_letters[0] |= s.letters[0];
    s.all_letters[1] |= s.letters[1];
    1
}

/// x86_64 `struct pt_regs` offsets of rdi, rsi, rdx (see syscalls.rs).
const REG_OFFSETS: [usize; 3] = [112, 104, 96];

#[inline(always)]
fn reg(regs: *const u8, i: usize) -> u64 {
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    unsafe { bpf_probe_read_kernel(regs.add(REG_OFFSETS[i]) as *const u64) }.unwrap_or(0)
}

/// Matches execve's command line against the exec rules while the caller's
/// argv still exists; the verdict waits in `LSM_EXEC_VERDICT` for
/// `bprm_check_security`. Attached only with the LSM backend, so the
/// tracepoint backend's cost is unchanged without `--enforce`.
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn sys_enter_exec_rules(ctx: RawTracePointContext) -> i32 {
    let id: u64 = ctx.arg(1);
    let id = id as u32;
    if id != EXECVE && id != EXECVEAT {
        return 0;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    if !enforced((pid_tgid >> 32) as u32) {
        return 0;
    }
    let Some(cfg) = LSM_CONFIG.get(0) else {
        return 0;
    };
    let nrules = cfg.exec_rules;
    if nrules == 0 {
        return 0;
    }
    let tid = pid_tgid as u32;
    let regs: *const u8 = ctx.arg(0);
    let (file, argv) = if id == EXECVEAT {
        (reg(regs, 1), reg(regs, 2))
    } else {
        (reg(regs, 0), reg(regs, 1))
    };
    let argv = argv as *const u64;

    // Which rules name this program (executable path or argv[0] base name).
    let mut progs = cfg.exec_any_program;
    let h = lsm_hash_token(file, 1);
    // SAFETY: a map lookup; the value is read at once, within this program run.
    if let Some(b) = unsafe { LSM_EXEC_PROGRAMS.get(&h) } {
        progs |= *b;
    }
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let a0 = unsafe { bpf_probe_read_user(argv) }.unwrap_or(0);
    if a0 != 0 {
        let h = lsm_hash_token(a0, 1);
        // SAFETY: a map lookup; the value is read at once, within this program run.
        if let Some(b) = unsafe { LSM_EXEC_PROGRAMS.get(&h) } {
            progs |= *b;
        }
    }
    if progs == 0 {
        let _ = LSM_EXEC_VERDICT.remove(&tid);
        return 0;
    }

    // Which clauses the arguments satisfy: every argument up to
    // MAX_EXEC_ARGS.
    let Some(scratch) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's scratch entry; programs do not nest on one CPU.
    unsafe {
        (*scratch).seen = 0;
        (*scratch).all_letters = [0, 0];
    }
    let mut i = 1u32;
    while i < MAX_EXEC_ARGS {
        if lsm_scan_arg(argv as u64 + 8 * i as u64) == 0 {
            break;
        }
        i += 1;
    }
    // More arguments than were read: a rule that could still match on
    // them refuses the exec (fail closed).
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let unread = i >= MAX_EXEC_ARGS
        && unsafe { bpf_probe_read_user(argv.add(MAX_EXEC_ARGS as usize)) }.unwrap_or(0) != 0;
    // SAFETY: as above; lsm_scan_arg wrote the totals.
    let (seen, letters) = unsafe { ((*scratch).seen, (*scratch).all_letters) };

    // The first rule whose clauses all hold decides.
    let mut verdict = ExecVerdict {
        rule: 0,
        treatment: treatment::ALLOW,
    };
    let mut found = false;
    let mut undecided = false;
    let mut r = 0u32;
    while r < MAX_EXEC_RULES {
        if r >= nrules {
            break;
        }
        if progs & (1 << r) != 0 {
            if let Some(rule) = LSM_EXEC_RULES.get(r) {
                let mut ok = true;
                // A negated clause already contradicted: no unread
                // argument can make the rule match.
                let mut excluded = false;
                let mut c = 0u32;
                while c < EXEC_CLAUSES {
                    if rule.used & (1 << c) != 0 {
                        let lt = rule.letters[(c & 3) as usize];
                        let by_letters = (lt[0] | lt[1]) != 0
                            && letters[0] & lt[0] == lt[0]
                            && letters[1] & lt[1] == lt[1];
                        let sat = seen & (1u64 << (r * EXEC_CLAUSES + c)) != 0 || by_letters;
                        let negated = rule.negated & (1 << c) != 0;
                        if sat == negated {
                            ok = false;
                            if negated {
                                excluded = true;
                            }
                        }
                    }
                    c += 1;
                }
                if ok {
                    verdict = ExecVerdict {
                        rule: rule.index,
                        treatment: rule.treatment,
                    };
                    found = true;
                    break;
                }
                if unread && !excluded && rule.treatment != treatment::ALLOW {
                    undecided = true;
                }
            }
        }
        r += 1;
    }
    if undecided && (!found || verdict.treatment == treatment::ALLOW) {
        verdict = ExecVerdict {
            rule: EXEC_INDEX_ARGV_UNREAD,
            treatment: treatment::DENY,
        };
        found = true;
    }
    if found && verdict.treatment != treatment::ALLOW {
        let _ = LSM_EXEC_VERDICT.insert(&tid, &verdict, 0);
    } else {
        let _ = LSM_EXEC_VERDICT.remove(&tid);
    }
    0
}
