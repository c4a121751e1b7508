//! Clocks: the kernel stamps records with CLOCK_MONOTONIC (ktime); the
//! trace shows wall time.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// RFC 3339 with nanoseconds, UTC.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}

/// Offset between CLOCK_REALTIME and CLOCK_MONOTONIC (kernel ktime).
pub struct Clock {
    offset_ns: i128,
}

impl Clock {
    pub fn new() -> Clock {
        let mono = monotonic_ns() as i128;
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as i128;
        Clock {
            offset_ns: real - mono,
        }
    }

    /// The wall time of a kernel timestamp.
    pub fn wall(&self, ktime_ns: u64) -> String {
        let ns = (ktime_ns as i128 + self.offset_ns).max(0) as u64;
        rfc3339(UNIX_EPOCH + Duration::from_nanos(ns))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// `clock`'s time in nanoseconds, `None` when the kernel refuses it.
fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time the calling thread has used, in nanoseconds
/// (`CLOCK_THREAD_CPUTIME_ID`: a system call, not a vDSO read, so read it
/// per batch of work, not per item).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// The wall clock as file systems stamp files (`CLOCK_REALTIME_COARSE`,
/// the clock of `current_time()`: up to a tick behind the precise one). A
/// file made after this is read has a birth time at or after it, which
/// [`SystemTime::now`] does not promise.
pub fn realtime_coarse() -> SystemTime {
    clock_ns(libc::CLOCK_REALTIME_COARSE)
        .map_or_else(SystemTime::now, |ns| UNIX_EPOCH + Duration::from_nanos(ns))
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of the kernel's records.
pub fn monotonic_ns() -> u64 {
    // CLOCK_MONOTONIC always exists.
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_made_after_the_coarse_clock_is_read_are_born_at_or_after_it() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..200 {
            let t = realtime_coarse();
            let f = dir.path().join(i.to_string());
            std::fs::write(&f, "x").unwrap();
            let Ok(born) = std::fs::metadata(&f).and_then(|m| m.created()) else {
                panic!("the test's file system keeps no birth time");
            };
            assert!(born >= t, "file {i} born {born:?} before {t:?}");
        }
    }

    #[test]
    fn wall_time_of_now_is_close_to_now() {
        let c = Clock::new();
        let w = c.wall(monotonic_ns());
        let t = humantime::parse_rfc3339(&w).unwrap();
        let d = SystemTime::now()
            .duration_since(t)
            .unwrap_or_else(|e| e.duration());
        assert!(d < Duration::from_secs(5), "{w}");
    }
}

/// Longest duration a seconds option accepts (one year): beyond it a
/// deadline computed from now could overflow the clock.
pub const MAX_SECS: f64 = 31_536_000.0;

/// Parses a seconds option (`--linger`, `--confirm-timeout`): a finite
/// number from 0 to [`MAX_SECS`], so no deadline computed from it can
/// overflow after the command has run.
pub fn parse_secs(s: &str) -> Result<f64, SecsError> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| SecsError::NotANumber(s.to_owned()))?;
    if !v.is_finite() || !(0.0..=MAX_SECS).contains(&v) {
        return Err(SecsError::OutOfRange(s.to_owned()));
    }
    Ok(v)
}

/// Why a seconds option was refused; the text names the value given.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum SecsError {
    #[error("`{0}` is not a number of seconds")]
    NotANumber(String),
    #[error("`{0}`: give a number of seconds from 0 to {MAX_SECS} (one year)")]
    OutOfRange(String),
}

#[cfg(test)]
mod secs_tests {
    use super::*;

    #[test]
    fn seconds_options_refuse_infinite_huge_and_negative_values() {
        assert_eq!(parse_secs("2.5"), Ok(2.5));
        assert_eq!(parse_secs("0"), Ok(0.0));
        for bad in ["inf", "-inf", "NaN", "1e20", "-1", "x", ""] {
            let e = parse_secs(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
        // A deadline from the largest accepted value does not overflow.
        let _ = std::time::Instant::now() + Duration::from_secs_f64(MAX_SECS);
    }
}
