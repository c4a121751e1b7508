//! The record decoder: one kernel record to one [`Action`], its paths
//! resolved and settled.
use std::{borrow::Cow, os::unix::ffi::OsStrExt, path::Path};

use monitor_common::{field_flags, field_tag, header_flags, EventKind};

use super::*;
use crate::{
    kernel::events::KernelEvent,
    record::{text_fields, Action, Op, PathIssue},
};

/// Result of resolving one path argument.
pub struct Resolved {
    pub host: Vec<u8>,
    pub container: Option<Vec<u8>>,
    pub raw: Option<Vec<u8>>,
    /// `host` is the lexical join, left for the open's result to name
    /// ([`Action::path_provisional`]).
    pub provisional: bool,
}

/// Resolves the path made of `raw_tag` + `base_tag` (or `FD_PATH`).
pub fn resolve_path(
    ev: &KernelEvent,
    raw_tag: u8,
    base_tag: u8,
    root: &[u8],
    issues: &mut Vec<PathIssue>,
    cache: Option<&mut DirCache>,
) -> Option<Resolved> {
    if let Some(fd) = ev
        .field(field_tag::FD_PATH)
        .filter(|_| raw_tag == field_tag::RAW_PATH)
    {
        issues_of(fd, issues);
        let host = components_to_path(&fd.data);
        let container = strip_root(&host, root);
        return Some(Resolved {
            host,
            container,
            raw: None,
            provisional: false,
        });
    }
    let raw = ev.field(raw_tag)?;
    issues_of(raw, issues);
    if raw.flags & field_flags::READ_FAILED != 0 {
        // The argument could not be read at syscall entry (e.g. its page was
        // not resident): the path is unknown, never guessed.
        return None;
    }
    if let Some(rest) = link_rest(ev, raw_tag) {
        // The kernel resolved the caller's `/proc` link at syscall entry:
        // the base is the object it named, the rest is relative to it.
        let b = ev.field(base_tag)?;
        issues_of(b, issues);
        if b.flags & field_flags::READ_FAILED != 0 {
            return None;
        }
        let base_path = components_to_path(&b.data);
        let host = if rest.is_empty() {
            base_path
        } else {
            resolve_raw_with(&base_path, rest, root == b"/", cache)
        };
        return Some(Resolved {
            container: strip_root(&host, root),
            host,
            raw: Some(raw.data.to_vec()),
            provisional: false,
        });
    }
    let base = ev.field(base_tag);
    let base_path = match base {
        // An absolute path is relative to the task root, which the kernel
        // walks for every record (this also covers an argument that was only
        // readable at syscall exit, when the entry walked the cwd instead).
        _ if raw.data.starts_with(b"/") && ev.field(field_tag::ROOT).is_some() => root.to_vec(),
        Some(b) => {
            issues_of(b, issues);
            components_to_path(&b.data)
        }
        None => {
            issues.push(PathIssue::NoBase);
            b"/".to_vec()
        }
    };
    // `/proc/self` and `/proc/thread-self` name the caller's entries, not
    // abm's: resolved through /proc/<tid>/ while the thread lives; if it is
    // gone the path stays under /proc and says so.
    let magic = (root == b"/")
        .then(|| caller_proc_path(&raw.data, ev.hdr.tid))
        .flatten();
    // A successful open's result record names the file it opened (its
    // directory canonical, walked by the kernel at exit): the directory of
    // its argument is canonicalised only if the result does not name it
    // ([`settle_path`]), which saves the open and readlink per directory
    // on the trace's path. Not with `..` in the argument, which lexical
    // folding would get wrong through a symlink, nor for a path that is not
    // UTF-8 (the action's text of it is not the path).
    let provisional = cache.is_some()
        && magic.is_none()
        && root == b"/"
        && raw_tag == field_tag::RAW_PATH
        && is_open(ev)
        && ev.field(field_tag::MNT_NS).is_none()
        && raw.data.contains(&b'/')
        && !has_dot_dot(&raw.data)
        && std::str::from_utf8(&raw.data).is_ok()
        && std::str::from_utf8(&base_path).is_ok();
    let host = match &magic {
        Some(p) => resolve_raw_with(b"/", p, true, cache),
        None if provisional || (root == b"/" && walked_plain(ev, raw_tag)) => {
            join(&base_path, &raw.data)
        }
        None => resolve_raw_with(&base_path, &raw.data, root == b"/", cache),
    };
    if names_proc_link(&host) {
        // Still through a process's `/proc` link (the caller's, gone by
        // now, or another process's): the file it named is not known.
        PathIssue::add(issues, PathIssue::ProcMagicLink);
    }
    let container = strip_root(&host, root);
    Some(Resolved {
        host,
        container,
        raw: Some(raw.data.to_vec()),
        provisional,
    })
}

