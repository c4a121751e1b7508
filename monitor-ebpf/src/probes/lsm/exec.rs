//! Exec rules: `sys_enter_exec_rules` hashes the program's base name and
//! arguments at execve entry and stores the matching rule per thread;
//! `bprm_check_security` refuses before the point of no return.

use super::*;

/// LSM_HOOK(int, 0, bprm_check_security, struct linux_binprm *bprm): runs
/// for the program and again for each interpreter (`#!`), all before the
/// point of no return (begin_new_exec). An enforced exec without the entry
/// `sys_enter_exec_rules` stores is refused (fail closed).
#[lsm(hook = "bprm_check_security")]
pub fn lsm_bprm_check_security(ctx: LsmContext) -> i32 {
    if refused_before(&ctx, 1) {
        return -EPERM;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    let tid = pid_tgid as u32;
    let bprm = arg(&ctx, 0) as *const c_void;
    let Some(vp) = LSM_EXEC_VERDICT.get_ptr_mut(tid) else {
        let rules = match LSM_CONFIG.get(0) {
            Some(cfg) => cfg.exec_rules,
            None => 0,
        };
        if rules == 0 || !enforced((pid_tgid >> 32) as u32) {
            return 0;
        }
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let f = unsafe { shim_bprm_file(bprm) };
        let (d, m) = file_path(f as u64);
        return apply(
            EventKind::Exec as u32,
            hook::BPRM_CHECK_SECURITY,
            EXEC_INDEX_UNDECIDED,
            treatment::DENY,
            d,
            m,
            0,
            0,
        );
    };
    // SAFETY: a pointer to this thread's map value; only this thread
    // writes it (execve entry and these hooks run in its context).
    let v = unsafe { *vp };
    if v.argc == 0 {
        // The first level: the argument count the kernel copied.
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let n = unsafe { shim_bprm_argc(bprm) };
        // SAFETY: as above.
        unsafe { (*vp).argc = if n > 0 { n as u32 } else { u32::MAX } };
    }
    if v.treatment == treatment::ALLOW || v.allowed != 0 {
        return 0;
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_bprm_file(bprm) };
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
        // SAFETY: as above.
        unsafe { (*vp).allowed = 1 };
    }
    r
}

/// `lsm_hash_token` flags: hash only the part after the last `/`; read
/// kernel memory (`bprm->filename`) instead of user memory.
const TOKEN_BASENAME: u64 = 1;
const TOKEN_KERNEL: u64 = 2;

