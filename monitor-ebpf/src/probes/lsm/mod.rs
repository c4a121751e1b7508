//! BPF LSM enforcement backend: synchronous, in-kernel decisions.
//!
//! These programs are only loaded and attached by `monitor::lsm` when
//! `abm run --enforce` selects the LSM backend (a kernel with
//! `CONFIG_BPF_LSM=y` and `bpf` in the active LSM list). The tracepoint
//! programs never depend on them, so on a kernel without BPF LSM nothing
//! here runs.
//!
//! File hooks (`path_unlink`, `path_rmdir`, `path_rename`, `path_chmod`,
//! `path_chown`, `path_truncate`, `file_truncate`, `file_open`,
//! `path_link`, `path_symlink`, `inode_setattr` for timestamps,
//! `inode_setxattr`, `inode_removexattr`, `file_ioctl` for inode flags)
//! see resolved kernel objects: the decision walks from the target dentry up through
//! `d_parent` (crossing mounts) and looks every inode up in `LSM_PROTECT`,
//! which the daemon filled from the policy's path rules. There is no path
//! string to race with (no TOCTOU), and io_uring's unlinkat/renameat reach
//! the same hooks from its worker threads.
//!
//! Exec rules (`kubectl delete`, `git push --force`) are matched at execve
//! entry by `sys_enter_exec_rules`, which hashes the program's base name and
//! every argument while the old image (and its argv) still exists, and
//! stores the matching rule per thread in `LSM_EXEC_VERDICT`.
//! `bprm_check_security` then denies before the point of no return. The
//! kernel copies argv after that entry, so `sched_process_exec_verify`
//! matches the new image's argv (the kernel's copy) again and kills the
//! task before its first instruction when a rule refuses what it would run
//! and the entry's decision was not made on those arguments.
//!
//! Rules are bits of a u64 numbered in policy precedence order, so "the
//! first matching rule decides" is "the lowest set bit decides". Every
//! refusal (and every one-shot allowance used) is a record in
//! `LSM_EVENTS` with the rule index and the target's path.
//!
//! Kernel sources relied on: include/linux/lsm_hook_defs.h (hook
//! signatures, identical in 6.1 and 6.12 for the hooks used here but
//! `inode_setattr`, which gained a first `idmap` argument, and
//! `inode_setxattr`/`inode_removexattr`, whose first argument changed type
//! from `user_namespace` to `mnt_idmap`, not position),
//! kernel/bpf/bpf_lsm.c, fs/namei.c (where each hook is called).
use core::ffi::c_void;

use aya_ebpf::{
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_current_task, bpf_ktime_get_ns, bpf_probe_read_kernel,
        bpf_probe_read_user,
        generated::{bpf_probe_read_kernel_str, bpf_probe_read_user_str, bpf_send_signal},
    },
    macros::{lsm, map, raw_tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{LsmContext, RawTracePointContext},
    EbpfContext,
};
use monitor_common::{
    field_tag::{FD_PATH, ROOT},
    lsm::{
        decision, field, hook, treatment, ALLOW_GRACE_NS, ERESTARTNOINTR, EXEC_CLAUSES,
        EXEC_INDEX_ARGV_UNREAD, EXEC_INDEX_UNDECIDED, FNV_OFFSET, FNV_PRIME, MAX_ALLOW,
        MAX_ANSWERED, MAX_ENFORCED_TARGETS, MAX_EXEC_ARGS, MAX_EXEC_RULES, MAX_FILE_RULES,
        MAX_PROTECT, MAX_TOKEN, MAX_TOKENS, MAX_WALK,
    },
    open_flags::O_TRUNC,
    ActionAnswers, AllowKey, Allowance, EventHeader, EventKind, ExecRule, ExecVerdict, FieldHeader,
    InodeKey, LossCause, LsmConfig, LsmDecision, PathRuleBits, TokenScratch,
};

use crate::{
    maps::{count_loss, current_scope, SCRATCH},
    shim::{shim_bprm_argc, shim_bprm_filename, shim_task_in_compat, shim_task_start_stack},
    shim::{
        shim_dentry_parent, shim_file_dentry, shim_file_fmode, shim_file_mnt, shim_mnt_mountpoint,
        shim_mnt_parent, shim_mnt_root, shim_task_fd_file, shim_task_pwd_mnt,
        shim_task_root_dentry, shim_task_root_mnt,
    },
    walk::walk_path,
};

mod exec;
mod files;
mod hold;

