/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The node's CUDA/NCCL libraries found at start (collector/probes/syslibs.c): the
 * paths of a loader cache, bounded and filtered by name, the toolkit's
 * stubs left out, and the driver directories read.  No privilege.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/probes/discovery.h"
#include "collector/probes/syslibs.h"

struct seen {
	char paths[8][128];
	unsigned int kinds[8];
	size_t n;
};

static void note(void *ctx, const char *path, unsigned int kind)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
		s->kinds[s->n++] = kind;
	}
}

START_TEST(cache_paths_of_gpu_libraries_are_reported)
{
	/* The new cache format: a header, then NUL-separated keys and paths. */
	static const char cache[] =
		"glibc-ld.so.cache1.1\0\0\0\0libcuda.so.1\0/usr/lib/x86_64-linux-gnu/libcuda.so.1\0"
		"libc.so.6\0/usr/lib/x86_64-linux-gnu/libc.so.6\0"
		"/opt/cuda/lib64/stubs/libcuda.so\0/opt/nccl/libnccl.so.2\0"
		"/opt/x/libcudart.so.13.0.96\0relative/libcudart.so\0/usr/lib/libcudartx.so\0"
		"/cut/libcuda.so";	/* no NUL: cut by the end of the file */
	struct seen s = { .n = 0 };

	ck_assert_uint_eq(syslibs_parse_cache(cache, sizeof(cache) - 1, note, &s), 3);
	ck_assert_str_eq(s.paths[0], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	ck_assert_uint_eq(s.kinds[0], PROBE_LIB_CUDA);
	ck_assert_str_eq(s.paths[1], "/opt/nccl/libnccl.so.2");
	ck_assert_uint_eq(s.kinds[1], PROBE_LIB_NCCL);
	ck_assert_str_eq(s.paths[2], "/opt/x/libcudart.so.13.0.96");
	ck_assert_uint_eq(s.kinds[2], PROBE_LIB_CUDART);
}
END_TEST

START_TEST(garbage_cache_reports_nothing_and_does_not_crash)
{
	char buf[4096];
	struct seen s = { .n = 0 };

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 131 + 7);
	ck_assert_uint_eq(syslibs_parse_cache(buf, sizeof(buf), note, &s), 0);
	ck_assert_uint_eq(syslibs_parse_cache(buf, 0, note, &s), 0);
}
END_TEST

START_TEST(driver_directories_are_read)
{
	char dir[64], path[128], cache[128];
	const char *dirs[] = { dir, "/nonexistent-zernel-dir", NULL };
	struct seen s = { .n = 0 };
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/zernel-syslibs-%d", (int)getpid());
	snprintf(cache, sizeof(cache), "%s/no-cache", dir);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/libnccl.so.2", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/libm.so.6", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_uint_eq(syslibs_scan(cache, dirs, note, &s), 1);
	ck_assert_uint_eq(s.kinds[0], PROBE_LIB_NCCL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/libnccl.so.2", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

Suite *syslibs_suite(void);
Suite *syslibs_suite(void)
{
	Suite *s = suite_create("syslibs");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, cache_paths_of_gpu_libraries_are_reported);
	tcase_add_test(tc, garbage_cache_reports_nothing_and_does_not_crash);
	tcase_add_test(tc, driver_directories_are_read);
	suite_add_tcase(s, tc);
	return s;
}
