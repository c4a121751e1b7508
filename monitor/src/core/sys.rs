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

#[cfg(test)]
mod tests {
    use super::*;

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
