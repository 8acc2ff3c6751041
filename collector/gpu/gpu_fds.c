/* SPDX-License-Identifier: BSD-2-Clause */
/* Open NVIDIA device nodes of a process; see gpu_fds.h.  Root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "collector/gpu/gpu_fds.h"

static void note(struct gpu_fds *f, const struct stat *st)
{
	unsigned int mi;

	if (!S_ISCHR(st->st_mode) || major(st->st_rdev) != GPU_FDS_NVIDIA_MAJOR)
		return;
	mi = minor(st->st_rdev);
	if (mi == GPU_FDS_MINOR_CTL) {
		f->flags |= GPU_FDS_F_CTL;
		return;
	}
	if (mi >= GPU_FDS_MINOR_MODESET || gpu_fds_has(f, mi))
		return;
	f->minors[mi / 64] |= 1ull << (mi % 64);
	f->n++;
}

int gpu_fds_read_dir(const char *fd_dir, struct gpu_fds *out)
{
	struct dirent *d;
	DIR *dir;
	int fd;

	memset(out, 0, sizeof(*out));
	fd = open(fd_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while ((d = readdir(dir))) {
		char target[64];
		struct stat st;
		ssize_t n;

		if (d->d_name[0] == '.')
			continue;
		if (out->fds == GPU_FDS_SCAN_MAX) {
			out->flags |= GPU_FDS_F_CUT;
			break;
		}
		out->fds++;
		/*
		 * stat() through the link reaches the open file itself, and
		 * would wait on a dead NFS server: only names under /dev,
		 * which the link's text gives without touching the file.
		 */
		n = readlinkat(fd, d->d_name, target, sizeof(target) - 1);
		if (n < 5 || memcmp(target, "/dev/", 5) != 0)
			continue;
		if (fstatat(fd, d->d_name, &st, 0) == 0)
			note(out, &st);
	}
	closedir(dir);
	return 0;
}

int gpu_fds_read(pid_t pid, struct gpu_fds *out)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return gpu_fds_read_dir(path, out);
}

int gpu_fds_has(const struct gpu_fds *f, uint32_t minor)
{
	return minor < GPU_FDS_MINOR_MODESET && (f->minors[minor / 64] >> (minor % 64)) & 1;
}

int gpu_fds_single(const struct gpu_fds *f)
{
	if (f->n != 1)
		return -1;
	for (uint32_t m = 0; m < GPU_FDS_MINOR_MODESET; m++)
		if (gpu_fds_has(f, m))
			return (int)m;
	return -1;
}