use hold::{lsm_confirm_hold, HOLD_ALLOW, HOLD_REFUSE, HOLD_STOPPED};

// CO-RE accessors of this backend (appended to shim/shim.c).
// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    fn shim_dentry_inode(d: *const c_void) -> *const c_void;
    fn shim_inode_ino(i: *const c_void) -> u64;
    fn shim_inode_dev(i: *const c_void) -> u32;
    fn shim_path_dentry(p: *const c_void) -> *const c_void;
    fn shim_path_mnt(p: *const c_void) -> *const c_void;
    fn shim_file_flags(f: *const c_void) -> u32;
    fn shim_bprm_file(b: *const c_void) -> *const c_void;
    fn shim_file_imode(f: *const c_void) -> u32;
    fn shim_iattr_valid(a: *const c_void) -> u32;
    fn shim_mnt_dev(m: *const c_void) -> u32;
}

// ---------------------------------------------------------------------------
// Maps (filled by `monitor::lsm`; names are part of its contract)

/// The compiled policy's rule tables.
#[map]
static LSM_CONFIG: Array<LsmConfig> = Array::with_max_entries(1, 0);

/// Inodes named by path rules -> the rules they satisfy or exclude.
#[map]
static LSM_PROTECT: HashMap<InodeKey, PathRuleBits> = HashMap::with_max_entries(MAX_PROTECT, 0);

/// Exec rules, in precedence order.
#[map]
static LSM_EXEC_RULES: Array<ExecRule> = Array::with_max_entries(MAX_EXEC_RULES, 0);

/// Hash of a program base name -> bits of the exec rules naming it.
#[map]
static LSM_EXEC_PROGRAMS: HashMap<u64, u32> = HashMap::with_max_entries(64, 0);

/// Hash of an argument -> bits `rule * EXEC_CLAUSES + clause` it satisfies.
#[map]
static LSM_EXEC_TOKENS: HashMap<u64, u64> = HashMap::with_max_entries(MAX_TOKENS, 0);

/// Scope targets (`ScopeEntry::target`) whose processes the rules apply
/// to; processes of other targets are only traced. The value is reserved
/// (0). `abm run --enforce` puts its one target here, the daemon its
/// targets watched with `enforce`.
#[map]
static LSM_TARGETS: HashMap<u32, u32> = HashMap::with_max_entries(MAX_ENFORCED_TARGETS, 0);

/// Thread id -> exec rule matched by its pending execve (LRU: threads that
/// exit mid-exec leave no garbage behind).
#[map]
static LSM_EXEC_VERDICT: LruHashMap<u32, ExecVerdict> = LruHashMap::with_max_entries(8192, 0);

/// One-shot allowances granted by an approval (confirm) or a finished copy
/// (preserve).
#[map]
static LSM_ALLOW: HashMap<AllowKey, Allowance> = HashMap::with_max_entries(MAX_ALLOW, 0);

/// Process (tgid) -> its answers to held `confirm` actions, one bit per
/// file rule (written by userspace after a question was answered; the
/// entry is removed when the process exits, `sched_process_exit`).
#[map]
pub(crate) static LSM_ANSWERS: HashMap<u32, ActionAnswers> =
    HashMap::with_max_entries(MAX_ANSWERED, 0);

/// Decision records for the daemon.
#[map]
static LSM_EVENTS: RingBuf = RingBuf::with_byte_size(256 * 1024, 0);

/// (tgid << 32 | op << 16 | rule) of callers already stopped once for a
/// reason line ([`lsm_hold_caller`]); LRU: exited processes age out.
#[map]
static LSM_HELD: LruHashMap<u64, u32> = LruHashMap::with_max_entries(4096, 0);

#[map]
static LSM_TOKEN_SCRATCH: PerCpuArray<TokenScratch> = PerCpuArray::with_max_entries(1, 0);

const EPERM: i32 = 1;
/// include/uapi/asm-generic/signal.h
const SIGSTOP: u32 = 19;
/// include/uapi/linux/stat.h
const S_IFMT: u32 = 0o170000;
const S_IFCHR: u32 = 0o020000;
/// include/linux/fs.h
const FMODE_WRITE: u32 = 0x2;
const EXECVE: u32 = 59;
const EXECVEAT: u32 = 322;

/// Mode of [`lsm_path_rules`].
const RULES_FINAL: u64 = 0;
const RULES_MATCHED: u64 = 1;
const RULES_EXCLUDED: u64 = 2;

// ---------------------------------------------------------------------------
// Helpers