/// Hashes a user (or, with [`TOKEN_KERNEL`], kernel) string (FNV-1a, at
/// most [`MAX_TOKEN`] bytes; longer or unreadable strings give 0, which no
/// token has). With [`TOKEN_BASENAME`], only the part after the last `/`
/// counts. Also records, in the per-CPU
/// scratch, the letters of a short-option cluster (`-rf`).
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_hash_token(ptr: u64, flags: u64) -> u64 {
    let Some(s) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's entry of a per-CPU array (non-null from the
    // lookup); programs do not nest on one CPU.
    let s = unsafe { &mut *s };
    s.letters = [0, 0];
    // SAFETY: the helpers check the address; `buf` holds MAX_TOKEN + 1 bytes.
    let n = unsafe {
        if flags & TOKEN_KERNEL != 0 {
            bpf_probe_read_kernel_str(
                s.buf.as_mut_ptr() as *mut c_void,
                (MAX_TOKEN + 1) as u32,
                ptr as *const c_void,
            )
        } else {
            bpf_probe_read_user_str(
                s.buf.as_mut_ptr() as *mut c_void,
                (MAX_TOKEN + 1) as u32,
                ptr as *const c_void,
            )
        }
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
        if flags & TOKEN_BASENAME != 0 && c == b'/' {
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
/// `all_letters`), its hash to `chain`, and returns 1. A function of its own so that the
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
    let bits = unsafe { LSM_EXEC_TOKENS.get(h) }.copied().unwrap_or(0);
    let Some(s) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's scratch entry, written by lsm_hash_token above;
    // programs do not nest on one CPU.
    let s = unsafe { &mut *s };
    s.seen |= bits;
    s.all_letters[0] |= s.letters[0];
    s.all_letters[1] |= s.letters[1];
    s.chain = (s.chain ^ h).wrapping_mul(FNV_PRIME);
    1
}

/// x86_64 `struct pt_regs` offsets of rdi, rsi, rdx (see syscalls.rs).
const REG_OFFSETS: [usize; 3] = [112, 104, 96];

#[inline(always)]
fn reg(regs: *const u8, i: usize) -> u64 {
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    unsafe { bpf_probe_read_kernel(regs.add(REG_OFFSETS[i]) as *const u64) }.unwrap_or(0)
}

/// Matches the arguments at `argv + 8`, `argv + 16`, ... (up to NULL or
/// [`MAX_EXEC_ARGS`] - 1 of them) against the exec rules in `progs` (the
/// rules naming the program). Returns the deciding rule's index | its
/// treatment << 32 (0, allow, when none matches). Leaves in this CPU's
/// scratch the order-sensitive hash of the arguments (`chain`) and the
/// argv entries read (`count`, argv[0] included). A global function: both
/// the execve entry and the new image's check decide with this one code.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_exec_decide(argv: u64, progs: u64) -> u64 {
    let Some(cfg) = LSM_CONFIG.get(0) else {
        return 0;
    };
    let nrules = cfg.exec_rules;
    let Some(scratch) = LSM_TOKEN_SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    // SAFETY: this CPU's scratch entry; programs do not nest on one CPU.
    unsafe {
        (*scratch).seen = 0;
        (*scratch).all_letters = [0, 0];
        (*scratch).chain = FNV_OFFSET;
        (*scratch).count = 0;
    }
    let mut i = 1u32;
    while i < MAX_EXEC_ARGS {
        if lsm_scan_arg(argv + 8 * i as u64) == 0 {
            break;
        }
        i += 1;
    }
    // More arguments than were read: a rule that could still match on
    // them refuses the exec (fail closed).
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let unread = i >= MAX_EXEC_ARGS
        && unsafe { bpf_probe_read_user((argv + 8 * MAX_EXEC_ARGS as u64) as *const u64) }
            .unwrap_or(0)
            != 0;
    // SAFETY: as above; lsm_scan_arg wrote the totals.
    let (seen, letters) = unsafe {
        (*scratch).count = i as u64;
        ((*scratch).seen, (*scratch).all_letters)
    };

    // The first rule whose clauses all hold decides.
    let mut rule_index = 0u32;
    let mut treat = treatment::ALLOW;
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
                    rule_index = rule.index;
                    treat = rule.treatment;
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
    if undecided && (!found || treat == treatment::ALLOW) {
        rule_index = EXEC_INDEX_ARGV_UNREAD;
        treat = treatment::DENY;
    }
    if treat == treatment::ALLOW {
        return 0;
    }
    rule_index as u64 | (treat as u64) << 32
}

/// Exec rules naming the program whose base name is at `ptr`.
#[inline(always)]
fn program_rules(ptr: u64, flags: u64) -> u32 {
    let h = lsm_hash_token(ptr, TOKEN_BASENAME | flags);
    // SAFETY: a map lookup; the value is read at once, within this program run.
    unsafe { LSM_EXEC_PROGRAMS.get(h) }.copied().unwrap_or(0)
}

/// `(pid_tgid, configuration)` when exec rules apply to the current
/// process: it is enforced and the policy has exec rules.
#[inline(always)]
fn exec_rules_apply() -> Option<(u64, &'static LsmConfig)> {
    let pid_tgid = bpf_get_current_pid_tgid();
    if !enforced((pid_tgid >> 32) as u32) {
        return None;
    }
    let cfg = LSM_CONFIG.get(0)?;
    if cfg.exec_rules == 0 {
        return None;
    }
    Some((pid_tgid, cfg))
}

/// i386 `execve` and `execveat` (arch/x86/entry/syscalls/syscall_32.tbl).
const COMPAT_EXECVE: u32 = 11;
const COMPAT_EXECVEAT: u32 = 358;

/// Matches execve's command line against the exec rules while the caller's
/// argv still exists; the verdict, and what it was decided on, waits in
/// `LSM_EXEC_VERDICT` for `bprm_check_security` and for the new image's
/// check (`sched_process_exec_verify`). Attached only with the LSM
/// backend, so the tracepoint backend's cost is unchanged without
/// `--enforce`.
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn sys_enter_exec_rules(ctx: RawTracePointContext) -> i32 {
    let id: u64 = ctx.arg(1);
    let id = id as u32;
    if id == COMPAT_EXECVE || id == COMPAT_EXECVEAT {
        // A 32-bit execve is not read here: no entry, so an enforced one
        // is refused at bprm_check_security. Drop an older entry.
        // SAFETY: BPF helper without arguments; the task pointer is only passed to CO-RE reads.
        let task = unsafe { bpf_get_current_task() } as *const c_void;
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        if unsafe { shim_task_in_compat(task) } != 0 {
            let tid = bpf_get_current_pid_tgid() as u32;
            let _ = LSM_EXEC_VERDICT.remove(tid);
        }
        return 0;
    }
    if id != EXECVE && id != EXECVEAT {
        return 0;
    }
    let Some((pid_tgid, cfg)) = exec_rules_apply() else {
        return 0;
    };
    let tid = pid_tgid as u32;
    let regs: *const u8 = ctx.arg(0);
    let (file, argv) = if id == EXECVEAT {
        (reg(regs, 1), reg(regs, 2))
    } else {
        (reg(regs, 0), reg(regs, 1))
    };

    // Which rules name this program (executable path or argv[0] base name).
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let a0 = unsafe { bpf_probe_read_user(argv as *const u64) }.unwrap_or(0);
    let argv0_progs = if a0 != 0 { program_rules(a0, 0) } else { 0 };
    let progs = cfg.exec_any_program | program_rules(file, 0) | argv0_progs;
    let mut v = ExecVerdict {
        argv0_progs,
        ..ExecVerdict::default()
    };
    if progs != 0 {
        let packed = lsm_exec_decide(argv, progs as u64);
        v.rule = packed as u32;
        v.treatment = (packed >> 32) as u32;
        if let Some(s) = LSM_TOKEN_SCRATCH.get_ptr(0) {
            // SAFETY: this CPU's scratch entry, written by lsm_exec_decide.
            unsafe {
                v.count = (*s).count as u32;
                v.chain = (*s).chain;
            }
        }
    }
    // Without an entry the exec is refused (bprm_check_security) or
    // killed (sched_process_exec_verify): never an older thread's verdict.
    if LSM_EXEC_VERDICT.insert(tid, v, 0).is_err() {
        let _ = LSM_EXEC_VERDICT.remove(tid);
    }
    0
}

/// include/uapi/asm-generic/signal.h
const SIGKILL: u32 = 9;

/// Kills the exec'ing task (current) and records why: `rule` refuses the
/// command line the new image holds.
#[inline(always)]
fn kill_exec(bprm: *const c_void, rule: u32) -> i32 {
    // SAFETY: a BPF helper with an integer argument. Sent first: a lost
    // record must not let the image run.
    unsafe { bpf_send_signal(SIGKILL) };
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_bprm_file(bprm) };
    let (d, m) = file_path(f as u64);
    lsm_emit(
        pack(
            EventKind::Exec as u32,
            hook::SCHED_PROCESS_EXEC,
            decision::KILLED,
            rule,
        ),
        d,
        m,
        0,
        0,
    );
    0
}

