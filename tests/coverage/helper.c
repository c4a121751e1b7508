/*
 * covhelper: small actions for the detection coverage suite
 * (monitor/tests/coverage.rs) that no common tool performs. Built at test
 * time with `cc`; no liburing: the io_uring rings are set up with raw
 * syscalls and mmap.
 *
 *   covhelper uring-unlink PATH          IORING_OP_UNLINKAT (AT_FDCWD, PATH)
 *   covhelper uring-rename OLD NEW       IORING_OP_RENAMEAT (AT_FDCWD)
 *   covhelper execveat-fd PROG ARGV...   execveat(open(PROG), "", ..., AT_EMPTY_PATH)
 *   covhelper execveat-dirfd DIR NAME ARGV...
 *                                        execveat(open(DIR), NAME, ..., 0)
 *   covhelper unlinkat-dirfd DIR NAME    unlinkat(open(DIR), NAME, 0)
 *   covhelper rename-exchange A B        renameat2(..., RENAME_EXCHANGE)
 *   covhelper unlink-mmap FILE           unlink(p), p = mmap of FILE (which holds
 *                                        the path, NUL-terminated), page not
 *                                        touched before the call
 *
 * Attacks of the red-team suite in the BPF LSM test VMs (no python there):
 *
 *   covhelper ptrace-attach PID          ptrace(PTRACE_ATTACH, PID)
 *   covhelper vm-read PID                process_vm_readv of 8 bytes of PID's stack
 *   covhelper mem-read PID               8 bytes of PID's stack through /proc/PID/mem
 *   covhelper pidfd-kill PID             pidfd_send_signal(open("/proc/PID"), SIGKILL)
 *   covhelper set-cap FILE               setxattr(FILE, "security.capability", CAP_NET_RAW)
 *   covhelper has-cap FILE               succeeds when FILE has a security.capability
 *   covhelper openat2-trunc-cold FILE    openat2(FILE, O_WRONLY|O_TRUNC), open_how in a
 *                                        file-backed page not touched before the call
 *   covhelper handle-trunc FILE          open_by_handle_at(handle of FILE, O_WRONLY|O_TRUNC)
 *   covhelper int80-unlink PATH          unlink(PATH) through int 0x80 (ia32 syscall 10)
 *
 * Exit status: 0 when the action succeeded, 1 when it failed (message on
 * stderr), 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

extern char **environ;

static int fail(const char *what) {
    fprintf(stderr, "covhelper: %s: %s\n", what, strerror(errno));
    return 1;
}

/* Submits one SQE through a fresh ring and returns its CQE result. */
static int uring_one(const struct io_uring_sqe *tmpl) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0)
        return -errno;
    size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
    size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        if (cq_sz > sq_sz)
            sq_sz = cq_sz;
        cq_sz = sq_sz;
    }
    char *sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    if (sq == MAP_FAILED)
        return -errno;
    char *cq = sq;
    if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
        cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
        if (cq == MAP_FAILED)
            return -errno;
    }
    struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sqes == MAP_FAILED)
        return -errno;

    uint32_t *sq_tail = (uint32_t *)(sq + p.sq_off.tail);
    uint32_t sq_mask = *(uint32_t *)(sq + p.sq_off.ring_mask);
    uint32_t *sq_array = (uint32_t *)(sq + p.sq_off.array);
    uint32_t tail = *sq_tail;
    uint32_t idx = tail & sq_mask;
    sqes[idx] = *tmpl;
    sq_array[idx] = idx;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);

    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -errno;

    uint32_t *cq_head = (uint32_t *)(cq + p.cq_off.head);
    uint32_t *cq_tail = (uint32_t *)(cq + p.cq_off.tail);
    uint32_t cq_mask = *(uint32_t *)(cq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    uint32_t head = *cq_head;
    if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
        errno = EAGAIN;
        return -EAGAIN;
    }
    int res = cqes[head & cq_mask].res;
    __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
    close(ring);
    return res;
}

static int uring_result(const char *what, int res) {
    if (res < 0) {
        errno = -res;
        return fail(what);
    }
    return 0;
}

/* The start of PID's stack mapping, from /proc/PID/maps (0 if none). */
static unsigned long stack_of(const char *pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%s/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long start = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "[stack]"))
            start = strtoul(line, NULL, 16);
    fclose(f);
    return start;
}

struct open_how_v0 {
    uint64_t flags, mode, resolve;
};

