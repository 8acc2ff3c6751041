/* SPDX-License-Identifier: BSD-2-Clause */
/* CUDA and NCCL libraries installed on the node; see syslibs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/probes/discovery.h"
#include "collector/probes/syslibs.h"
#include "common/log.h"

/* Where drivers (the NVIDIA installer, distribution packages, the container toolkit) put them. */
static const char *const driver_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
	"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/local/cuda/lib64",
	"/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
	"/usr/lib/wsl/lib", NULL,
};

/* A GPU library's kind by its file name; 0 for anything else (the toolkit's stubs included). */
static unsigned int gpu_kind(const char *path)
{
	return strstr(path, "/stubs/") ? 0 : discovery_lib_kind(path) & PROBE_LIB_GPU;
}

size_t syslibs_parse_cache(const char *buf, size_t len, syslibs_fn fn, void *ctx)
{
	size_t found = 0, i = 0;

	while (i < len) {
		const char *s = buf + i, *nul = memchr(s, '\0', len - i);
		size_t n = nul ? (size_t)(nul - s) : len - i;
		unsigned int kind;

		if (nul && n > 1 && n < PATH_MAX && s[0] == '/' && (kind = gpu_kind(s)) != 0) {
			fn(ctx, s, kind);
			found++;
		}
		i += n + 1;
	}
	return found;
}

static size_t scan_cache(const char *path, syslibs_fn fn, void *ctx)
{
	char *buf = NULL;
	size_t len = 0, found = 0;
	struct stat st;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		log_info("%s: %s; libraries are found in the driver directories only", path,
			 strerror(errno));
		return 0;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto cleanup;
	if ((uint64_t)st.st_size > SYSLIBS_CACHE_MAX)
		log_warnx("%s: %lld bytes, only the first %u read", path, (long long)st.st_size,
			  SYSLIBS_CACHE_MAX);
	len = (uint64_t)st.st_size > SYSLIBS_CACHE_MAX ? SYSLIBS_CACHE_MAX : (size_t)st.st_size;
	buf = malloc(len ? len : 1);
	if (!buf)
		goto cleanup;
	for (size_t got = 0; got < len; got += (size_t)r) {
		r = read(fd, buf + got, len - got);
		if (r <= 0) {
			len = got;
			break;
		}
	}
	found = syslibs_parse_cache(buf, len, fn, ctx);
cleanup:
	free(buf);
	close(fd);
	return found;
}

static size_t scan_dir(const char *dir, syslibs_fn fn, void *ctx)
{
	char path[PATH_MAX];
	struct dirent *de;
	size_t found = 0;
	DIR *d = opendir(dir);
	unsigned int kind;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		kind = gpu_kind(path);
		if (!kind)
			continue;
		fn(ctx, path, kind);
		found++;
	}
	closedir(d);
	return found;
}

size_t syslibs_scan(const char *cache_path, const char *const *dirs, syslibs_fn fn, void *ctx)
{
	size_t found = scan_cache(cache_path ? cache_path : SYSLIBS_CACHE, fn, ctx);

	for (const char *const *d = dirs ? dirs : driver_dirs; *d; d++)
		found += scan_dir(*d, fn, ctx);
	return found;
}
