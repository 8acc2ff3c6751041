/* SPDX-License-Identifier: BSD-2-Clause */
/* proc_mem.h.  Opened for each read: a read is rare (a communicator's first call). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "collector/proc/proc_mem.h"

int proc_mem_u64(void *ctx, uint32_t pid, uint64_t addr, uint64_t *val)
{
	char path[32];
	ssize_t n;
	int fd, err;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, val, sizeof(*val), (off_t)addr);
	err = n == (ssize_t)sizeof(*val) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}