/// Whether the entry record is of an open (`open`, `openat`, `openat2`,
/// `creat`, or their ia32 twins, recorded under these numbers), whose
/// result record names the file.
pub(super) fn is_open(ev: &KernelEvent) -> bool {
    use monitor_common::syscall_nr as n;
    ev.kind != EventKind::CompatSyscall
        && matches!(ev.hdr.syscall, n::OPEN | n::OPENAT | n::OPENAT2 | n::CREAT)
}

/// Whether the kernel's dentry-cache lookup of argument `raw_tag` at the
/// call went through every component from the base (status found or
/// absent) without following a symbolic link (`LINKS_FOLLOWED`) or
/// leaving a mount by `..` (that status is `OTHER`): the lexical join of
/// the argument to its base is then the canonical path, as it was at the
/// call, and nothing needs to be read from the file system.
pub(super) fn walked_plain(ev: &KernelEvent, raw_tag: u8) -> bool {
    let tag = if raw_tag == field_tag::RAW_PATH {
        field_tag::LOOKUP
    } else {
        field_tag::LOOKUP2
    };
    ev.field(field_tag::MNT_NS).is_none()
        && ev
            .field(tag)
            .and_then(Lookup::decode)
            .is_some_and(|l| l.gap.is_none() && !l.links_followed)
}

/// Canonicalises the directory of an action's provisional path
/// ([`Action::path_provisional`]): the open's result did not name the file.
pub fn settle_path(a: &mut Action, cache: Option<&mut DirCache>) {
    if !std::mem::take(&mut a.path_provisional) {
        return;
    }
    let Some(p) = a.path.as_deref() else {
        return;
    };
    if let Some(real) = canonical_parent_with(p.as_bytes(), cache) {
        set_text(&real, &mut a.path, &mut a.path_b64);
    }
}

pub(super) fn set_text(bytes: &[u8], s: &mut Option<String>, b64: &mut Option<String>) {
    let (t, b) = text_fields(bytes);
    *s = Some(t);
    *b64 = b;
}

/// Builds the action record of an enter (or lifecycle) event. Process
/// fields that need the process table (`exe`) and the result are filled by
/// the caller.
pub fn action_from_event(ev: &KernelEvent) -> Action {
    action_from_event_with(ev, None)
}

