//! CO-RE accessors implemented in `shim/shim.c` (see there). All take and
//! return raw kernel pointers; NULL in gives NULL/0 out.
use core::ffi::c_void;

// SAFETY: the C shim's accessors take kernel pointers and read through CO-RE relocated bpf_probe_read_kernel; a bad pointer yields 0, never a fault.
unsafe extern "C" {
    pub fn shim_task_pid(t: *const c_void) -> u32;
    pub fn shim_task_tgid(t: *const c_void) -> u32;
    pub fn shim_task_ppid(t: *const c_void) -> u32;
    pub fn shim_task_exit_code(t: *const c_void) -> i32;
    pub fn shim_task_pwd_dentry(t: *const c_void) -> *const c_void;
    pub fn shim_task_pwd_mnt(t: *const c_void) -> *const c_void;
    pub fn shim_task_root_dentry(t: *const c_void) -> *const c_void;
    pub fn shim_task_root_mnt(t: *const c_void) -> *const c_void;
    pub fn shim_task_fd_file(t: *const c_void, fd: i32) -> *const c_void;
    pub fn shim_file_dentry(f: *const c_void) -> *const c_void;
    pub fn shim_file_mnt(f: *const c_void) -> *const c_void;
    pub fn shim_file_fmode(f: *const c_void) -> u32;
    pub fn shim_dentry_parent(d: *const c_void) -> *const c_void;
    pub fn shim_dentry_name(d: *const c_void) -> *const u8;
    pub fn shim_mnt_root(m: *const c_void) -> *const c_void;
    pub fn shim_mnt_parent(m: *const c_void) -> *const c_void;
    pub fn shim_mnt_mountpoint(m: *const c_void) -> *const c_void;
    pub fn shim_task_in_compat(t: *const c_void) -> u32;
    pub fn shim_task_group_live(t: *const c_void) -> i32;
    pub fn shim_task_fs(t: *const c_void) -> *const c_void;
    pub fn shim_layout_fs() -> u64;
    pub fn shim_layout_dentry() -> u64;
}

/* bprm */
// SAFETY: as above: CO-RE relocated bpf_probe_read_kernel reads; a bad pointer yields 0.
unsafe extern "C" {
    pub fn shim_bprm_argc(b: *const c_void) -> i32;
    pub fn shim_bprm_filename(b: *const c_void) -> *const u8;
    pub fn shim_task_start_stack(t: *const c_void) -> u64;
}
