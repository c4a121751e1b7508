//! BPF LSM enforcement backend.
