// SPDX-License-Identifier: GPL-2.0 OR MIT
/* CO-RE accessors for kernel structures, linked into the Rust programs by
 * bpf-linker. Each accessor is a single relocatable read; the Rust side does
 * the bounded loops. Every function tolerates NULL input and returns 0/NULL
 * on failure (BPF_CORE_READ uses bpf_probe_read_kernel, which zero-fills). */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define SHIM __attribute__((always_inline)) inline

u32 shim_task_pid(struct task_struct *t) { return t ? BPF_CORE_READ(t, pid) : 0; }
u32 shim_task_tgid(struct task_struct *t) { return t ? BPF_CORE_READ(t, tgid) : 0; }
u32 shim_task_ppid(struct task_struct *t) { return t ? BPF_CORE_READ(t, real_parent, tgid) : 0; }
/* The wait status do_exit() stored before sched_process_exit fires
 * (kernel/exit.c): exit code << 8, or the killing signal. */
int shim_task_exit_code(struct task_struct *t) { return t ? BPF_CORE_READ(t, exit_code) : 0; }

void *shim_task_pwd_dentry(struct task_struct *t) { return t ? BPF_CORE_READ(t, fs, pwd.dentry) : 0; }
void *shim_task_pwd_mnt(struct task_struct *t) { return t ? BPF_CORE_READ(t, fs, pwd.mnt) : 0; }
void *shim_task_root_dentry(struct task_struct *t) { return t ? BPF_CORE_READ(t, fs, root.dentry) : 0; }
void *shim_task_root_mnt(struct task_struct *t) { return t ? BPF_CORE_READ(t, fs, root.mnt) : 0; }

/* task->files->fdt->fd[fd], bounds-checked against max_fds
 * (include/linux/fdtable.h). Not RCU-protected: a racing close() can make
 * this return a stale pointer, which the probe reads tolerate. */
void *shim_task_fd_file(struct task_struct *t, int fd)
{
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = 0;
	unsigned int max;

	if (!t || fd < 0)
		return 0;
	fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt)
		return 0;
	max = BPF_CORE_READ(fdt, max_fds);
	if ((unsigned int)fd >= max)
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (!fds)
		return 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

void *shim_file_dentry(struct file *f) { return f ? BPF_CORE_READ(f, f_path.dentry) : 0; }
void *shim_file_mnt(struct file *f) { return f ? BPF_CORE_READ(f, f_path.mnt) : 0; }

void *shim_dentry_parent(struct dentry *d) { return d ? BPF_CORE_READ(d, d_parent) : 0; }
const void *shim_dentry_name(struct dentry *d) { return d ? BPF_CORE_READ(d, d_name.name) : 0; }
u32 shim_dentry_name_len(struct dentry *d) { return d ? BPF_CORE_READ(d, d_name.len) : 0; }

void *shim_mnt_root(struct vfsmount *m) { return m ? BPF_CORE_READ(m, mnt_root) : 0; }

/* Layouts for fused reads. One bpf_probe_read_kernel of a few adjacent
 * fields costs about what the read of one field costs, so the walks read
 * neighbours together. These return relocated offsets and touch no memory;
 * the Rust side uses a fused read only when the fields are adjacent on the
 * running kernel, and the accessors above otherwise. */

void *shim_task_fs(struct task_struct *t) { return t ? BPF_CORE_READ(t, fs) : 0; }

/* fs_struct.root | fs_struct.pwd << 16 | path.mnt << 32 | path.dentry << 48 */
u64 shim_layout_fs(void)
{
	return (u64)bpf_core_field_offset(struct fs_struct, root) |
	       (u64)bpf_core_field_offset(struct fs_struct, pwd) << 16 |
	       (u64)bpf_core_field_offset(struct path, mnt) << 32 |
	       (u64)bpf_core_field_offset(struct path, dentry) << 48;
}

/* dentry.d_parent | dentry.d_name << 16 | qstr.name << 32 | dentry.d_hash << 48 */
u64 shim_layout_dentry(void)
{
	return (u64)bpf_core_field_offset(struct dentry, d_parent) |
	       (u64)bpf_core_field_offset(struct dentry, d_name) << 16 |
	       (u64)bpf_core_field_offset(struct qstr, name) << 32 |
	       (u64)bpf_core_field_offset(struct dentry___obj, d_hash) << 48;
}

/* container_of(vfsmount, struct mount, mnt), with the offset relocated. */
static SHIM struct mount *real_mount(struct vfsmount *m)
{
	return (struct mount *)((char *)m - bpf_core_field_offset(struct mount, mnt));
}

/* The vfsmount of the parent mount; equal to `m` for the root of a mount
 * namespace (fs/namespace.c: a root mount is its own parent). */
