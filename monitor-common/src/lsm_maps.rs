//! BPF LSM enforcement backend: kernel maps and the denial record.
//! Kernel side: `monitor-ebpf/src/probes/lsm/`; userspace side:
//! `monitor::enforce::lsm`; design: docs/lsm.md.

use core::mem::size_of;

/// Constants of the BPF LSM backend.
pub mod lsm {
    /// File rules the kernel holds: one bit of a u64 each, numbered in
    /// policy precedence order (bit 0 is tried first).
    pub const MAX_FILE_RULES: u32 = 64;
    /// Exec rules the kernel holds.
    pub const MAX_EXEC_RULES: u32 = 16;
    /// Conditions (clauses) of one exec rule; a clause holds alternatives.
    pub const EXEC_CLAUSES: u32 = 4;
    /// Arguments of an exec the exec rules read (argv[1..]). An exec with
    /// more is refused when a rule naming its program could still match
    /// on the arguments not read ([`EXEC_INDEX_ARGV_UNREAD`]).
    pub const MAX_EXEC_ARGS: u32 = 1024;
    /// The rule index of that refusal (after every exec rule's).
    pub const EXEC_INDEX_ARGV_UNREAD: u32 = MAX_FILE_RULES + MAX_EXEC_RULES;
    /// The rule index of an exec refused (or killed) because the decision
    /// made at execve entry is missing: the per-thread entry could not be
    /// stored, or the exec did not come through the 64-bit execve/execveat
    /// entry (a 32-bit compat execve).
    pub const EXEC_INDEX_UNDECIDED: u32 = EXEC_INDEX_ARGV_UNREAD + 1;
    /// Levels walked from a target up to the root when matching protected
    /// directories (mount crossings included).
    pub const MAX_WALK: u32 = 64;
    /// Bytes of a program name or argument hashed for exec rules; longer
    /// strings never match a token.
    pub const MAX_TOKEN: usize = 255;
    /// Entries of the `LSM_PROTECT` map (inodes named by path rules).
    pub const MAX_PROTECT: u32 = 4096;
    /// Entries of the `LSM_EXEC_TOKENS` map (argument tokens).
    pub const MAX_TOKENS: u32 = 256;
    /// Scope targets the rules apply to at once (`LSM_TARGETS`).
    pub const MAX_ENFORCED_TARGETS: u32 = 1024;
    /// One-shot allowances granted at once (`LSM_ALLOW`).
    pub const MAX_ALLOW: u32 = 1024;
    /// How long the thread that used an allowance may pass the later hooks
    /// of the same call.
    pub const ALLOW_GRACE_NS: u64 = 100_000_000;
    /// Processes with answers to held `confirm` actions at once
    /// (`LSM_ANSWERS`).
    pub const MAX_ANSWERED: u32 = 4096;
    /// What a hook returns to hold a call: `-ERESTARTNOINTR`
    /// (include/linux/errno.h). With the `SIGSTOP` it sent pending, the
    /// caller stops on its way back to user space; once continued, no
    /// handler runs for a stop, so `arch_do_signal_or_restart`
    /// (arch/x86/kernel/signal.c) restarts the system call, which reaches
    /// the hook again.
    pub const ERESTARTNOINTR: i32 = 513;

    /// `treatment` of a kernel rule.
    pub mod treatment {
        pub const ALLOW: u32 = 0;
        pub const DENY: u32 = 1;
        pub const CONFIRM: u32 = 2;
        pub const PRESERVE: u32 = 3;
    }

