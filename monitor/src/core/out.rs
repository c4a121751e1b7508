//! A command's output on stdout. `println!` panics when the reader has
//! gone away (`abm pending | head`); the commands that keep SIGPIPE
//! ignored (the clients of a run's or the daemon's socket, and the ones
//! that change state) print through [`outln!`](crate::outln) instead: a
//! closed reader ends the output quietly, any other write error is an
//! error of the command.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` and a newline to `w`; a reader that went away is not an
/// error (the rest of the output is dropped).
pub fn line_to(w: &mut impl Write, args: fmt::Arguments<'_>) -> io::Result<()> {
    reader_gone_is_ok(w.write_fmt(args).and_then(|()| w.write_all(b"\n")))
}

/// A write's result, with a reader that went away (EPIPE) not an error.
fn reader_gone_is_ok(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// [`line_to`] on stdout.
pub fn line(args: fmt::Arguments<'_>) -> io::Result<()> {
    line_to(&mut io::stdout().lock(), args)
}

/// `args` on stdout without a newline, as [`line`] does.
pub fn text(args: fmt::Arguments<'_>) -> io::Result<()> {
    reader_gone_is_ok(io::stdout().lock().write_fmt(args))
}

/// `println!` for commands: `outln!("{x}")?` writes a line to stdout and
/// returns the write's error, a closed reader excepted.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::core::out::line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::line_to;
    use std::io::Write;
    use std::os::fd::FromRawFd;

    #[test]
    fn a_closed_reader_ends_the_output_quietly() {
        let mut fds = [0; 2];
        // SAFETY: pipe() fills two valid descriptors on success.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the read end is ours and closed once.
        unsafe { libc::close(fds[0]) };
        // SAFETY: the write end is ours, owned by the File from here on.
        let mut w = unsafe { std::fs::File::from_raw_fd(fds[1]) };
        // The test harness ignores SIGPIPE, as abm's own commands do: the
        // write fails with EPIPE.
        let raw = w.write_all(b"x\n").unwrap_err();
        assert_eq!(raw.kind(), std::io::ErrorKind::BrokenPipe);
        line_to(&mut w, format_args!("pending {}", 1)).expect("quiet on EPIPE");
        let mut full: Vec<u8> = Vec::new();
        line_to(&mut full, format_args!("a {}", 2)).unwrap();
        assert_eq!(full, b"a 2\n");
    }
}
