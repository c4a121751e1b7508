/* Races a path argument against the kernel: a second thread flips the
 * first byte of the buffer that the main thread passes to the call
 * between 'r' and 'f'. An unprivileged process can do this.
 *
 * unlink: rNNNN exist, fNNNN never do. Each rNNNN is unlinked exactly
 * once; a call the kernel saw as fNNNN fails with ENOENT and is retried.
 * A record naming fNNNN for a successful unlink names a file that never
 * existed.
 *
 * chmod, truncate, chown, utimes: rNNNN and fNNNN both exist (mode 0644,
 * 16 bytes, owned by the caller, old times); one call per NNNN (to 0600,
 * to 0 bytes, to the caller's own ids, to now) succeeds on whichever the
 * kernel saw. Which one changed tells the truth: a record naming the
 * other names a file the call did not touch. With "noop", the rNNNN
 * already have the value the call sets (only their change time moves).
 * The files are made 50 ms before the race starts.
 *
 * usage: race DIR COUNT [unlink|chmod|truncate|chown|utimes] [noop]
 * (makes the files itself; prints the number of successful calls and of
 * failed attempts) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
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
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: race DIR COUNT [unlink|chmod|truncate|chown|utimes] [noop]\n");
		return 2;
	}
	const char *dir = argv[1];
	int count = atoi(argv[2]);
	const char *op = argc > 3 ? argv[3] : "unlink";
	int noop = argc > 4 && strcmp(argv[4], "noop") == 0;
	int unl = strcmp(op, "unlink") == 0;
	if (strlen(dir) > 200 || count <= 0 || count > 9999) {
		fprintf(stderr, "race: DIR at most 200 bytes, COUNT 1..9999\n");
		return 2;
	}
	if (!unl && strcmp(op, "chmod") && strcmp(op, "truncate") && strcmp(op, "chown") &&
	    strcmp(op, "utimes")) {
		fprintf(stderr, "race: unknown operation %s\n", op);
		return 2;
	}
	struct timeval old[2] = {{1000000000, 0}, {1000000000, 0}};
	for (int i = 0; i < count; i++) {
		for (int k = 0; k < (unl ? 1 : 2); k++) {
			snprintf(buf, sizeof buf, "%s/%c%04d", dir, k ? 'f' : 'r', i);
			int fd = open(buf, O_CREAT | O_WRONLY | O_EXCL, 0644);
			if (fd < 0 || write(fd, "sixteen bytes..\n", 16) != 16) {
				perror(buf);
				return 1;
			}
			close(fd);
			if (unl)
				continue;
			int r = 0;
			if (strcmp(op, "utimes") == 0)
				r = utimes(buf, k == 0 && noop ? NULL : old);
			else if (k == 0 && noop && strcmp(op, "chmod") == 0)
				r = chmod(buf, 0600);
			else if (k == 0 && noop && strcmp(op, "truncate") == 0)
				r = truncate(buf, 0);
			else if (strcmp(op, "chown") == 0 && !(k == 0 && noop))
				r = chown(buf, getuid(), getgid() ? 0 : 1);
			if (r != 0) {
				perror(buf);
				return 1;
			}
		}
	}
	/* The files' last change more than a clock tick behind the race: a
	 * call on a file changed within the tick it starts in may set the
	 * same change time again, which abm's check cannot tell from no
	 * change (docs/trace.md: what stays open). */
	if (!unl)
		usleep(50000);
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
			int r;
			if (unl)
				r = unlink(buf);
			else if (strcmp(op, "chmod") == 0)
				r = chmod(buf, 0600);
			else if (strcmp(op, "truncate") == 0)
				r = truncate(buf, 0);
			else if (strcmp(op, "chown") == 0)
				r = chown(buf, getuid(), getgid());
			else
				r = utimes(buf, NULL);
			if (r == 0) {
				ok++;
				break;
			}
			if (errno != ENOENT) {
				perror(op);
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