/// Hook argument `n` as a scalar. LSM programs get BTF-typed arguments; a
/// direct load would give the verifier a `PTR_TO_BTF_ID`, which cannot be
/// passed to the global functions below (they take scalars and only ever
/// dereference through probe reads, like the tracepoint programs).
#[inline(always)]
fn arg(ctx: &LsmContext, n: usize) -> u64 {
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    unsafe { bpf_probe_read_kernel((ctx.as_ptr() as *const u64).add(n)) }.unwrap_or(0)
}

/// Index of the single set bit of `b` (branchy binary search: BPF has no
/// count-trailing-zeros instruction).
#[inline(always)]
fn bit_index(mut b: u64) -> u32 {
    let mut i = 0;
    if b & 0xffff_ffff == 0 {
        i += 32;
        b >>= 32;
    }
    if b & 0xffff == 0 {
        i += 16;
        b >>= 16;
    }
    if b & 0xff == 0 {
        i += 8;
        b >>= 8;
    }
    if b & 0xf == 0 {
        i += 4;
        b >>= 4;
    }
    if b & 0x3 == 0 {
        i += 2;
        b >>= 2;
    }
    if b & 0x1 == 0 {
        i += 1;
    }
    i
}

#[inline(always)]
fn inode_key(dentry: u64) -> InodeKey {
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let inode = unsafe { shim_dentry_inode(dentry as *const c_void) };
    if inode.is_null() {
        return InodeKey::default();
    }
    // SAFETY: CO-RE accessors of the C shim on a non-null inode pointer.
    unsafe {
        InodeKey {
            ino: shim_inode_ino(inode),
            dev: shim_inode_dev(inode),
            _pad: 0,
        }
    }
}

/// Walks from `dentry` (in mount `mnt`) to the root of the mount namespace
/// and collects the rule bits of every inode on the way: `self_` at the
/// target, `child` at its parent, `desc` at every ancestor. Mount roots are
/// looked up once (as the mounted directory, which is what stat() reports);
/// the covered directory below them is skipped.
///
/// `mode`: [`RULES_FINAL`] returns `(init | matched) & !excluded`;
/// [`RULES_MATCHED`] and [`RULES_EXCLUDED`] return one half (rename combines
/// both paths before excluding).
///
/// A global function: verified once, with scalar arguments.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_path_rules(dentry: u64, mnt: u64, mode: u64, init: u64) -> u64 {
    // Which table of an entry applies at the current level, as masks rather
    // than a level counter: a counter compared in branches would be tracked
    // precisely by the verifier and keep it from pruning equivalent states
    // (6.1 then gives up with E2BIG).
    let mut at_self = u64::MAX;
    let mut at_child = 0u64;
    let mut at_desc = 0u64;
    // 0 right after crossing into a parent mount: the covered directory is
    // not the object the path names.
    let mut look = u64::MAX;
    let mut matched = init;
    let mut excluded = 0u64;
    let mut d = dentry as *const c_void;
    let mut m = mnt as *const c_void;
    for _ in 0..MAX_WALK {
        if d.is_null() {
            break;
        }
        let key = inode_key(d as u64);
        // SAFETY: a map lookup; the value is read at once, within this program run.
        if let Some(e) = unsafe { LSM_PROTECT.get(key) } {
            matched |= ((e.self_ & at_self) | (e.child & at_child) | (e.desc & at_desc)) & look;
            excluded |=
                ((e.excl_self & at_self) | (e.excl_child & at_child) | (e.excl_desc & at_desc))
                    & look;
        }
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        if !m.is_null() && d == unsafe { shim_mnt_root(m) } {
            // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
            let parent = unsafe { shim_mnt_parent(m) };
            if parent.is_null() || parent == m {
                break;
            }
            // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
            d = unsafe { shim_mnt_mountpoint(m) };
            m = parent;
            look = 0;
            continue;
        }
        // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
        let p = unsafe { shim_dentry_parent(d) };
        if p.is_null() || p == d {
            break;
        }
        d = p;
        at_child = at_self;
        at_self = 0;
        at_desc = u64::MAX;
        look = u64::MAX;
    }
    match mode {
        RULES_MATCHED => matched,
        RULES_EXCLUDED => excluded,
        _ => matched & !excluded,
    }
}

