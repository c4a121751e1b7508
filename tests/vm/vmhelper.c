// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Calls the VM tests (tests/vm/adversarial.sh) make that busybox has no
 * command for. Built static by `cargo xtask vm-test`.
 *
 *   vmhelper bpf-by-id             take every BPF link, map and program of
 *                                  the host by id (bpf() *_GET_FD_BY_ID);
 *                                  creates ./owned-bpf when one was taken
 *   vmhelper setxattr FILE NAME V  setxattr(2)
 *   vmhelper removexattr FILE NAME removexattr(2)
 *   vmhelper hasxattr FILE NAME    exit 0 when FILE has attribute NAME
 *   vmhelper chattr +i|-i|+a|-a FILE  FS_IOC_SETFLAGS (busybox has no chattr)
 *   vmhelper hasflag i|a FILE      exit 0 when FILE has the flag
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

/* include/uapi/linux/bpf.h */
enum {
	PROG_GET_NEXT_ID = 11,
	MAP_GET_NEXT_ID = 12,
	PROG_GET_FD_BY_ID = 13,
	MAP_GET_FD_BY_ID = 14,
	LINK_GET_FD_BY_ID = 30,
	LINK_GET_NEXT_ID = 31,
};

static long bpf(int cmd, uint32_t *attr)
{
	return syscall(__NR_bpf, cmd, attr, 3 * sizeof(uint32_t));
}

static int bpf_by_id(void)
{
	static const int cmds[3][2] = {
		{LINK_GET_NEXT_ID, LINK_GET_FD_BY_ID},
		{MAP_GET_NEXT_ID, MAP_GET_FD_BY_ID},
		{PROG_GET_NEXT_ID, PROG_GET_FD_BY_ID},
	};
	int got = 0, seen = 0;
	for (int i = 0; i < 3; i++) {
		uint32_t a[3] = {0, 0, 0};
		while (bpf(cmds[i][0], a) == 0) {
			uint32_t b[3] = {a[1], 0, 0};
			seen++;
			if (bpf(cmds[i][1], b) >= 0)
				got++;
			a[0] = a[1];
		}
	}
	printf("bpf-by-id: %d ids listed, %d descriptors taken\n", seen, got);
	if (got) {
		int fd = open("owned-bpf", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			close(fd);
	}
	return got ? 0 : 1;
}

static int flag_bit(char c)
{
	return c == 'i' ? FS_IMMUTABLE_FL : c == 'a' ? FS_APPEND_FL : 0;
}

static int chattr(const char *spec, const char *file)
{
	int bit = flag_bit(spec[1]), flags = 0;
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || !bit || (spec[0] != '+' && spec[0] != '-')) {
		perror(file);
		return 2;
	}
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
		perror("FS_IOC_GETFLAGS");
		return 1;
	}
	flags = spec[0] == '+' ? flags | bit : flags & ~bit;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0) {
		perror("FS_IOC_SETFLAGS");
		return 1;
	}
	return 0;
}

static int hasflag(const char *flag, const char *file)
{
	int flags = 0;
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return 2;
	return (flags & flag_bit(flag[0])) ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "chattr"))
		return chattr(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "hasflag"))
		return hasflag(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "bpf-by-id"))
		return bpf_by_id();
	if (argc == 5 && !strcmp(argv[1], "setxattr")) {
		if (setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0) < 0) {
			perror("setxattr");
			return 1;
		}
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "removexattr")) {
		if (removexattr(argv[2], argv[3]) < 0) {
			perror("removexattr");
			return 1;
		}
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "hasxattr")) {
		char v[256];
		return getxattr(argv[2], argv[3], v, sizeof v) < 0;
	}
	fprintf(stderr, "usage: vmhelper bpf-by-id | setxattr FILE NAME VALUE | removexattr FILE NAME | hasxattr FILE NAME"
			" | chattr +i|-i|+a|-a FILE | hasflag i|a FILE\n");
	return 2;
}
