/* The same destructive calls made through the 32-bit entry (`int 0x80`,
 * ia32 numbers, arguments in ebx/ecx/edx) or the 64-bit one, on files
 * named PREFIX-*: unlink, rename over an existing file, open with
 * O_TRUNC, truncate64, chmod. An x86_64 process can make ia32 calls when
 * its arguments live below 4 GiB (here: a MAP_32BIT page).
 *
 * usage: compat 32|64 PREFIX   (prints one line per call: name result) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory");
	return ret;
}

static char *low;

static char *name(const char *prefix, const char *what, int slot)
{
	char *p = low + 256 * slot;
	snprintf(p, 256, "%s-%s", prefix, what);
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "32") && strcmp(argv[1], "64"))) {
		fprintf(stderr, "usage: compat 32|64 PREFIX\n");
		return 2;
	}
	int ia32 = argv[1][0] == '3';
	const char *px = argv[2];
	low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low == MAP_FAILED || (uintptr_t)low > 0xffffffffu) {
		perror("mmap MAP_32BIT");
		return 1;
	}
	char *u = name(px, "unlinked", 0), *from = name(px, "from", 1), *to = name(px, "to", 2);
	char *t = name(px, "truncated", 3), *t64 = name(px, "truncated64", 4), *c = name(px, "chmoded", 5);
	long r;
	/* ia32: unlink 10, rename 38, open 5, truncate64 193, chmod 15 */
	r = ia32 ? int80(10, (long)u, 0, 0) : syscall(SYS_unlink, u);
	printf("unlink %ld\n", r);
	r = ia32 ? int80(38, (long)from, (long)to, 0) : syscall(SYS_rename, from, to);
	printf("rename %ld\n", r);
	r = ia32 ? int80(5, (long)t, O_WRONLY | O_TRUNC, 0) : syscall(SYS_open, t, O_WRONLY | O_TRUNC, 0);
	printf("open %ld\n", r);
	if (r >= 0)
		close((int)r);
	r = ia32 ? int80(193, (long)t64, 0, 0) : syscall(SYS_truncate, t64, 0L);
	printf("truncate %ld\n", r);
	r = ia32 ? int80(15, (long)c, 0600, 0) : syscall(SYS_chmod, c, 0600);
	printf("chmod %ld\n", r);
	return 0;
}
