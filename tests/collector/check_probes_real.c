/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probes on real NVIDIA libraries no one here wrote (the CUDA toolkit
 * under /usr/local/cuda: the driver stub, libcudart.so.13, libnccl.so.2).
 * Without a GPU every call fails fast, but each is made and must be seen;
 * failed allocations must not count as memory.  Skipped where the toolkit
 * is absent.  Needs root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

#define CUDA_LIB	"/usr/local/cuda/lib"

START_TEST(test_real_libraries_every_call_seen)
{
	static const char *const libs[] = {
		CUDA_LIB "/stubs/libcuda.so", CUDA_LIB "/libcudart.so.13", CUDA_LIB "/libnccl.so.2",
	};
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_gpu_mem *m;
	const struct shm_proc *p;
	const struct shm_nccl_op *ar, *send;
	uint64_t ar_calls0 = 0, ar_err0 = 0, send_calls0 = 0, n, p50, p99;
	char zw[512];
	int ok = 0;

	if (tu_skip_unless_root("test_real_libraries_every_call_seen"))
		return;
	for (size_t i = 0; i < 3; i++) {
		if (access(libs[i], R_OK) != 0) {
			fprintf(stderr, "SKIP test_real_libraries_every_call_seen: %s not installed\n",
				libs[i]);
			return;
		}
	}
	/* Found by discovery, as in production: no --lib. */
	ck_assert_msg(tp_collector_start(&c, NULL, 0) == 0, "collector did not start, see %s", c.log);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)),
			"lib:" CUDA_LIB "/stubs/libcuda.so", "lib:" CUDA_LIB "/libcudart.so.13",
			"lib:" CUDA_LIB "/libnccl.so.2", "wait",
			"cumalloc:4096", "cumalloc:8192", "malloc:4096", "async:100", "vmm:0:4096",
			"launch:10:0", "rtlaunch:5:0", "exlaunch:2:0", "graph:3:0", "rtgraph:2:0",
			"nccl:allreduce:10:7:4", "nccl:send:10:7:1", "sync:0",
			NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 10000), 0);
	/*
	 * Up to a minute: NCCL alone is 200 MB, and while the suites before
	 * this one have their uprobes freed, each attach waits for the
	 * kernel's node-wide lock.
	 */
	for (int i = 0; i < 600 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && c.snap.hdr->stats.libraries_attached >= 3 &&
		     tp_proc(&c, (uint32_t)w.pid);
	}
	ck_assert_msg(ok, "the real libraries were not probed (see %s)", c.log);
	/* NCCL figures are node-wide: other tests' processes may add to them. */
	ar = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	send = tp_nccl_op(&c, SHM_NCCL_SEND);
	ar_calls0 = ar ? ar->calls : 0;
	ar_err0 = ar ? ar->errors : 0;
	send_calls0 = send ? send->calls : 0;
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_series(&w, "launch", &n, &p50, &p99, 20000), 0);
	ck_assert_uint_eq(n, 17);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 20000), 0);

	ok = 0;
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL &&
		     p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count >= 5 &&
		     (m = tp_gpu_mem(&c, (uint32_t)w.pid, 0)) != NULL && m->failed_calls >= 5;
	}
	ck_assert_msg(ok, "calls into the real libraries were not seen");
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	m = tp_gpu_mem(&c, (uint32_t)w.pid, 0);
	/* Every call seen, once. */
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, 17);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count, 5);
	/* Five failed allocations on the default device: no memory. */
	ck_assert_uint_eq(m->failed_calls, 5);
	ck_assert_uint_eq(m->alloc_calls, 0);
	ck_assert_uint_eq(m->used_bytes, 0);
	ck_assert_uint_eq(m->peak_bytes, 0);
	ck_assert_uint_eq(tp_gpu_mem_rows(&c, (uint32_t)w.pid), 1);
	/* NCCL without a communicator: four all_reduce and one send, all errors. */
	ar = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	send = tp_nccl_op(&c, SHM_NCCL_SEND);
	ck_assert_uint_ge(ar->calls - ar_calls0, 4);
	ck_assert_uint_ge(ar->errors - ar_err0, 4);
	ck_assert_uint_ge(send->calls - send_calls0, 1);
	ck_assert(p->watch_reason & SHM_WATCH_CUDA);
	ck_assert(p->watch_reason & SHM_WATCH_NCCL);

	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_real_suite(void);
Suite *probes_real_suite(void)
{
	Suite *s = suite_create("probes_real");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_real_libraries_every_call_seen);
	suite_add_tcase(s, tc);
	return s;
}