void *shim_mnt_parent(struct vfsmount *m)
{
	struct mount *parent;

	if (!m)
		return 0;
	parent = BPF_CORE_READ(real_mount(m), mnt_parent);
	if (!parent)
		return 0;
	return (char *)parent + bpf_core_field_offset(struct mount, mnt);
}

/* The dentry this mount is mounted on, in the parent mount. */
void *shim_mnt_mountpoint(struct vfsmount *m)
{
	return m ? BPF_CORE_READ(real_mount(m), mnt_mountpoint) : 0;
}

/* ---- BPF LSM backend (monitor-ebpf/src/probes/lsm/) ---- */

/* The inode of a dentry; NULL for a negative dentry (a rename target that
 * does not exist yet). */
void *shim_dentry_inode(struct dentry *d)
{
	return d ? BPF_CORE_READ((struct dentry___lsm *)d, d_inode) : 0;
}

u64 shim_inode_ino(struct inode *i) { return i ? BPF_CORE_READ(i, i_ino) : 0; }

/* i_sb->s_dev in the kernel's MKDEV encoding (major << 20 | minor). */
u32 shim_inode_dev(struct inode *i) { return i ? BPF_CORE_READ(i, i_sb, s_dev) : 0; }

void *shim_path_dentry(struct path *p) { return p ? BPF_CORE_READ(p, dentry) : 0; }
void *shim_path_mnt(struct path *p) { return p ? BPF_CORE_READ(p, mnt) : 0; }

u32 shim_file_flags(struct file *f) { return f ? BPF_CORE_READ((struct file___lsm *)f, f_flags) : 0; }
u32 shim_file_fmode(struct file *f) { return f ? BPF_CORE_READ((struct file___lsm *)f, f_mode) : 0; }

void *shim_bprm_file(struct linux_binprm *b) { return b ? BPF_CORE_READ(b, file) : 0; }

/* The file's inode mode (S_IFMT bits: what kind of file it is). */
u32 shim_file_imode(struct file *f)
{
	return f ? BPF_CORE_READ((struct file___imode *)f, f_inode, i_mode) : 0;
}

/* The device number of the file's inode (a character device's
 * major << 20 | minor, include/linux/kdev_t.h). */
u32 shim_file_rdev(struct file *f)
{
	return f ? BPF_CORE_READ((struct file___rdev *)f, f_inode, i_rdev) : 0;
}

/* The task's PF_* flags (PF_IO_WORKER: an io_uring worker). */
u32 shim_task_flags(struct task_struct *t)
{
	return t ? BPF_CORE_READ((struct task_struct___lsm *)t, flags) : 0;
}

/* ---- Compat syscalls and thread-group lifetime ---- */

/* Non-zero while the task is in a 32-bit compat syscall (int 0x80):
 * in_ia32_syscall() tests TS_COMPAT (0x2) in thread_info.status on x86_64
 * (arch/x86/include/asm/compat.h). */
u32 shim_task_in_compat(struct task_struct *t)
{
	return t ? (BPF_CORE_READ((struct task_struct___trust *)t, thread_info.status) & 0x2) : 0;
}

/* Threads of the group that have not yet decremented signal->live in
 * do_exit(), which runs before trace_sched_process_exit (kernel/exit.c):
 * 0 at the exit of the group's last thread. */
int shim_task_group_live(struct task_struct *t)
{
	return t ? BPF_CORE_READ((struct task_struct___trust *)t, signal, live.counter) : 0;
}

/* Tasks that share the caller's address space (mm->mm_users: its
 * threads, CLONE_VM children, and short-lived references of the kernel);
 * 0 for a kernel thread. More than 1: another task can change the
 * caller's memory while a call reads it. */
int shim_task_mm_users(struct task_struct *t)
{
	struct mm_struct___trust *mm;

	if (!t)
		return 0;
	mm = BPF_CORE_READ((struct task_struct___trust *)t, mm);
	return mm ? BPF_CORE_READ(mm, mm_users.counter) : 0;
}

/* ---- Mount namespaces (monitor-ebpf/src/probes/mountns.rs) ---- */

/* task->nsproxy->mnt_ns; NULL for an exiting task (exit_task_namespaces). */
void *shim_task_mnt_ns(struct task_struct *t)
{
	struct nsproxy *nsp;

	if (!t)
		return 0;
	nsp = BPF_CORE_READ((struct task_struct___mns *)t, nsproxy);
	return nsp ? BPF_CORE_READ(nsp, mnt_ns) : 0;
}

/* The namespace's inode number (what stat(/proc/PID/ns/mnt) reports). */
u32 shim_mnt_ns_inum(struct mnt_namespace *ns) { return ns ? BPF_CORE_READ(ns, ns.inum) : 0; }

