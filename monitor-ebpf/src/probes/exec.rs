//! execve / execveat: the program, its arguments and the caller's cwd,
//! captured at syscall entry (before the old image is gone).
use aya_ebpf::helpers::bpf_probe_read_user;
use monitor_common::{
    field_tag::*,
    header_flags,
    limits::{MAX_ARGS, MAX_ARG_LEN, MAX_RAW_PATH},
    EventKind,
};

use monitor_common::ReadFailure;

use super::syscalls::{nr, Args};
use crate::maps::or_count;
use crate::{env::scan_env, record::Record, walk::AT_FDCWD};

use monitor_common::at_flags::AT_EMPTY_PATH;

#[inline(always)]
pub fn enter(id: u32, a: &Args) -> Option<Record> {
    let mut rec = Record::start(EventKind::Exec as u32, id)?;
    let (dirfd, file, argv, envp) = if id == nr::EXECVEAT {
        let flags = a.get(4);
        rec.hdr().flags = flags;
        if flags & AT_EMPTY_PATH != 0 {
            rec.hdr().hflags |= header_flags::EXEC_FD;
        }
        (a.int(0), a.ptr(1), a.ptr(2) as *const u64, a.get(3))
    } else {
        (AT_FDCWD, a.ptr(0), a.ptr(1) as *const u64, a.get(2))
    };
    rec.hdr().fd = dirfd;
    let (first, _) = rec.user_str::<MAX_RAW_PATH>(RAW_PATH, file);
    rec.walk_base(BASE, first, dirfd);
    let mut i = 0u32;
    while i < MAX_ARGS {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let p = or_count(
            unsafe { bpf_probe_read_user(argv.add(i as usize)) },
            ReadFailure::User,
            0,
        );
        if p == 0 {
            break;
        }
        rec.user_str::<MAX_ARG_LEN>(ARG, p as *const u8);
        i += 1;
    }
    if i == MAX_ARGS {
        // SAFETY: bpf_probe_read_* checks the address itself; a bad one returns an error, never faults.
        let more = or_count(
            unsafe { bpf_probe_read_user(argv.add(MAX_ARGS as usize)) },
            ReadFailure::User,
            0,
        );
        if more != 0 {
            rec.hdr().hflags |= header_flags::ARGV_TRUNCATED;
        }
    }
    rec.walk_cwd(CWD);
    rec.walk_root(ROOT);
    scan_env(envp);
    Some(rec)
}