    /// What the hook did ([`super::LsmDecision::decision`]).
    pub mod decision {
        /// Refused: the rule's treatment is deny.
        pub const DENIED: u32 = 1;
        /// Refused until a human approves (confirm).
        pub const CONFIRM_PENDING: u32 = 2;
        /// Refused until the daemon has kept a copy (preserve).
        pub const PRESERVE_PENDING: u32 = 3;
        /// Let through once by an approval or a finished copy.
        pub const ALLOWED_ONCE: u32 = 4;
        /// Killed (`SIGKILL`) after the point of no return, before its first
        /// instruction: the command line the kernel copied into the new
        /// image is not the one decided on at execve entry, and a rule
        /// refuses it.
        pub const KILLED: u32 = 5;
        /// A `confirm` whose action this process has no answer to yet: the
        /// caller is stopped (`SIGSTOP`) and its call restarts when it is
        /// continued (`-ERESTARTNOINTR`). Userspace asks, writes the answer
        /// into `LSM_ANSWERS` and continues it.
        pub const CONFIRM_HELD: u32 = 6;
        /// The first call of a process let through by its approved action
        /// (`LSM_ANSWERS`); its later calls under the same rule pass without
        /// a decision record (their syscall records remain).
        pub const ALLOWED_BY_ANSWER: u32 = 7;
        /// Refused by the process's "no" to the action (`LSM_ANSWERS`).
        pub const REFUSED_BY_ANSWER: u32 = 8;
        /// The decision value proper (the low byte).
        pub const MASK: u32 = 0xff;
        /// Flag: the caller was stopped (`SIGSTOP`) after its refused call,
        /// for userspace to write its reason line on the caller's own stderr
        /// and continue it (`SIGCONT`); see [`super::super::LsmConfig::hold_refused`].
        pub const HELD: u32 = 0x100;
    }

    /// The LSM hook that decided ([`super::LsmDecision::hook`]).
    pub mod hook {
        pub const PATH_UNLINK: u32 = 1;
        pub const PATH_RMDIR: u32 = 2;
        pub const PATH_RENAME: u32 = 3;
        pub const PATH_CHMOD: u32 = 4;
        pub const PATH_CHOWN: u32 = 5;
        pub const PATH_TRUNCATE: u32 = 6;
        pub const FILE_TRUNCATE: u32 = 7;
        pub const FILE_OPEN: u32 = 8;
        pub const BPRM_CHECK_SECURITY: u32 = 9;
        /// Not an LSM hook: the `sched_process_exec` tracepoint, where the
        /// new image's argv is checked against the decision.
        pub const SCHED_PROCESS_EXEC: u32 = 10;
        pub const INODE_SETATTR: u32 = 11;
        pub const INODE_SETXATTR: u32 = 12;
        pub const INODE_REMOVEXATTR: u32 = 13;
        pub const PATH_LINK: u32 = 14;
        pub const PATH_SYMLINK: u32 = 15;
        pub const FILE_IOCTL: u32 = 16;
        pub const FILE_IOCTL_COMPAT: u32 = 17;

        pub const fn name(h: u32) -> &'static str {
            match h {
                PATH_UNLINK => "path_unlink",
                PATH_RMDIR => "path_rmdir",
                PATH_RENAME => "path_rename",
                PATH_CHMOD => "path_chmod",
                PATH_CHOWN => "path_chown",
                PATH_TRUNCATE => "path_truncate",
                FILE_TRUNCATE => "file_truncate",
                FILE_OPEN => "file_open",
                BPRM_CHECK_SECURITY => "bprm_check_security",
                SCHED_PROCESS_EXEC => "sched_process_exec",
                INODE_SETATTR => "inode_setattr",
                INODE_SETXATTR => "inode_setxattr",
                INODE_REMOVEXATTR => "inode_removexattr",
                PATH_LINK => "path_link",
                PATH_SYMLINK => "path_symlink",
                FILE_IOCTL => "file_ioctl",
                FILE_IOCTL_COMPAT => "file_ioctl_compat",
                _ => "unknown",
            }
        }
    }

    /// Payload field tags of `LSM_EVENTS` records (besides `FD_PATH`, the
    /// target's components, and `ROOT`).
    pub mod field {
        /// One [`super::super::LsmDecision`].
        pub const DECISION: u8 = 32;
        /// Components of the rename destination, leaf first.
        pub const TARGET2: u8 = 33;
    }

    /// FNV-1a, the hash of program names and argument tokens on both sides.
    pub const fn fnv1a(bytes: &[u8]) -> u64 {
        let mut h = FNV_OFFSET;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(FNV_PRIME);
            i += 1;
        }
        h
    }
    pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
}