/// [`action_from_event`], canonicalising directories through `cache`.
pub fn action_from_event_with(ev: &KernelEvent, mut cache: Option<&mut DirCache>) -> Action {
    let h = &ev.hdr;
    let mut op = Op::from_kind(ev.kind);
    let compat = h.hflags & header_flags::COMPAT != 0;
    let syscall: Cow<'static, str> = if compat {
        // An ia32 call: a 32-bit exec keeps its own number in the header;
        // every other one is recorded as its x86_64 twin, with its own
        // number in `COMPAT_NR`.
        let ia32 = ev
            .field(field_tag::COMPAT_NR)
            .and_then(|f| <[u8; 8]>::try_from(&f.data[..]).ok())
            .map_or(h.syscall, |b| u64::from_ne_bytes(b) as u32);
        format!(
            "ia32:{}",
            monitor_common::compat_syscall(ia32).unwrap_or("unknown")
        )
        .into()
    } else {
        syscall_name(h.syscall).into()
    };
    let mut a = Action {
        op,
        syscall: syscall.clone(),
        ktime_ns: h.ktime_ns,
        pid: h.pid,
        tid: h.tid,
        ppid: h.ppid,
        uid: h.uid,
        gid: h.gid,
        comm: ev.comm(),
        cgroup_id: h.cgroup_id,
        ..Default::default()
    };
    let root = ev
        .field(field_tag::ROOT)
        .map(|f| components_to_path(&f.data))
        .unwrap_or_else(|| b"/".to_vec());
    let mut issues = Vec::new();
    if let Some(r) = resolve_path(
        ev,
        field_tag::RAW_PATH,
        field_tag::BASE,
        &root,
        &mut issues,
        cache.as_deref_mut(),
    ) {
        set_text(&r.host, &mut a.path, &mut a.path_b64);
        a.path_provisional = r.provisional;
        if let Some(c) = r.container {
            a.container_path = Some(text_fields(&c).0);
        }
        if let Some(raw) = r.raw {
            set_text(&raw, &mut a.raw_path, &mut a.raw_path_b64);
        }
    }
    if ev.field(field_tag::RAW_PATH2).is_some() {
        if let Some(r) = resolve_path(
            ev,
            field_tag::RAW_PATH2,
            field_tag::BASE2,
            &root,
            &mut issues,
            cache,
        ) {
            set_text(&r.host, &mut a.path2, &mut a.path2_b64);
            if let Some(c) = r.container {
                a.container_path2 = Some(text_fields(&c).0);
            }
            if let Some(raw) = r.raw {
                set_text(&raw, &mut a.raw_path2, &mut a.raw_path2_b64);
            }
        }
    }
    if h.hflags & header_flags::PAYLOAD_TRUNCATED != 0 {
        issues.push(PathIssue::PayloadTruncated);
    }
    // A symlink's target is a string relative to the new link's directory,
    // not to the caller's working directory.
    if op == Some(Op::Symlink) {
        if let (Some(raw), Some(link)) = (&a.raw_path, &a.path2) {
            if !raw.starts_with('/') {
                let dir = Path::new(link).parent().unwrap_or(Path::new("/"));
                let joined = join(dir.as_os_str().as_bytes(), raw.as_bytes());
                set_text(&joined, &mut a.path, &mut a.path_b64);
            }
        }
    }
    let mut flags = h.flags;
    if let Some(f) = ev.field(field_tag::OPEN_HOW) {
        // openat2 flags read at exit (or still unreadable: READ_FAILED).
        issues_of(f, &mut issues);
        if let Ok(b) = <[u8; 8]>::try_from(&f.data[..]) {
            flags = u64::from_ne_bytes(b);
            op = Some(if flags & 0o1000 != 0 {
                Op::Truncate
            } else {
                Op::Write
            });
            a.op = op;
        }
    } else if h.hflags & header_flags::FLAGS_UNREAD != 0 {
        issues.push(PathIssue::FlagsUnread);
    }
    // A 32-bit exec keeps its ia32 number: nothing below decodes it.
    let other_table = ev.kind == EventKind::CompatSyscall;
    if h.syscall == monitor_common::syscall_nr::OPEN_BY_HANDLE_AT && !other_table {
        // The file is named by a handle: its path is not known (until the
        // result record names the file opened).
        issues.push(PathIssue::ByHandle);
    }
    // The first path was resolved by abm after the call, in its own view
    // of the file system, which is the caller's on the host root and mount
    // namespace: not walked plainly by the kernel at the call, which makes
    // it the call's own path, with nothing that could have changed since.
    let resolved_late = !other_table
        && root == b"/"
        && ev.field(field_tag::MNT_NS).is_none()
        && !walked_plain(ev, field_tag::RAW_PATH);
    if !other_table {
        entry_identities(ev, &mut a);
        if resolved_late && stale_dir(ev, &a) {
            PathIssue::add(&mut issues, PathIssue::PathChanged);
        }
    }
    // A call that followed a final symlink with no fd to name what it
    // reached: the target, read now, and said so (the kernel's lookup
    // follows the final component for these calls, so a plain walk met
    // no symlink).
    if resolved_late
        && ev.field(field_tag::FD_PATH).is_none()
        && follows_final_link(h.syscall, flags)
    {
        if let Some(target) = a
            .path
            .as_deref()
            .and_then(|p| late_link_target(p.as_bytes()))
        {
            set_text(&target, &mut a.path, &mut a.path_b64);
            PathIssue::add(&mut issues, PathIssue::SymlinkResolvedLate);
            // The identities read at entry were the link's directory's.
            (a.dir_dev, a.dir_ino) = (None, None);
        }
    }
    if let Some(x) = ev.field(field_tag::XATTR_NAME) {
        issues_of(x, &mut issues);
        a.xattr = Some(text_fields(&x.data).0);
    }
    a.path_issues = issues;
    match ev.kind {
        EventKind::Fork => {
            // `result` of a fork record is the child's pid.
            a.result = Some(h.result);
        }
        // `result` of an exit record is the wait status (exit code << 8,
        // or the killing signal).
        EventKind::Exit => a.result = Some(h.result),
        EventKind::IoUringSetup => a.result = Some(0),
        // `result` of a sensitive read is the new fd.
        EventKind::Read => a.result = Some(h.result),
        _ => {}
    }
    if let Some(op) = op {
        if matches!(
            op,
            Op::Unlink
                | Op::Rmdir
                | Op::Rename
                | Op::Truncate
                | Op::Write
                | Op::Chmod
                | Op::Chown
                | Op::Exec
                | Op::Link
                | Op::Symlink
                | Op::Utimes
                | Op::Xattr
                | Op::Setflags
                | Op::CompatSyscall
                | Op::Read
        ) {
            a.flags = flags;
            a.flag_names = if op == Op::Setflags {
                setflag_names(h.mode, flags)
            } else {
                flag_names(op, &syscall, flags)
            };
            if ev.kind != EventKind::Fork {
                a.fd = Some(h.fd);
            }
        }
        let has_mode =
            op == Op::Chmod || (matches!(op, Op::Truncate | Op::Write) && flags & 0o100 != 0);
        if h.mode != u32::MAX && has_mode {
            a.mode = Some(h.mode & 0o7777);
        }
        if op == Op::Chown {
            a.owner_uid = (h.owner_uid != u32::MAX).then_some(h.owner_uid);
            a.owner_gid = (h.owner_gid != u32::MAX).then_some(h.owner_gid);
        }
        if op == Op::Exec {
            let mut argv = Vec::new();
            let mut argv_b64 = Vec::new();
            let mut any_b64 = false;
            let mut truncated = h.hflags & header_flags::ARGV_TRUNCATED != 0;
            for f in ev.fields(field_tag::ARG) {
                let (s, b) = text_fields(&f.data);
                truncated |= f.flags & field_flags::TRUNCATED != 0;
                any_b64 |= b.is_some();
                argv_b64.push(b.unwrap_or_else(|| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.encode(&f.data)
                }));
                argv.push(s);
            }
            a.argv = Some(argv);
            a.argv_b64 = any_b64.then_some(argv_b64);
            a.argv_truncated = truncated;
            if let Some(c) = ev.field(field_tag::CWD) {
                a.cwd = Some(text_fields(&components_to_path(&c.data)).0);
            }
            a.env = target_env(ev);
            a.env_partial = h.hflags & header_flags::ENV_PARTIAL != 0;
        }
    }
    a
}

/// The exec's target variables: the kernel copied every entry whose name
/// starts like one; only the exact names count.
pub(super) fn target_env(ev: &KernelEvent) -> Option<std::collections::BTreeMap<String, String>> {
    let mut env = std::collections::BTreeMap::new();
    for f in ev.fields(field_tag::ENV) {
        let text = String::from_utf8_lossy(&f.data);
        let Some((name, value)) = text.split_once('=') else {
            continue;
        };
        if monitor_common::target_env::NAMES.contains(&name) {
            env.insert(name.to_owned(), value.to_owned());
        }
    }
    (!env.is_empty()).then_some(env)
}
