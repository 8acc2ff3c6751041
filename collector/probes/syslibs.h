/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA and NCCL libraries installed on the node, found at start so
 * they are probed before any process loads them: a library probed later,
 * when a scan finds it mapped, misses what its process did in between
 * (NVIDIA's runtime loads the driver at its first call and allocates at
 * once).  Sources: the dynamic loader's cache (/etc/ld.so.cache: every
 * path it lists), and the directories drivers and toolkits install into.
 * Finds and reports; attaching is the caller's.  Reading needs nothing
 * special; the collector runs it as root.
 */
#ifndef ZERNEL_SYSLIBS_H
#define ZERNEL_SYSLIBS_H

#include <stddef.h>

#define SYSLIBS_CACHE		"/etc/ld.so.cache"
/* The cache is read up to this size; a larger one is cut, and said so. */
#define SYSLIBS_CACHE_MAX	(16u << 20)

/* Called once per library path found, with its PROBE_LIB_* kind. */
typedef void (*syslibs_fn)(void *ctx, const char *path, unsigned int kind);

/*
 * Reports every CUDA/NCCL library of the cache at cache_path (SYSLIBS_CACHE
 * when NULL) and of the driver directories (dirs, NULL-terminated; the
 * built-in list when NULL).  Returns the number reported.
 */
size_t syslibs_scan(const char *cache_path, const char *const *dirs, syslibs_fn fn, void *ctx);

/*
 * The paths in one ld.so.cache image: the NUL-terminated absolute paths of
 * its string table whose file name is a CUDA/NCCL library.  Untrusted
 * bytes: every string is bounded.  Returns the number reported.
 */
size_t syslibs_parse_cache(const char *buf, size_t len, syslibs_fn fn, void *ctx);

#endif /* ZERNEL_SYSLIBS_H */
