//! Decoders of a record's field payloads: path issues, argument bases,
//! identities, the lookup of the dentry cache, confirmations and results.
use std::path::Path;

use monitor_common::{field_flags, field_tag, EventKind};

use super::*;
use crate::{
    kernel::events::{Field, KernelEvent},
    record::{text_fields, Action, IdentityGap, PathIssue},
};

pub(super) fn issues_of(f: &Field, out: &mut Vec<PathIssue>) {
    for (flag, issue) in [
        (field_flags::TRUNCATED, PathIssue::Truncated),
        (field_flags::DEPTH_LIMIT, PathIssue::DepthLimit),
        (field_flags::DISCONNECTED, PathIssue::Disconnected),
        (field_flags::READ_FAILED, PathIssue::ReadFailed),
    ] {
        if f.flags & flag != 0 {
            PathIssue::add(out, issue);
        }
    }
}

/// When the kernel resolved a link into the caller's own `/proc` entry at
/// the start of path argument `raw_tag` (`LINK_REST`): the rest of the
/// argument, relative to the object the link named (its walk is the base),
/// without leading slashes; empty when the argument names that object.
///
/// A call that does not follow its final component (unlink, rename,
/// `lchown`, ...) given the link itself (`/proc/self/fd/3`) acts on the
/// `/proc` entry, not on what it names: `None` then; also when the object
/// is not connected to the tree (a pipe's fd).
pub fn link_rest(ev: &KernelEvent, raw_tag: u8) -> Option<&[u8]> {
    let rest_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LINK_REST
    } else {
        field_tag::LINK_REST2
    };
    let f = ev.field(rest_tag)?;
    let off = u64::from_ne_bytes(f.data[..].try_into().ok()?);
    let raw = ev.field(raw_tag)?;
    let rest = raw.data.get(usize::try_from(off).ok()?..)?;
    let start = rest.iter().position(|&b| b != b'/').unwrap_or(rest.len());
    let rest = &rest[start..];
    // An object with no place in the tree (a pipe, a socket, a deleted
    // file) names no path: the argument stays as given, under /proc.
    let base_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::BASE
    } else {
        field_tag::BASE2
    };
    if ev
        .field(base_tag)
        .is_none_or(|b| b.flags & field_flags::DISCONNECTED != 0)
    {
        return None;
    }
    (!rest.is_empty() || (raw_tag == field_tag::RAW_PATH && follows_final(ev))).then_some(rest)
}

/// The base field and the part of path argument `raw_tag` relative to it:
/// the rest after a `/proc` link the kernel resolved ([`link_rest`]) and
/// the walk of its object; else the whole argument and `base_tag` (or the
/// task root when the kernel walked a link the call does not follow).
pub fn arg_base(ev: &KernelEvent, raw_tag: u8, base_tag: u8) -> Option<(u8, &[u8])> {
    if let Some(rest) = link_rest(ev, raw_tag) {
        return Some((base_tag, rest));
    }
    let raw = &ev.field(raw_tag)?.data;
    let rest_tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LINK_REST
    } else {
        field_tag::LINK_REST2
    };
    let base = if ev.field(rest_tag).is_some() {
        field_tag::ROOT
    } else {
        base_tag
    };
    Some((base, raw))
}

/// Whether the call of an entry record follows a symlink (or `/proc`
/// link) in the final component of its first path: opens without
/// `O_NOFOLLOW`, exec, and [`follows_final_link`]'s calls.
pub(super) fn follows_final(ev: &KernelEvent) -> bool {
    use monitor_common::syscall_nr as n;
    const O_NOFOLLOW: u64 = 0o400000;
    let h = &ev.hdr;
    if ev.kind == EventKind::CompatSyscall {
        return false;
    }
    let flags = ev
        .field(field_tag::OPEN_HOW)
        .and_then(|f| <[u8; 8]>::try_from(&f.data[..]).ok())
        .map_or(h.flags, u64::from_ne_bytes);
    match h.syscall {
        n::OPEN | n::OPENAT | n::OPENAT2 | n::CREAT => flags & O_NOFOLLOW == 0,
        n::EXECVE | n::EXECVEAT => true,
        nr => follows_final_link(nr, flags),
    }
}

/// The identity in an identity field (`BASE_ID`, `FD_ID`, `OPENED_ID`):
/// (`st_dev`, `st_ino`) as `stat` reports them.
pub fn identity(f: &Field) -> Option<(u64, u64)> {
    if f.flags & field_flags::READ_FAILED != 0 {
        return None;
    }
    let b: &[u8; 16] = f.data[..].try_into().ok()?;
    let ino = u64::from_ne_bytes(b[..8].try_into().ok()?);
    let kdev = u64::from_ne_bytes(b[8..].try_into().ok()?);
    Some((user_dev(kdev), ino))
}

