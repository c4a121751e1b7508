//! One file per hook family.
pub mod compat;
pub mod cgroups;
pub mod exec;
pub mod files;
pub mod lifecycle;
pub mod lsm;
pub mod mountns;
pub mod sensitive;
pub mod syscalls;
