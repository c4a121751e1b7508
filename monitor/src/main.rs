fn main() {
    // One malloc arena for all of abm's threads. glibc gives each thread
    // that allocates its own arena; the drain thread's queued records are
    // freed by the pipeline's thread into the drain thread's arena, which
    // keeps the pages resident beside the main arena's. One arena lowered
    // the burst's peak RSS (docs/performance.md).
    // SAFETY: mallopt only sets an allocator parameter, here before any
    // other thread exists.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    std::process::exit(monitor::cli::main());
}