/// A dentry-cache lookup the kernel made at syscall entry
/// (`field_tag::LOOKUP`): identities as `stat` reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The object the path named (none when absent or unknown).
    pub object: Option<(u64, u64)>,
    /// The directory that holds the final component.
    pub dir: Option<(u64, u64)>,
    /// Why there is no object identity, when the object may exist.
    pub gap: Option<IdentityGap>,
    /// The lookup followed a symbolic link on the way (`LINKS_FOLLOWED`).
    pub links_followed: bool,
}

impl Lookup {
    pub fn decode(f: &Field) -> Option<Lookup> {
        use monitor_common::lookup as l;
        if f.flags & field_flags::READ_FAILED != 0 || f.data.len() != 40 {
            return None;
        }
        let w =
            |i: usize| u64::from_ne_bytes(f.data[8 * i..8 * i + 8].try_into().unwrap_or_default());
        let status = w(4);
        let id = |ino: u64, kdev: u64| (ino != 0).then(|| (user_dev(kdev), ino));
        let gap = match status & 0xff {
            l::FOUND | l::ABSENT => None,
            l::SYMLINK => Some(IdentityGap::Symlink),
            l::MOUNT => Some(IdentityGap::Mount),
            l::NOT_CACHED => Some(IdentityGap::NotCached),
            l::FS_NAMES => Some(IdentityGap::FsNames),
            l::DEPTH => Some(IdentityGap::Depth),
            l::OFF => Some(IdentityGap::Off),
            _ => Some(IdentityGap::Other),
        };
        Some(Lookup {
            object: if status & 0xff == l::FOUND {
                id(w(0), w(1))
            } else {
                None
            },
            dir: if status & l::DIR_KNOWN != 0 {
                id(w(2), w(3))
            } else {
                None
            },
            gap,
            links_followed: status & l::LINKS_FOLLOWED != 0,
        })
    }
}

/// A device number in the kernel's internal encoding (`MKDEV`: major << 20
/// | minor) as userspace's `st_dev` shows it.
pub fn user_dev(kdev: u64) -> u64 {
    libc::makedev((kdev >> 20) as u32, (kdev & 0xf_ffff) as u32)
}

/// Whether `rel` (a path relative to a directory) names an entry of that
/// very directory: one component, not `.` or `..`.
pub(super) fn single_component(rel: &[u8]) -> bool {
    let end = rel.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let rel = &rel[..end];
    !rel.is_empty() && !rel.contains(&b'/') && rel != b"." && rel != b".."
}

/// The identities the kernel sent with an entry record: the object's
/// (`dev`, `ino`: the fd's file of an fd-based call, or the object a
/// `/proc` link path names itself) and the directory's that holds the
/// path's final component (`dir_dev`, `dir_ino`: the base the path is
/// relative to, when it is one component below it).
///
/// The kernel's dentry-cache lookups (`LOOKUP`, `LOOKUP2`) give the object
/// and its directory at any depth; the base-directory rule above is the
/// fallback when the lookup is off.
pub(super) fn entry_identities(ev: &KernelEvent, a: &mut Action) {
    if let Some((dev, ino)) = ev.field(field_tag::FD_ID).and_then(identity) {
        (a.dev, a.ino) = (Some(dev), Some(ino));
        return;
    }
    if let Some(l) = ev.field(field_tag::LOOKUP2).and_then(Lookup::decode) {
        (a.dst_dev, a.dst_ino) = l.object.unzip();
        (a.dst_dir_dev, a.dst_dir_ino) = l.dir.unzip();
        a.dst_identity_gap = l.gap;
    }
    if let Some(l) = ev.field(field_tag::LOOKUP).and_then(Lookup::decode) {
        a.identity_gap = l.gap;
        if l.gap != Some(IdentityGap::Off) {
            (a.dev, a.ino) = l.object.unzip();
            (a.dir_dev, a.dir_ino) = l.dir.unzip();
            return;
        }
    }
    let Some(base) = ev.field(field_tag::BASE_ID).and_then(identity) else {
        return;
    };
    let Some(raw) = ev
        .field(field_tag::RAW_PATH)
        .filter(|f| f.flags & field_flags::READ_FAILED == 0)
    else {
        return;
    };
    let rel = match link_rest(ev, field_tag::RAW_PATH) {
        Some([]) => {
            (a.dev, a.ino) = (Some(base.0), Some(base.1));
            return;
        }
        Some(rest) => rest,
        // An absolute path is relative to the root the base walked.
        None => raw.data.strip_prefix(b"/").unwrap_or(&raw.data),
    };
    if single_component(rel) {
        (a.dir_dev, a.dir_ino) = (Some(base.0), Some(base.1));
    }
}

