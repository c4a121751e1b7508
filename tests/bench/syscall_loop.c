/*
 * syscall_loop: the kernel-side cost of one syscall, timed in-process.
 *
 *   syscall_loop CALLS REPS OP...      (OP: unlinkat or getppid)
 *
 * For each OP, makes CALLS calls REPS times (after a warm-up of CALLS/10)
 * and prints one line on stderr:
 *
 *   ABM_LOOP op=unlinkat calls=N reps=N median_ns=F min_ns=F
 *
 * unlinkat removes a name that does not exist (relative to the current
 * directory), so it fails with ENOENT after a cached negative lookup and
 * no file-system work dominates; abm still traces it (entry record with
 * the resolved path, then the result). getppid is a syscall abm does not
 * trace: its cost shows what the sys_enter/sys_exit raw tracepoints add to
 * every syscall of every process while the monitor is loaded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loop_clock.h"

static void run(int op, long calls) {
    for (long i = 0; i < calls; i++) {
        if (op == 0)
            syscall(SYS_unlinkat, AT_FDCWD, "abm-bench-no-such-file", 0);
        else
            syscall(SYS_getppid);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: syscall_loop CALLS REPS unlinkat|getppid...\n");
        return 2;
    }
    long calls = atol(argv[1]);
    int reps = atoi(argv[2]);
    if (calls < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "syscall_loop: CALLS >= 1, 1 <= REPS <= 100\n");
        return 2;
    }
    for (int a = 3; a < argc; a++) {
        int op;
        if (strcmp(argv[a], "unlinkat") == 0)
            op = 0;
        else if (strcmp(argv[a], "getppid") == 0)
            op = 1;
        else {
            fprintf(stderr, "syscall_loop: unknown op %s\n", argv[a]);
            return 2;
        }
        double ns[100];
        run(op, calls / 10 + 1);
        for (int r = 0; r < reps; r++) {
            double t0 = now_ns();
            run(op, calls);
            ns[r] = (now_ns() - t0) / (double)calls;
        }
        qsort(ns, reps, sizeof ns[0], cmp);
        double median = reps % 2 ? ns[reps / 2] : (ns[reps / 2 - 1] + ns[reps / 2]) / 2;
        fprintf(stderr, "ABM_LOOP op=%s calls=%ld reps=%d median_ns=%.1f min_ns=%.1f\n",
                argv[a], calls, reps, median, ns[0]);
    }
    return 0;
}
