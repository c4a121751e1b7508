//! Loading and attaching the kernel programs, and what this kernel allows.
use std::{fs, os::fd::AsRawFd, path::Path, sync::Mutex};

use aya::{
    maps::{HashMap, MapData, PerCpuArray, ProgramArray, RingBuf},
    programs::{BtfTracePoint, RawTracePoint},
    Btf, Ebpf, EbpfLoader,
};
use monitor_common::{LossCause, ReadFailure, ScopeEntry};

/// The kernel object built by build.rs (empty when built with AYA_BUILD_SKIP).
pub(crate) static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/monitor"));

/// Programs of the tracepoint backend and the raw tracepoints they attach to.
pub const TRACEPOINTS: [(&str, &str); 3] = [
    ("sys_enter", "sys_enter"),
    ("sched_process_fork", "sched_process_fork"),
    ("sched_process_exit", "sched_process_exit"),
];

/// The program attached as a BTF tracepoint (`tp_btf`), with its
/// tracepoint: `sys_exit` reads the syscall number from its typed `regs`
/// with a plain load, so the syscalls abm does not trace pay less.
pub const BTF_TRACEPOINT: (&str, &str) = ("sys_exit", "sys_exit");

/// Programs `sys_enter` reaches by tail call (slot, name): execve and
/// execveat, and ia32 calls in scope, so that other syscalls run one
/// program at entry.
pub const TAIL_CALLED: [(u32, &str); 2] = [(0, "sys_enter_exec"), (1, "sys_enter_compat")];

/// The BTF tracepoint (on `sys_exit`) that records read-only opens of
/// sensitive files. Loaded with the others, attached only by
/// [`super::sensitive::watch`] when the sensitive set is not empty.
pub const SENSITIVE_PROGRAM: &str = "sys_exit_open_sensitive";

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("this abm binary was built without its kernel programs (AYA_BUILD_SKIP); rebuild with `cargo xtask build`")]
    NoObject,
    #[error(
        "abm needs root (CAP_BPF and CAP_PERFMON) to load its kernel programs: run it with sudo"
    )]
    NotRoot,
    #[error("the kernel has no BTF (/sys/kernel/btf/vmlinux missing): abm needs a kernel built with CONFIG_DEBUG_INFO_BTF=y")]
    NoBtf,
    #[error("loading the kernel programs failed: {0} (see `abm doctor`)")]
    Load(#[source] aya::EbpfError),
    #[error("program {name}: {source} (see `abm doctor`)")]
    Program {
        name: &'static str,
        #[source]
        source: aya::programs::ProgramError,
    },
    #[error("program {SENSITIVE_PROGRAM} did not load: {0}")]
    SensitiveUnavailable(String),
    #[error("map {0} missing from the kernel object (daemon and kernel programs built from different sources?)")]
    MissingMap(&'static str),
    #[error("map {name}: {source}")]
    Map {
        name: &'static str,
        #[source]
        source: aya::maps::MapError,
    },
}

/// Load-time options.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Ring buffer size in bytes (power of two, multiple of the page size).
    pub ringbuf_bytes: u32,
    /// Whether cgroup scoping is used (enables the cgroup lookup in the kernel).
    pub watch_cgroups: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            ringbuf_bytes: 4 * 1024 * 1024,
            watch_cgroups: false,
        }
    }
}

/// The loaded and attached tracepoint backend.
pub struct Probes {
    pub ebpf: Ebpf,
    pub scope: HashMap<MapData, u32, ScopeEntry>,
    pub scope_cgroups: HashMap<MapData, u64, ScopeEntry>,
    pub losses: PerCpuArray<MapData, u64>,
    /// `ERRORS`: reads and helpers that failed where a program carried on
    /// with 0, per CPU, indexed by [`ReadFailure`].
    pub read_failures: PerCpuArray<MapData, u64>,
    pub events: Option<RingBuf<MapData>>,
    /// Log lines of the kernel programs (`aya-log-ebpf`), when the object
    /// has its log ring. Kept for the whole run: dropping it closes the
    /// ring, and later program loads then fail with a misleading EPERM.
    kernel_log: Option<Mutex<KernelLogger>>,
    scope_raw_fd: i32,
    /// `SYS_ENTER_TAIL`, held so that its slots stay filled.
    _tail: ProgramArray<MapData>,
    /// Why [`SENSITIVE_PROGRAM`] could not be loaded, if it could not: an
    /// optional capability, so the run goes on without it.
    pub sensitive_unavailable: Option<String>,
    /// Why records carry no object identity (the dentry hash table was not
    /// located), if they do not.
    pub identity_unavailable: Option<super::dcache::DcacheError>,
}

