// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Exec with an argv that changes after execve's entry, for the BPF LSM
 * tests (tests/vm/run.sh). Built static by xtask/src/vm.rs.
 *
 *   argvrace unfaulted PROG LOG
 *       execve(PROG, [PROG, "push", "unfaulted", S]) where S ("--force") lies
 *       in a file mapping never touched: unreadable without a page fault at
 *       execve entry, copied by the kernel (which faults it in).
 *   argvrace flip N PROG LOG
 *       N times: a child execs PROG with [PROG, "push", "race", S] while a
 *       second thread rewrites S between "safe-ok" and "--force".
 *
 * Appends to LOG one line per attempt kind: "<kind> ran=R killed=K
 * denied=D other=O" (R: the program ran to exit 0; K: SIGKILL; D: execve
 * failed with EPERM). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char flip_buf[4096] __attribute__((aligned(4096))) = "safe-ok";

static volatile int flipping;

/* A call per store: under QEMU's TCG an interrupt (and so a preemption)
 * is taken only between translated blocks, which a call ends; in a loop of
 * two plain stores it would always land after the second. */
static __attribute__((noinline)) void put(const char *s)
{
	__atomic_store_n((unsigned long long *)flip_buf, *(const unsigned long long *)s, __ATOMIC_RELAXED);
}

static void *flipper(void *arg)
{
	(void)arg;
	flipping = 1;
	for (;;) {
		put("--force");
		put("safe-ok");
	}
	return 0;
}

static int unfaulted_child(const char *prog)
{
	const char *path = "/tmp/argvrace-arg";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "--force", 8) != 8)
		return 120;
	char *s = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (s == MAP_FAILED)
		return 121;
	char *argv[] = {(char *)prog, "push", "unfaulted", s, 0};
	execve(prog, argv, environ);
	return errno == EPERM ? 126 : 127;
}

static int flip_child(const char *prog)
{
	pthread_t t;
	if (pthread_create(&t, 0, flipper, 0) != 0)
		return 122;
	/* On one CPU the new thread runs only once this one yields. */
	while (!flipping)
		sched_yield();
	char *argv[] = {(char *)prog, "push", "race", flip_buf, 0};
	execve(prog, argv, environ);
	return errno == EPERM ? 126 : 127;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: argvrace unfaulted PROG LOG | flip N PROG LOG\n");
		return 2;
	}
	int flip = strcmp(argv[1], "flip") == 0;
	if (!flip && strcmp(argv[1], "unfaulted") != 0) {
		fprintf(stderr, "argvrace: unknown mode %s\n", argv[1]);
		return 2;
	}
	if (flip && argc < 5) {
		fprintf(stderr, "usage: argvrace flip N PROG LOG\n");
		return 2;
	}
	int n = flip ? atoi(argv[2]) : 1;
	const char *prog = argv[flip ? 3 : 2];
	const char *log = argv[flip ? 4 : 3];
	int ran = 0, killed = 0, denied = 0, other = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 3;
		if (p == 0)
			_exit(flip ? flip_child(prog) : unfaulted_child(prog));
		int st;
		if (waitpid(p, &st, 0) != p)
			return 4;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ran++;
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 126)
			denied++;
		else
			other++;
	}
	FILE *f = fopen(log, "a");
	if (!f)
		return 5;
	fprintf(f, "%s ran=%d killed=%d denied=%d other=%d\n", argv[1], ran, killed, denied, other);
	fclose(f);
	return 0;
}
