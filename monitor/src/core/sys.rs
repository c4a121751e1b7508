//! Small facts about the system abm runs on.
use std::path::{Path, PathBuf};

/// Host name and kernel release (`uname -n`, `uname -r`).
pub fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; all-zero bytes are a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let s = |f: &[libc::c_char]| {
        // SAFETY: uname(2) NUL-terminates every field within its array.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (s(&u.nodename), s(&u.release))
}

/// `p` made absolute against the current directory, without touching the
/// file system beyond it (the path need not exist; symlinks and `..` stay).
pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Opens a file that a command reads whole (a trace, a task file), refusing
/// anything but a regular file: `/dev/zero` or a FIFO would never end or
/// block forever. The open itself does not block on a FIFO (`O_NONBLOCK`,
/// dropped again before any read).
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let ft = file.metadata()?.file_type();
    if !ft.is_file() {
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}, not a regular file: give the path of a file"),
        ));
    }
    use std::os::fd::AsRawFd as _;
    // SAFETY: fcntl on an fd this function owns; F_SETFL with plain flags.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) };
    Ok(file)
}

/// The kernel's encoding of a device number (`MKDEV`: major << 20 |
/// minor), which is what `i_sb->s_dev` holds and the kernel programs
/// report, from a `stat` device number.
pub fn kernel_dev(st_dev: u64) -> u32 {
    let major = libc::major(st_dev);
    let minor = libc::minor(st_dev);
    (major << 20) | (minor & 0xfffff)
}

/// The `bpf(2)` map-element commands abm makes without a loader.
#[derive(Clone, Copy, Debug)]
pub enum MapElem {
    Lookup = 1,
    Update = 2,
    NextKey = 4,
}

/// One `bpf(2)` map-element command on `map_fd` (the `map_elem` part of
/// `union bpf_attr`, flags 0), made directly: one syscall and no
/// allocation, so a forked child may make it before it execs, and the
/// lifeline after a fork.
///
/// # Safety
///
/// `key` (0 for none: the first key of [`MapElem::NextKey`]) and `value`
/// (the value buffer, or the next key's for [`MapElem::NextKey`]) are the
/// addresses of buffers of the map's key and value sizes that live for the
/// call; the kernel writes `value` for lookups and next keys.
pub unsafe fn bpf_map_elem(
    cmd: MapElem,
    map_fd: std::os::fd::RawFd,
    key: u64,
    value: u64,
) -> std::io::Result<()> {
    #[repr(C)]
    struct Attr {
        map_fd: u32,
        _pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let attr = Attr {
        map_fd: map_fd as u32,
        _pad: 0,
        key,
        value,
        flags: 0,
    };
    // SAFETY: bpf(2) reads `attr` (its size is passed); its buffers are the
    // caller's to keep valid.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            &attr as *const Attr,
            std::mem::size_of::<Attr>(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_regular_refuses_devices_directories_and_fifos() {
        for p in ["/dev/zero", "/dev/null", "/"] {
            let e = open_regular(Path::new(p)).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{p}");
            assert!(e.to_string().contains("not a regular file"), "{p}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut open_regular(&f).unwrap(), &mut s).unwrap();
        assert_eq!(s, "x");
    }

    #[test]
    fn uname_names_this_kernel() {
        let (_, release) = uname();
        let want = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(release, want.trim());
    }

    #[test]
    fn absolute_joins_the_current_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("a/b")), cwd.join("a/b"));
        assert_eq!(absolute(Path::new("/x")), PathBuf::from("/x"));
    }
}
