//! Turning kernel records into action records: absolute paths from the
//! kernel's dentry walks plus the raw arguments, container-relative paths,
//! symbolic flags, errno and syscall names.
//!
//! The kernel walks the *directory* a path is relative to (cwd, dirfd or the
//! task root) at syscall entry, so the base is exact even for relative paths
//! and dirfds. The raw argument is then joined lexically (`.` and `..` are
//! folded). When the raw argument has directory components of its own, the
//! parent directory is canonicalised in userspace if it still exists, so a
//! delete through a symlinked directory reports the real location. The
//! pipeline keeps the directories it canonicalised in a [`DirCache`], so a
//! burst of calls in one directory costs one lookup, not three syscalls each.
//!
//! - [`paths`]: path algebra and the directory cache;
//! - [`fields`]: decoders of a record's field payloads;
//! - [`record`]: the record decoder, one kernel record to one action;
//! - [`names`]: syscall, errno and flag names.

mod fields;
mod names;
mod paths;
mod record;

pub use fields::*;
pub use names::*;
pub use paths::*;
pub use record::*;

#[cfg(test)]
mod tests;
