//! abm protecting its own process from the watched tree, which may run
//! as root, in every `abm run` (observe and enforce alike). What protects
//! the trace file under `--enforce` is `crate::enforce::trace_guard`.
//!
//! - [`SelfGuard`]: a plain seccomp filter (no notification) installed in
//!   the launched command between fork and exec, in observe mode too. It
//!   refuses with `EPERM` the calls that reach abm's process: `kill` of
//!   abm's pid or any of its threads, of its process group, of every
//!   process (`-1`) or of the caller's own group (`0`, which is abm's);
//!   `tkill` (obsolete; `tgkill` is what libc uses); `tgkill`, `ptrace`,
//!   `process_vm_readv`/`writev`, `pidfd_open` aimed at abm's pid or one of
//!   its threads; `pidfd_send_signal` fails with `ENOSYS` for every target
//!   (a descriptor opened on `/proc/<abm pid>` is a pidfd the filter cannot
//!   tell apart; callers such as Go's runtime fall back to `kill`); and,
//!   unless `--allow-kernel-admin`, the calls that would change the kernel
//!   under abm: `bpf()` lookups of BPF objects by id (to detach abm's
//!   programs or edit its maps), module loading and kexec. The
//!   same numbers of the ia32 table are checked for `int 0x80`. Threads abm
//!   creates after the command started are not in the filter (their ids
//!   were not known), see docs/security.md.
//! - [`drop_ptrace_capability`]: the command loses `CAP_SYS_PTRACE` before
//!   exec (bounding, permitted, effective, inheritable and ambient sets), so
//!   even as root it fails the kernel's ptrace access check on abm, whose
//!   capabilities are not a subset of its own: `/proc/<abm pid>/mem`,
//!   `environ`, `fd/N` (the trace and the anchor) and `pidfd_getfd` are
//!   refused, in every mode. Its own descendants it can still trace.
use crate::enforce::seccomp::filter::{
    self, installs_in_child, off_arg_lo, ret_errno, Cmp, Program, To, AUDIT_ARCH_I386,
    AUDIT_ARCH_X86_64, OFF_ARCH, OFF_NR, RET_ALLOW,
};

/// Threads of abm named in the filter (a classic BPF jump is 8 bits).
const MAX_IDS: usize = 24;

/// Syscall numbers per ABI: kill, tkill, tgkill, ptrace,
/// process_vm_readv, process_vm_writev, pidfd_open, pidfd_send_signal, and
/// the calls that change the kernel under abm: bpf, module and kexec loading
/// (0: the ABI has no such call).
struct Abi {
    arch: u32,
    kill: u32,
    tkill: u32,
    tgkill: u32,
    ptrace: u32,
    vm_readv: u32,
    vm_writev: u32,
    pidfd_open: u32,
    pidfd_send_signal: u32,
    bpf: u32,
    kernel_admin: [u32; 5],
}

const ABIS: [Abi; 2] = [
    Abi {
        arch: AUDIT_ARCH_X86_64,
        kill: 62,
        tkill: 200,
        tgkill: 234,
        ptrace: 101,
        vm_readv: 310,
        vm_writev: 311,
        pidfd_open: 434,
        pidfd_send_signal: 424,
        bpf: 321,
        // init_module, delete_module, finit_module, kexec_load,
        // kexec_file_load.
        kernel_admin: [175, 176, 313, 246, 320],
    },
    Abi {
        arch: AUDIT_ARCH_I386,
        kill: 37,
        tkill: 238,
        tgkill: 270,
        ptrace: 26,
        vm_readv: 347,
        vm_writev: 348,
        pidfd_open: 434,
        pidfd_send_signal: 424,
        bpf: 357,
        kernel_admin: [128, 129, 350, 283, 0],
    },
];

