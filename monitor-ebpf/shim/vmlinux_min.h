/* Minimal kernel type declarations for the CO-RE shim.
 *
 * Only the fields the shim reads are declared. `preserve_access_index`
 * makes clang emit CO-RE relocations, which aya resolves against the running
 * kernel's BTF at load time, so field offsets are never hard-coded for one
 * kernel (the same object works on 6.1, 6.12 and 6.18). */
#pragma once

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;
typedef __u32 u32;
typedef __u64 u64;
typedef int pid_t;
typedef _Bool bool;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u64 __be64;

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct qstr {
	union {
		struct {
			u32 hash;
			u32 len;
		};
		u64 hash_len;
	};
	const unsigned char *name;
};

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
};

struct vfsmount {
	struct dentry *mnt_root;
};

/* fs/mount.h: `struct vfsmount mnt` is embedded in `struct mount`. */
struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};

struct file {
	struct path f_path;
};

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	struct fdtable *fdt;
};

struct fs_struct {
	struct path root;
	struct path pwd;
};

struct task_struct {
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct fs_struct *fs;
	struct files_struct *files;
	int exit_code;
};

#pragma clang attribute pop

/* ---- BPF LSM backend (monitor-ebpf/src/probes/lsm/) ----
 * Extra fields are declared on `___lsm` flavours of the structs above: CO-RE
 * ignores the `___suffix` when matching kernel types, so these relocate
 * against the real `struct dentry`, `struct file`, ... */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct super_block {
	u32 s_dev; /* dev_t */
};

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
};

struct dentry___lsm {
	struct inode *d_inode;
};

struct file___lsm {
	unsigned int f_flags;
	unsigned int f_mode; /* fmode_t */
	struct path f_path;
};

struct linux_binprm {
	struct file *file;
};

struct inode___imode {
	unsigned short i_mode; /* umode_t */
};

struct file___imode {
	struct inode___imode *f_inode;
};

struct inode___rdev {
	u32 i_rdev; /* dev_t */
};

struct file___rdev {
	struct inode___rdev *f_inode;
};

struct task_struct___lsm {
	unsigned int flags; /* PF_* (include/linux/sched.h) */
};

#pragma clang attribute pop

/* ---- Compat syscalls and thread-group lifetime (probes/syscalls.rs,
 * probes/lifecycle.rs): `___trust` flavours relocate against the real
 * `struct task_struct`. */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct thread_info {
	u32 status; /* TS_COMPAT (arch/x86/include/asm/thread_info.h) */
};

typedef struct {
	int counter;
} atomic_t___trust;

struct signal_struct {
	atomic_t___trust live; /* threads not yet past do_exit()'s decrement */
};

struct mm_struct___trust {
	atomic_t___trust mm_users; /* users of the address space: threads, CLONE_VM children */
};

struct task_struct___trust {
	struct thread_info thread_info;
	struct signal_struct *signal;
	struct mm_struct___trust *mm;
};

#pragma clang attribute pop

/* ---- Mount namespaces (monitor-ebpf/src/probes/mountns.rs) ---- */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct list_head {
	struct list_head *next;
	struct list_head *prev;
};

struct ns_common {
	unsigned int inum;
};

struct mnt_namespace {
	struct ns_common ns;
	struct mount *root;
	u64 event;
};

struct nsproxy {
	struct mnt_namespace *mnt_ns;
};

struct task_struct___mns {
	struct nsproxy *nsproxy;
};

struct vfsmount___mns {
	struct super_block *mnt_sb;
};

struct mount___mns {
	struct list_head mnt_mounts;
	struct list_head mnt_child;
	int mnt_id;
};

#pragma clang attribute pop

/* ---- Container cgroups (monitor-ebpf/src/probes/cgroups.rs) ---- */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct kernfs_node {
	u64 id;
};

struct cgroup_root {
	int hierarchy_id;
};

struct cgroup {
	struct kernfs_node *kn;
	struct cgroup_root *root;
	int level;
};

#pragma clang attribute pop

/* ---- object identity (src/lookup.rs): `___obj` flavours relocate against
 * the real `struct dentry`, `struct inode`. */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct hlist_bl_node {
	struct hlist_bl_node *next;
	struct hlist_bl_node **pprev;
};

struct dentry_operations {
	int (*d_hash)(const struct dentry *, struct qstr *);
	int (*d_compare)(const struct dentry *, unsigned int, const char *, const struct qstr *);
};

struct inode___obj {
	unsigned short i_mode; /* umode_t */
	char *i_link;          /* a symlink's target, when kept in memory */
};

/* The inode change time, in the three layouts it has had: a timespec64
 * `i_ctime` (to 6.5), `__i_ctime` (6.6 to 6.10), and `i_ctime_sec` +
 * `i_ctime_nsec` (6.11 on, whose nsec field carries a flag in bit 31 from
 * 6.13). Only the layout the running kernel has is relocated. */
struct timespec64___ct {
	long long tv_sec;
	long tv_nsec;
};

struct super_block___ct {
	u32 s_time_gran;
};

struct inode___ct61 {
	struct timespec64___ct i_ctime;
	struct super_block___ct *i_sb;
};

struct inode___ct66 {
	struct timespec64___ct __i_ctime;
};

struct inode___ct611 {
	long long i_ctime_sec;
	unsigned int i_ctime_nsec;
};

struct dentry___obj {
	unsigned int d_flags;
	struct hlist_bl_node d_hash;
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode___obj *d_inode;
	const struct dentry_operations *d_op;
};

#pragma clang attribute pop