/// Checks that must pass before loading, each with a fix.
pub fn preflight() -> Result<(), ProbeError> {
    if OBJECT.is_empty() {
        return Err(ProbeError::NoObject);
    }
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(ProbeError::NotRoot);
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(ProbeError::NoBtf);
    }
    Ok(())
}

fn raise_memlock() {
    let rlim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK; harmless after.
    // SAFETY: setrlimit(2) reads the valid `rlim` struct.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlim) };
}

/// The mount namespace the kernel programs treat as the host's
/// (`HOST_MNT_NS`): pid 1's, else this process's; 0 if neither can be read.
/// Paths of processes in other mount namespaces are mapped to the host view
/// through tables the kernel captures at the time of the call
/// (`crate::pipeline::mounts`), and their records name the namespace.
pub fn host_mnt_ns() -> u32 {
    let ns_of = |p: &str| {
        use std::os::unix::fs::MetadataExt as _;
        fs::metadata(p).ok().map(|m| m.ino() as u32)
    };
    ns_of("/proc/1/ns/mnt")
        .or_else(|| ns_of("/proc/self/ns/mnt"))
        .unwrap_or(0)
}

impl Probes {
    pub fn load(opts: &ProbeOptions) -> Result<Probes, ProbeError> {
        preflight()?;
        raise_memlock();
        let watch = u32::from(opts.watch_cgroups);
        let host_mnt_ns = host_mnt_ns();
        let own_pid = std::process::id();
        let mut ebpf = EbpfLoader::new()
            .override_global("WATCH_CGROUPS", &watch, true)
            .override_global("HOST_MNT_NS", &host_mnt_ns, true)
            .override_global("CALIBRATE_TGID", &own_pid, true)
            .map_max_entries("EVENTS", opts.ringbuf_bytes)
            .load(OBJECT)
            .map_err(ProbeError::Load)?;
        let sensitive_unavailable;
        {
            // The loader parsed the kernel's BTF for its relocations and
            // dropped it; the BTF tracepoint needs it once more. Parsed
            // again rather than handed to the loader: `EbpfLoader::new`
            // parses it regardless, and two copies at once (some 25 MiB
            // each) would raise abm's peak RSS.
            // The loader's copy is freed but resident between blocks kept;
            // handed back first, so that this parse reuses pages rather
            // than adding its own to abm's peak.
            // SAFETY: malloc_trim only releases free heap memory.
            unsafe { libc::malloc_trim(0) };
            let btf = Btf::from_sys_fs().map_err(|_| ProbeError::NoBtf)?;
            let (name, tracepoint) = BTF_TRACEPOINT;
            let t0 = std::time::Instant::now();
            let p = btf_tracepoint(&mut ebpf, name)?;
            p.load(tracepoint, &btf)
                .map_err(|source| ProbeError::Program { name, source })?;
            log_load(name, t0, p.info().ok());
            let t0 = std::time::Instant::now();
            sensitive_unavailable = btf_tracepoint(&mut ebpf, SENSITIVE_PROGRAM)
                .and_then(|p| {
                    p.load("sys_exit", &btf)
                        .map_err(|source| ProbeError::Program {
                            name: SENSITIVE_PROGRAM,
                            source,
                        })?;
                    log_load(SENSITIVE_PROGRAM, t0, p.info().ok());
                    Ok(())
                })
                .err()
                .map(|e| e.to_string());
        }
        // The programs `sys_enter` tail-calls, loaded (not attached) and in
        // their slots before `sys_enter` is attached.
        let mut tail: ProgramArray<MapData> =
            take_map(&mut ebpf, "SYS_ENTER_TAIL", ProgramArray::try_from)?;
        for (index, name) in TAIL_CALLED {
            // ia32 calls recorded as their twins: where the verifier refuses
            // that program (its stack on older kernels), 32-bit calls go
            // unrecorded and the load is not stopped; the warning says so.
            let prog = match load_raw_tracepoint(&mut ebpf, name) {
                Ok(p) => p,
                Err(e) if name == "sys_enter_compat" => {
                    tracing::warn!("32-bit (ia32) calls will not be recorded: {e}");
                    continue;
                }
                Err(e) => return Err(e),
            };
            let fd = prog
                .fd()
                .map_err(|source| ProbeError::Program { name, source })?;
            tail.set(index, fd, 0).map_err(|source| ProbeError::Map {
                name: "SYS_ENTER_TAIL",
                source,
            })?;
        }
        // The dentry-cache lookup of path arguments; without it records
        // carry no object identity and say so.
        let identity_unavailable = super::dcache::locate(&mut ebpf).err();
        if let Some(e) = &identity_unavailable {
            tracing::warn!("object identities off: the dentry hash table was not located: {e}");
        }
        for (name, tracepoint) in TRACEPOINTS {
            let prog = load_raw_tracepoint(&mut ebpf, name)?;
            prog.attach(tracepoint)
                .map_err(|source| ProbeError::Program { name, source })?;
        }
        let name = BTF_TRACEPOINT.0;
        btf_tracepoint(&mut ebpf, name)?
            .attach()
            .map_err(|source| ProbeError::Program { name, source })?;
        let scope_map = ebpf
            .take_map("SCOPE")
            .ok_or(ProbeError::MissingMap("SCOPE"))?;
        let scope_raw_fd = match &scope_map {
            aya::maps::Map::HashMap(d) => d.fd().as_fd().as_raw_fd(),
            _ => -1,
        };
        let scope = HashMap::try_from(scope_map).map_err(|source| ProbeError::Map {
            name: "SCOPE",
            source,
        })?;
        let scope_cgroups = take_map(&mut ebpf, "SCOPE_CGROUPS", HashMap::try_from)?;
        let kernel_log = kernel_logger(&mut ebpf);
        let losses = take_map(&mut ebpf, "LOSSES", PerCpuArray::try_from)?;
        let read_failures = take_map(&mut ebpf, "ERRORS", PerCpuArray::try_from)?;
        let events = Some(take_map(&mut ebpf, "EVENTS", RingBuf::try_from)?);
        // Loading parsed the kernel's BTF: some 25 MiB of small allocations,
        // freed now but left resident between the ones kept. Hand those
        // pages back, or they count in abm's RSS for the whole run.
        // SAFETY: malloc_trim only releases free heap memory.
        unsafe { libc::malloc_trim(0) };
        Ok(Probes {
            ebpf,
            scope,
            scope_cgroups,
            losses,
            read_failures,
            kernel_log,
            events,
            scope_raw_fd,
            _tail: tail,
            sensitive_unavailable,
            identity_unavailable,
        })
    }

