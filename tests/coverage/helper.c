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
#include <sys/mman.h>
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
usage:
    fprintf(stderr, "usage: covhelper MODE ARGS... (see tests/coverage/helper.c)\n");
    return 2;
}