/// Sends one decision record to `LSM_EVENTS`: the header, a
/// [`LsmDecision`] field, the target's components (`FD_PATH`), the rename
/// destination's (`TARGET2`) and the task root (`ROOT`).
///
/// `packed`: op (bits 0-7), hook (8-15), decision (16-23), held (24),
/// rule (32-47). Uses the shared per-CPU record buffer like the tracepoint
/// programs. Returns 1 when the record was sent, 0 when it was lost.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_emit(packed: u64, d1: u64, m1: u64, d2: u64, m2: u64) -> u64 {
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    let op = (packed & 0xff) as u32;
    let dec = ((packed >> 16) & 0xff) as u32;
    let held = ((packed >> 24) & 1) as u32;
    let key = inode_key(d1);
    // SAFETY: BPF helper without arguments; the task pointer is only
    // passed to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: this CPU's entry of the per-CPU scratch array (non-null from
    // the lookup), not referenced elsewhere while this program runs.
    let hdr: &mut EventHeader = unsafe { &mut (*buf).hdr };
    let result = if dec == decision::ALLOWED_ONCE
        || dec == decision::KILLED
        || dec == decision::ALLOWED_BY_ANSWER
    {
        0
    } else if dec == decision::CONFIRM_HELD {
        -(ERESTARTNOINTR as i64)
    } else {
        -(EPERM as i64)
    };
    crate::record::fill_header::<true>(hdr, op, 0, result);
    const FH: usize = core::mem::size_of::<FieldHeader>();
    const DL: usize = core::mem::size_of::<LsmDecision>();
    // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
    let payload = unsafe { (*buf).payload.as_mut_ptr() };
    let fh = FieldHeader {
        tag: field::DECISION,
        flags: 0,
        len: DL as u16,
    };
    let dv = LsmDecision {
        rule: ((packed >> 32) & 0xffff) as u32,
        decision: dec | (held * decision::HELD),
        hook: ((packed >> 8) & 0xff) as u32,
        dev: key.dev,
        ino: key.ino,
    };
    // SAFETY: the decision field fits well inside the scratch payload.
    unsafe {
        core::ptr::write_unaligned(payload as *mut FieldHeader, fh);
        core::ptr::write_unaligned(payload.add(FH) as *mut LsmDecision, dv);
    }
    hdr.payload_len = (FH + DL) as u32;
    walk_path(FD_PATH as u64, d1, m1);
    if d2 != 0 {
        walk_path(field::TARGET2 as u64, d2, m2);
    }
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let (rd, rm) = unsafe { (shim_task_root_dentry(task), shim_task_root_mnt(task)) };
    walk_path(ROOT as u64, rd as u64, rm as u64);
    // SAFETY: a pointer into this CPU's entry of a per-CPU array (non-null from the lookup); programs do not nest on one CPU.
    let mut len = unsafe { (*buf).hdr.payload_len } as usize;
    // Same bound as `Record::send` (the verifier needs a constant maximum).
    if len > monitor_common::limits::PAYLOAD_CAP + 4096 {
        len = monitor_common::limits::PAYLOAD_CAP + 4096;
    }
    let total = core::mem::size_of::<EventHeader>() + len;
    // SAFETY: `total` bytes from the start of this CPU's scratch entry, bounded by its size.
    let data = unsafe { core::slice::from_raw_parts(buf as *const u8, total) };
    if LSM_EVENTS.output::<[u8]>(data, 0).is_err() {
        count_loss(LossCause::LsmRingbufFull);
        return 0;
    }
    1
}

/// Whether to stop the current caller after a refusal `dec` of operation
/// `op` by rule `rule`, so that userspace can write the reason on the
/// caller's own stderr before the caller prints its error and exits (the
/// decision record reaches userspace after the call returned). Only when
/// `hold_refused` is on, only for deny and confirm refusals, once per
/// (process, operation, rule), and not when fd 2 is a character device:
/// a terminal is shared with the parent, which userspace writes to when
/// the caller is gone, and a stop there would be seen by a job-control
/// shell. Returns 1 to hold.
///
/// A global function: verified once, with scalar arguments.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn lsm_hold_caller(op: u64, rule: u64, dec: u64) -> u64 {
    if dec != decision::DENIED as u64 && dec != decision::CONFIRM_PENDING as u64 {
        return 0;
    }
    match LSM_CONFIG.get(0) {
        Some(cfg) if cfg.hold_refused != 0 => {}
        _ => return 0,
    }
    // SAFETY: BPF helper without arguments; the task pointer is only
    // passed to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let f = unsafe { shim_task_fd_file(task, 2) };
    if f.is_null() {
        return 0;
    }
    // SAFETY: as above, on a non-null file pointer.
    if unsafe { shim_file_imode(f) } & S_IFMT == S_IFCHR {
        return 0;
    }
    let key = (bpf_get_current_pid_tgid() >> 32) << 32 | (op & 0xff) << 16 | (rule & 0xffff);
    // SAFETY: a map lookup; only its presence is used.
    if unsafe { LSM_HELD.get(key) }.is_some() {
        return 0;
    }
    if LSM_HELD.insert(key, 1, 0).is_err() {
        return 0;
    }
    1
}