    /// Attaches the sensitive-read program: [`super::sensitive::watch`]
    /// does when the set is not empty, `abm doctor` to check it.
    pub fn attach_sensitive(&mut self) -> Result<(), ProbeError> {
        if let Some(why) = &self.sensitive_unavailable {
            return Err(ProbeError::SensitiveUnavailable(why.clone()));
        }
        btf_tracepoint(&mut self.ebpf, SENSITIVE_PROGRAM)?
            .attach()
            .map(drop)
            .map_err(|source| ProbeError::Program {
                name: SENSITIVE_PROGRAM,
                source,
            })
    }

    /// Raw fd of the SCOPE map, for a child to add itself before exec.
    pub fn scope_fd(&self) -> i32 {
        self.scope_raw_fd
    }

    pub fn add_pid(&mut self, pid: u32, target: u32) -> Result<(), ProbeError> {
        self.scope
            .insert(pid, ScopeEntry { target, _pad: 0 }, 0)
            .map_err(|source| ProbeError::Map {
                name: "SCOPE",
                source,
            })
    }

    pub fn add_cgroup(&mut self, cgroup_id: u64, target: u32) -> Result<(), ProbeError> {
        self.scope_cgroups
            .insert(cgroup_id, ScopeEntry { target, _pad: 0 }, 0)
            .map_err(|source| ProbeError::Map {
                name: "SCOPE_CGROUPS",
                source,
            })
    }

    pub fn remove_cgroup(&mut self, cgroup_id: u64) {
        let _ = self.scope_cgroups.remove(&cgroup_id);
    }

    /// Pids currently in scope.
    pub fn scoped_pids(&self) -> Vec<u32> {
        self.scope.keys().filter_map(Result::ok).collect()
    }

    /// Loss counters: `[cause][cpu]`.
    /// Hands the kernel programs' pending log lines to the `log` crate,
    /// which the subscriber `cli` installs forwards to `tracing`.
    pub fn flush_kernel_log(&self) {
        if let Some(l) = &self.kernel_log {
            l.lock().unwrap_or_else(|e| e.into_inner()).flush();
        }
    }

