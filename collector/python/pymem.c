/* SPDX-License-Identifier: BSD-2-Clause */
/* pymem.h. */
#include <errno.h>
#include <unistd.h>

#include "collector/python/pymem.h"

int pymem_read(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
