//! The seccomp user-notification backend: the classic-BPF filter, its
//! installation in the launched command between fork and exec, passing the
//! listener fd to the supervisor, and the notification ioctls.
//!
//! The filter (x86_64 only):
//!
//! ```text
//!   arch != AUDIT_ARCH_X86_64            -> KILL_PROCESS   (ia32 via int 0x80, ...)
//!   nr & __X32_SYSCALL_BIT               -> KILL_PROCESS   (x32 ABI)
//!   nr in notify_always()                -> USER_NOTIF
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
use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
};

/// x86_64 syscall numbers, shared with the kernel programs.
pub use monitor_common::syscall_nr as nr;
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
        Notify::IfWrites { flags_arg } => Some((s.nr, flags_arg as u32)),
        Notify::Always | Notify::IfIoctl { .. } => None,
    })
}

/// ioctls that go to the supervisor only for the inode-flag requests
/// (`monitor_common::ioctl_cmd::TRACED`): (syscall, index of the request
/// argument).
pub fn notify_by_ioctl() -> impl Iterator<Item = (u32, u32)> {
    SYSCALLS.iter().filter_map(|s| match s.notify {
        Notify::IfIoctl { cmd_arg } => Some((s.nr, cmd_arg as u32)),
        Notify::Always | Notify::IfWrites { .. } => None,
    })
}

pub const O_WRONLY: u64 = 0o1;
pub const O_RDWR: u64 = 0o2;
pub const O_CREAT: u64 = 0o100;
pub const O_TRUNC: u64 = 0o1000;
/// Open flags that make an open destructive enough to judge.
pub const WRITE_FLAGS: u64 = O_WRONLY | O_RDWR | O_TRUNC;

pub const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_SET_MODE_FILTER: libc::c_long = 1;
const SECCOMP_FILTER_FLAG_NEW_LISTENER: libc::c_long = 1 << 3;
/// Linux 5.19: once the supervisor received a notification, the caller
/// waits killable (a non-fatal signal does not abort and restart the call).
const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: libc::c_long = 1 << 5;
/// Linux 6.6: wake the supervisor synchronously (lower round-trip latency).
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;

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
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg_lo(i: u32) -> u32 {
    16 + 8 * i
}

/// Jump targets of the filter assembler.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Label {
    Next,
    Allow,
    Notify,
    Kill,
    Open(usize),
    Ioctl(usize),
}

enum Ins {
    Ld(u32),
    Jump {
        code: u16,
        k: u32,
        jt: Label,
        jf: Label,
    },
    Ret(u32),
    Mark(Label),
}

/// Builds the filter program.
pub fn build_filter() -> Vec<libc::sock_filter> {
    use Ins::*;
    use Label::*;
    let mut p = vec![
        Ld(OFF_ARCH),
        Jump {
            code: BPF_JMP_JEQ_K,
            k: AUDIT_ARCH_X86_64,
            jt: Next,
            jf: Kill,
        },
        Ld(OFF_NR),
        Jump {
            code: BPF_JMP_JGE_K,
            k: X32_SYSCALL_BIT,
            jt: Kill,
            jf: Next,
        },
    ];
    for n in notify_always() {
        p.push(Jump {
            code: BPF_JMP_JEQ_K,
            k: n,
            jt: Notify,
            jf: Next,
        });
    }
    let by_flags: Vec<(u32, u32)> = notify_by_flags().collect();
    for (i, (n, _)) in by_flags.iter().enumerate() {
        p.push(Jump {
            code: BPF_JMP_JEQ_K,
            k: *n,
            jt: Open(i),
            jf: Next,
        });
    }
    let by_ioctl: Vec<(u32, u32)> = notify_by_ioctl().collect();
    for (i, (n, _)) in by_ioctl.iter().enumerate() {
        p.push(Jump {
            code: BPF_JMP_JEQ_K,
            k: *n,
            jt: Ioctl(i),
            jf: Next,
        });
    }
    // Classic BPF jumps forward only: the open checks come after the
    // fall-through ALLOW and have their own ALLOW after them.
    p.push(Ret(SECCOMP_RET_ALLOW));
    // ioctl: only the inode-flag requests (the request is an unsigned int:
    // its low word is the whole value).
    for (i, (_, arg)) in by_ioctl.iter().enumerate() {
        p.push(Mark(Ioctl(i)));
        p.push(Ld(off_arg_lo(*arg)));
        for cmd in monitor_common::ioctl_cmd::TRACED {
            p.push(Jump {
                code: BPF_JMP_JEQ_K,
                k: cmd,
                jt: Notify,
                jf: Next,
            });
        }
        p.push(Ret(SECCOMP_RET_ALLOW));
    }
    for (i, (_, arg)) in by_flags.iter().enumerate() {
        p.push(Mark(Open(i)));
        p.push(Ld(off_arg_lo(*arg)));
        p.push(Jump {
            code: BPF_JMP_JSET_K,
            k: WRITE_FLAGS as u32,
            jt: Notify,
            jf: Allow,
        });
    }
    p.push(Mark(Allow));
    p.push(Ret(SECCOMP_RET_ALLOW));
    p.push(Mark(Notify));
    p.push(Ret(SECCOMP_RET_USER_NOTIF));
    p.push(Mark(Kill));
    p.push(Ret(SECCOMP_RET_KILL_PROCESS));

    // Resolve labels to instruction indexes.
    let mut at = std::collections::HashMap::new();
    let mut idx = 0usize;
    for ins in &p {
        match ins {
            Mark(l) => {
                at.insert(*l, idx);
            }
            _ => idx += 1,
        }
    }
    let mut out = Vec::with_capacity(idx);
    for ins in &p {
        let here = out.len();
        let rel = |l: Label| -> u8 {
            if l == Next {
                return 0;
            }
            let target = at[&l];
            let off = target
                .checked_sub(here + 1)
                .expect("seccomp filter jumps go forward");
            u8::try_from(off).expect("seccomp filter jump fits in 8 bits")
        };
        match ins {
            Mark(_) => {}
            Ld(off) => out.push(libc::sock_filter {
                code: BPF_LD_W_ABS,
                jt: 0,
                jf: 0,
                k: *off,
            }),
            Jump { code, k, jt, jf } => out.push(libc::sock_filter {
                code: *code,
                jt: rel(*jt),
                jf: rel(*jf),
                k: *k,
            }),
            Ret(k) => out.push(libc::sock_filter {
                code: BPF_RET_K,
                jt: 0,
                jf: 0,
                k: *k,
            }),
        }
    }
    out
}

