//! Classic-BPF seccomp filters: one small assembler with labels (used by
//! the notification filter here and by [`crate::self_guard`]), an
//! interpreter for tests, and installing a filter without a listener.
//!
//! The notification filter of the seccomp backend (x86_64 only):
//!
//! ```text
//!   arch != AUDIT_ARCH_X86_64            -> KILL_PROCESS   (ia32 via int 0x80, ...)
//!   nr & __X32_SYSCALL_BIT               -> KILL_PROCESS   (x32 ABI)
//!   nr in notify_always(), chroot        -> USER_NOTIF
//!   nr == open   && args[1] & WRITE_FLAGS -> USER_NOTIF
//!   nr == openat && args[2] & WRITE_FLAGS -> USER_NOTIF
//!   nr == open_by_handle_at && args[2] & WRITE_FLAGS -> USER_NOTIF
//!   nr == ioctl  && args[1] in FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS,
//!                   FS_IOC_FSSETXATTR     -> USER_NOTIF
//!   otherwise                            -> ALLOW
//! ```
//!
//! Read-only opens never leave the kernel. `openat2` keeps its flags in a
//! struct in user memory, which classic BPF cannot read: it always notifies
//! and the supervisor lets read-only ones through at once.
use std::collections::HashMap;

/// x86_64 syscall numbers, shared with the kernel programs, and the
/// calls only the supervisor looks at.
pub mod nr {
    pub use monitor_common::syscall_nr::*;
    /// `chroot`: not an action, but the supervisor resolves the sensitive
    /// files of the root it enters before it runs.
    pub const CHROOT: u32 = 161;
}
use monitor_common::{Notify, SYSCALLS};

/// Syscalls that always go to the supervisor (the traced syscalls of
/// `monitor_common::SYSCALLS` marked `Notify::Always`).
pub fn notify_always() -> impl Iterator<Item = u32> {
    SYSCALLS
        .iter()
        .filter(|s| s.notify == Notify::Always)
        .map(|s| s.nr)
}

/// Opens that go to the supervisor only when their flags may write:
/// (syscall, index of the flags argument).
pub fn notify_by_flags() -> impl Iterator<Item = (u32, u32)> {
    SYSCALLS.iter().filter_map(|s| match s.notify {
        Notify::IfWrites => s.layout.flags.map(|r| (s.nr, u32::from(r))),
        Notify::Always | Notify::IfIoctl { .. } => None,
    })
}

/// ioctls that go to the supervisor only for the inode-flag requests
/// (`monitor_common::ioctl_cmd::TRACED`): (syscall, index of the request
/// argument).
pub fn notify_by_ioctl() -> impl Iterator<Item = (u32, u32)> {
    SYSCALLS.iter().filter_map(|s| match s.notify {
        Notify::IfIoctl { cmd_arg } => Some((s.nr, cmd_arg as u32)),
        Notify::Always | Notify::IfWrites => None,
    })
}

pub use monitor_common::open_flags::{O_CREAT, O_RDWR, O_TRUNC, O_WRONLY, WRITE_FLAGS};

pub const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
pub const AUDIT_ARCH_I386: u32 = 0x4000_0003;
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

pub const RET_KILL: u32 = 0x8000_0000;
pub const RET_NOTIFY: u32 = 0x7fc0_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
/// The return value that fails a call with `errno` without running it.
pub const fn ret_errno(errno: i32) -> u32 {
    RET_ERRNO | (errno as u32 & 0xffff)
}

const SECCOMP_SET_MODE_FILTER: libc::c_long = 1;

// Classic BPF opcodes (include/uapi/linux/bpf_common.h).
// BPF_LD | BPF_W | BPF_ABS = 0x00 | 0x00 | 0x20
const BPF_LD_W_ABS: u16 = 0x20;
// BPF_JMP | BPF_JEQ/BPF_JGE/BPF_JSET | BPF_K
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_JMP_JSET_K: u16 = 0x45;
// BPF_RET | BPF_K
const BPF_RET_K: u16 = 0x06;

// Offsets in struct seccomp_data.
pub const OFF_NR: u32 = 0;
pub const OFF_ARCH: u32 = 4;
/// Offset of the low 32 bits of syscall argument `i` (little endian).
pub const fn off_arg_lo(i: u32) -> u32 {
    16 + 8 * i
}

/// How a conditional jump compares the accumulator with its constant.
#[derive(Clone, Copy, Debug)]
pub enum Cmp {
    /// `acc == k`
    Eq,
    /// `acc >= k`
    Ge,
    /// `acc & k != 0`
    Set,
}

/// A jump target: the next instruction, or a label placed later.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum To {
    Next,
    Label(usize),
}

enum Ins {
    Ld(u32),
    Jump { cmp: Cmp, k: u32, jt: To, jf: To },
    Ret(u32),
    Mark(usize),
}

/// A classic-BPF program under construction. Jumps name labels; classic
/// BPF jumps forward only and at most 255 instructions, which
/// [`Program::assemble`] checks.
#[derive(Default)]
pub struct Program {
    ins: Vec<Ins>,
    labels: usize,
}

