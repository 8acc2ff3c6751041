/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ring buffer between the probes and the collector overflows: the
 * collector is stopped (SIGSTOP) while a watched process makes hundreds
 * of thousands of context switches, each a record (with no in-kernel
 * process slots, as for processes past the slots).  Records that found no
 * room are counted as dropped, and what was aggregated before stays as it
 * was: a process's memory, its rows, a valid segment.  Needs root (BPF).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"
#include "tests/collector/tu_waits.h"

START_TEST(test_ring_overflow_is_counted_and_harmless)
{
	static const char *const flood_args[] = { "futex", "150000", "0", NULL };
	struct tp_collector c;
	struct tw_work flood;
	struct tp_workload mem;
	char zw[512], drv[512], lib_arg[600], pid[16];
	const char *extra[] = { "--pid", pid, "--lib", drv, "--process-slots", "0", NULL };
	const struct shm_gpu_mem *m;
	uint64_t dropped0;

	if (tu_skip_unless_root("test_ring_overflow_is_counted_and_harmless"))
		return;
	tp_fake(drv, sizeof(drv), "libcuda.so.1");
	ck_assert_int_eq(tw_start(&flood, flood_args), 0);
	snprintf(pid, sizeof(pid), "%d", (int)flood.pid);
	ck_assert_msg(tw_collector_watch_args(&c, extra, flood.pid) == 0,
		      "collector did not start; see %s", c.log);
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", drv);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg, "cumalloc:4096",
				 "cumalloc:8192", "wait", "free", NULL };

		ck_assert_int_eq(tp_workload_start(&mem, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&mem, "WAIT", 10000), 0);
	for (int i = 0; i < 300; i++) {
		tu_sleep_ms(50);
		if (tp_snapshot(&c) == 0 && (m = tp_gpu_mem(&c, (uint32_t)mem.pid, 0)) &&
		    m->used_bytes == 4096 + 8192)
			break;
	}
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	dropped0 = c.snap.hdr->stats.events_dropped;

	/* Nobody drains the ring while the flood runs. */
	ck_assert_int_eq(kill(c.pid, SIGSTOP), 0);
	tw_go(&flood);
	ck_assert_int_eq(tw_wait_line(&flood, "done", 120000), 0);
	ck_assert_int_eq(kill(c.pid, SIGCONT), 0);
	ck_assert_int_eq(tw_settle(&c), 0);

	fprintf(stderr, "ring overflow: %llu records dropped\n",
		(unsigned long long)(c.snap.hdr->stats.events_dropped - dropped0));
	ck_assert_uint_gt(c.snap.hdr->stats.events_dropped, dropped0);
	m = tp_gpu_mem(&c, (uint32_t)mem.pid, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 4096 + 8192);
	ck_assert_uint_eq(m->alloc_calls, 2);
	ck_assert_ptr_nonnull(tp_proc(&c, (uint32_t)flood.pid));
	/* Still counting: the free after the overflow lands on its allocation. */
	tp_workload_go(&mem);
	ck_assert_int_eq(tp_workload_expect(&mem, "DONE", 10000), 0);
	for (int i = 0; i < 300; i++) {
		tu_sleep_ms(50);
		if (tp_snapshot(&c) == 0 && (m = tp_gpu_mem(&c, (uint32_t)mem.pid, 0)) &&
		    m->free_calls == 1)
			break;
	}
	ck_assert_uint_eq(m->used_bytes, 4096);
	ck_assert_uint_eq(m->free_calls, 1);
	tp_workload_finish(&mem);
	tw_finish(&flood);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_ring_suite(void);
Suite *probes_ring_suite(void)
{
	Suite *s = suite_create("probes_ring");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_ring_overflow_is_counted_and_harmless);
	suite_add_tcase(s, tc);
	return s;
}