/// Evaluates the filter for one syscall (for tests): the action it returns.
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
                acc = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap());
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

pub const RET_ALLOW: u32 = SECCOMP_RET_ALLOW;
pub const RET_NOTIFY: u32 = SECCOMP_RET_USER_NOTIF;
pub const RET_KILL: u32 = SECCOMP_RET_KILL_PROCESS;

/// What the launched command's child does between fork and exec. Built in
/// the parent (all allocation happens here); [`ChildSetup::install`] only
/// makes raw syscalls.
pub struct ChildSetup {
    filter: Vec<libc::sock_filter>,
    /// The child's end of the socketpair the listener fd is sent over
    /// (-1: do not send; used by the capability probe).
    sock: RawFd,
}

impl ChildSetup {
    pub fn new(sock: RawFd) -> ChildSetup {
        ChildSetup {
            filter: build_filter(),
            sock,
        }
    }

    /// Installs the filter in the calling process and sends the listener fd
    /// to the supervisor. Async-signal-safe: raw syscalls, stack buffers,
    /// no allocation, no locks. Order matters: `PR_SET_NO_NEW_PRIVS` first
    /// (required to install a filter without CAP_SYS_ADMIN, and it keeps
    /// setuid programs from escaping with new privileges).
    pub fn install(&self) -> io::Result<()> {
        // SAFETY: plain syscalls on valid pointers to memory owned by self
        // or the stack.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let prog = libc::sock_fprog {
                len: self.filter.len() as u16,
                filter: self.filter.as_ptr() as *mut libc::sock_filter,
            };
            let mut fd = libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
                &prog as *const libc::sock_fprog,
            );
            if fd < 0 && *libc::__errno_location() == libc::EINVAL {
                // Kernel older than 5.19: no killable wait.
                fd = libc::syscall(
                    libc::SYS_seccomp,
                    SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &prog as *const libc::sock_fprog,
                );
            }
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = fd as RawFd;
            let r = if self.sock >= 0 {
                send_fd(self.sock, fd)
            } else {
                Ok(())
            };
            // The listener must not survive into the command: a process that
            // holds it could answer its own notifications.
            libc::close(fd);
            if self.sock >= 0 {
                libc::close(self.sock);
            }
            r
        }
    }
}

#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

/// Sends one fd over a unix socket (SCM_RIGHTS). Async-signal-safe.
fn send_fd(sock: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [b'F'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = CmsgBuf([0; 64]);
    // SAFETY: the cmsg buffer is aligned and large enough for one fd
    // (CMSG_SPACE(4) = 24 on 64-bit).
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.0.as_mut_ptr().cast();
        msg.msg_controllen = space;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
        loop {
            let r = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if r >= 0 {
                return Ok(());
            }
            if *libc::__errno_location() != libc::EINTR {
                return Err(io::Error::last_os_error());
            }
        }
    }
}

