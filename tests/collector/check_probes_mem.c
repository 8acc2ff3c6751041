/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU memory through the real probes: the real collector probes the fake
 * CUDA libraries while workloads allocate and free on several devices; the
 * published figures must match what the workloads did, exactly.  Needs
 * root (BPF).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

struct mem_want {
	uint32_t gpu;
	uint64_t used, peak, allocs, frees, failed;
};

static int mem_matches(const struct tp_collector *c, uint32_t pid, const struct mem_want *w,
		       size_t n)
{
	if (tp_gpu_mem_rows(c, pid) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct shm_gpu_mem *m = tp_gpu_mem(c, pid, w[i].gpu);

		if (!m || m->used_bytes != w[i].used || m->peak_bytes != w[i].peak ||
		    m->alloc_calls != w[i].allocs || m->free_calls != w[i].frees ||
		    m->failed_calls != w[i].failed)
			return 0;
	}
	return 1;
}

static void assert_mem(const struct tp_collector *c, uint32_t pid, const struct mem_want *w,
		       size_t n)
{
	ck_assert_uint_eq(tp_gpu_mem_rows(c, pid), n);
	for (size_t i = 0; i < n; i++) {
		const struct shm_gpu_mem *m = tp_gpu_mem(c, pid, w[i].gpu);

		ck_assert_msg(m, "no row for pid %u gpu %u", pid, w[i].gpu);
		ck_assert_uint_eq(m->used_bytes, w[i].used);
		ck_assert_uint_eq(m->peak_bytes, w[i].peak);
		ck_assert_uint_eq(m->alloc_calls, w[i].allocs);
		ck_assert_uint_eq(m->free_calls, w[i].frees);
		ck_assert_uint_eq(m->failed_calls, w[i].failed);
	}
}

/* Polls until both processes show what they did (or a timeout), then asserts. */
START_TEST(test_memory_exact_per_pid_and_gpu)
{
	struct tp_collector c;
	struct tp_workload w1, w2;
	char zw[512], rt[512];
	char lib_arg[600];
	int ok = 0;

	if (tu_skip_unless_root("test_memory_exact_per_pid_and_gpu"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	{
		/*
		 * gpu 0: 1000 + 3000, free 3000, + 5000 (driver)  -> used 6000, peak 6000
		 * gpu 2: async 7000; two failed allocations; a rejected free
		 * gpu 5: VMM 4096 + 8192, release 8192 -> used 4096, peak 12288
		 * gpu 3: context made current by the driver API, 100 bytes
		 */
		char *argv1[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg,
			"malloc:1000", "malloc:3000", "free", "cumalloc:5000",
			"dev:2", "async:7000", "malloc:0", "cumalloc:2000000000000", "badfree",
			"vmm:5:4096", "vmm:5:8192", "free",
			"ctxdev:3", "cumalloc:100", NULL };
		/* gpu 0: 111; gpu 1: 4096 x 2, free one -> 4096, peak 8192 */
		char *argv2[] = { zw, lib_arg, "malloc:111", "dev:1", "malloc:4096",
			"malloc:4096", "free", NULL };

		ck_assert_int_eq(tp_workload_start(&w1, argv1), 0);
		ck_assert_int_eq(tp_workload_start(&w2, argv2), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w1, "DONE", 10000), 0);
	ck_assert_int_eq(tp_workload_expect(&w2, "DONE", 10000), 0);

	const struct mem_want want1[] = {
		{ 0, 6000, 6000, 3, 1, 0 },
		{ 2, 7000, 7000, 1, 0, 2 },
		{ 5, 4096, 12288, 2, 1, 0 },
		{ 3, 100, 100, 1, 0, 0 },
	};
	const struct mem_want want2[] = {
		{ 0, 111, 111, 1, 0, 0 },
		{ 1, 4096, 8192, 2, 1, 0 },
	};

	for (int i = 0; i < 40 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 &&
		     mem_matches(&c, (uint32_t)w1.pid, want1, 4) &&
		     mem_matches(&c, (uint32_t)w2.pid, want2, 2);
	}
	assert_mem(&c, (uint32_t)w1.pid, want1, 4);
	assert_mem(&c, (uint32_t)w2.pid, want2, 2);
	ck_assert_ptr_nonnull(tp_proc(&c, (uint32_t)w1.pid));
	ck_assert(tp_proc(&c, (uint32_t)w1.pid)->watch_reason & SHM_WATCH_CUDA);

	/* Exit: the process and its memory rows go within a few intervals. */
	{
		uint32_t pid1 = (uint32_t)w1.pid;
		int gone = 0;

		tp_workload_finish(&w1);
		for (int i = 0; i < 10 && !gone; i++) {
			tu_sleep_ms(TP_PUBLISH_MS);
			gone = tp_snapshot(&c) == 0 && !tp_proc(&c, pid1) &&
			       tp_gpu_mem_rows(&c, pid1) == 0;
		}
		ck_assert_msg(gone, "pid %u still published after exit", pid1);
		/* The other process is untouched. */
		assert_mem(&c, (uint32_t)w2.pid, want2, 2);
	}
	tp_workload_finish(&w2);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_mem_suite(void);
Suite *probes_mem_suite(void)
{
	Suite *s = suite_create("probes_mem");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_memory_exact_per_pid_and_gpu);
	suite_add_tcase(s, tc);
	return s;
}
