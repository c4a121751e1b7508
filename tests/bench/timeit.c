/*
 * timeit: runs one workload and reports its wall time and resource use.
 *
 *   timeit [-l LOGINUID] -- CMD ARGS...
 *
 * Starts CMD, waits for it and prints one line on stderr:
 *
 *   ABM_BENCH wall_ns=N user_us=N sys_us=N maxrss_kib=N status=N
 *
 * wall_ns is CLOCK_MONOTONIC from just before fork to just after the
 * workload was reaped; user/sys/maxrss are the workload tree's own rusage
 * (RUSAGE_CHILDREN: every descendant that was waited for). When run under
 * `abm run` or `strace`, this program is the monitored command, so the time
 * it measures is what the monitored workload experiences, without the
 * monitor's own start-up and shut-down.
 *
 * -l LOGINUID writes LOGINUID to /proc/self/loginuid first: the audit login
 * uid is inherited by every descendant, which is how the auditd and
 * bpftrace peers scope themselves to this process tree (abm uses its own
 * in-kernel pid map instead).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    int i = 1;
    const char *loginuid = NULL;
    while (i < argc && strcmp(argv[i], "--") != 0) {
        if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
            loginuid = argv[i + 1];
            i += 2;
        } else {
            fprintf(stderr, "usage: timeit [-l LOGINUID] -- CMD ARGS...\n");
            return 2;
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "usage: timeit [-l LOGINUID] -- CMD ARGS...\n");
        return 2;
    }
    char **cmd = &argv[i + 1];
    if (loginuid) {
        int fd = open("/proc/self/loginuid", O_WRONLY);
        if (fd < 0 || write(fd, loginuid, strlen(loginuid)) < 0) {
            fprintf(stderr, "timeit: cannot set loginuid: %s\n", strerror(errno));
            return 2;
        }
        close(fd);
    }
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("timeit: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(cmd[0], cmd);
        fprintf(stderr, "timeit: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("timeit: waitpid");
            return 2;
        }
    }
    long long t1 = now_ns();
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(stderr, "ABM_BENCH wall_ns=%lld user_us=%lld sys_us=%lld maxrss_kib=%ld status=%d\n",
            t1 - t0,
            (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
            (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
            ru.ru_maxrss, code);
    return code;
}