#[inline(always)]
fn pack(op: u32, hook: u32, dec: u32, rule: u32) -> u64 {
    op as u64 | (hook as u64) << 8 | (dec as u64) << 16 | (rule as u64 & 0xffff) << 32
}

/// Carries out a matched rule: deny; for a `confirm` of a file rule, the
/// process's answer or a hold ([`lsm_confirm_hold`]); else refuse pending
/// approval/copy unless a one-shot allowance for this object and rule
/// exists (then consume it). Returns the hook's verdict (0, -EPERM, or
/// -ERESTARTNOINTR for a held caller).
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "inlined into each hook: the rule and both objects stay in registers, no struct on the 512-byte stack"
)]
fn apply(op: u32, hook: u32, rule: u32, treat: u32, d1: u64, m1: u64, d2: u64, m2: u64) -> i32 {
    let dec = match treat {
        treatment::DENY => decision::DENIED,
        treatment::CONFIRM => decision::CONFIRM_PENDING,
        treatment::PRESERVE => decision::PRESERVE_PENDING,
        _ => return 0,
    };
    if dec == decision::CONFIRM_PENDING {
        match lsm_confirm_hold(pack(op, hook, 0, rule), d1, m1, d2, m2) {
            HOLD_ALLOW => return 0,
            HOLD_REFUSE => return -EPERM,
            HOLD_STOPPED => return -ERESTARTNOINTR,
            _ => {}
        }
    }
    if dec != decision::DENIED {
        let k = inode_key(d1);
        let key = AllowKey {
            ino: k.ino,
            dev: k.dev,
            op: op as u16,
            rule: rule as u16,
        };
        // SAFETY: a map lookup; the value is read at once, within this program run.
        if let Some(a) = unsafe { LSM_ALLOW.get(key) }.copied() {
            // SAFETY: a BPF helper without memory arguments.
            let now = unsafe { bpf_ktime_get_ns() };
            let tid = bpf_get_current_pid_tgid() as u32;
            if a.tid == 0 {
                // Only the caller whose delete succeeds uses it: one-shot
                // even when two CPUs race for it. It then stays for the
                // other hooks of the same call, for this thread only.
                if now < a.expires_ns && LSM_ALLOW.remove(key).is_ok() {
                    let used = Allowance {
                        expires_ns: now + ALLOW_GRACE_NS,
                        tid,
                        _pad: 0,
                    };
                    let _ = LSM_ALLOW.insert(key, used, 0);
                    lsm_emit(pack(op, hook, decision::ALLOWED_ONCE, rule), d1, m1, d2, m2);
                    return 0;
                }
            } else if a.tid == tid && now < a.expires_ns {
                return 0;
            }
        }
    }
    let held = lsm_hold_caller(op as u64, rule as u64, dec as u64);
    let sent = lsm_emit(pack(op, hook, dec, rule) | held << 24, d1, m1, d2, m2);
    if held != 0 && sent != 0 {
        // Delivered when the call returns to user space: the caller stops
        // before its next instruction, until userspace sends SIGCONT. No
        // record, no stop: userspace would never continue it.
        // SAFETY: a BPF helper with an integer argument.
        unsafe { bpf_send_signal(SIGSTOP) };
    }
    -EPERM
}

