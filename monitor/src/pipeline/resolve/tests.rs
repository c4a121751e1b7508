use std::{
    os::unix::ffi::{OsStrExt, OsStringExt},
    path::Path,
};

use monitor_common::{field_flags, field_tag, header_flags, EventKind};

use super::*;
use crate::{
    kernel::events::{empty_header, encode, Field, KernelEvent},
    record::{Action, IdentityGap, Op, PathIssue},
};

#[test]
fn components_reverse_into_absolute_path() {
    assert_eq!(components_to_path(b"c\0b\0a\0"), b"/a/b/c");
    assert_eq!(components_to_path(b""), b"/");
}

#[test]
fn normalize_folds_dots() {
    assert_eq!(normalize(b"/a/./b/../c//d/"), b"/a/c/d");
    assert_eq!(normalize(b"/../.."), b"/");
    assert_eq!(join(b"/work/ws", b"../x/./y"), b"/work/x/y");
    assert_eq!(join(b"/", b"/etc/passwd"), b"/etc/passwd");
    assert_eq!(join(b"/srv/root", b"/etc/passwd"), b"/srv/root/etc/passwd");
    assert_eq!(join(b"/a", b"../../.."), b"/");
    assert_eq!(join(b"/", b""), b"/");
    assert_eq!(join(b"/a/b/", b"c/"), b"/a/b/c");
    // Joining is normalising the two with a slash between them.
    let parts: [&[u8]; 9] = [
        b"/",
        b"/w",
        b"/w/",
        b"/w/x/..",
        b"..",
        b"../..",
        b"./a//b",
        b"a/../../c",
        b"",
    ];
    for base in parts {
        for raw in parts {
            let whole = [base, b"/", raw].concat();
            assert_eq!(join(base, raw), normalize(&whole), "{base:?} + {raw:?}");
        }
    }
}

#[test]
fn strip_root_gives_container_view() {
    assert_eq!(
        strip_root(b"/srv/c1/etc/x", b"/srv/c1"),
        Some(b"/etc/x".to_vec())
    );
    assert_eq!(strip_root(b"/srv/c10/x", b"/srv/c1"), None);
    assert_eq!(strip_root(b"/etc/x", b"/"), None);
}

#[test]
fn unlinkat_relative_to_dirfd_resolves_against_dirfd_base() {
    let mut h = empty_header(EventKind::Rmdir);
    h.syscall = 263;
    h.flags = 0x200;
    h.fd = 3;
    h.pid = 7;
    h.comm[..2].copy_from_slice(b"rm");
    let ev = KernelEvent::decode(&encode(
        &h,
        &[
            Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"sub".to_vec().into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: 0,
                data: b"tree\0x\0tmp\0".to_vec().into(),
            },
            Field {
                tag: field_tag::ROOT,
                flags: 0,
                data: vec![].into(),
            },
        ],
    ))
    .unwrap();
    let a = action_from_event(&ev);
    assert_eq!(a.op, Some(Op::Rmdir));
    assert_eq!(a.syscall, "unlinkat");
    assert_eq!(a.path.as_deref(), Some("/tmp/x/tree/sub"));
    assert_eq!(a.raw_path.as_deref(), Some("sub"));
    assert_eq!(a.flag_names, vec!["AT_REMOVEDIR"]);
    assert_eq!(a.fd, Some(3));
    assert_eq!(a.container_path, None);
    assert!(a.path_issues.is_empty());
}

#[test]
fn container_process_gets_host_and_container_paths() {
    let mut h = empty_header(EventKind::Unlink);
    h.syscall = 87;
    let ev = KernelEvent::decode(&encode(
        &h,
        &[
            Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"/data/f".to_vec().into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: 0,
                data: b"c1\0ctr\0".to_vec().into(),
            },
            Field {
                tag: field_tag::ROOT,
                flags: 0,
                data: b"c1\0ctr\0".to_vec().into(),
            },
        ],
    ))
    .unwrap();
    let a = action_from_event(&ev);
    assert_eq!(a.path.as_deref(), Some("/ctr/c1/data/f"));
    assert_eq!(a.container_path.as_deref(), Some("/data/f"));
}