    /// The kernel's per-CPU counters, in [`crate::trace::Cause::KERNEL`]
    /// order: `LOSSES` by [`LossCause`], then `ERRORS` by [`ReadFailure`].
    pub fn loss_counters(&self) -> Vec<Vec<u64>> {
        let per_cpu = |map: &PerCpuArray<MapData, u64>, i: u32| -> Vec<u64> {
            map.get(&i, 0)
                .map(|v| v.iter().copied().collect())
                .unwrap_or_default()
        };
        LossCause::ALL
            .iter()
            .map(|c| per_cpu(&self.losses, *c as u32))
            .chain(
                ReadFailure::ALL
                    .iter()
                    .map(|f| per_cpu(&self.read_failures, *f as u32)),
            )
            .collect()
    }
}

use std::os::fd::AsFd as _;

type KernelLogger = aya_log::EbpfLogger<&'static dyn log::Log>;

/// The reader of the kernel programs' log ring (`AYA_LOGS`), or `None`
/// when the object logs nothing (it then has no such map) or the ring
/// cannot be opened: a missing log never fails the run, and says so.
fn kernel_logger(ebpf: &mut Ebpf) -> Option<Mutex<KernelLogger>> {
    match aya_log::EbpfLogger::init(ebpf) {
        Ok(l) => Some(Mutex::new(l)),
        Err(aya_log::Error::MapNotFound) => None,
        Err(e) => {
            tracing::warn!("kernel log lines will not be shown: {e}");
            None
        }
    }
}

fn take_map<T>(
    ebpf: &mut Ebpf,
    name: &'static str,
    conv: impl FnOnce(aya::maps::Map) -> Result<T, aya::maps::MapError>,
) -> Result<T, ProbeError> {
    let map = ebpf.take_map(name).ok_or(ProbeError::MissingMap(name))?;
    conv(map).map_err(|source| ProbeError::Map { name, source })
}

/// Adds the calling process to the SCOPE map through an inherited map fd.
/// Async-signal-safe (one syscall): used between fork and exec.
pub fn self_into_scope(map_fd: i32, target: u32) -> std::io::Result<()> {
    use crate::core::sys::{bpf_map_elem, MapElem};
    // SAFETY: getpid(2) has no arguments and cannot fail.
    let pid: u32 = unsafe { libc::getpid() } as u32;
    let entry = ScopeEntry { target, _pad: 0 };
    // SAFETY: the key and value are live locals of the scope map's key
    // (u32) and value (`ScopeEntry`) types.
    unsafe {
        bpf_map_elem(
            MapElem::Update,
            map_fd,
            &pid as *const u32 as u64,
            &entry as *const ScopeEntry as u64,
        )
    }
}

/// One line of `abm doctor`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Capability {
    pub name: &'static str,
    pub available: bool,
    pub detail: String,
}

impl Capability {
    /// A line from a check's answer: the detail on success, the reason on
    /// failure.
    pub fn from_result(
        name: &'static str,
        r: Result<String, impl std::fmt::Display>,
    ) -> Capability {
        let (available, detail) = match r {
            Ok(detail) => (true, detail),
            Err(why) => (false, why.to_string()),
        };
        Capability {
            name,
            available,
            detail,
        }
    }
}