/* Bumped by every change of the namespace's mount tree
 * (fs/namespace.c: touch_mnt_namespace). */
u64 shim_mnt_ns_event(struct mnt_namespace *ns) { return ns ? BPF_CORE_READ(ns, event) : 0; }

/* The vfsmount of the namespace's root mount. */
void *shim_mnt_ns_root(struct mnt_namespace *ns)
{
	struct mount *r;

	if (!ns)
		return 0;
	r = BPF_CORE_READ(ns, root);
	if (!r)
		return 0;
	return (char *)r + bpf_core_field_offset(struct mount, mnt);
}

u32 shim_mnt_dev(struct vfsmount *m)
{
	return m ? BPF_CORE_READ((struct vfsmount___mns *)m, mnt_sb, s_dev) : 0;
}

u32 shim_mnt_id(struct vfsmount *m)
{
	return m ? BPF_CORE_READ((struct mount___mns *)real_mount(m), mnt_id) : 0;
}

/* A `struct mount` linked by its mnt_child into a parent's mnt_mounts list
 * (fs/mount.h), as its vfsmount; NULL when `entry` is the list head. */
static SHIM void *child_entry(struct list_head *entry, struct list_head *head)
{
	if (!entry || entry == head)
		return 0;
	return (char *)entry - bpf_core_field_offset(struct mount___mns, mnt_child)
	       + bpf_core_field_offset(struct mount, mnt);
}

/* The first mount mounted on `m` (its first child), or NULL. */
void *shim_mnt_first_child(struct vfsmount *m)
{
	struct mount___mns *r;
	struct list_head *head;

	if (!m)
		return 0;
	r = (struct mount___mns *)real_mount(m);
	head = (struct list_head *)((char *)r + bpf_core_field_offset(struct mount___mns, mnt_mounts));
	return child_entry(BPF_CORE_READ(r, mnt_mounts.next), head);
}

/* The next mount with the same parent as `m`, or NULL. */
void *shim_mnt_next_sibling(struct vfsmount *m)
{
	struct mount___mns *r, *parent;
	struct list_head *head;

	if (!m)
		return 0;
	r = (struct mount___mns *)real_mount(m);
	parent = (struct mount___mns *)BPF_CORE_READ(real_mount(m), mnt_parent);
	if (!parent || (void *)parent == (void *)real_mount(m))
		return 0;
	head = (struct list_head *)((char *)parent + bpf_core_field_offset(struct mount___mns, mnt_mounts));
	return child_entry(BPF_CORE_READ(r, mnt_child.next), head);
}

/* The parent task (real_parent), to find the host's init from any task. */
void *shim_task_parent(struct task_struct *t) { return t ? BPF_CORE_READ(t, real_parent) : 0; }

/* ---- Container cgroups (monitor-ebpf/src/probes/cgroups.rs) ---- */

/* The cgroup id bpf_get_current_cgroup_id() returns: its kernfs node id. */
u64 shim_cgroup_id(struct cgroup *c) { return c ? BPF_CORE_READ(c, kn, id) : 0; }
int shim_cgroup_level(struct cgroup *c) { return c ? BPF_CORE_READ(c, level) : -1; }
/* 0 for the cgroup v2 (default) hierarchy: it is set up first
 * (kernel/cgroup/cgroup.c: cgroup_init -> cgroup_setup_root). */
int shim_cgroup_hierarchy(struct cgroup *c) { return c ? BPF_CORE_READ(c, root, hierarchy_id) : -1; }

/* object identity */

/* The dentry whose d_hash node is `node` (a dentry_hashtable chain entry). */
void *shim_obj_hash_dentry(void *node)
{
	return node ? (char *)node - bpf_core_field_offset(struct dentry___obj, d_hash) : 0;
}

/* The next node of the dentry's hash chain. */
void *shim_obj_hash_next(struct dentry___obj *d) { return d ? BPF_CORE_READ(d, d_hash.next) : 0; }

/* d_hash.pprev: for the first dentry of a chain, its bucket. */
void *shim_obj_hash_pprev(struct dentry___obj *d) { return d ? BPF_CORE_READ(d, d_hash.pprev) : 0; }

/* d_name.hash_len: the name's length << 32 | its hash. */
u64 shim_obj_hash_len(struct dentry___obj *d) { return d ? BPF_CORE_READ(d, d_name.hash_len) : 0; }

u32 shim_obj_flags(struct dentry___obj *d) { return d ? BPF_CORE_READ(d, d_flags) : 0; }

/* The change time of dentry `d`'s inode in ns since the epoch, 0 for a
 * negative dentry. Every attribute change sets it (notify_change: chmod,
 * chown, truncate, utimes): a call that changed the inode's attributes
 * moved it, unless the previous change fell in the same clock tick. */
