//! Kernel programs of the action boundary monitor.
//!
//! Tracepoint backend: two raw tracepoints (`sys_enter`, `sys_exit`) see
//! every syscall; a cheap switch on the syscall number keeps only the
//! destructive ones, then a scope lookup keeps only the watched process trees
//! and cgroups. Lifecycle tracepoints (`sched_process_fork`,
//! `sched_process_exit`) keep the scope table in step with the process tree.
#![no_std]
#![no_main]

mod env;
mod lookup;
mod maps;
mod probes;
mod proc_link;
mod record;
mod shim;
mod walk;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // A reachable panic becomes an infinite loop, which the verifier rejects:
    // panics surface at load time instead of as undefined behaviour.
    loop {}
}

// SAFETY: a symbol name used once in the object.
#[unsafe(link_section = "license")]
// SAFETY: a symbol name used once in the object.
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
