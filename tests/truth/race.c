/* Races a path argument against the kernel: a second thread flips the
 * first byte of the buffer that the main thread passes to unlink(2)
 * between 'r' (files that exist: rNNNN) and 'f' (names that never exist:
 * fNNNN). Each rNNNN is unlinked exactly once; a call that the kernel saw
 * as fNNNN fails with ENOENT and is retried. An unprivileged process can
 * do this; a record naming fNNNN for a successful unlink names a file that
 * never existed.
 *
 * usage: race DIR COUNT   (makes DIR/rNNNN itself; prints the number of
 * successful unlinks and of failed attempts) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[256] __attribute__((aligned(64)));
static size_t flip_at;
static atomic_int done;

static void *flipper(void *arg)
{
	(void)arg;
	volatile char *p = buf + flip_at;
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		*p = 'f';
		for (volatile int k = 0; k < 200; k++)
			;
		*p = 'r';
		for (volatile int k = 0; k < 200; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: race DIR COUNT\n");
		return 2;
	}
	const char *dir = argv[1];
	int count = atoi(argv[2]);
	if (strlen(dir) > 200 || count <= 0 || count > 9999) {
		fprintf(stderr, "race: DIR at most 200 bytes, COUNT 1..9999\n");
		return 2;
	}
	for (int i = 0; i < count; i++) {
		snprintf(buf, sizeof buf, "%s/r%04d", dir, i);
		int fd = open(buf, O_CREAT | O_WRONLY | O_EXCL, 0644);
		if (fd < 0) {
			perror(buf);
			return 1;
		}
		close(fd);
	}
	flip_at = strlen(dir) + 1;
	/* The two threads on two CPUs of their own when there are two: the
	 * race needs them running at once, and on one shared CPU it almost
	 * never happens (a busy machine would then test nothing). */
	cpu_set_t all, one;
	int cpus[2], n = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (sched_getaffinity(0, sizeof all, &all) == 0) {
		for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
			if (CPU_ISSET(c, &all))
				cpus[n++] = c;
	}
	if (n == 2) {
		CPU_ZERO(&one);
		CPU_SET(cpus[1], &one);
		pthread_attr_setaffinity_np(&attr, sizeof one, &one);
		CPU_ZERO(&one);
		CPU_SET(cpus[0], &one);
		sched_setaffinity(0, sizeof one, &one);
	}
	pthread_t t;
	if (pthread_create(&t, &attr, flipper, NULL) != 0)
		return 1;
	long failed = 0, ok = 0;
	for (int i = 0; i < count; i++) {
		/* digits only: byte flip_at is the flipper's */
		char digits[16];
		snprintf(digits, sizeof digits, "%04d", i);
		memcpy(buf + flip_at + 1, digits, 4);
		for (int tries = 0; tries < 100000; tries++) {
			if (unlink(buf) == 0) {
				ok++;
				break;
			}
			if (errno != ENOENT) {
				perror("unlink");
				return 1;
			}
			failed++;
		}
	}
	atomic_store(&done, 1);
	pthread_join(t, NULL);
	printf("%ld %ld\n", ok, failed);
	return ok == count ? 0 : 1;
}
