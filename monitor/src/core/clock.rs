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

/// CLOCK_MONOTONIC in nanoseconds: the clock of the kernel's records.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

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