impl Program {
    pub fn new() -> Program {
        Program::default()
    }

    /// A fresh label, to [`Program::mark`] later in the program.
    pub fn label(&mut self) -> To {
        self.labels += 1;
        To::Label(self.labels - 1)
    }

    /// Places `label` at the next instruction.
    pub fn mark(&mut self, label: To) {
        if let To::Label(l) = label {
            self.ins.push(Ins::Mark(l));
        }
    }

    /// `acc = seccomp_data[off]` (32 bits).
    pub fn load(&mut self, off: u32) {
        self.ins.push(Ins::Ld(off));
    }

    pub fn jump(&mut self, cmp: Cmp, k: u32, jt: To, jf: To) {
        self.ins.push(Ins::Jump { cmp, k, jt, jf });
    }

    pub fn ret(&mut self, k: u32) {
        self.ins.push(Ins::Ret(k));
    }

    /// The instructions, with labels resolved to relative jumps. Panics on
    /// a backward or too long jump: the builders here keep their programs
    /// within range (their tests run every shape they build).
    pub fn assemble(self) -> Vec<libc::sock_filter> {
        let mut at = HashMap::new();
        let mut idx = 0usize;
        for ins in &self.ins {
            match ins {
                Ins::Mark(l) => {
                    at.insert(*l, idx);
                }
                _ => idx += 1,
            }
        }
        let mut out = Vec::with_capacity(idx);
        for ins in &self.ins {
            let here = out.len();
            let rel = |t: To| -> u8 {
                let To::Label(l) = t else { return 0 };
                let off = at[&l]
                    .checked_sub(here + 1)
                    .expect("seccomp filter jumps go forward");
                u8::try_from(off).expect("seccomp filter jump fits in 8 bits")
            };
            let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
            match ins {
                Ins::Mark(_) => {}
                Ins::Ld(off) => out.push(op(BPF_LD_W_ABS, 0, 0, *off)),
                Ins::Jump { cmp, k, jt, jf } => {
                    let code = match cmp {
                        Cmp::Eq => BPF_JMP_JEQ_K,
                        Cmp::Ge => BPF_JMP_JGE_K,
                        Cmp::Set => BPF_JMP_JSET_K,
                    };
                    out.push(op(code, rel(*jt), rel(*jf), *k))
                }
                Ins::Ret(k) => out.push(op(BPF_RET_K, 0, 0, *k)),
            }
        }
        out
    }
}

/// Installs `filter` in the calling process without a listener (between
/// fork and exec: a raw syscall, no allocation). Needs
/// `PR_SET_NO_NEW_PRIVS` or CAP_SYS_ADMIN.
pub fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: seccomp(2) only reads the program, which lives for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Builds the notification filter of the seccomp backend.
pub fn build_filter() -> Vec<libc::sock_filter> {
    let mut p = Program::new();
    let (allow, notify, kill) = (p.label(), p.label(), p.label());
    p.load(OFF_ARCH);
    p.jump(Cmp::Eq, AUDIT_ARCH_X86_64, To::Next, kill);
    p.load(OFF_NR);
    p.jump(Cmp::Ge, X32_SYSCALL_BIT, kill, To::Next);
    for n in notify_always().chain([nr::CHROOT]) {
        p.jump(Cmp::Eq, n, notify, To::Next);
    }
    let mut by_flags = Vec::new();
    for (n, arg) in notify_by_flags() {
        let l = p.label();
        p.jump(Cmp::Eq, n, l, To::Next);
        by_flags.push((arg, l));
    }
    let mut by_ioctl = Vec::new();
    for (n, arg) in notify_by_ioctl() {
        let l = p.label();
        p.jump(Cmp::Eq, n, l, To::Next);
        by_ioctl.push((arg, l));
    }
    // Classic BPF jumps forward only: the open checks come after the
    // fall-through ALLOW and have their own ALLOW after them.
    p.ret(RET_ALLOW);
    // ioctl: only the inode-flag requests (the request is an unsigned int:
    // its low word is the whole value).
    for (arg, l) in by_ioctl {
        p.mark(l);
        p.load(off_arg_lo(arg));
        for cmd in monitor_common::ioctl_cmd::TRACED {
            p.jump(Cmp::Eq, cmd, notify, To::Next);
        }
        p.ret(RET_ALLOW);
    }
    for (arg, l) in by_flags {
        p.mark(l);
        p.load(off_arg_lo(arg));
        p.jump(Cmp::Set, WRITE_FLAGS as u32, notify, allow);
    }
    p.mark(allow);
    p.ret(RET_ALLOW);
    p.mark(notify);
    p.ret(RET_NOTIFY);
    p.mark(kill);
    p.ret(RET_KILL);
    p.assemble()
}