/// Receives the listener fd sent by [`ChildSetup::install`]. Blocks (in
/// slices of `slice_ms`, checking `stop`) until it arrives; `Ok(None)` when
/// the child closed its end without sending (spawn failed) or on stop.
pub fn recv_fd(
    sock: &OwnedFd,
    stop: &dyn Fn() -> bool,
    slice_ms: i32,
) -> io::Result<Option<OwnedFd>> {
    loop {
        if stop() {
            return Ok(None);
        }
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, slice_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            continue;
        }
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut cbuf = CmsgBuf([0; 64]);
        // SAFETY: buffers outlive the call; the kernel fills at most
        // msg_controllen bytes.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.0.as_mut_ptr().cast();
            msg.msg_controllen = cbuf.0.len();
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Ok(None);
            }
            let c = libc::CMSG_FIRSTHDR(&msg);
            if c.is_null()
                || (*c).cmsg_level != libc::SOL_SOCKET
                || (*c).cmsg_type != libc::SCM_RIGHTS
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "no fd in the message from the child",
                ));
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const RawFd);
            return Ok(Some(OwnedFd::from_raw_fd(fd)));
        }
    }
}

/// A socketpair (parent end, child end), both close-on-exec.
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The supervisor's side of the listener fd.
pub struct Listener {
    fd: OwnedFd,
}

/// Outcome of [`Listener::recv`].
pub enum Recv {
    Got(libc::seccomp_notif),
    /// Nothing to read (the target died between poll and recv, or EINTR).
    Nothing,
}

impl Listener {
    pub fn new(fd: OwnedFd) -> Listener {
        let l = Listener { fd };
        // Best effort: synchronous wake-ups cut the round trip on 6.6+.
        let flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
        // SAFETY: ioctl with a u64 argument by value.
        unsafe {
            libc::ioctl(
                l.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS as _,
                flags,
            )
        };
        l
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn recv(&self) -> io::Result<Recv> {
        // SAFETY: the kernel requires a zeroed struct.
        let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: n is a valid seccomp_notif.
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV as _,
                &mut n,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR) | Some(libc::ENOENT) | Some(libc::EAGAIN) => Ok(Recv::Nothing),
                _ => Err(e),
            };
        }
        Ok(Recv::Got(n))
    }

    /// Whether the notification is still waiting for an answer (the caller
    /// has not died or been interrupted). Checked after reading the
    /// caller's memory and before acting on what was read.
    pub fn id_valid(&self, id: u64) -> bool {
        // SAFETY: pointer to a u64.
        unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
                &id,
            ) == 0
        }
    }

    fn send(&self, id: u64, error: i32, flags: u32) -> io::Result<()> {
        let resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error,
            flags,
        };
        // SAFETY: pointer to a valid response.
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND as _,
                &resp,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Lets the call run as the caller made it.
    pub fn allow(&self, id: u64) -> io::Result<()> {
        self.send(id, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32)
    }

    /// Fails the call with `errno` without running it.
    pub fn refuse(&self, id: u64, errno: i32) -> io::Result<()> {
        self.send(id, -errno, 0)
    }
}

/// Whether seccomp user notification works here: a forked child installs
/// the real filter (and a listener) and exits.
pub fn probe() -> Result<String, String> {
    if let Ok(v) = std::env::var(super::DISABLE_ENV) {
        if !v.is_empty() && v != "0" {
            return Err(format!("disabled by {}={v}", super::DISABLE_ENV));
        }
    }
    if std::env::consts::ARCH != "x86_64" {
        return Err(format!(
            "the filter is written for x86_64, this is {}",
            std::env::consts::ARCH
        ));
    }
    let avail =
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    if !avail.split_whitespace().any(|a| a == "user_notif") {
        return Err(if avail.is_empty() {
            "the kernel has no seccomp (CONFIG_SECCOMP_FILTER)".into()
        } else {
            format!(
                "the kernel lacks the user_notif action (actions: {})",
                avail.trim()
            )
        });
    }
    let setup = ChildSetup::new(-1);
    // SAFETY: the child only makes raw syscalls (install) and _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = match setup.install() {
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
        Ok(
            "a filter with a listener installs in a child (SECCOMP_FILTER_FLAG_NEW_LISTENER)"
                .into(),
        )
    } else if libc::WIFEXITED(status) {
        let e = io::Error::from_raw_os_error(libc::WEXITSTATUS(status));
        Err(format!("installing the filter in a child failed: {e}"))
    } else {
        Err(format!("the probe child died (status {status:#x})"))
    }
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
