//! Locating the kernel's dentry hash table, so that the kernel programs can
//! look a path argument up in the dentry cache at syscall entry and record
//! the identity of the object itself (`monitor-ebpf/src/lookup.rs`).
//!
//! `dentry_hashtable` and `d_hash_shift` (fs/dcache.c) are static kernel
//! variables that `/proc/kallsyms` lists only with `CONFIG_KALLSYMS_ALL`.
//! They are found instead from dentries abm creates: a new dentry is added
//! at the head of its hash chain, so its `d_hash.pprev` is the address of
//! its bucket, `table + 8 * (hash >> shift)`. With the hashes of a dozen
//! fresh names, one `shift` makes every bucket address agree on one
//! `table`. The same samples check that the kernel's name hash is the one
//! the programs compute (`monitor_common::full_name_hash`), and a mount
//! point (`/proc`'s) that the mount-point flag is the bit the programs
//! test (and which bit that is). When any check fails the lookup stays off and records say so
//! (`identity_gap: "off"`).
use std::{
    ffi::CString,
    fs,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

use aya::{
    maps::{Array, HashMap},
    programs::RawTracePoint,
    Ebpf,
};
use monitor_common::{full_name_hash, DcacheConfig, DcacheSample};

/// Why the dentry hash table was not located (records then carry no
/// object identity).
#[derive(Debug, thiserror::Error)]
pub enum DcacheError {
    #[error("cannot create {}: {error}", .path.display())]
    Create {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot open /proc")]
    Proc,
    #[error("{0} missing from the kernel object")]
    Missing(&'static str),
    #[error(transparent)]
    Program(#[from] aya::programs::ProgramError),
    #[error(transparent)]
    Map(#[from] aya::maps::MapError),
    #[error("no sample for fd {fd}: {error}")]
    NoSample { fd: i32, error: aya::maps::MapError },
    #[error("only {0} dentries sampled")]
    TooFew(usize),
    #[error("this kernel hashes dentry names differently (name {name:?}: hash {hash:#x})")]
    NameHash { name: String, hash: u32 },
    #[error(
        "no single mount-point flag: /proc's mount point has d_flags {mountpoint:#x}, a plain file {file:#x}"
    )]
    MountFlag { mountpoint: u64, file: u64 },
    #[error("the samples fit more than one hash table size")]
    Ambiguous,
    #[error("the sampled dentries agree on no hash table")]
    NoTable,
}

/// Fresh names sampled.
const SAMPLES: usize = 12;
/// Where `DCACHE_MOUNTED` has been: 0x10000 on 6.1 and 6.12, one bit
/// lower after the flags were renumbered (6.18).
const MOUNTED_CANDIDATES: [u64; 2] = [0x10000, 0x8000];
/// Lowest address of the x86_64 kernel half with 5-level paging (LA57,
/// where the direct map starts at 0xff11_0000_0000_0000); with 4-level
/// paging kernel addresses start higher, at 0xffff_8000_0000_0000.
const KERNEL_HALF: u64 = 0xff00_0000_0000_0000;

/// Locates the table and gives it to the programs (`DCACHE`). The program
/// `dcache_sample` is attached only while abm samples its own calls.
pub fn locate(ebpf: &mut Ebpf) -> Result<DcacheConfig, DcacheError> {
    let dir = std::env::temp_dir().join(format!(
        "abm-dcache-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ));
    if let Err(error) = fs::create_dir(&dir) {
        return Err(DcacheError::Create { path: dir, error });
    }
    let sampled = sample(ebpf, &dir);
    let _ = fs::remove_dir_all(&dir);
    let (names, samples, mountpoint) = sampled?;
    let mut cfg = solve(&names, &samples, &mountpoint)?;
    cfg.real_offset = real_offset();
    let mut map: Array<_, DcacheConfig> = Array::try_from(
        ebpf.map_mut("DCACHE")
            .ok_or(DcacheError::Missing("map DCACHE"))?,
    )?;
    map.set(0, cfg, 0)?;
    Ok(cfg)
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` now, in ns (two's complement).
fn real_offset() -> u64 {
    let now = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec to the pointer given.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec)
    };
    now(libc::CLOCK_REALTIME).wrapping_sub(now(libc::CLOCK_MONOTONIC)) as u64
}

type Sampled = (Vec<Vec<u8>>, Vec<DcacheSample>, DcacheSample);

fn sample(ebpf: &mut Ebpf, dir: &Path) -> Result<Sampled, DcacheError> {
    let prog: &mut RawTracePoint = ebpf
        .program_mut("dcache_sample")
        .ok_or(DcacheError::Missing("program dcache_sample"))?
        .try_into()?;
    prog.load()?;
    let link = prog.attach("sys_enter")?;
    let mut names = Vec::new();
    let mut fds = Vec::new();
    let mut err = None;
    for i in 0..SAMPLES {
        // Names of several lengths: whole words and a partial last word.
        let name = format!("{}{}", "s".repeat(i % 9), i).into_bytes();
        let path: PathBuf = dir.join(std::ffi::OsStr::from_bytes(&name));
        match fs::File::create(&path) {
            Ok(f) => {
                fds.push(OwnedFd::from(f));
                names.push(name);
            }
            Err(error) => err = Some(DcacheError::Create { path, error }),
        }
    }
    let proc_fd = open_path("/proc");
    for fd in fds
        .iter()
        .map(AsRawFd::as_raw_fd)
        .chain(proc_fd.as_ref().map(AsRawFd::as_raw_fd))
    {
        // SAFETY: fstatfs(2) writes into the zeroed struct it is given.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `fd` is open.
        unsafe { libc::fstatfs(fd, &mut st) };
    }
    let _ = ebpf
        .program_mut("dcache_sample")
        .and_then(|p| <&mut RawTracePoint>::try_from(p).ok())
        .map(|p| p.detach(link));
    if let Some(e) = err {
        return Err(e);
    }
    let map: HashMap<_, u32, DcacheSample> = HashMap::try_from(
        ebpf.map("DCACHE_SAMPLES")
            .ok_or(DcacheError::Missing("map DCACHE_SAMPLES"))?,
    )?;
    let get = |fd: i32| {
        map.get(&(fd as u32), 0)
            .map_err(|error| DcacheError::NoSample { fd, error })
    };
    let samples = fds
        .iter()
        .map(|f| get(f.as_raw_fd()))
        .collect::<Result<Vec<_>, _>>()?;
    let proc_fd = proc_fd.ok_or(DcacheError::Proc)?;
    let mountpoint = get(proc_fd.as_raw_fd())?;
    Ok((names, samples, mountpoint))
}

fn open_path(p: &str) -> Option<OwnedFd> {
    let c = CString::new(p).ok()?;
    // SAFETY: open(2) of a NUL-terminated path; the fd is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a fresh fd this function owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The table and shift the samples agree on, after checking the name hash
/// and the mount-point flag.
pub fn solve(
    names: &[Vec<u8>],
    samples: &[DcacheSample],
    mountpoint: &DcacheSample,
) -> Result<DcacheConfig, DcacheError> {
    if samples.len() < 8 || samples.len() != names.len() {
        return Err(DcacheError::TooFew(samples.len()));
    }
    for (name, s) in names.iter().zip(samples) {
        let hash = s.hash_len as u32;
        let len = s.hash_len >> 32;
        if len != name.len() as u64 || full_name_hash(s.parent, name) != hash {
            return Err(DcacheError::NameHash {
                name: String::from_utf8_lossy(name).into_owned(),
                hash,
            });
        }
    }
    // The candidate bit set on the mount point and on no plain file.
    let fits: Vec<u64> = MOUNTED_CANDIDATES
        .into_iter()
        .filter(|b| {
            mountpoint.mountpoint_flags & b != 0 && samples.iter().all(|s| s.flags & b == 0)
        })
        .collect();
    let [mounted] = fits[..] else {
        return Err(DcacheError::MountFlag {
            mountpoint: mountpoint.mountpoint_flags,
            file: samples[0].flags,
        });
    };
    let mut best: Option<(usize, DcacheConfig)> = None;
    let mut ties = 0;
    for shift in 1..32u64 {
        let mut tables: Vec<u64> = samples
            .iter()
            .map(|s| {
                s.pprev
                    .wrapping_sub(8 * ((s.hash_len as u32 as u64) >> shift))
            })
            .collect();
        tables.sort_unstable();
        let (mut run, mut top, mut at) = (0, 0, 0);
        for (i, t) in tables.iter().enumerate() {
            run = if i > 0 && tables[i - 1] == *t {
                run + 1
            } else {
                1
            };
            if run > top {
                (top, at) = (run, *t);
            }
        }
        // A few samples may have been pushed down their chain since.
        if top + 2 >= samples.len() && at >= KERNEL_HALF {
            match best {
                Some((n, _)) if n > top => {}
                Some((n, _)) if n == top => ties += 1,
                _ => {
                    best = Some((
                        top,
                        DcacheConfig {
                            table: at,
                            shift,
                            mounted,
                            real_offset: 0,
                        },
                    ));
                    ties = 0;
                }
            }
        }
    }
    match best {
        Some((_, cfg)) if ties == 0 => Ok(cfg),
        Some(_) => Err(DcacheError::Ambiguous),
        None => Err(DcacheError::NoTable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The samples of fresh files `names` in directory `parent`, each at the
    /// head of its chain of a table at `table` with `shift`.
    fn samples_of(table: u64, shift: u64, parent: u64, names: &[Vec<u8>]) -> Vec<DcacheSample> {
        names
            .iter()
            .map(|name| {
                let h = full_name_hash(parent, name) as u64;
                DcacheSample {
                    dentry: 0xffff_9000_0000_1000,
                    parent,
                    hash_len: ((name.len() as u64) << 32) | h,
                    pprev: table + 8 * (h >> shift),
                    flags: 0x0020_0000,
                    mountpoint_flags: 0,
                }
            })
            .collect()
    }

    /// The sample of a mount point whose `d_flags` are `flags`.
    fn mount_point(flags: u64) -> DcacheSample {
        DcacheSample {
            mountpoint_flags: flags,
            ..Default::default()
        }
    }

    #[test]
    fn solves_table_and_shift_and_tolerates_a_moved_sample() {
        let (table, shift, parent) = (0xffff_a000_1234_0000u64, 10u64, 0xffff_8880_0badu64 << 8);
        let names: Vec<Vec<u8>> = (0..12)
            .map(|i| format!("{}{i}", "s".repeat(i % 9)).into_bytes())
            .collect();
        let mut samples = samples_of(table, shift, parent, &names);
        // One dentry no longer first in its chain: pprev inside another dentry.
        samples[3].pprev = 0xffff_8881_0000_0048;
        let mp = mount_point(0x8000 | 0x0020_0000);
        let cfg = solve(&names, &samples, &mp).unwrap();
        assert_eq!((cfg.table, cfg.shift, cfg.mounted), (table, shift, 0x8000));
    }

    #[test]
    fn solves_a_table_in_a_five_level_direct_map() {
        // With LA57 the direct map starts at 0xff11_0000_0000_0000, below
        // the 4-level kernel half.
        let (table, shift, parent) = (0xff11_0000_0345_0000u64, 16u64, 0xff11_0000_0777_0000u64);
        let names: Vec<Vec<u8>> = (0..12).map(|i| format!("f{i}").into_bytes()).collect();
        let samples = samples_of(table, shift, parent, &names);
        let mp = mount_point(0x10000);
        let cfg = solve(&names, &samples, &mp).unwrap();
        assert_eq!((cfg.table, cfg.shift, cfg.mounted), (table, shift, 0x10000));
    }

    #[test]
    fn refuses_a_different_hash_or_mount_flag() {
        let (table, shift, parent) = (0xffff_a000_1234_0000u64, 12u64, 0xffff_8880_0000_1000u64);
        let names: Vec<Vec<u8>> = (0..12).map(|i| format!("n{i}").into_bytes()).collect();
        let mut samples = samples_of(table, shift, parent, &names);
        let mp = mount_point(0x10000);
        assert!(solve(&names, &samples, &DcacheSample::default())
            .unwrap_err()
            .to_string()
            .contains("mount-point"));
        // Both candidates set on the mount point: ambiguous.
        let both = mount_point(0x18000);
        assert!(solve(&names, &samples, &both)
            .unwrap_err()
            .to_string()
            .contains("mount-point"));
        samples[0].hash_len ^= 1;
        assert!(solve(&names, &samples, &mp)
            .unwrap_err()
            .to_string()
            .contains("hashes dentry names differently"));
    }
}