/// Evaluates a filter for one syscall (for tests): the action it returns.
pub fn run_filter(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    let mut acc = 0u32;
    let mut pc = 0usize;
    loop {
        let ins = &prog[pc];
        pc += 1;
        match ins.code {
            BPF_LD_W_ABS => {
                let o = ins.k as usize;
                acc = u32::from_ne_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
            }
            BPF_RET_K => return ins.k,
            c => {
                let taken = match c {
                    BPF_JMP_JEQ_K => acc == ins.k,
                    BPF_JMP_JGE_K => acc >= ins.k,
                    BPF_JMP_JSET_K => acc & ins.k != 0,
                    _ => panic!("unknown opcode {c:#x}"),
                };
                pc += usize::from(if taken { ins.jt } else { ins.jf });
            }
        }
    }
}

/// Runs `install` (a seccomp filter's installation) in a forked child that
/// then exits: whether it works here, without filtering abm itself.
/// `install` must make raw syscalls only (it runs between fork and exit).
pub fn installs_in_child(
    install: impl Fn() -> std::io::Result<()>,
) -> Result<(), ChildInstallError> {
    // SAFETY: the child only makes raw syscalls (install) and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(ChildInstallError::Fork(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = match install() {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(255).clamp(1, 255),
        };
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if libc::WIFEXITED(status) {
        Err(ChildInstallError::Refused(
            std::io::Error::from_raw_os_error(libc::WEXITSTATUS(status)),
        ))
    } else {
        Err(ChildInstallError::Died(status))
    }
}

/// Why a filter did not install in the probe child of [`installs_in_child`].
#[derive(Debug, thiserror::Error)]
pub enum ChildInstallError {
    #[error("fork: {0}")]
    Fork(std::io::Error),
    /// The installation's error, as the child exited with it.
    #[error("{0}")]
    Refused(std::io::Error),
    #[error("the probe child died (status {0:#x})")]
    Died(i32),
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86_64: u32 = AUDIT_ARCH_X86_64;

    #[test]
    fn filter_notifies_destructive_calls_only() {
        let p = build_filter();
        assert!(p.len() < 96, "{}", p.len());
        assert_eq!(notify_always().count(), 35);
        for n in notify_always() {
            assert_eq!(run_filter(&p, X86_64, n, [0; 6]), RET_NOTIFY, "syscall {n}");
        }
        // chroot: the supervisor watches the root it enters.
        assert_eq!(run_filter(&p, X86_64, nr::CHROOT, [0; 6]), RET_NOTIFY);
        // read(2), write(2), close(2), getpid
        for n in [0u32, 1, 3, 39] {
            assert_eq!(run_filter(&p, X86_64, n, [0; 6]), RET_ALLOW);
        }
        // open: flags in args[1]; openat: args[2].
        assert_eq!(
            run_filter(&p, X86_64, nr::OPEN, [0, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            run_filter(&p, X86_64, nr::OPEN, [0, O_WRONLY, 0, 0, 0, 0]),
            RET_NOTIFY
        );
        assert_eq!(
            run_filter(&p, X86_64, nr::OPENAT, [0, 0, 0o2000000, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            run_filter(&p, X86_64, nr::OPENAT, [0, 0, O_RDWR, 0, 0, 0]),
            RET_NOTIFY
        );
        assert_eq!(
            run_filter(&p, X86_64, nr::OPENAT, [0, 0, O_TRUNC, 0, 0, 0]),
            RET_NOTIFY
        );
        // O_CREAT alone (read-only) is not destructive.
        assert_eq!(
            run_filter(&p, X86_64, nr::OPENAT, [0, 0, O_CREAT, 0, 0, 0]),
            RET_ALLOW
        );
        // open_by_handle_at: flags in args[2].
        assert_eq!(
            run_filter(&p, X86_64, nr::OPEN_BY_HANDLE_AT, [3, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            run_filter(&p, X86_64, nr::OPEN_BY_HANDLE_AT, [3, 0, O_TRUNC, 0, 0, 0]),
            RET_NOTIFY
        );
        // ioctl: only the inode-flag requests (chattr), never the others.
        use monitor_common::ioctl_cmd::*;
        for cmd in [FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR] {
            assert_eq!(
                run_filter(&p, X86_64, nr::IOCTL, [3, u64::from(cmd), 0, 0, 0, 0]),
                RET_NOTIFY
            );
        }
        // TCGETS, FIONREAD, FS_IOC_GETFLAGS
        for cmd in [0x5401u64, 0x541b, 0x8008_6601] {
            assert_eq!(
                run_filter(&p, X86_64, nr::IOCTL, [3, cmd, 0, 0, 0, 0]),
                RET_ALLOW
            );
        }
        // Upper half of the flags register is ignored (flags are an int).
        assert_eq!(
            run_filter(&p, X86_64, nr::OPENAT, [0, 0, 1 << 40, 0, 0, 0]),
            RET_ALLOW
        );
    }

    #[test]
    fn filter_kills_other_abis() {
        let p = build_filter();
        const AUDIT_ARCH_I386: u32 = 0x4000_0003;
        assert_eq!(run_filter(&p, AUDIT_ARCH_I386, 10, [0; 6]), RET_KILL);
        assert_eq!(
            run_filter(&p, X86_64, X32_SYSCALL_BIT | 87, [0; 6]),
            RET_KILL
        );
    }
}