static int attack(const char *mode, const char *arg) {
    if (!strcmp(mode, "ptrace-attach")) {
        if (ptrace(PTRACE_ATTACH, (pid_t)atoi(arg), NULL, NULL) < 0)
            return fail("ptrace");
        return 0;
    }
    if (!strcmp(mode, "vm-read") || !strcmp(mode, "mem-read")) {
        unsigned long at = stack_of(arg);
        if (!at)
            return fail("no stack mapping");
        char buf[8];
        if (mode[0] == 'v') {
            struct iovec l = {buf, 8}, r = {(void *)at, 8};
            if (process_vm_readv((pid_t)atoi(arg), &l, 1, &r, 1, 0) != 8)
                return fail("process_vm_readv");
            return 0;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/mem", arg);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return fail(path);
        if (pread(fd, buf, 8, (off_t)at) != 8)
            return fail("pread");
        return 0;
    }
    if (!strcmp(mode, "pidfd-kill")) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%s", arg);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return fail(path);
        if (syscall(__NR_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0)
            return fail("pidfd_send_signal");
        return 0;
    }
    if (!strcmp(mode, "set-cap")) {
        /* vfs_cap_data revision 2: CAP_NET_RAW (13) permitted. */
        uint32_t cap[5] = {0x02000000, 1u << 13, 0, 0, 0};
        if (setxattr(arg, "security.capability", cap, sizeof cap, 0) < 0)
            return fail("setxattr");
        return 0;
    }
    if (!strcmp(mode, "has-cap")) {
        char v[64];
        if (getxattr(arg, "security.capability", v, sizeof v) < 0)
            return fail("getxattr");
        return 0;
    }
    if (!strcmp(mode, "openat2-trunc-cold")) {
        char tmpl[] = "/tmp/covhelper-how-XXXXXX";
        int t = mkstemp(tmpl);
        if (t < 0)
            return fail("mkstemp");
        unlink(tmpl);
        struct open_how_v0 how = {O_WRONLY | O_TRUNC, 0, 0};
        char page[4096];
        memset(page, 0, sizeof page);
        memcpy(page, &how, sizeof how);
        if (write(t, page, sizeof page) != (ssize_t)sizeof page)
            return fail("write");
        /* Not touched by this process: the kernel faults it in. */
        void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, t, 0);
        if (p == MAP_FAILED)
            return fail("mmap");
        if (syscall(__NR_openat2, AT_FDCWD, arg, p, sizeof how) < 0)
            return fail("openat2");
        return 0;
    }
    if (!strcmp(mode, "handle-trunc")) {
        struct {
            struct file_handle fh;
            unsigned char bytes[128];
        } h;
        h.fh.handle_bytes = 128;
        int mnt;
        if (name_to_handle_at(AT_FDCWD, arg, &h.fh, &mnt, 0) < 0)
            return fail("name_to_handle_at");
        int dir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (open_by_handle_at(dir, &h.fh, O_WRONLY | O_TRUNC) < 0)
            return fail("open_by_handle_at");
        return 0;
    }
    if (!strcmp(mode, "int80-unlink")) {
        char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        if (buf == MAP_FAILED)
            return fail("mmap");
        strncpy(buf, arg, 4095);
        long ret;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(10L), "b"((long)(uintptr_t)buf) : "memory");
        if (ret < 0) {
            errno = (int)-ret;
            return fail("int 0x80 unlink");
        }
        return 0;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 2)
        goto usage;
    const char *mode = argv[1];
    if (!strcmp(mode, "uring-unlink") && argc == 3) {
        struct io_uring_sqe sqe;
        memset(&sqe, 0, sizeof sqe);
        sqe.opcode = IORING_OP_UNLINKAT;
        sqe.fd = AT_FDCWD;
        sqe.addr = (uint64_t)(uintptr_t)argv[2];
        return uring_result("io_uring unlinkat", uring_one(&sqe));
    }
    if (!strcmp(mode, "uring-rename") && argc == 4) {
        struct io_uring_sqe sqe;
        memset(&sqe, 0, sizeof sqe);
        sqe.opcode = IORING_OP_RENAMEAT;
        sqe.fd = AT_FDCWD;
        sqe.addr = (uint64_t)(uintptr_t)argv[2];
        sqe.len = (uint32_t)AT_FDCWD;
        sqe.addr2 = (uint64_t)(uintptr_t)argv[3];
        return uring_result("io_uring renameat", uring_one(&sqe));
    }
    if (!strcmp(mode, "execveat-fd") && argc >= 4) {
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return fail(argv[2]);
        syscall(__NR_execveat, fd, "", &argv[3], environ, AT_EMPTY_PATH);
        return fail("execveat");
    }
    if (!strcmp(mode, "execveat-dirfd") && argc >= 5) {
        int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return fail(argv[2]);
        syscall(__NR_execveat, dfd, argv[3], &argv[4], environ, 0);
        return fail("execveat");
    }
    if (!strcmp(mode, "unlinkat-dirfd") && argc == 4) {
        int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return fail(argv[2]);
        if (unlinkat(dfd, argv[3], 0) < 0)
            return fail("unlinkat");
        return 0;
    }
    if (!strcmp(mode, "rename-exchange") && argc == 4) {
        if (syscall(__NR_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE) < 0)
            return fail("renameat2");
        return 0;
    }
    if (!strcmp(mode, "unlink-mmap") && argc == 3) {
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return fail(argv[2]);
        struct stat st;
        if (fstat(fd, &st) < 0)
            return fail("fstat");
        /* The string is only ever read by the kernel: the page is not
         * mapped in until unlink() itself faults it in. */
        const char *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            return fail("mmap");
        if (syscall(__NR_unlink, p) < 0)
            return fail("unlink");
        return 0;
    }
    if (argc == 3) {
        int r = attack(mode, argv[2]);
        if (r >= 0)
            return r;
    }
usage:
    fprintf(stderr, "usage: covhelper MODE ARGS... (see tests/coverage/helper.c)\n");
    return 2;
}
