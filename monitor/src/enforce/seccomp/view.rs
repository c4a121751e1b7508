//! The caller's view of the file system. A process in another mount
//! namespace or under another root (`unshare -m` + an overlay + `chroot`, a
//! container) names other files with the same paths: its `/etc` is not
//! abm's. Whatever the supervisor reads to judge such a call (does the
//! program exist, what would `rm -rf /etc` destroy, where does a symlinked
//! directory lead, which inode is it) it reads from inside the caller's
//! view: the supervisor thread, which has its own file-system attributes
//! (`unshare(CLONE_FS)`), makes `/proc/TID/root` its root and
//! `/proc/TID/cwd` its working directory for the time of the judgement, so
//! paths, absolute symlinks and `..` resolve as they do for the caller, on
//! the caller's mounts. Everything else (reading /proc, answering, the
//! quarantine) happens in abm's own view.
use std::os::fd::OwnedFd;

use crate::kernel::sensitive::{enter_dirs, open_path, ViewKey};

/// Switches the supervisor thread between abm's view and a caller's.
pub(crate) struct Switcher {
    own: Option<ViewKey>,
    /// abm's root and working directory, to come back to.
    home: Option<(OwnedFd, OwnedFd)>,
    /// Why callers' views cannot be entered (then their calls fail closed).
    pub unusable: Option<String>,
}

/// The calling thread is in a caller's view until this is dropped.
pub(crate) struct Entered<'a> {
    s: &'a Switcher,
}

impl Switcher {
    /// Must run on the thread that will switch: it unshares that thread's
    /// file-system attributes, so no other thread of abm changes root.
    pub fn for_this_thread() -> Switcher {
        let own = ViewKey::own().ok();
        // SAFETY: unshare(CLONE_FS) takes no pointers and affects the
        // calling thread only.
        if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
            let e = std::io::Error::last_os_error();
            return Switcher {
                own,
                home: None,
                unusable: Some(format!("unshare(CLONE_FS): {e}")),
            };
        }
        match (open_path("/"), open_path(".")) {
            (Ok(r), Ok(c)) => Switcher {
                own,
                home: Some((r, c)),
                unusable: own.is_none().then(|| "abm's own view is unknown".into()),
            },
            (Err(e), _) | (_, Err(e)) => Switcher {
                own,
                home: None,
                unusable: Some(format!("opening abm's root and working directory: {e}")),
            },
        }
    }

    /// The caller's view when it is not abm's (another mount namespace or
    /// another root directory); `Ok(None)` for abm's own view. Read for
    /// every call: a `chroot` or `setns` changes it at any time.
    pub fn foreign(&self, tid: u32) -> std::io::Result<Option<ViewKey>> {
        let k = ViewKey::of(tid)?;
        Ok((Some(k) != self.own).then_some(k))
    }

    /// Enters the view of `tid` (its root and working directory).
    pub fn enter(&self, tid: u32) -> Result<Entered<'_>, ViewError> {
        if let Some(why) = &self.unusable {
            return Err(ViewError::Unusable(why.clone()));
        }
        let open = |what: &'static str| {
            open_path(&format!("/proc/{tid}/{what}")).map_err(|err| ViewError::Open {
                tid,
                what,
                err,
            })
        };
        let (root, cwd) = (open("root")?, open("cwd")?);
        let entered = Entered { s: self };
        enter_dirs(&root, &cwd).map_err(ViewError::Enter)?;
        Ok(entered)
    }
}

/// Why a call could not be judged in its caller's view.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// abm could not keep its own root and working directory to come back
    /// to: no view is entered this run.
    #[error("{0}")]
    Unusable(String),
    #[error("opening /proc/{tid}/{what}: {err}")]
    Open {
        tid: u32,
        what: &'static str,
        err: std::io::Error,
    },
    #[error("entering the caller's root: {0}")]
    Enter(std::io::Error),
    /// A path of the call is not under the caller's root directory.
    #[error("{path} is outside the caller's root {root}")]
    OutsideRoot { path: String, root: String },
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let Some((root, cwd)) = &self.s.home else {
            return;
        };
        if let Err(e) = enter_dirs(root, cwd) {
            // The supervisor would go on judging in a caller's view: no
            // answer is better than a wrong one (the kernel fails the
            // tree's filtered calls once abm is gone).
            tracing::error!("seccomp supervisor: returning to abm's own root: {e}");
            std::process::abort();
        }
    }
}

/// The path a caller's `/proc` or `/dev/fd` link names cannot be resolved
/// from inside its view (`/proc/self` there would be abm's thread).
pub(crate) fn through_proc(raw: &str) -> bool {
    raw.starts_with("/proc/") || raw.starts_with("/dev/fd/") || raw.starts_with("/dev/std")
}