/// `bpf()` commands that hand out a descriptor of any BPF object on the
/// host by its id (uapi/linux/bpf.h: BPF_PROG_GET_FD_BY_ID,
/// BPF_MAP_GET_FD_BY_ID, BPF_LINK_GET_FD_BY_ID). With one, a root process
/// could detach abm's programs or rewrite its maps (take itself out of
/// scope). Loading and attaching programs of one's own stays allowed.
const BPF_BY_ID_CMDS: [u32; 3] = [13, 14, 30];

/// The filter that keeps the watched tree's hands off abm's process.
pub struct SelfGuard {
    filter: Vec<libc::sock_filter>,
}

impl SelfGuard {
    /// The filter for abm's pid `pid`, its threads `tids` and its process
    /// group `pgid`. Unless `kernel_admin`, it also refuses `bpf()` lookups
    /// of BPF objects by id, module loading and unloading, and kexec.
    pub fn new(pid: u32, tids: &[u32], pgid: u32, kernel_admin: bool) -> SelfGuard {
        let mut ids: Vec<u32> = vec![pid];
        ids.extend(tids.iter().copied().filter(|t| *t != pid));
        ids.truncate(MAX_IDS);
        // kill(): abm by any of its thread ids, its group, everyone, the
        // caller's own group (abm's: the command inherits it).
        let mut kill_vals = ids.clone();
        kill_vals.extend([pgid.wrapping_neg(), u32::MAX, 0]);
        let refuse = ret_errno(libc::EPERM);
        let no_such_call = ret_errno(libc::ENOSYS);
        let mut p = Program::new();
        for abi in &ABIS {
            // Per ABI: arch check, then per-syscall tests, each jumping to
            // its own block after the fall-through ALLOW.
            // (syscall, argument tested, refused values: none = always).
            // The short blocks come first to keep every jump in 8 bits.
            let mut calls: Vec<(u32, u32, &[u32])> = vec![(abi.tkill, 0, &[])];
            if !kernel_admin {
                calls.push((abi.bpf, 0, &BPF_BY_ID_CMDS));
                calls.extend(
                    abi.kernel_admin
                        .iter()
                        .filter(|nr| **nr != 0)
                        .map(|nr| (*nr, 0, [].as_slice())),
                );
            }
            calls.extend([
                (abi.kill, 0, kill_vals.as_slice()),
                (abi.tgkill, 0, &ids),
                (abi.ptrace, 1, &ids),
                (abi.vm_readv, 0, &ids),
                (abi.vm_writev, 0, &ids),
                (abi.pidfd_open, 0, &ids),
            ]);
            let other_abi = p.label();
            p.load(OFF_ARCH);
            p.jump(Cmp::Eq, abi.arch, To::Next, other_abi);
            p.load(OFF_NR);
            let unsupported = p.label();
            p.jump(Cmp::Eq, abi.pidfd_send_signal, unsupported, To::Next);
            let blocks: Vec<To> = calls
                .iter()
                .map(|(nr, _, _)| {
                    let block = p.label();
                    p.jump(Cmp::Eq, *nr, block, To::Next);
                    block
                })
                .collect();
            p.ret(RET_ALLOW);
            p.mark(unsupported);
            p.ret(no_such_call);
            for ((_, arg, vals), block) in calls.iter().zip(blocks) {
                p.mark(block);
                if vals.is_empty() {
                    p.ret(refuse);
                    continue;
                }
                // The low word of the argument is one of `vals`: refuse.
                let hit = p.label();
                p.load(off_arg_lo(*arg));
                for v in vals.iter() {
                    p.jump(Cmp::Eq, *v, hit, To::Next);
                }
                p.ret(RET_ALLOW);
                p.mark(hit);
                p.ret(refuse);
            }
            p.mark(other_abi);
        }
        p.ret(RET_ALLOW);
        SelfGuard {
            filter: p.assemble(),
        }
    }

    /// For the current process: its pid, threads and process group (see
    /// [`SelfGuard::new`] for `kernel_admin`).
    pub fn for_self(kernel_admin: bool) -> SelfGuard {
        let pid = std::process::id();
        let tids: Vec<u32> = std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        // SAFETY: getpgrp has no arguments and cannot fail.
        let pgid = unsafe { libc::getpgrp() } as u32;
        SelfGuard::new(pid, &tids, pgid, kernel_admin)
    }

