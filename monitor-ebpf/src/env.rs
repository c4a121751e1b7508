//! The target variables of an exec's environment (`scan_env`): the
//! entries `monitor_common::target_env` names, copied as `ENV` fields of
//! the record being assembled in the per-CPU scratch buffer
//! ([`crate::record`]).
use aya_ebpf::helpers::bpf_probe_read_user;
use monitor_common::{
    field_tag::ENV,
    header_flags,
    limits::{MAX_ENV_LEN, MAX_ENV_SCAN},
    target_env::PREFIXES,
    ReadFailure,
};

use crate::{
    maps::{or_count, SCRATCH},
    record::Record,
};

/// Appends the entries of the exec's environment array `envp` (a user
/// pointer) that name a target variable (`monitor_common::target_env`) as
/// `ENV` fields of the record in the scratch buffer. Looks at most at
/// `MAX_ENV_SCAN` entries; when the array is longer, the header says so
/// (`ENV_PARTIAL`). A full payload stops the copies and is flagged like any
/// other (`PAYLOAD_TRUNCATED`).
///
/// A global function, verified once, like [`walk_path`]; the copy is one
/// more ([`keep_env`]), so both outcomes of the test leave the loop in the
/// same verifier state and the loop is checked in one pass per entry. The
/// pre-filter is one 8-byte read per entry: every target name is longer
/// than 8 bytes, so the read never runs past the string's end.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn scan_env(envp: u64) -> u64 {
    if envp == 0 {
        return 0;
    }
    let envp = envp as *const u64;
    let mut i = 0u32;
    while i < MAX_ENV_SCAN {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let p = or_count(
            unsafe { bpf_probe_read_user(envp.wrapping_add(i as usize)) },
            ReadFailure::User,
            0,
        );
        if p == 0 {
            return 0;
        }
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let head = or_count(
            unsafe { bpf_probe_read_user(p as *const u64) },
            ReadFailure::User,
            0,
        );
        if PREFIXES.contains(&head) {
            keep_env(p);
        }
        i += 1;
    }
    // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
    let more = or_count(
        unsafe { bpf_probe_read_user(envp.wrapping_add(MAX_ENV_SCAN as usize)) },
        ReadFailure::User,
        0,
    );
    if more != 0 {
        if let Some(buf) = SCRATCH.get_ptr_mut(0) {
            Record { buf }.hdr().hflags |= header_flags::ENV_PARTIAL;
        }
    }
    0
}

/// Copies one environment entry (a user string) as an `ENV` field.
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn keep_env(entry: u64) -> u64 {
    let Some(buf) = SCRATCH.get_ptr_mut(0) else {
        return 0;
    };
    let mut rec = Record { buf };
    rec.user_str::<MAX_ENV_LEN>(ENV, entry as *const u8);
    0
}
