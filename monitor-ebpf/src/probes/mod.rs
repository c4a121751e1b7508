//! One file per hook family.
pub mod cgroups;
pub mod compat;
pub mod exec;
pub mod files;
pub mod lifecycle;
pub mod lsm;
pub mod mountns;
pub mod sensitive;
pub mod syscalls;