    /// Installs the filter in the calling process (between fork and exec:
    /// raw syscalls only, no allocation). Needs `PR_SET_NO_NEW_PRIVS` or
    /// CAP_SYS_ADMIN; abm runs as root, so setuid programs in the tree
    /// keep working.
    pub fn install(&self) -> std::io::Result<()> {
        filter::install(&self.filter)
    }

    /// Whether this filter installs here: a forked child installs it and
    /// exits. A host or a container profile that refuses seccomp(2) makes
    /// this fail; `abm run` then goes on without the guard and says so.
    pub fn probe(&self) -> Result<(), NotInstalled> {
        installs_in_child(|| self.install()).map_err(NotInstalled)
    }

    /// Evaluates the filter for one call (tests).
    pub fn run(&self, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        filter::run_filter(&self.filter, arch, nr, args)
    }
}

/// Whether the filter of [`SelfGuard::for_self`] installs here (`abm
/// doctor`, line `self_guard`), with what that means either way.
pub fn check() -> Result<String, GoesOnWithout> {
    SelfGuard::for_self(false)
        .probe()
        .map(|()| {
            "the command's seccomp filter against signalling, tracing or reading abm installs (every mode)".to_owned()
        })
        .map_err(GoesOnWithout)
}

/// The self guard's filter does not install here ([`SelfGuard::probe`]);
/// the reason is the text of the seccomp backend's check.
#[derive(Debug, thiserror::Error)]
#[error("installing its seccomp filter failed: {0}")]
pub struct NotInstalled(filter::ChildInstallError);

/// [`check`]'s answer when the filter does not install: what `abm run`
/// does then.
#[derive(Debug, thiserror::Error)]
#[error("{0}: `abm run` goes on without it and says so")]
pub struct GoesOnWithout(NotInstalled);

/// `CAP_SYS_PTRACE` (linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;