/// Whether `path`, resolved by abm after the call, no longer leads to the
/// directory the kernel's lookup found at the call (`dir_dev`/`dir_ino`):
/// a symlinked or renamed directory on the way changed in between (`rm
/// A/f; ln -sfn /etc A`). Looked at only for a path of several components
/// (one component is resolved by the kernel from its base), and only when
/// the directory can still be read.
pub(super) fn stale_dir(ev: &KernelEvent, a: &Action) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let (Some(dev), Some(ino), Some(path)) = (a.dir_dev, a.dir_ino, a.path.as_deref()) else {
        return false;
    };
    let several = ev
        .field(field_tag::RAW_PATH)
        .is_some_and(|f| !single_component(&f.data));
    if !several {
        return false;
    }
    let Some(parent) = Path::new(path).parent() else {
        return false;
    };
    std::fs::metadata(parent).is_ok_and(|m| (m.dev(), m.ino()) != (dev, ino))
}

/// Whether a call given a path follows a symlink in its final component
/// without returning an fd (so the kernel names no file it reached):
/// truncate, chmod, chown, the utimes family and setxattr/removexattr
/// unless told not to (`AT_SYMLINK_NOFOLLOW`, the `l*` variants), and
/// linkat with `AT_SYMLINK_FOLLOW` (the table's [`monitor_common::Follow`],
/// which the kernel's lookup reads too).
pub fn follows_final_link(nr: u32, flags: u64) -> bool {
    monitor_common::layout(nr).is_some_and(|(_, l)| l.follow.follows(flags))
}

/// What the kernel's exit check of a removal or move says of the named
/// object (`CONFIRM`, see `monitor_common::confirm`): contradicted for
/// either path is `argument_raced`, no conclusion `unconfirmed`.
pub(super) fn apply_confirm(a: &mut Action, fields: &[Field]) {
    use monitor_common::confirm::{CONTRADICTED, SHIFT, UNKNOWN};
    let Some(v) = fields
        .iter()
        .find(|f| f.tag == field_tag::CONFIRM)
        .and_then(|f| f.data.get(..8))
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
    else {
        return;
    };
    let codes = [v & 0xf, (v >> SHIFT) & 0xf];
    if codes.contains(&CONTRADICTED) {
        PathIssue::add(&mut a.path_issues, PathIssue::ArgumentRaced);
    } else if codes.contains(&UNKNOWN) {
        PathIssue::add(&mut a.path_issues, PathIssue::Unconfirmed);
    }
}

/// Completes an action with what its result record carries: for a
/// successful open, the file the new fd names (`OPENED_PATH`, walked by
/// the kernel at the call's exit: the file really opened, through final
/// symlinks, `/proc/self/fd/N` reopens and handles) becomes `path`, and
/// its identity `dev`/`ino`, and whether the open created it
/// (`created_by_call`). A walk in another mount namespace keeps the
/// entry's (mapped) path and gives the identity only.
pub fn apply_result(a: &mut Action, fields: &[Field]) {
    apply_confirm(a, fields);
    let Some(opened) = fields.iter().find(|f| f.tag == field_tag::OPENED_PATH) else {
        return;
    };
    a.created_by_call = fields.iter().any(|f| f.tag == field_tag::OPENED_CREATED);
    if let Some((dev, ino)) = fields
        .iter()
        .find(|f| f.tag == field_tag::OPENED_ID)
        .and_then(identity)
    {
        (a.dev, a.ino) = (Some(dev), Some(ino));
    }
    let foreign = fields.iter().any(|f| f.tag == field_tag::MNT_NS);
    let inexact = field_flags::READ_FAILED
        | field_flags::DISCONNECTED
        | field_flags::DEPTH_LIMIT
        | field_flags::TRUNCATED;
    if foreign || opened.flags & inexact != 0 {
        return;
    }
    let host = components_to_path(&opened.data);
    // The task root, from the entry's host and container views.
    let root = match (&a.path, &a.container_path) {
        (Some(p), Some(c)) if c == "/" => Some(p.as_bytes().to_vec()),
        (Some(p), Some(c)) => p.strip_suffix(c.as_str()).map(|r| r.as_bytes().to_vec()),
        _ => None,
    };
    if let Some(root) = root {
        a.container_path = strip_root(&host, &root).map(|c| text_fields(&c).0);
    }
    if a.path.as_deref().map(str::as_bytes) != Some(&host[..]) {
        // Another file than the argument named (a symlink's target): the
        // directory read at entry held the link, not this file.
        (a.dir_dev, a.dir_ino) = (None, None);
    }
    set_text(&host, &mut a.path, &mut a.path_b64);
    a.path_provisional = false;
    // What made the entry's path inexact no longer applies to it.
    a.path_issues.retain(|i| {
        !matches!(
            i,
            PathIssue::ProcMagicLink
                | PathIssue::NoBase
                | PathIssue::Truncated
                | PathIssue::ByHandle
                | PathIssue::SymlinkResolvedLate
        )
    });
}
