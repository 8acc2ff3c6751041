/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's life under the real probes: after exec, the same pid is a
 * new program whose figures start from nothing (the memory and launches
 * of the program before it are gone, and it stays watched; its CUDA calls
 * no longer make its main thread a helper's); and each
 * memory row says whether it was tracked from the process's start: yes
 * for a process started after its libraries were probed, no for one that
 * was already running when the collector started.  Needs root
 * (BPF); the fake libraries of tests/fakes.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
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

/*
 * A process that made CUDA calls and then runs another program: the new
 * program has made none, so its main thread is a training thread again
 * and its waits count, even once the old calls are older than the 10 s
 * a CUDA call keeps a thread training.
 */
START_TEST(test_exec_forgets_the_old_programs_cuda_calls)
{
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p = NULL;
	char zw[512], rt[512], lib_arg[600];
	uint64_t input = 0;

	if (tu_skip_unless_root("test_exec_forgets_the_old_programs_cuda_calls"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg, "rtlaunch:5:0",
				 "sleep:10500", "exec", zw, "wait", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "EXEC", 20000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 10000), 0);
	/* Blocked reading its stdin (input) this long, then let go. */
	tu_sleep_ms(400);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 10000), 0);
	for (int i = 0; i < 50 && input < 300 * NSEC_PER_MSEC; i++) {
		tu_sleep_ms(100);
		if (tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL)
			input = p->thread_state_ns[SHM_STATE_INPUT];
	}
	ck_assert_msg(input >= 300 * NSEC_PER_MSEC && input < 2000 * NSEC_PER_MSEC,
		      "pid %d after exec: %llu ns of input counted, 400 ms waited (see %s)",
		      (int)w.pid, (unsigned long long)input, c.log);
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

/* Starts zw_cuda over the fake runtime and NCCL, each call taking call_ns. */
static void start_calls(struct tp_workload *w, const char *call_ns, const char *op1,
			const char *op2)
{
	static char zw[512], rt[512], nc[512], lib_rt[600], lib_nccl[600];
	char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_rt, lib_nccl, (char *)op1,
			 (char *)op2, NULL };

	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	setenv("FAKE_NCCL_NS", call_ns, 1);
	ck_assert_int_eq(tp_workload_start(w, argv), 0);
	unsetenv("FAKE_NCCL_NS");
}

/* Waits until pid is watched, and then has a communicator when asked to. */
static void wait_inside(struct tp_collector *c, pid_t pid, int comm)
{
	int ok = 0;

	for (int i = 0; i < 300 && !ok; i++) {
		uint32_t n = 0;
		const struct shm_nccl_comm *m;

		tu_sleep_ms(50);
		if (tp_snapshot(c) != 0 || !tp_proc(c, (uint32_t)pid))
			continue;
		m = shm_snapshot_nccl_comms(&c->snap, &n);
		ok = !comm;
		for (uint32_t k = 0; k < n; k++)
			ok |= m[k].pid == (uint32_t)pid;
	}
	ck_assert_msg(ok, "pid %d did not reach its long call", (int)pid);
	/* Its next call is the long one: well inside it by now. */
	tu_sleep_ms(300);
}

/*
 * SIGKILL inside a probed call: the call never returns, so no sample may
 * come of it, and nothing of it may stay behind (the in-flight state is
 * the thread's, freed with it).  The node-wide figures show any sample;
 * a process after them is counted exactly once per call.
 */
START_TEST(test_killed_inside_calls_leaves_no_sample)
{
	struct tp_collector c;
	struct tp_workload nccl, sync, after;
	const struct shm_nccl_op *ar;
	uint64_t ar_calls, ar_samples, sync_samples;

	if (tu_skip_unless_root("test_killed_inside_calls_leaves_no_sample"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	ck_assert_int_eq(tp_snapshot(&c), 0);
	ar = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	ar_calls = ar->calls;
	ar_samples = ar->duration.count;
	sync_samples = c.snap.hdr->node[SHM_FAMILY_CUDA_SYNC].count;

	/* An all-reduce and a synchronisation of a minute each, killed inside. */
	start_calls(&nccl, "60000000000", "commrank:2:0", "nccl:allreduce:8:7:1");
	start_calls(&sync, "0", "sync:60000000000", "wait");
	wait_inside(&c, nccl.pid, 1);
	wait_inside(&c, sync.pid, 0);
	ck_assert_int_eq(kill(nccl.pid, SIGKILL), 0);
	ck_assert_int_eq(kill(sync.pid, SIGKILL), 0);
	tp_workload_finish(&nccl);
	tp_workload_finish(&sync);

	/* Then one of each that returns. */
	start_calls(&after, "300000", "commrank:2:0", "nccl:allreduce:8:7:1");
	ck_assert_int_eq(tp_workload_expect(&after, "DONE", 30000), 0);
	for (int i = 0; i < 300; i++) {
		tu_sleep_ms(50);
		if (tp_snapshot(&c) == 0 &&
		    tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE)->duration.count > ar_samples)
			break;
	}
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	ar = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	/* A call is counted at its return, with its bytes and duration. */
	ck_assert_uint_eq(ar->calls, ar_calls + 1);
	ck_assert_uint_eq(ar->duration.count, ar_samples + 1);
	ck_assert_uint_lt(ar->duration.window_max_ns, 10 * NSEC_PER_SEC);
	ck_assert_uint_eq(c.snap.hdr->node[SHM_FAMILY_CUDA_SYNC].count, sync_samples);
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)nccl.pid));
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)sync.pid));
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
	tcase_add_test(tc, test_exec_forgets_the_old_programs_cuda_calls);
	tcase_add_test(tc, test_tracked_from_start_is_stated);
	tcase_add_test(tc, test_killed_inside_calls_leaves_no_sample);
	suite_add_tcase(s, tc);
	return s;
}
