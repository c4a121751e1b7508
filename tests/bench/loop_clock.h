/* Clock and sorting shared by the syscall-loop benchmarks. */
#ifndef ABM_BENCH_LOOP_CLOCK_H
#define ABM_BENCH_LOOP_CLOCK_H
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* qsort comparison of doubles, ascending. */
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#endif