#[test]
fn exec_argv_non_utf8_and_truncation_flags() {
    let mut h = empty_header(EventKind::Exec);
    h.syscall = 59;
    h.hflags = header_flags::ARGV_TRUNCATED;
    let ev = KernelEvent::decode(&encode(
        &h,
        &[
            Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"/usr/bin/kubectl".to_vec().into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: 0,
                data: vec![].into(),
            },
            Field {
                tag: field_tag::ARG,
                flags: 0,
                data: b"kubectl".to_vec().into(),
            },
            Field {
                tag: field_tag::ARG,
                flags: 0,
                data: b"delete".to_vec().into(),
            },
            Field {
                tag: field_tag::ARG,
                flags: 0,
                data: b"ns\xff".to_vec().into(),
            },
            Field {
                tag: field_tag::CWD,
                flags: 0,
                data: b"w\0".to_vec().into(),
            },
            Field {
                tag: field_tag::ENV,
                flags: 0,
                data: b"KUBECONFIG=/w/prod.yaml".to_vec().into(),
            },
            // Same 8-byte prefix, another name: the kernel copies it,
            // userspace drops it.
            Field {
                tag: field_tag::ENV,
                flags: 0,
                data: b"KUBECONFIGX=/other".to_vec().into(),
            },
        ],
    ))
    .unwrap();
    let a = action_from_event(&ev);
    assert_eq!(
        a.env.as_ref().unwrap().iter().collect::<Vec<_>>(),
        [(&"KUBECONFIG".to_string(), &"/w/prod.yaml".to_string())]
    );
    assert!(!a.env_partial);
    assert_eq!(
        a.argv.as_ref().unwrap()[..2],
        ["kubectl".to_string(), "delete".to_string()]
    );
    assert_eq!(a.argv_b64.as_ref().unwrap()[2], "bnP/");
    assert!(a.argv_truncated);
    assert_eq!(a.cwd.as_deref(), Some("/w"));
    assert_eq!(a.program(), Some("kubectl"));
}

#[test]
fn walk_problems_become_path_issues() {
    let mut h = empty_header(EventKind::Unlink);
    h.syscall = 263;
    let ev = KernelEvent::decode(&encode(
        &h,
        &[
            Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"f".to_vec().into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: field_flags::DEPTH_LIMIT,
                data: b"deep\0".to_vec().into(),
            },
        ],
    ))
    .unwrap();
    assert_eq!(
        action_from_event(&ev).path_issues,
        vec![PathIssue::DepthLimit]
    );
}

#[test]
fn unreadable_argument_gives_no_path_not_the_base() {
    let mut h = empty_header(EventKind::Write);
    h.syscall = 257;
    let ev = KernelEvent::decode(&encode(
        &h,
        &[
            Field {
                tag: field_tag::RAW_PATH,
                flags: field_flags::READ_FAILED,
                data: vec![].into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: 0,
                data: b"ws\0".to_vec().into(),
            },
        ],
    ))
    .unwrap();
    let a = action_from_event(&ev);
    assert_eq!(a.path, None);
    assert_eq!(a.path_issues, vec![PathIssue::ReadFailed]);
}

#[test]
fn errno_and_syscall_names() {
    assert_eq!(errno_name(-2), "ENOENT");
    assert_eq!(errno_name(-1), "EPERM");
    assert_eq!(syscall_name(316), "renameat2");
}

fn exit_record(nr: u32) -> KernelEvent {
    let mut h = empty_header(EventKind::SyscallExit);
    h.syscall = nr;
    KernelEvent::decode(&encode(&h, &[])).unwrap()
}

#[test]
fn name_changing_records_drop_the_directory_cache() {
    use monitor_common::syscall_nr as nr;
    let entry = |k| KernelEvent::decode(&encode(&empty_header(k), &[])).unwrap();
    for k in [
        EventKind::Rename,
        EventKind::Rmdir,
        EventKind::Unlink,
        EventKind::Symlink,
        EventKind::CompatSyscall,
    ] {
        assert!(DirCache::invalidates(&entry(k)), "{k:?}");
    }
    for k in [EventKind::Write, EventKind::Truncate, EventKind::Exec] {
        assert!(!DirCache::invalidates(&entry(k)), "{k:?}");
    }
    assert!(DirCache::invalidates(&exit_record(nr::RENAMEAT2)));
    assert!(DirCache::invalidates(&exit_record(nr::UNLINKAT)));
    assert!(DirCache::invalidates(&exit_record(nr::SYMLINKAT)));
    assert!(!DirCache::invalidates(&exit_record(nr::OPENAT)));
}