/// The new image's command line against the decision made at execve
/// entry. `sched_process_exec` fires after load_elf_binary built the new
/// stack (create_elf_tables wrote argc and the argv pointers at
/// `mm->start_stack`, pointing into the strings copy_strings copied) and
/// before the task returns to user space. The arguments are matched again,
/// from the kernel's copy, by the same code; when a rule refuses them and
/// the decision at entry was not made by that rule on these same
/// arguments (another thread rewrote argv between the entry and the copy,
/// or the strings were unreadable at entry), the task gets `SIGKILL`
/// before its first instruction. A missing entry kills too (fail closed).
///
/// After a `#!` (or binfmt_misc) rewrite the interpreter's argv ends with
/// the caller's argv[1..]: the arguments compared are the last
/// `argc - 1` of the new argv, `argc` being the count at the first
/// `bprm_check_security`; the program is the kernel's copy of the path
/// given to execve (and, for a direct exec, the new argv[0]).
#[raw_tracepoint(tracepoint = "sched_process_exec")]
pub fn sched_process_exec_verify(ctx: RawTracePointContext) -> i32 {
    let Some((_, cfg)) = exec_rules_apply() else {
        return 0;
    };
    // TP_PROTO(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm):
    // old_pid is the thread id before de_thread (a thread that is not the
    // leader takes the leader's id), the key execve entry used.
    let old_pid: u64 = ctx.arg(1);
    let old_pid = old_pid as u32;
    let bprm: *const c_void = ctx.arg(2);
    // SAFETY: a map lookup; the value is copied at once.
    let Some(e) = (unsafe { LSM_EXEC_VERDICT.get(old_pid) }).copied() else {
        return kill_exec(bprm, EXEC_INDEX_UNDECIDED);
    };
    let _ = LSM_EXEC_VERDICT.remove(old_pid);
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let late_argc = unsafe { shim_bprm_argc(bprm) };
    if e.argc == 0 || e.argc == u32::MAX || late_argc < e.argc as i32 {
        return kill_exec(bprm, EXEC_INDEX_UNDECIDED);
    }
    let skip = (late_argc as u32 - e.argc) as u64;
    // SAFETY: BPF helper without arguments; the task pointer is only passed to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let stack = unsafe { shim_task_start_stack(task) };
    if stack == 0 {
        return kill_exec(bprm, EXEC_INDEX_UNDECIDED);
    }
    let argv = stack + 8;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let filename = unsafe { shim_bprm_filename(bprm) } as u64;
    let mut progs = cfg.exec_any_program | program_rules(filename, TOKEN_KERNEL);
    if skip == 0 {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let a0 = unsafe { bpf_probe_read_user(argv as *const u64) }.unwrap_or(0);
        if a0 != 0 {
            progs |= program_rules(a0, 0);
        }
    } else {
        progs |= e.argv0_progs;
    }
    if progs == 0 {
        return 0;
    }
    let packed = lsm_exec_decide(argv + 8 * skip, progs as u64);
    if packed == 0 {
        // No rule refuses what the kernel runs.
        return 0;
    }
    let rule = packed as u32;
    let treat = (packed >> 32) as u32;
    let Some(s) = LSM_TOKEN_SCRATCH.get_ptr(0) else {
        return kill_exec(bprm, rule);
    };
    // SAFETY: this CPU's scratch entry, written by lsm_exec_decide.
    let (count, chain) = unsafe { ((*s).count as u32, (*s).chain) };
    let read = if e.argc < MAX_EXEC_ARGS {
        e.argc
    } else {
        MAX_EXEC_ARGS
    };
    let same = e.rule == rule
        && e.treatment == treat
        && e.count == read
        && count == read
        && e.chain == chain;
    if same {
        // Decided (and refused, approved or copied) on these arguments.
        return 0;
    }
    kill_exec(bprm, rule)
}
