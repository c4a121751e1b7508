//! One file per hook family.
pub mod compat;
pub mod exec;
pub mod files;
pub mod lifecycle;
pub mod lsm;
pub mod syscalls;
