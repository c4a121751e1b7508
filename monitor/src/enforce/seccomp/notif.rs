//! The seccomp user-notification channel: installing the notification
//! filter ([`super::filter::build_filter`]) in the launched command between
//! fork and exec, passing the listener fd to the supervisor, the
//! notification ioctls, and the availability probe.
use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
};

use super::filter::build_filter;

const SECCOMP_SET_MODE_FILTER: libc::c_long = 1;
const SECCOMP_FILTER_FLAG_NEW_LISTENER: libc::c_long = 1 << 3;
/// Linux 5.19: once the supervisor received a notification, the caller
/// waits killable (a non-fatal signal does not abort and restart the call).
const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: libc::c_long = 1 << 5;
/// Linux 6.6: wake the supervisor synchronously (lower round-trip latency).
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;

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
pub fn probe() -> Result<String, Unavailable> {
    if let Ok(v) = std::env::var(crate::enforce::DISABLE_ENV) {
        if !v.is_empty() && v != "0" {
            return Err(Unavailable::Disabled { value: v });
        }
    }
    if std::env::consts::ARCH != "x86_64" {
        return Err(Unavailable::Arch(std::env::consts::ARCH));
    }
    let avail =
        std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
    if !avail.split_whitespace().any(|a| a == "user_notif") {
        return Err(if avail.is_empty() {
            Unavailable::NoSeccomp
        } else {
            Unavailable::NoUserNotif(avail.trim().to_owned())
        });
    }
    let setup = ChildSetup::new(-1);
    super::filter::installs_in_child(|| setup.install())
        .map(|()| {
            "a filter with a listener installs in a child (SECCOMP_FILTER_FLAG_NEW_LISTENER)".into()
        })
        .map_err(Unavailable::Install)
}

/// Why seccomp user notification does not work here ([`probe`]).
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error("disabled by {var}={value}", var = crate::enforce::DISABLE_ENV)]
    Disabled { value: String },
    #[error("the filter is written for x86_64, this is {0}")]
    Arch(&'static str),
    #[error("the kernel has no seccomp (CONFIG_SECCOMP_FILTER)")]
    NoSeccomp,
    #[error("the kernel lacks the user_notif action (actions: {0})")]
    NoUserNotif(String),
    #[error("installing the filter in a child failed: {0}")]
    Install(super::filter::ChildInstallError),
}