/// The file-rule decision for operation `op` on `d1` (and `d2` for rename).
#[inline(always)]
fn check_file(op: EventKind, hook: u32, d1: u64, m1: u64, d2: u64, m2: u64) -> i32 {
    let Some(cfg) = LSM_CONFIG.get(0) else {
        return 0;
    };
    // The mask must survive optimisation (the compiler knows the enum's
    // range, the verifier does not): read the index through a volatile load.
    // SAFETY: a plain read of a global the loader sets before the programs run.
    let idx = unsafe { core::ptr::read_volatile(&(op as u32)) } & 31;
    let cand = cfg.op_rules[idx as usize];
    if cand == 0 {
        return 0;
    }
    if !enforced((bpf_get_current_pid_tgid() >> 32) as u32) {
        return 0;
    }
    let init = cand & cfg.any_path;
    let bits = if d2 == 0 {
        lsm_path_rules(d1, m1, RULES_FINAL, init)
    } else {
        let mut matched = init
            | lsm_path_rules(d1, m1, RULES_MATCHED, 0)
            | lsm_path_rules(d2, m2, RULES_MATCHED, 0);
        if op as u32 == EventKind::Rename as u32 {
            // A directory moved (or swapped by RENAME_EXCHANGE) moves what
            // lies below it: the rules protecting such an object apply.
            matched |= ancestor_rules(d1) | ancestor_rules(d2);
        }
        let excluded =
            lsm_path_rules(d1, m1, RULES_EXCLUDED, 0) | lsm_path_rules(d2, m2, RULES_EXCLUDED, 0);
        matched & !excluded
    } & cand;
    if bits == 0 {
        return 0;
    }
    // The first rule in precedence order decides, whatever its treatment.
    let low = bits & bits.wrapping_neg();
    let treat = if low & cfg.deny != 0 {
        treatment::DENY
    } else if low & cfg.confirm != 0 {
        treatment::CONFIRM
    } else if low & cfg.preserve != 0 {
        treatment::PRESERVE
    } else {
        return 0;
    };
    apply(op as u32, hook, bit_index(low), treat, d1, m1, d2, m2)
}

/// The blocking rules of which an object lies below the directory
/// `dentry` (`PathRuleBits::anc`; 0 for a negative dentry).
#[inline(always)]
fn ancestor_rules(dentry: u64) -> u64 {
    let key = inode_key(dentry);
    if key.ino == 0 {
        return 0;
    }
    // SAFETY: a map lookup; the value is read at once, within this program run.
    unsafe { LSM_PROTECT.get(key) }.map_or(0, |e| e.anc)
}

/// Whether the rules apply to process `tgid`: it is in scope, and its
/// target enforces.
#[inline(always)]
fn enforced(tgid: u32) -> bool {
    match current_scope(tgid) {
        // SAFETY: a map lookup; only its presence is used.
        Some(s) => unsafe { LSM_TARGETS.get(s.target) }.is_some(),
        None => false,
    }
}

/// An earlier BPF LSM program's refusal (`retval` is the phony last
/// argument of BPF LSM programs). Our programs then refuse too, with a
/// constant: the verifier (6.12) checks that an LSM program returns 0 or
/// -errno and cannot follow a range check on the 32-bit value through to
/// the 64-bit register.
#[inline(always)]
fn refused_before(ctx: &LsmContext, nargs: usize) -> bool {
    arg(ctx, nargs) as i32 != 0
}

/// (dentry, mount) of a `const struct path *`.
#[inline(always)]
fn path_of(p: u64) -> (u64, u64) {
    let p = p as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe { (shim_path_dentry(p) as u64, shim_path_mnt(p) as u64) }
}

/// The mount of `dentry` for the inode hooks, which get no mount: the
/// caller's cwd mount or root mount when its file system is the dentry's
/// (the usual case: a call relative to the cwd or by absolute path within
/// one file system), else 0 (the walk then stops at the root of the
/// dentry's file system and does not cross to the mounts above it).
#[inline(always)]
fn dentry_mnt(dentry: u64) -> u64 {
    let dev = inode_key(dentry).dev;
    if dev == 0 {
        return 0;
    }
    // SAFETY: BPF helper without arguments; the task pointer is only
    // passed to CO-RE reads.
    let task = unsafe { bpf_get_current_task() } as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    let pwd = unsafe { shim_task_pwd_mnt(task) };
    // SAFETY: as above.
    if !pwd.is_null() && unsafe { shim_mnt_dev(pwd) } == dev {
        return pwd as u64;
    }
    // SAFETY: as above.
    let root = unsafe { shim_task_root_mnt(task) };
    // SAFETY: as above.
    if !root.is_null() && unsafe { shim_mnt_dev(root) } == dev {
        return root as u64;
    }
    0
}

/// (dentry, mount) of a `struct file *`.
#[inline(always)]
fn file_path(f: u64) -> (u64, u64) {
    let f = f as *const c_void;
    // SAFETY: CO-RE accessors of the C shim: reads through bpf_probe_read_kernel, a bad pointer yields 0.
    unsafe { (shim_file_dentry(f) as u64, shim_file_mnt(f) as u64) }
}