/// Removes `CAP_SYS_PTRACE` from the calling process for good: from its
/// bounding set (so no exec, setuid or file capability brings it back),
/// its ambient set, and its effective, permitted and inheritable sets.
/// Called between fork and exec: raw syscalls only, no allocation.
///
/// A root process without it fails the ptrace access check on any process
/// whose permitted set is not a subset of its own, such as abm: reading
/// or writing `/proc/<pid>/mem`, opening `/proc/<pid>/fd/N` or `environ`,
/// `ptrace`, `process_vm_readv`, `pidfd_getfd`. Processes with the same or
/// fewer capabilities (the command's own descendants) stay traceable.
pub fn drop_ptrace_capability() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments has no memory effects.
    if unsafe {
        libc::prctl(
            libc::PR_CAPBSET_DROP,
            CAP_SYS_PTRACE as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above. EINVAL (no ambient sets before Linux 4.3) is fine:
    // there is then nothing to lower.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
            CAP_SYS_PTRACE as libc::c_ulong,
            0,
            0,
        )
    };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget writes two `Data` (version 3) into `data`, which lives
    // for the call; the header is read and may be written.
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr as *mut Header, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let bit = !(1u32 << CAP_SYS_PTRACE);
    data[0].effective &= bit;
    data[0].permitted &= bit;
    data[0].inheritable &= bit;
    // SAFETY: capset only reads the header and the two `Data`.
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut Header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERRNO: u32 = ret_errno(libc::EPERM);
    const SECCOMP_RET_ALLOW: u32 = RET_ALLOW;

    #[test]
    fn self_guard_refuses_signals_and_tracing_aimed_at_abm_only() {
        let g = SelfGuard::new(1000, &[1000, 1001, 1002], 900, false);
        let x = AUDIT_ARCH_X86_64;
        let neg = |v: i64| v as u64;
        // kill
        for target in [1000, 1001, 1002, neg(-900), neg(-1), 0] {
            assert_eq!(
                g.run(x, 62, [target, 9, 0, 0, 0, 0]),
                ERRNO,
                "kill {target}"
            );
        }
        for target in [1003, 1, neg(-1000), 2000] {
            assert_eq!(g.run(x, 62, [target, 9, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        }
        // tkill always; tgkill, ptrace (arg 1), process_vm_*, pidfd_open.
        assert_eq!(g.run(x, 200, [5, 9, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 234, [1000, 1001, 9, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 234, [5, 5, 9, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 101, [16, 1001, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 101, [16, 5, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 311, [1000, 0, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 310, [1002, 0, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(x, 310, [5, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(x, 434, [1000, 0, 0, 0, 0, 0]), ERRNO);
        // pidfd_send_signal: unsupported for every descriptor, in both ABIs.
        for fd in [3, 1000, 7] {
            assert_eq!(g.run(x, 424, [fd, 9, 0, 0, 0, 0]), ret_errno(libc::ENOSYS));
            assert_eq!(
                g.run(AUDIT_ARCH_I386, 424, [fd, 9, 0, 0, 0, 0]),
                ret_errno(libc::ENOSYS)
            );
        }
        // Unrelated syscalls.
        for nr in [0, 1, 39, 87, 59] {
            assert_eq!(g.run(x, nr, [1000, 1000, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        }
        // ia32: kill is 37 there; 62 is ustat.
        let i = AUDIT_ARCH_I386;
        assert_eq!(g.run(i, 37, [1000, 9, 0, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(i, 62, [1000, 9, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(g.run(i, 26, [16, 1000, 0, 0, 0, 0]), ERRNO);
        // bpf(): lookups by id refused; loading (5), next-id queries (11,
        // 12, 31), object info (15) allowed.
        for cmd in BPF_BY_ID_CMDS {
            assert_eq!(g.run(x, 321, [cmd as u64, 0, 0, 0, 0, 0]), ERRNO);
            assert_eq!(g.run(i, 357, [cmd as u64, 0, 0, 0, 0, 0]), ERRNO);
        }
        for cmd in [0, 5, 11, 12, 15, 28, 31] {
            assert_eq!(g.run(x, 321, [cmd, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        }
        // Module loading, unloading and kexec, in both ABIs.
        for nr in [175, 176, 313, 246, 320] {
            assert_eq!(g.run(x, nr, [0; 6]), ERRNO, "{nr}");
        }
        for nr in [128, 129, 350, 283] {
            assert_eq!(g.run(i, nr, [0; 6]), ERRNO, "{nr}");
        }
        // With kernel administration left to the command, all of them pass
        // and the rest of the filter is unchanged.
        let open = SelfGuard::new(1000, &[1000, 1001, 1002], 900, true);
        assert_eq!(open.run(x, 321, [14, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(open.run(x, 313, [0; 6]), SECCOMP_RET_ALLOW);
        assert_eq!(open.run(x, 62, [1000, 9, 0, 0, 0, 0]), ERRNO);
    }

    #[test]
    fn self_guard_with_the_most_threads_stays_within_jump_range() {
        let tids: Vec<u32> = (1000..1040).collect();
        let g = SelfGuard::new(1000, &tids, 900, false);
        let x = AUDIT_ARCH_X86_64;
        // The first MAX_IDS ids are named; later threads are not.
        let last = 1000 + MAX_IDS as u64 - 1;
        for nr in [62, 234, 310] {
            assert_eq!(g.run(x, nr, [last, last, 9, 0, 0, 0]), ERRNO, "{nr}");
            assert_eq!(
                g.run(x, nr, [last + 1, last + 1, 9, 0, 0, 0]),
                SECCOMP_RET_ALLOW
            );
        }
        assert_eq!(g.run(AUDIT_ARCH_I386, 270, [last, last, 9, 0, 0, 0]), ERRNO);
        assert_eq!(g.run(AUDIT_ARCH_I386, 37, [0, 9, 0, 0, 0, 0]), ERRNO);
    }
}
