/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's identity files and their digest (see ident_source.h).  The
 * bytes are read as the parser child would read them (the same bounds,
 * one byte more to see a truncation), digested with zlib's CRC-32 and
 * their lengths, and wiped: an environment holds secrets.  A digest only
 * says whether to parse again; a process that crafted a collision would
 * keep its own identity as it was, which it could have done by not
 * changing its files.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/ident_source.h"
#include "collector/proc/proc_env.h"

/* The CRC-32 and length of what fd holds, up to limit bytes; rewound after. */
static int digest_file(int fd, size_t limit, uint32_t *crc, size_t *len)
{
	char chunk[4096];
	size_t total = 0;
	uLong c = crc32(0L, Z_NULL, 0);
	int err = 0;

	while (total < limit) {
		size_t want = limit - total;
		ssize_t n = read(fd, chunk, want < sizeof(chunk) ? want : sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		c = crc32(c, (const Bytef *)chunk, (uInt)n);
		total += (size_t)n;
	}
	explicit_bzero(chunk, sizeof(chunk));
	if (err == 0 && lseek(fd, 0, SEEK_SET) != 0)
		err = -errno;
	*crc = (uint32_t)c;
	*len = total;
	return err;
}

void ident_source_open(pid_t pid, struct ident_source *src)
{
	uint32_t cg_crc = 0, env_crc = 0;
	size_t cg_len = 0, env_len = 0;
	int ok;

	src->digest = 0;
	src->cgroup_fd = cgroup_id_open(pid);
	src->environ_fd = proc_env_open(pid);
	if (src->cgroup_fd < 0 || src->environ_fd < 0)
		return;
	ok = digest_file(src->cgroup_fd, CGROUP_ID_READ_MAX + 1, &cg_crc, &cg_len) == 0 &&
	     digest_file(src->environ_fd, PROC_ENV_READ_MAX + 1, &env_crc, &env_len) == 0 &&
	     cg_len > 0 && env_len > 0;
	/* Never 0 when both were read: 0 means "parse". */
	if (ok)
		src->digest = (((uint64_t)cg_crc << 32 | env_crc) ^
			       ((uint64_t)cg_len << 40) ^ ((uint64_t)env_len << 8)) | 1;
	if (!ok) {
		/* A file not rewound would read as empty: open afresh for the parse. */
		ident_source_close(src);
		src->cgroup_fd = cgroup_id_open(pid);
		src->environ_fd = proc_env_open(pid);
	}
}

void ident_source_close(struct ident_source *src)
{
	if (src->cgroup_fd >= 0)
		close(src->cgroup_fd);
	if (src->environ_fd >= 0)
		close(src->environ_fd);
	src->cgroup_fd = -EBADF;
	src->environ_fd = -EBADF;
}
