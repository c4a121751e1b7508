/*
 * notify_floor: the cost of one seccomp user-notification round trip with
 * a supervisor that answers at once (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
 *
 *   notify_floor CALLS REPS
 *
 * A thread installs a filter that sends unlinkat to user space, a second
 * thread answers every notification at once, and the first times CALLS
 * unlinkat calls of a name that does not exist, REPS times; it prints
 *
 *   ABM_NOTIFY_FLOOR calls=N reps=N median_ns=F plain_ns=F
 *
 * where plain_ns is the same loop before the filter is installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loop_clock.h"

static double loop(long calls) {
    double t0 = now_ns();
    for (long i = 0; i < calls; i++)
        syscall(SYS_unlinkat, AT_FDCWD, "abm-bench-no-such-file", 0);
    return (now_ns() - t0) / (double)calls;
}

static void *answer(void *arg) {
    int fd = *(int *)arg;
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    for (;;) {
        memset(&req, 0, sizeof req);
        if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR || errno == ENOENT)
                continue;
            return NULL;
        }
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: notify_floor CALLS REPS\n");
        return 2;
    }
    long calls = atol(argv[1]);
    int reps = atoi(argv[2]);
    if (calls < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "notify_floor: CALLS >= 1, 1 <= REPS <= 100\n");
        return 2;
    }
    double plain[100], filtered[100];
    loop(calls / 10 + 1);
    for (int r = 0; r < reps; r++)
        plain[r] = loop(calls);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlinkat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        perror("notify_floor: PR_SET_NO_NEW_PRIVS");
        return 1;
    }
    /* The filter is per thread without TSYNC: only this thread is filtered,
     * the answering thread (created after) inherits it but never calls
     * unlinkat. */
    int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) {
        perror("notify_floor: seccomp");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, answer, &fd) != 0) {
        fprintf(stderr, "notify_floor: pthread_create failed\n");
        return 1;
    }
    loop(calls / 10 + 1);
    for (int r = 0; r < reps; r++)
        filtered[r] = loop(calls);
    qsort(plain, reps, sizeof(double), cmp);
    qsort(filtered, reps, sizeof(double), cmp);
    fprintf(stderr, "ABM_NOTIFY_FLOOR calls=%ld reps=%d median_ns=%.1f plain_ns=%.1f\n", calls, reps,
            filtered[reps / 2], plain[reps / 2]);
    return 0;
}
