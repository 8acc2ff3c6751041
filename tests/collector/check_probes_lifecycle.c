/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's life under the real probes: after exec, the same pid is a
 * new program whose figures start from nothing (the memory and launches
 * of the program before it are gone, and it stays watched); and each
 * memory row says whether it was tracked from the process's start: yes
 * for a process started after its libraries were probed, no for one that
 * was already running when the collector started.  Needs root
 * (BPF); the fake libraries of tests/fakes.
 */
#include <check.h>
#include <stdio.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

START_TEST(test_exec_starts_a_fresh_process_row)
{
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p = NULL;
	const struct shm_gpu_mem *m = NULL;
	char zw[512], rt[512], lib_arg[600];
	int ok = 0;

	if (tu_skip_unless_root("test_exec_starts_a_fresh_process_row"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg, "malloc:1000",
				 "rtlaunch:5:0", "wait", "exec", zw, "wait", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 10000), 0);
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL &&
		     p->lat[SHM_FAMILY_CUDA_LAUNCH].count == 5 &&
		     (m = tp_gpu_mem(&c, (uint32_t)w.pid, 0)) != NULL && m->used_bytes == 1000;
	}
	ck_assert_msg(ok, "the program before exec was not counted (see %s)", c.log);

	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "EXEC", 10000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 10000), 0);
	ok = 0;
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL &&
		     p->lat[SHM_FAMILY_CUDA_LAUNCH].count == 0 &&
		     tp_gpu_mem_rows(&c, (uint32_t)w.pid) == 0;
	}
	ck_assert_msg(ok, "after exec pid %d still carries the old program's figures (see %s)",
		      (int)w.pid, c.log);
	/* Still watched: the new program is the same process to its descendants and filters. */
	ck_assert(p->watch_reason & SHM_WATCH_CUDA);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

START_TEST(test_tracked_from_start_is_stated)
{
	struct tp_collector c;
	struct tp_workload before, after;
	const struct shm_gpu_mem *mb = NULL, *ma = NULL;
	char zw[512], drv[512], lib_arg[600];
	int ok = 0;

	if (tu_skip_unless_root("test_tracked_from_start_is_stated"))
		return;
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", tp_fake(drv, sizeof(drv), "libcuda.so.1"));
	{
		/* Running, its first allocation made, before the collector exists. */
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg, "cumalloc:1000",
				 "wait", "cumalloc:2000", NULL };

		ck_assert_int_eq(tp_workload_start(&before, argv), 0);
		ck_assert_int_eq(tp_workload_expect(&before, "WAIT", 10000), 0);
	}
	tu_sleep_ms(20);	/* its start and the probes' are ticks apart */
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	{
		char *argv[] = { zw, lib_arg, "cumalloc:3000", NULL };

		ck_assert_int_eq(tp_workload_start(&after, argv), 0);
	}
	tp_workload_go(&before);
	ck_assert_int_eq(tp_workload_expect(&before, "DONE", 10000), 0);
	ck_assert_int_eq(tp_workload_expect(&after, "DONE", 10000), 0);
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && (mb = tp_gpu_mem(&c, (uint32_t)before.pid, 0)) &&
		     (ma = tp_gpu_mem(&c, (uint32_t)after.pid, 0)) && mb->used_bytes == 2000 &&
		     ma->used_bytes == 3000;
	}
	ck_assert_msg(ok, "the allocations were not seen (see %s)", c.log);
	/* The 1000 bytes from before the collector are missing, and the row says it may be. */
	ck_assert_uint_eq(mb->flags & SHM_GPU_MEM_F_FROM_START, 0);
	ck_assert_uint_eq(ma->flags & SHM_GPU_MEM_F_FROM_START, SHM_GPU_MEM_F_FROM_START);
	tp_workload_finish(&before);
	tp_workload_finish(&after);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_lifecycle_suite(void);
Suite *probes_lifecycle_suite(void)
{
	Suite *s = suite_create("probes_lifecycle");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exec_starts_a_fresh_process_row);
	tcase_add_test(tc, test_tracked_from_start_is_stated);
	suite_add_tcase(s, tc);
	return s;
}