u64 shim_obj_ctime(struct dentry___obj *d)
{
	void *i;
	u64 sec = 0, nsec = 0;

	if (!d)
		return 0;
	i = BPF_CORE_READ(d, d_inode);
	if (!i)
		return 0;
	if (bpf_core_field_exists(struct inode___ct611, i_ctime_sec)) {
		sec = BPF_CORE_READ((struct inode___ct611 *)i, i_ctime_sec);
		nsec = BPF_CORE_READ((struct inode___ct611 *)i, i_ctime_nsec) & 0x3fffffff;
	} else if (bpf_core_field_exists(struct inode___ct66, __i_ctime)) {
		sec = BPF_CORE_READ((struct inode___ct66 *)i, __i_ctime.tv_sec);
		nsec = BPF_CORE_READ((struct inode___ct66 *)i, __i_ctime.tv_nsec);
	} else if (bpf_core_field_exists(struct inode___ct61, i_ctime)) {
		sec = BPF_CORE_READ((struct inode___ct61 *)i, i_ctime.tv_sec);
		nsec = BPF_CORE_READ((struct inode___ct61 *)i, i_ctime.tv_nsec);
	}
	return sec * 1000000000ULL + (nsec & 0x3fffffff);
}

/* The granularity (ns) of the times of dentry `d`'s file system
 * (super_block.s_time_gran: 1 for most, 10^9 for some). */
u32 shim_obj_time_gran(struct dentry___obj *d)
{
	struct inode___ct61 *i;

	if (!d)
		return 0;
	i = (struct inode___ct61 *)BPF_CORE_READ(d, d_inode);
	return i ? BPF_CORE_READ(i, i_sb, s_time_gran) : 0;
}

/* i_mode of the dentry's inode; 0 for a negative dentry. */
u32 shim_obj_imode(struct dentry___obj *d)
{
	struct inode___obj *i;

	if (!d)
		return 0;
	i = BPF_CORE_READ(d, d_inode);
	return i ? BPF_CORE_READ(i, i_mode) : 0;
}

/* Non-zero when names in the directory `d` are hashed or compared by the
 * file system itself (d_op->d_hash / d_compare: case-insensitive names,
 * ...): the generic hash does not find them. */
u32 shim_obj_own_names(struct dentry___obj *d)
{
	const struct dentry_operations *op;

	if (!d)
		return 1;
	op = BPF_CORE_READ(d, d_op);
	if (!op)
		return 0;
	return BPF_CORE_READ(op, d_hash) || BPF_CORE_READ(op, d_compare);
}

/* The target of the symlink `d` when the file system keeps it in memory
 * (inode->i_link: ext4 fast symlinks, tmpfs short ones); NULL otherwise. */
const char *shim_obj_link(struct dentry___obj *d)
{
	struct inode___obj *i;

	if (!d)
		return 0;
	i = BPF_CORE_READ(d, d_inode);
	return i ? BPF_CORE_READ(i, i_link) : 0;
}

/* bprm */
/* ---- Exec argv re-check (monitor-ebpf/src/probes/lsm/exec.rs) ---- */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct linux_binprm___argv {
	int argc;
	const char *filename;
};
struct mm_struct___argv {
	unsigned long start_stack;
};
struct task_struct___argv {
	struct mm_struct___argv *mm;
};
#pragma clang attribute pop

/* The argument count: the caller's at bprm_check_security's first call,
 * the interpreter's command line after a `#!` or binfmt_misc rewrite. */
int shim_bprm_argc(struct linux_binprm *b)
{
	return b ? BPF_CORE_READ((struct linux_binprm___argv *)b, argc) : 0;
}

/* The kernel's copy of the path given to execve (getname). */
const char *shim_bprm_filename(struct linux_binprm *b)
{
	return b ? BPF_CORE_READ((struct linux_binprm___argv *)b, filename) : 0;
}

/* mm->start_stack: after load_elf_binary, the user address of argc, followed
 * by the argv pointers create_elf_tables wrote (fs/binfmt_elf.c). */
u64 shim_task_start_stack(struct task_struct *t)
{
	return t ? BPF_CORE_READ((struct task_struct___argv *)t, mm, start_stack) : 0;
}

/* lsm hooks */
/* ---- Inode hooks and ioctl (monitor-ebpf/src/probes/lsm/files.rs) ---- */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct iattr___lsm {
	unsigned int ia_valid;
};
#pragma clang attribute pop

/* attr->ia_valid: which attributes notify_change() sets (ATTR_* of
 * include/linux/fs.h). */
u32 shim_iattr_valid(struct iattr___lsm *a) { return a ? BPF_CORE_READ(a, ia_valid) : 0; }