/// Key of `LSM_PROTECT`: an inode as the kernel names it (`i_sb->s_dev`
/// in the kernel's `MKDEV` encoding, `i_ino`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InodeKey {
    pub ino: u64,
    pub dev: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<InodeKey>() == 16);

/// Value of `LSM_PROTECT`: which file rules an inode satisfies, as the
/// target itself, as its parent directory, or as any ancestor; and which
/// rules it excludes (`not_paths`) the same three ways. `anc`: the
/// blocking rules of which an object lies below this directory (or is
/// this directory's content): renaming the directory moves that object,
/// so a rename of it is judged as touching the object.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathRuleBits {
    pub self_: u64,
    pub child: u64,
    pub desc: u64,
    pub excl_self: u64,
    pub excl_child: u64,
    pub excl_desc: u64,
    pub anc: u64,
}
const _: () = assert!(size_of::<PathRuleBits>() == 56);

/// The single entry of `LSM_CONFIG`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LsmConfig {
    /// Per [`EventKind`] value: the file rules that apply to that operation.
    pub op_rules: [u64; 32],
    /// File rules without a path condition (they match any path).
    pub any_path: u64,
    /// File rules by treatment; a matching rule in none of them allows.
    pub deny: u64,
    pub confirm: u64,
    pub preserve: u64,
    /// Number of exec rules in `LSM_EXEC_RULES` (0: exec matching is off).
    pub exec_rules: u32,
    /// Exec rules without a program condition.
    pub exec_any_program: u32,
    /// Lifetime of a one-shot allowance, in ns.
    pub allow_ttl_ns: u64,
    /// Non-zero: a caller refused by a deny or confirm rule is stopped
    /// once per (process, operation, rule), unless its fd 2 is a character
    /// device (a terminal, `/dev/null`), until userspace has told it why.
    pub hold_refused: u32,
    /// Non-zero when the kernel's `inode_setattr` hook takes a
    /// `struct mnt_idmap *` first (6.12: `idmap, dentry, attr`; 6.1:
    /// `dentry, attr`). Set by the loader from the kernel BTF.
    pub setattr_idmap: u32,
    /// Non-zero: a `confirm` of a file rule holds the caller (stopped,
    /// its call restarted) until the process's answer is in
    /// `LSM_ANSWERS` ([`lsm::decision::CONFIRM_HELD`]), except io_uring
    /// requests and callers whose fd 2 is a terminal, which are refused
    /// per call as without it.
    pub hold_confirm: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<LsmConfig>() == 320);

/// Value of `LSM_ANSWERS` (key: the process's tgid): the answers of its
/// held `confirm` actions, one bit per file rule. Written by userspace;
/// the kernel sets bits of `seen` only, and removes the entry when the
/// process exits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActionAnswers {
    /// Rules whose action the process may carry out.
    pub allowed: u64,
    /// Rules whose action the process is refused.
    pub denied: u64,
    /// Allowed rules of which the kernel has recorded the first call.
    pub seen: u64,
}
const _: () = assert!(size_of::<ActionAnswers>() == 24);

/// One entry of `LSM_EXEC_RULES`. Clause `c` of rule `r` is satisfied when
/// an argument's hash maps to bit `r * EXEC_CLAUSES + c` in
/// `LSM_EXEC_TOKENS`, or when all letters of `letters[c]` (non-zero) are set
/// in the short-option clusters of the command line.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecRule {
    /// Letter alternatives, a 128-bit ASCII set per clause.
    pub letters: [[u64; 2]; 4],
    /// Bits of the clauses in use.
    pub used: u32,
    /// Bits of the clauses that must NOT be satisfied (`not_flags`).
    pub negated: u32,
    /// [`lsm::treatment`] value.
    pub treatment: u32,
    /// Index of the rule in the compiled kernel policy (for events).
    pub index: u32,
}
const _: () = assert!(size_of::<ExecRule>() == 64 + 16);

