/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU totals from NVML (collector/nvml.c) against a fake libnvidia-ml.so.1
 * with the real symbols and ABI whose devices come from the environment:
 * totals read, every failure reported with its reason and never fatal,
 * NVML shut down after use; then the real collector with the fake found
 * through the loader's search path, publishing NVML totals in the segment
 * with --gpu-memory-total winning device by device.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/nvml.h"
#include "shm/shm_reader.h"
#include "tests/support/testutil.h"

static char lib[512], lib_nomem[512], logpath[256];

static void setup(void)
{
	tu_build_path(lib, sizeof(lib), "tests/fakes/nvml/libnvidia-ml.so.1");
	tu_build_path(lib_nomem, sizeof(lib_nomem), "tests/fakes/nvml-nomem/libnvidia-ml.so.1");
	ck_assert_msg(access(lib, R_OK) == 0, "%s missing: build it with `make tests-build`", lib);
	snprintf(logpath, sizeof(logpath), "/tmp/zernel-nvml-%d.log", (int)getpid());
	unlink(logpath);
	setenv("FAKE_NVML_LOG", logpath, 1);
	unsetenv("FAKE_NVML_INIT_FAIL");
	unsetenv("FAKE_NVML_BAD_DEVICE");
}

static void teardown(void)
{
	unlink(logpath);
}

static char *calls(void)
{
	static char buf[256];
	char *t = tu_read_file(logpath, NULL);

	snprintf(buf, sizeof(buf), "%s", t ? t : "");
	free(t);
	return buf;
}

START_TEST(nvml_reads_every_device_total)
{
	uint64_t t[8];
	size_t n = 99;
	char why[256];

	setenv("FAKE_NVML_TOTALS", "85899345920,42949672960,1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(t[0], 85899345920ull);
	ck_assert_uint_eq(t[1], 42949672960ull);
	ck_assert_uint_eq(t[2], 1);
	ck_assert_str_eq(why, "");
	ck_assert_str_eq(calls(), "init\nshutdown\n");

	/* More devices than room: the first ones, and a word about the rest. */
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 2, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_nonnull(strstr(why, "3 devices, only the first 2 kept"));
}
END_TEST

START_TEST(nvml_failures_are_reported_not_fatal)
{
	uint64_t t[8];
	size_t n = 99;
	char why[256];

	ck_assert_int_eq(nvml_gpu_totals("/nonexistent/libnvidia-ml.so.1", t, 8, &n, why,
					 sizeof(why)), -ENOENT);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/libnvidia-ml.so.1"));

	setenv("FAKE_NVML_TOTALS", "100", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib_nomem, t, 8, &n, why, sizeof(why)), -ENOSYS);
	ck_assert_ptr_nonnull(strstr(why, "has no nvmlDeviceGetMemoryInfo"));
	ck_assert_str_eq(calls(), "");	/* not initialised when unusable */

	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), -EIO);
	ck_assert_str_eq(why, "nvmlInit_v2: Driver Not Loaded");
	unsetenv("FAKE_NVML_INIT_FAIL");

	/* A lost device keeps total 0 (unknown); the others are read, NVML shut down. */
	unlink(logpath);
	setenv("FAKE_NVML_TOTALS", "100,200,300", 1);
	setenv("FAKE_NVML_BAD_DEVICE", "1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(t[0], 100);
	ck_assert_uint_eq(t[1], 0);
	ck_assert_uint_eq(t[2], 300);
	ck_assert_str_eq(why, "device 1: GPU is lost");
	ck_assert_str_eq(calls(), "init\nshutdown\n");
}
END_TEST

START_TEST(collector_publishes_nvml_totals_flag_wins)
{
	char col[512], shm[64], dir[600], log[256], reason[256], env[700];
	struct shm_reader r;
	struct shm_snapshot snap;
	const struct shm_gpu *g = NULL;
	uint32_t n = 0;
	pid_t pid;

	if (tu_skip_unless_root("collector_publishes_nvml_totals_flag_wins"))
		return;
	tu_build_path(col, sizeof(col), "zernel-collector");
	tu_unique_shm_name(shm, sizeof(shm));
	snprintf(dir, sizeof(dir), "%s", lib);
	*strrchr(dir, '/') = '\0';
	snprintf(log, sizeof(log), "/tmp/zernel-nvml-col-%d.log", (int)getpid());
	/* The collector's own dlopen("libnvidia-ml.so.1") finds the fake here. */
	snprintf(env, sizeof(env), "%s", dir);
	setenv("LD_LIBRARY_PATH", env, 1);
	setenv("FAKE_NVML_TOTALS", "80000000000,40000000000,20000000000", 1);
	{
		char *argv[] = { col, "--shm", shm, "--publish-interval", "200", "--no-node-libs",
				 "--gpu-memory-total", "12345", NULL };

		pid = tu_spawn(argv, log);
	}
	unsetenv("LD_LIBRARY_PATH");
	ck_assert_int_gt(pid, 0);

	memset(&snap, 0, sizeof(snap));
	shm_reader_init(&r, shm);
	for (int i = 0; i < 150; i++) {
		if (shm_reader_snapshot(&r, &snap, reason, sizeof(reason)) == SHM_READ_OK) {
			g = shm_snapshot_gpus(&snap, &n);
			if (g && n >= 3)
				break;
		}
		tu_sleep_ms(100);
	}
	ck_assert_msg(g && n == 3, "no 3 GPUs in the segment (%u); see %s", n, log);
	ck_assert_uint_eq(g[0].gpu_id, 0);
	ck_assert_uint_eq(g[0].total_bytes, 12345);
	ck_assert_uint_eq(g[0].total_source, SHM_TOTAL_FLAG);
	ck_assert_uint_eq(g[1].total_bytes, 40000000000ull);
	ck_assert_uint_eq(g[1].total_source, SHM_TOTAL_NVML);
	ck_assert_uint_eq(g[2].total_bytes, 20000000000ull);
	ck_assert_uint_eq(g[2].total_source, SHM_TOTAL_NVML);
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	tu_stop(pid, SIGTERM, 5000);
	ck_assert_int_eq(tu_system("grep -q 'NVML: total memory of 3 GPUs read' '%s'", log), 0);
	unlink(log);
}
END_TEST

Suite *nvml_suite(void);

Suite *nvml_suite(void)
{
	Suite *s = suite_create("nvml");
	TCase *tc = tcase_create("totals");
	TCase *root = tcase_create("collector");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, nvml_reads_every_device_total);
	tcase_add_test(tc, nvml_failures_are_reported_not_fatal);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(root, setup, teardown);
	tcase_set_timeout(root, 60);
	tcase_add_test(root, collector_publishes_nvml_totals_flag_wins);
	suite_add_tcase(s, root);
	return s;
}