/// What this kernel supports, with reasons.
pub fn capabilities() -> Vec<Capability> {
    let mut out = Vec::new();
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    out.push(Capability {
        name: "root",
        available: root,
        detail: if root {
            "running as root".into()
        } else {
            "not root: loading BPF needs CAP_BPF+CAP_PERFMON".into()
        },
    });
    let btf = Path::new("/sys/kernel/btf/vmlinux").exists();
    out.push(Capability {
        name: "btf",
        available: btf,
        detail: if btf {
            "/sys/kernel/btf/vmlinux present".into()
        } else {
            "no kernel BTF".into()
        },
    });
    out.push(Capability {
        name: "kernel_object",
        available: !OBJECT.is_empty(),
        detail: if OBJECT.is_empty() {
            "built with AYA_BUILD_SKIP".into()
        } else {
            format!("{} bytes embedded", OBJECT.len())
        },
    });
    // The programs are loaded and attached for real, as `abm run` and `abm
    // daemon` do, so that each line here is what a run then finds.
    let mut probes = if root && btf && !OBJECT.is_empty() {
        Probes::load(&ProbeOptions {
            ringbuf_bytes: 4096 * 16,
            watch_cgroups: false,
        })
        .map_err(|e| e.to_string())
    } else {
        Err("needs root, BTF and the kernel object".to_owned())
    };
    let line = Capability::from_result;
    out.push(line(
        "tracepoint_backend",
        probes.as_ref().map(|_| {
            "raw tracepoints sys_enter, sched_process_fork, sched_process_exit and the BTF tracepoint sys_exit load and attach (no tracefs or debugfs needed)".to_owned()
        }).map_err(Clone::clone),
    ));
    let needs_backend = |e: &String| format!("needs the tracepoint backend: {e}");
    out.push(line(
        "sensitive_reads",
        match &mut probes {
            Ok(p) => p.attach_sensitive().map(|()| {
                "reads of credentials and keys are recorded (BTF tracepoint sys_exit_open_sensitive attaches)".to_owned()
            }).map_err(|e| format!("{e}: `abm run` records no sensitive reads and says so; `--sensitive` fails")),
            Err(e) => Err(needs_backend(e)),
        },
    ));
    out.push(line(
        "object_identity",
        match &probes {
            Ok(p) => match &p.identity_unavailable {
                None => Ok("records carry the inode and device of the object acted on (dentry hash table located)".to_owned()),
                Some(e) => Err(format!("records carry no object identity: {e}")),
            },
            Err(e) => Err(needs_backend(e)),
        },
    ));
    out.push(line(
        "container_following",
        match &mut probes {
            Ok(p) => super::cgroup::attach_follow(p)
                .map(|()| "raw tracepoint cgroup_mkdir attaches: containers a watched command asks for are followed".to_owned())
                .map_err(|e| format!("{e:#}: run with --follow-containers=off")),
            Err(e) => Err(needs_backend(e)),
        },
    ));
    out.push(line(
        "cgroup_v2",
        super::cgroup::Hierarchy::detect()
            .map(|h| format!("mounted at {} (abm daemon's container and cgroup targets, abm run --cgroup)", h.mount.display()))
            .map_err(|e| format!("{e}: mount one with `mount -t cgroup2 none /sys/fs/cgroup` (abm run without --cgroup does not need it)")),
    ));
    drop(probes);
    let lsm_list = lsm_list();
    let bpf_lsm = lsm_list
        .as_deref()
        .is_some_and(|l| l.split(',').any(|x| x == "bpf"));
    out.push(Capability {
        name: "bpf_lsm_listed",
        available: bpf_lsm,
        detail: match &lsm_list {
            Some(l) => format!("active LSMs: {l}"),
            None => "securityfs not readable".into(),
        },
    });
    out
}

/// The active LSM list (mounting securityfs if needed).
pub fn lsm_list() -> Option<String> {
    let p = "/sys/kernel/security/lsm";
    if !Path::new(p).exists() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "securityfs", "securityfs", "/sys/kernel/security"])
            .status();
    }
    fs::read_to_string(p).ok().map(|s| s.trim().to_owned())
}

/// The BTF tracepoint program `name` of the object.
fn btf_tracepoint<'a>(
    ebpf: &'a mut Ebpf,
    name: &'static str,
) -> Result<&'a mut BtfTracePoint, ProbeError> {
    ebpf.program_mut(name)
        .ok_or(ProbeError::MissingMap(name))?
        .try_into()
        .map_err(|source| ProbeError::Program { name, source })
}

/// Loads the raw tracepoint program `name` of the object (not attached).
fn load_raw_tracepoint<'a>(
    ebpf: &'a mut Ebpf,
    name: &'static str,
) -> Result<&'a mut RawTracePoint, ProbeError> {
    let prog: &mut RawTracePoint = ebpf
        .program_mut(name)
        .ok_or(ProbeError::MissingMap(name))?
        .try_into()
        .map_err(|source| ProbeError::Program { name, source })?;
    let t0 = std::time::Instant::now();
    prog.load()
        .map_err(|source| ProbeError::Program { name, source })?;
    log_load(name, t0, prog.info().ok());
    Ok(prog)
}

/// What loading one program cost: the verifier's time is most of abm's
/// start-up (`abm --log monitor=debug run ...`).
fn log_load(name: &str, t0: std::time::Instant, info: Option<aya::programs::ProgramInfo>) {
    tracing::debug!(
        program = name,
        ms = t0.elapsed().as_secs_f64() * 1000.0,
        verified_insns = info.and_then(|i| i.verified_instruction_count()),
        "program loaded"
    );
}
