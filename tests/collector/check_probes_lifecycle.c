/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's life under the real probes: after exec, the same pid is a
 * new program whose figures start from nothing (the memory and launches
 * of the program before it are gone, and it stays watched).  Needs root
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

Suite *probes_lifecycle_suite(void);
Suite *probes_lifecycle_suite(void)
{
	Suite *s = suite_create("probes_lifecycle");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exec_starts_a_fresh_process_row);
	suite_add_tcase(s, tc);
	return s;
}