/// A cached directory resolves like an uncached one; once cleared (as
/// after a rename or symlink record), a symlink swapped to another
/// target resolves to the new one. Paths under /proc and missing
/// directories are never cached.
#[test]
fn directory_cache_resolves_like_the_file_system() {
    let d = std::env::temp_dir().join(format!("abm-dircache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("a")).unwrap();
    std::fs::create_dir_all(d.join("b")).unwrap();
    std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
    let base = d.as_os_str().as_bytes();
    let real = |sub: &str| {
        let mut p = std::fs::canonicalize(d.join(sub))
            .unwrap()
            .into_os_string()
            .into_vec();
        p.extend_from_slice(b"/f");
        p
    };
    let mut cache = DirCache::default();
    let first = resolve_raw_with(base, b"link/f", true, Some(&mut cache));
    assert_eq!(first, real("a"));
    assert_eq!(first, resolve_raw(base, b"link/f", true));
    assert_eq!(cache.dirs.len(), 1);
    // Swap the link: the cache still answers within its TTL, as the
    // file system did when the entry was made ...
    std::fs::remove_file(d.join("link")).unwrap();
    std::os::unix::fs::symlink(d.join("b"), d.join("link")).unwrap();
    // ... and after a name-changing record clears it, the new target.
    cache.clear();
    assert_eq!(
        resolve_raw_with(base, b"link/f", true, Some(&mut cache)),
        real("b")
    );
    // A directory that does not exist: lexical, and not cached.
    cache.clear();
    let gone = resolve_raw_with(base, b"nope/../x/f", true, Some(&mut cache));
    assert_eq!(gone, join(base, b"nope/../x/f"));
    assert!(cache.dirs.is_empty());
    // /proc is per process: never cached.
    let _ = resolve_raw_with(b"/", b"/proc/self/fd/0", true, Some(&mut cache));
    assert!(cache.dirs.is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}

/// An unlink keeps the directories whose path is already canonical
/// and forgets those reached through a symbolic link.
#[test]
fn unlinks_forget_only_indirect_directories() {
    use monitor_common::syscall_nr as nr;
    let entry = |k| KernelEvent::decode(&encode(&empty_header(k), &[])).unwrap();
    assert!(DirCache::only_unlinks(&entry(EventKind::Unlink)));
    assert!(DirCache::only_unlinks(&exit_record(nr::UNLINKAT)));
    for k in [EventKind::Rename, EventKind::Rmdir, EventKind::Symlink] {
        assert!(!DirCache::only_unlinks(&entry(k)), "{k:?}");
    }
    assert!(!DirCache::only_unlinks(&exit_record(nr::RENAMEAT2)));

    let d = std::env::temp_dir().join(format!("abm-dircache-unlink-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("a")).unwrap();
    std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
    let d = std::fs::canonicalize(&d).unwrap();
    let base = d.as_os_str().as_bytes();
    let mut cache = DirCache::default();
    let direct = resolve_raw_with(base, b"a/f", true, Some(&mut cache));
    let via_link = resolve_raw_with(base, b"link/f", true, Some(&mut cache));
    assert_eq!(direct, via_link);
    assert_eq!(cache.dirs.len(), 2);
    cache.forget_indirect();
    assert_eq!(cache.dirs.len(), 1);
    assert!(cache.dirs.contains_key(d.join("a").as_os_str().as_bytes()));
    // The directory removed: the kept entry says what the file system
    // without the cache says.
    std::fs::remove_file(d.join("link")).unwrap();
    std::fs::remove_dir(d.join("a")).unwrap();
    assert_eq!(
        resolve_raw_with(base, b"a/f", true, Some(&mut cache)),
        resolve_raw(base, b"a/f", true)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

fn f(tag: u8, data: &[u8]) -> Field {
    Field {
        tag,
        flags: 0,
        data: data.to_vec().into(),
    }
}

fn id_field(tag: u8, ino: u64, kdev: u64) -> Field {
    let mut d = ino.to_ne_bytes().to_vec();
    d.extend_from_slice(&kdev.to_ne_bytes());
    f(tag, &d)
}

fn rest(off: u64) -> Field {
    f(field_tag::LINK_REST, &off.to_ne_bytes())
}

fn entry(kind: EventKind, nr: u32, flags: u64, fields: &[Field]) -> KernelEvent {
    let mut h = empty_header(kind);
    h.syscall = nr;
    h.flags = flags;
    h.tid = 4_000_000; // no such thread: nothing resolves through /proc
    KernelEvent::decode(&encode(&h, fields)).unwrap()
}

#[test]
fn identities_decode_to_stat_numbers() {
    // sda1 (8:1) in the kernel's MKDEV encoding.
    let (dev, ino) = identity(&id_field(field_tag::BASE_ID, 77, (8 << 20) | 1)).unwrap();
    assert_eq!((dev, ino), (libc::makedev(8, 1), 77));
    assert_eq!(user_dev((259 << 20) | 300), libc::makedev(259, 300));
    let mut failed = id_field(field_tag::BASE_ID, 1, 1);
    failed.flags = field_flags::READ_FAILED;
    assert_eq!(identity(&failed), None);
    assert_eq!(identity(&f(field_tag::BASE_ID, b"short")), None);
}

fn lookup_field(tag: u8, obj: (u64, u64), dir: (u64, u64), status: u64) -> Field {
    let mut data = Vec::new();
    for v in [obj.0, obj.1, dir.0, dir.1, status] {
        data.extend_from_slice(&v.to_ne_bytes());
    }
    f(tag, &data)
}

/// A path as a base field: its components leaf first, NUL-terminated.
fn base_of(p: &Path) -> Field {
    let mut d = Vec::new();
    for c in p.components().rev() {
        if let std::path::Component::Normal(c) = c {
            d.extend_from_slice(c.as_bytes());
            d.push(0);
        }
    }
    f(field_tag::BASE, &d)
}

/// A directory (canonical) holding `real/` and `link` → `real`.
fn linked_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir(ws.join("real")).unwrap();
    std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
    (tmp, ws)
}

/// On the trace's path an open's directory is left for its result to
/// name, and canonicalised only when the result does not (a failed
/// open), which gives the path it would have had at entry.
#[test]
fn an_open_is_canonicalised_only_when_its_result_does_not_name_the_file() {
    use monitor_common::syscall_nr as n;
    let (_tmp, ws) = linked_dir();
    let open = |raw: &[u8]| {
        entry(
            EventKind::Write,
            n::OPENAT,
            0o101,
            &[f(field_tag::RAW_PATH, raw), base_of(&ws)],
        )
    };
    let real_f = ws.join("real/f").to_str().unwrap().to_owned();
    let link_f = ws.join("link/f").to_str().unwrap().to_owned();
    // Failed (no OPENED_PATH): canonicalised at its result.
    let mut cache = DirCache::default();
    let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
    assert_eq!(
        (a.path.as_deref(), a.path_provisional),
        (Some(&*link_f), true)
    );
    apply_result(&mut a, &[]);
    settle_path(&mut a, Some(&mut cache));
    assert_eq!(
        (a.path.as_deref(), a.path_provisional),
        (Some(&*real_f), false)
    );
    // Opened: the result names the file; nothing is canonicalised.
    let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
    apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"g\0elsewhere\0")]);
    assert!(!a.path_provisional);
    settle_path(&mut a, Some(&mut cache));
    assert_eq!(a.path.as_deref(), Some("/elsewhere/g"));
    // Without the trace's cache (the guardrails), and with `..`, at once.
    let a = action_from_event(&open(b"link/f"));
    assert_eq!(
        (a.path.as_deref(), a.path_provisional),
        (Some(&*real_f), false)
    );
    let a = action_from_event_with(&open(b"link/../real/f"), Some(&mut cache));
    assert!(!a.path_provisional);
    // Released without its result (lost): canonicalised then.
    let mut a = action_from_event_with(&open(b"link/f"), Some(&mut cache));
    settle_path(&mut a, None);
    assert_eq!(a.path.as_deref(), Some(&*real_f));
}

/// A path whose every component the kernel's lookup followed at the
/// call (found or absent) is the lexical join of the argument to its
/// base, read nowhere else; one through a symbolic link is
/// canonicalised from the file system, as before.
#[test]
fn a_path_the_kernel_walked_plainly_is_not_read_again() {
    use monitor_common::{lookup as l, syscall_nr as n};
    let (_tmp, ws) = linked_dir();
    let unlink = |status: u64| {
        let lookup = lookup_field(field_tag::LOOKUP, (0, 0), (7, 1), status);
        let ev = entry(
            EventKind::Unlink,
            n::UNLINKAT,
            0,
            &[f(field_tag::RAW_PATH, b"link/f"), base_of(&ws), lookup],
        );
        action_from_event_with(&ev, Some(&mut DirCache::default()))
            .path
            .unwrap()
    };
    let path = |p: &str| ws.join(p).to_str().unwrap().to_owned();
    // Said plain (the kernel would not say so of this link): not read.
    assert_eq!(unlink(l::ABSENT | l::DIR_KNOWN), path("link/f"));
    assert_eq!(unlink(l::FOUND | l::DIR_KNOWN), path("link/f"));
    // A symbolic link on the way (followed, or not), or no lookup:
    // read from the tree.
    assert_eq!(unlink(l::FOUND | l::LINKS_FOLLOWED), path("real/f"));
    assert_eq!(unlink(l::SYMLINK), path("real/f"));
    assert_eq!(unlink(l::NOT_CACHED), path("real/f"));
}

/// The kernel's dentry-cache lookups give the object and its directory
/// at any depth, and the second path's (a rename's replaced target);
/// a lookup that stopped gives no object and says why; an absent
/// object is no gap; a lookup that is off leaves the base rule.
#[test]
fn kernel_lookups_give_object_and_directory_identities() {
    use monitor_common::{lookup as l, syscall_nr as n};
    let base = [
        f(field_tag::RAW_PATH, b"a/b/f"),
        f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
        id_field(field_tag::BASE_ID, 9, 5),
    ];
    let with = |extra: &[Field]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        action_from_event(&entry(EventKind::Rename, n::RENAMEAT2, 0, &v))
    };
    let a = with(&[
        lookup_field(
            field_tag::LOOKUP,
            (11, (8 << 20) | 1),
            (10, (8 << 20) | 1),
            l::FOUND | l::DIR_KNOWN,
        ),
        lookup_field(
            field_tag::LOOKUP2,
            (21, (8 << 20) | 1),
            (9, (8 << 20) | 1),
            l::FOUND | l::DIR_KNOWN,
        ),
    ]);
    let sda1 = libc::makedev(8, 1);
    assert_eq!(
        (a.dev, a.ino, a.dir_dev, a.dir_ino),
        (Some(sda1), Some(11), Some(sda1), Some(10))
    );
    assert_eq!(
        (a.dst_dev, a.dst_ino, a.dst_dir_ino),
        (Some(sda1), Some(21), Some(9))
    );
    assert_eq!((a.identity_gap, a.dst_identity_gap), (None, None));
    // Stopped at a symlink the kernel could not follow, the target absent.
    let a = with(&[
        lookup_field(field_tag::LOOKUP, (0, 0), (0, 0), l::SYMLINK),
        lookup_field(field_tag::LOOKUP2, (0, 0), (9, 5), l::ABSENT | l::DIR_KNOWN),
    ]);
    assert_eq!(
        (a.dev, a.ino, a.dir_dev, a.dir_ino),
        (None, None, None, None)
    );
    assert_eq!(a.identity_gap, Some(IdentityGap::Symlink));
    assert_eq!(
        (a.dst_ino, a.dst_dir_ino, a.dst_identity_gap),
        (None, Some(9), None)
    );
    // A final component not in the cache: its directory only.
    let a = with(&[lookup_field(
        field_tag::LOOKUP,
        (0, 0),
        (10, 5),
        l::NOT_CACHED | l::DIR_KNOWN,
    )]);
    assert_eq!(
        (a.ino, a.dir_ino, a.identity_gap),
        (None, Some(10), Some(IdentityGap::NotCached))
    );
    // Off: the base directory rule (two components below: nothing).
    let a = with(&[lookup_field(field_tag::LOOKUP, (0, 0), (0, 0), l::OFF)]);
    assert_eq!(
        (a.ino, a.dir_ino, a.identity_gap),
        (None, None, Some(IdentityGap::Off))
    );
    assert!(Lookup::decode(&f(field_tag::LOOKUP, b"short")).is_none());
}

/// `rm /proc/self/cwd/d/c`: the kernel walked the caller's cwd and
/// says where the rest starts; userspace joins them and flags nothing.
#[test]
fn proc_self_cwd_resolved_by_the_kernel_is_joined_to_its_rest() {
    let raw = b"/proc/self/cwd/d/c";
    let ev = entry(
        EventKind::Unlink,
        monitor_common::syscall_nr::UNLINKAT,
        0,
        &[
            f(field_tag::RAW_PATH, raw),
            f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
            id_field(field_tag::BASE_ID, 9, 5),
            rest(14),
            f(field_tag::ROOT, b""),
        ],
    );
    assert_eq!(link_rest(&ev, field_tag::RAW_PATH), Some(&b"d/c"[..]));
    let a = action_from_event(&ev);
    assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/d/c"));
    assert_eq!(a.raw_path.as_deref(), Some("/proc/self/cwd/d/c"));
    assert!(a.path_issues.is_empty(), "{:?}", a.path_issues);
    // Two components below the cwd: its identity is not the parent's.
    assert_eq!((a.dir_dev, a.dir_ino), (None, None));
    assert_eq!((a.dev, a.ino), (None, None));
    // One component: the cwd holds it.
    let ev = entry(
        EventKind::Unlink,
        monitor_common::syscall_nr::UNLINKAT,
        0,
        &[
            f(field_tag::RAW_PATH, b"/proc/1234/cwd/c"),
            f(field_tag::BASE, b"ws\0nowhere-abm-test\0"),
            id_field(field_tag::BASE_ID, 9, 5),
            rest(14),
        ],
    );
    let a = action_from_event(&ev);
    assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/c"));
    assert_eq!((a.dir_dev, a.dir_ino), (Some(libc::makedev(0, 5)), Some(9)));
}

/// `/proc/self/fd/3` given to a call that follows it names the fd's
/// file (identity included); given to unlink it names the /proc entry
/// itself, which is flagged, never the file.
#[test]
fn fd_link_names_the_file_only_for_calls_that_follow_it() {
    use monitor_common::syscall_nr as n;
    let fields = [
        f(field_tag::RAW_PATH, b"/proc/self/fd/3"),
        f(field_tag::BASE, b"a\0ws\0nowhere-abm-test\0"),
        id_field(field_tag::BASE_ID, 42, 7),
        rest(15),
        f(field_tag::ROOT, b""),
    ];
    let open = entry(EventKind::Truncate, n::OPENAT, 0o1001, &fields);
    let a = action_from_event(&open);
    assert_eq!(a.path.as_deref(), Some("/nowhere-abm-test/ws/a"));
    assert_eq!((a.dev, a.ino), (Some(libc::makedev(0, 7)), Some(42)));
    assert!(a.path_issues.is_empty());
    let nofollow = entry(EventKind::Truncate, n::OPENAT, 0o1001 | 0o400000, &fields);
    assert_eq!(link_rest(&nofollow, field_tag::RAW_PATH), None);
    let unlink = entry(EventKind::Unlink, n::UNLINKAT, 0, &fields);
    let a = action_from_event(&unlink);
    assert_eq!(a.path.as_deref(), Some("/proc/4000000/fd/3"));
    assert_eq!(a.path_issues, vec![PathIssue::ProcMagicLink]);
    assert_eq!((a.dev, a.ino, a.dir_dev), (None, None, None));
    // A pipe's fd: its walk has no place in the tree; the argument
    // stays under /proc, flagged.
    let mut pipe = fields.clone();
    pipe[1] = Field {
        flags: field_flags::DISCONNECTED,
        ..f(field_tag::BASE, b"")
    };
    let a = action_from_event(&entry(EventKind::Write, n::OPENAT, 0o1, &pipe));
    assert_eq!(a.path.as_deref(), Some("/proc/4000000/fd/3"));
    assert_eq!(a.path_issues, vec![PathIssue::ProcMagicLink]);
    // The mount-namespace view joins the same way.
    assert_eq!(
        arg_base(&unlink, field_tag::RAW_PATH, field_tag::BASE),
        Some((field_tag::ROOT, &b"/proc/self/fd/3"[..]))
    );
    assert_eq!(
        arg_base(&open, field_tag::RAW_PATH, field_tag::BASE),
        Some((field_tag::BASE, &b""[..]))
    );
}

#[test]
fn calls_that_follow_a_final_symlink_without_an_fd() {
    use monitor_common::syscall_nr as n;
    for nr in [
        n::TRUNCATE,
        n::CHMOD,
        n::FCHMODAT,
        n::CHOWN,
        n::UTIMES,
        n::SETXATTR,
    ] {
        assert!(follows_final_link(nr, 0), "{nr}");
    }
    for nr in [n::FCHOWNAT, n::UTIMENSAT, n::FCHMODAT2] {
        assert!(follows_final_link(nr, 0), "{nr}");
        assert!(!follows_final_link(nr, 0x100), "{nr} AT_SYMLINK_NOFOLLOW");
    }
    for nr in [n::LCHOWN, n::LSETXATTR, n::UNLINKAT, n::RENAMEAT2, n::LINK] {
        assert!(!follows_final_link(nr, 0), "{nr}");
    }
    assert!(follows_final_link(n::LINKAT, 0x400));
    assert!(!follows_final_link(n::LINKAT, 0));
}

/// chmod through a symlink: the target, read after the call, flagged.
#[test]
fn late_symlink_resolution_is_flagged() {
    let d = std::env::temp_dir().join(format!("abm-late-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("real")).unwrap();
    std::fs::write(d.join("real/f"), b"x").unwrap();
    std::os::unix::fs::symlink("real/f", d.join("link")).unwrap();
    // The kernel's walk of the directory: leaf first.
    let mut comps = Vec::new();
    let real_d = std::fs::canonicalize(&d).unwrap();
    for part in real_d.iter().rev().filter(|p| *p != "/") {
        comps.extend_from_slice(part.as_bytes());
        comps.push(0);
    }
    let fields = [
        f(field_tag::RAW_PATH, b"link"),
        f(field_tag::BASE, &comps),
        f(field_tag::ROOT, b""),
    ];
    let real = std::fs::canonicalize(d.join("real/f")).unwrap();
    let chmod = entry(
        EventKind::Chmod,
        monitor_common::syscall_nr::FCHMODAT,
        0,
        &fields,
    );
    let a = action_from_event(&chmod);
    assert_eq!(a.path.as_deref(), real.to_str());
    assert_eq!(a.raw_path.as_deref(), Some("link"));
    assert_eq!(a.path_issues, vec![PathIssue::SymlinkResolvedLate]);
    // lchown acts on the link itself: named as such, not flagged.
    let lchown = entry(
        EventKind::Chown,
        monitor_common::syscall_nr::LCHOWN,
        0,
        &fields,
    );
    let a = action_from_event(&lchown);
    assert!(a.path.as_deref().unwrap().ends_with("/link"));
    assert!(a.path_issues.is_empty());
    // The kernel's lookup at the call met no symlink (the link was
    // made since): the call's own path, nothing read late.
    use monitor_common::lookup as l;
    let mut plain = fields.to_vec();
    plain.push(lookup_field(
        field_tag::LOOKUP,
        (5, 1),
        (4, 1),
        l::FOUND | l::DIR_KNOWN,
    ));
    let chmod = entry(
        EventKind::Chmod,
        monitor_common::syscall_nr::FCHMODAT,
        0,
        &plain,
    );
    let a = action_from_event(&chmod);
    assert!(a.path.as_deref().unwrap().ends_with("/link"), "{a:?}");
    assert!(a.path_issues.is_empty(), "{a:?}");
    // It followed one: read late, as above.
    plain.pop();
    plain.push(lookup_field(
        field_tag::LOOKUP,
        (5, 1),
        (4, 1),
        l::FOUND | l::DIR_KNOWN | l::LINKS_FOLLOWED,
    ));
    let chmod = entry(
        EventKind::Chmod,
        monitor_common::syscall_nr::FCHMODAT,
        0,
        &plain,
    );
    assert_eq!(action_from_event(&chmod).path.as_deref(), real.to_str());
    std::fs::remove_dir_all(&d).unwrap();
}

/// The result record of an open names the file opened and its
/// identity; the entry's inexact path gives way to it.
#[test]
fn open_result_names_the_opened_file() {
    let mut a = Action {
        path: Some("/proc/99/fd/3".into()),
        path_issues: vec![PathIssue::ProcMagicLink],
        dir_dev: Some(1),
        dir_ino: Some(2),
        ..Default::default()
    };
    let fields = [
        f(field_tag::OPENED_PATH, b"f\0ws\0"),
        id_field(field_tag::OPENED_ID, 11, (8 << 20) | 2),
    ];
    apply_result(&mut a, &fields);
    assert_eq!(a.path.as_deref(), Some("/ws/f"));
    assert_eq!((a.dev, a.ino), (Some(libc::makedev(8, 2)), Some(11)));
    assert!(a.path_issues.is_empty());
    assert_eq!((a.dir_dev, a.dir_ino), (None, None));
    // In a container: the container view follows the new path.
    let mut a = Action {
        path: Some("/srv/c1/etc/link".into()),
        container_path: Some("/etc/link".into()),
        ..Default::default()
    };
    apply_result(
        &mut a,
        &[f(field_tag::OPENED_PATH, b"hosts\0etc\0c1\0srv\0")],
    );
    assert_eq!(a.path.as_deref(), Some("/srv/c1/etc/hosts"));
    assert_eq!(a.container_path.as_deref(), Some("/etc/hosts"));
    // Another mount namespace, or an inexact walk: identity only.
    let mut a = Action {
        path: Some("/x".into()),
        ..Default::default()
    };
    let mut walk = f(field_tag::OPENED_PATH, b"y\0");
    walk.flags = field_flags::DISCONNECTED;
    apply_result(&mut a, &[walk, id_field(field_tag::OPENED_ID, 3, 4)]);
    assert_eq!((a.path.as_deref(), a.ino), (Some("/x"), Some(3)));
    let ns = f(field_tag::MNT_NS, &5u64.to_ne_bytes());
    apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"y\0"), ns]);
    assert_eq!(a.path.as_deref(), Some("/x"));
    // No open result: nothing changes.
    apply_result(&mut a, &[]);
    assert_eq!(a.path.as_deref(), Some("/x"));
    assert!(!a.created_by_call);
    // The kernel's FMODE_CREATED: the open created the file.
    let created = f(field_tag::OPENED_CREATED, &(1u64 << 20).to_ne_bytes());
    apply_result(&mut a, &[f(field_tag::OPENED_PATH, b"y\0"), created]);
    assert!(a.created_by_call);
}

#[test]
fn paths_through_proc_links_of_any_process_are_recognised() {
    for p in [
        "/proc/self/fd/3",
        "/proc/123/cwd/x",
        "/proc/thread-self/root",
        "/proc/1/task/2/fd/0",
        "//proc/9/exe",
    ] {
        assert!(names_proc_link(p.as_bytes()), "{p}");
    }
    for p in [
        "/proc/meminfo",
        "/proc/1/status",
        "/tmp/proc/1/cwd",
        "/proc",
    ] {
        assert!(!names_proc_link(p.as_bytes()), "{p}");
    }
}