/// Value of `LSM_EXEC_VERDICT` (per thread, written at execve entry):
/// the exec rule that matched the command line (rule 0 with treatment
/// allow when none did), and what it was decided on, for the check of the
/// new image's argv at `sched_process_exec`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecVerdict {
    /// Kernel rule index (as in [`LsmDecision::rule`]).
    pub rule: u32,
    pub treatment: u32,
    /// argv entries read at entry (argv[0] included, at most
    /// [`lsm::MAX_EXEC_ARGS`]); 0 when no rule named the program.
    pub count: u32,
    /// `bprm->argc` at the first `bprm_check_security` (0 before it).
    pub argc: u32,
    /// Order-sensitive hash of the argument hashes read (argv[1..count)).
    pub chain: u64,
    /// Exec rules naming argv[0]'s base name at entry (a `#!` script's
    /// argv[0] is not in the new image).
    pub argv0_progs: u32,
    /// 1 once an allowance let the exec through (`#!` interpreter levels
    /// then pass too).
    pub allowed: u32,
}
const _: () = assert!(size_of::<ExecVerdict>() == 32);

/// Key of `LSM_ALLOW`: a one-shot allowance for one operation on one
/// object under one rule (the executable's inode for exec).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AllowKey {
    pub ino: u64,
    pub dev: u32,
    /// [`EventKind`] value.
    pub op: u16,
    /// Kernel rule index.
    pub rule: u16,
}
const _: () = assert!(size_of::<AllowKey>() == 16);

/// Value of `LSM_ALLOW`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Allowance {
    /// `bpf_ktime_get_ns()` after which the allowance is void.
    pub expires_ns: u64,
    /// 0 while unused. Once used: the thread that used it, which may pass
    /// the other hooks of the same call (an `O_TRUNC` open reaches
    /// `file_open` and then `path_truncate`/`file_truncate`) until
    /// `expires_ns` (now + [`lsm::ALLOW_GRACE_NS`]).
    pub tid: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<Allowance>() == 16);

/// First payload field of an `LSM_EVENTS` record (tag
/// [`lsm::field::DECISION`]). The record's header is an [`EventHeader`]
/// whose `kind` is the operation and whose `result` is what the hook
/// returned (-EPERM, or 0 for an allowance used).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LsmDecision {
    /// Kernel rule index.
    pub rule: u32,
    /// [`lsm::decision`] value.
    pub decision: u32,
    /// [`lsm::hook`] value.
    pub hook: u32,
    pub dev: u32,
    /// The target's inode (the executable for exec; 0 if none).
    pub ino: u64,
}
const _: () = assert!(size_of::<LsmDecision>() == 24);

/// Per-CPU scratch of the exec token hasher.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TokenScratch {
    pub buf: [u8; 512],
    /// Letters of the short-option cluster just hashed (128-bit ASCII set).
    pub letters: [u64; 2],
    /// Clause bits (`LSM_EXEC_TOKENS` values) of the arguments read so far.
    pub seen: u64,
    /// Letters of every short-option cluster read so far.
    pub all_letters: [u64; 2],
    /// Order-sensitive hash of the argument hashes read so far.
    pub chain: u64,
    /// argv entries read (argv[0] included).
    pub count: u64,
}
const _: () = assert!(size_of::<TokenScratch>() == 568);

#[cfg(feature = "user")]
mod lsm_pod {
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::InodeKey {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::PathRuleBits {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::LsmConfig {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ExecRule {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ExecVerdict {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::AllowKey {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::Allowance {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::LsmDecision {}
    // SAFETY: #[repr(C)], only integer fields, no padding (size asserted above): every byte pattern is a valid value.
    unsafe impl aya::Pod for super::ActionAnswers {}
}
