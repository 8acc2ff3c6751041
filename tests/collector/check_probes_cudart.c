/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probes under NVIDIA's real runtime: zw_cudart, built by nvcc against
 * libcudart.so.13, runs over the fake driver (tests/fakes/fake_driver), and
 * the real collector, finding both libraries by discovery, must count what
 * the workload says it did exactly once each: cudaMalloc, cudaMallocAsync,
 * cudaMallocFromPoolAsync, cudaMallocPitch and the frees, with the memory
 * still held per device (a pool's memory until the pool gives it back:
 * zw_mempool); <<<>>>, cudaLaunchKernel, captured and cooperative
 * launches; graph launches; stream and device synchronisations.  With the
 * legacy and the per-thread default stream, whose driver entry points
 * differ (_ptsz), and with the runtime linked into the program, where the
 * driver's entry points are all there is to probe.  Skipped without the CUDA toolkit.  Needs root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

#define CUDART		"/usr/local/cuda/lib64/libcudart.so.13"

/* The workload's "<key> <name> <n>" line; fails the test when it is missing. */
static unsigned long long said(const char *out, const char *key, const char *name)
{
	char want[96];
	const char *p;

	snprintf(want, sizeof(want), "%s %s ", key, name);
	p = strstr(out, want);
	ck_assert_msg(p != NULL, "the workload did not report %s %s:\n%s", key, name, out);
	return strtoull(p + strlen(want), NULL, 10);
}

static unsigned long long sum(const char *out, const char *const *names)
{
	unsigned long long n = 0;

	for (; *names; names++)
		n += said(out, "COUNT", *names);
	return n;
}

/* The workload's path, or NULL after a skip message. */
static const char *cudart_workload(const char *test, char *buf, size_t len, const char *name)
{
	char rel[64], fake[512];

	if (tu_skip_unless_root(test))
		return NULL;
	if (access(CUDART, R_OK) != 0) {
		fprintf(stderr, "SKIP %s: no CUDA toolkit (%s)\n", test, CUDART);
		return NULL;
	}
	snprintf(rel, sizeof(rel), "tests/workloads/%s", name);
	tu_build_path(buf, len, rel);
	tu_build_path(fake, sizeof(fake), "tests/fakes/driver/libcuda.so.1");
	if (access(buf, X_OK) != 0 || access(fake, R_OK) != 0) {
		tu_skip_missing("%s: %s or %s is not built\n", test, buf, fake);
		return NULL;
	}
	return buf;
}

/* Sets (set) or unsets each NAME=VALUE of env (NULL-terminated, may be NULL). */
static void env_apply(const char *const *env, int set)
{
	for (; env && *env; env++) {
		char name[64];
		const char *eq = strchr(*env, '=');

		snprintf(name, sizeof(name), "%.*s", (int)(eq - *env), *env);
		if (set)
			setenv(name, eq + 1, 1);
		else
			unsetenv(name);
	}
}

/* Starts bin "wait" over the fake driver, with extra environment. */
static void cudart_start(struct tp_workload *w, const char *bin, const char *const *env)
{
	char dir[512], *argv[] = { (char *)bin, "wait", NULL };

	tu_build_path(dir, sizeof(dir), "tests/fakes/driver");
	setenv("LD_LIBRARY_PATH", dir, 1);
	env_apply(env, 1);
	ck_assert_int_eq(tp_workload_start(w, argv), 0);
	unsetenv("LD_LIBRARY_PATH");
	env_apply(env, 0);
}

/* Waits until the collector watches pid for CUDA (its libraries are probed by then). */
static void wait_watched(struct tp_collector *c, pid_t pid)
{
	const struct shm_proc *p = NULL;

	/* Up to 30 s: a loaded machine slows the collector's first scans. */
	for (int i = 0; i < 600; i++) {
		if (tp_snapshot(c) == 0 && (p = tp_proc(c, (uint32_t)pid)) &&
		    (p->watch_reason & SHM_WATCH_CUDA))
			return;
		tu_sleep_ms(50);
	}
	ck_abort_msg("pid %d was not watched (see %s)", (int)pid, c->log);
}

/*
 * Starts workload name ("wait") over the fake driver under a collector,
 * and lets it go once the collector watches it; 0 after a skip message.
 */
static int cudart_begin(const char *test, const char *name, char *bin, size_t len,
			struct tp_collector *c, struct tp_workload *w)
{
	if (!cudart_workload(test, bin, len, name))
		return 0;
	ck_assert_msg(tp_collector_start(c, NULL, 0) == 0, "collector did not start, see %s", c->log);
	cudart_start(w, bin, NULL);
	ck_assert_int_eq(tp_workload_expect(w, "WAIT", 20000), 0);
	wait_watched(c, w->pid);
	tp_workload_go(w);
	return 1;
}

static void check_counted_once(const char *test, const char *name)
{
	static const char *const allocs[] = { "cudaMalloc", "cudaMallocAsync",
		"cudaMallocFromPoolAsync", "cudaMallocPitch", NULL };
	static const char *const frees[] = { "cudaFree", "cudaFreeAsync", NULL };
	static const char *const launches[] = { "triple_chevron", "cudaLaunchKernel",
		"captured_launch", "cudaLaunchCooperativeKernel", NULL };
	static const char *const graphs[] = { "cudaGraphLaunch", NULL };
	static const char *const syncs[] = { "cudaStreamSynchronize", "cudaDeviceSynchronize",
		NULL };
	unsigned long long alloc_calls = 0, free_calls = 0, want_launch, want_sync;
	char bin[512], out[4096], dev[16];
	const struct shm_proc *p = NULL;
	const struct shm_gpu_mem *m;
	struct tp_collector c;
	struct tp_workload w;
	int n_dev, ok = 0;

	if (!cudart_begin(test, name, bin, sizeof(bin), &c, &w))
		return;
	ck_assert_msg(tp_workload_collect(&w, "DONE", out, sizeof(out), 30000) == 0,
		      "the workload did not finish:\n%s", out);
	/* One HELD line per device the fake shows. */
	n_dev = 0;
	for (const char *h = out; (h = strstr(h, "HELD ")) != NULL; h++)
		n_dev++;
	ck_assert_int_ge(n_dev, 2);
	want_launch = sum(out, launches);
	want_sync = sum(out, syncs);
	for (int i = 0; i < 600 && !ok; i++) {
		tu_sleep_ms(50);
		ok = tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL &&
		     p->lat[SHM_FAMILY_CUDA_LAUNCH].count >= want_launch &&
		     p->lat[SHM_FAMILY_CUDA_SYNC].count >= want_sync;
	}
	ck_assert_msg(ok, "the launches and syncs were not all seen (see %s)", c.log);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, want_launch);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count, sum(out, graphs));
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_SYNC].count, want_sync);
	/* Every device the workload used has its row, holding what it says it holds. */
	ck_assert_int_eq(tp_gpu_mem_rows(&c, (uint32_t)w.pid), (unsigned int)n_dev);
	for (int d = 0; d < n_dev; d++) {
		snprintf(dev, sizeof(dev), "%d", d);
		m = tp_gpu_mem(&c, (uint32_t)w.pid, (uint32_t)d);
		ck_assert_msg(m != NULL, "no memory row for device %d", d);
		ck_assert_uint_eq(m->used_bytes, said(out, "HELD", dev));
		ck_assert_uint_eq(m->failed_calls, 0);
		alloc_calls += m->alloc_calls;
		free_calls += m->free_calls;
	}
	ck_assert_uint_eq(alloc_calls, sum(out, allocs));
	ck_assert_uint_eq(free_calls, sum(out, frees));
	ck_assert_int_eq(tp_workload_finish(&w), 0);
	tp_collector_stop(&c);
}

START_TEST(test_real_runtime_calls_counted_once_each)
{
	check_counted_once("test_real_runtime_calls_counted_once_each", "zw_cudart");
}
END_TEST

/* Only the driver's entry points: cuCtxSynchronize_v2, cooperative and pool calls among them. */
START_TEST(test_static_runtime_calls_counted_once_each)
{
	check_counted_once("test_static_runtime_calls_counted_once_each", "zw_cudart_static");
}
END_TEST

START_TEST(test_real_runtime_calls_counted_once_each_per_thread_stream)
{
	check_counted_once("test_real_runtime_calls_counted_once_each_per_thread_stream",
			   "zw_cudart_ptds");
}
END_TEST

static int system_runtime_probed(const char *log)
{
	for (const char *l = strstr(log, "probing /usr/local/cuda"); l;
	     l = strstr(l + 1, "probing /usr/local/cuda")) {
		const char *end = strchr(l, '\n'), *rt = strstr(l, "/libcudart.so");

		if (rt && (!end || rt < end))
			return 1;
	}
	return 0;
}

/*
 * The node's own runtime is probed when the collector starts, so a program
 * that loads it and calls it at once, before any /proc scan could see it,
 * is counted completely from its first call.
 */
START_TEST(test_system_runtime_probed_before_any_process_loads_it)
{
	static const char *const launches[] = { "triple_chevron", "cudaLaunchKernel",
		"captured_launch", "cudaLaunchCooperativeKernel", NULL };
	static const char *const syncs[] = { "cudaStreamSynchronize", "cudaDeviceSynchronize",
		NULL };
	char bin[512], dir[512], out[4096], *log, *argv[] = { bin, "hold", NULL };
	const struct shm_proc *p = NULL;
	struct tp_collector c;
	struct tp_workload w;
	uint64_t stalest = 0;
	int ok = 0;

	if (!cudart_workload("test_system_runtime_probed_before_any_process_loads_it", bin,
			     sizeof(bin), "zw_cudart"))
		return;
	tp_probe_node_libs = 1;
	ck_assert_msg(tp_collector_start(&c, NULL, 0) == 0, "collector did not start, see %s", c.log);
	/*
	 * Right after its first publish, before any workload; the segment
	 * stays fresh while the libraries are attached (seconds when other
	 * processes on the node close uprobes).
	 */
	for (int i = 0; i < 300 && !ok; i++) {
		log = tu_read_file(c.log, NULL);
		/* "probing /usr/local/cuda.../libcudart.so (N symbols)", not another process's */
		ok = log && strstr(log, "found on the node") && system_runtime_probed(log);
		free(log);
		if (tp_snapshot(&c) == 0 && now_mono_ns() - c.snap.hdr->heartbeat_mono_ns > stalest)
			stalest = now_mono_ns() - c.snap.hdr->heartbeat_mono_ns;
		if (!ok)
			tu_sleep_ms(100);
	}
	ck_assert_msg(ok, "the node's libraries were not probed (see %s)", c.log);
	ck_assert_msg(stalest < 5 * TP_PUBLISH_MS * NSEC_PER_MSEC,
		      "the segment was %.3f s old while libraries were attached",
		      (double)stalest / 1e9);
	ok = 0;
	tu_build_path(dir, sizeof(dir), "tests/fakes/driver");
	setenv("LD_LIBRARY_PATH", dir, 1);
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	unsetenv("LD_LIBRARY_PATH");
	ck_assert_msg(tp_workload_collect(&w, "DONE", out, sizeof(out), 30000) == 0,
		      "the workload did not finish:\n%s", out);
	for (int i = 0; i < 600 && !ok; i++) {
		tu_sleep_ms(50);
		ok = tp_snapshot(&c) == 0 && (p = tp_proc(&c, (uint32_t)w.pid)) != NULL &&
		     p->lat[SHM_FAMILY_CUDA_LAUNCH].count >= sum(out, launches);
	}
	ck_assert_msg(ok, "the launches were not all seen (see %s)", c.log);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, sum(out, launches));
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_SYNC].count, sum(out, syncs));
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count,
			  said(out, "COUNT", "cudaGraphLaunch"));
	ck_assert_int_eq(tp_workload_finish(&w), 0);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Under PyTorch's cudaMallocAsync backend a process's GPU memory means what
 * it means under the caching allocator: what it holds from the driver.
 * zw_mempool frees into its pool, syncs at threshold 0, sets PyTorch's
 * threshold, trims, reaches a 2 MiB threshold through an event's sync and
 * a device sync; after each step the process's row holds what the driver
 * says the process holds.
 */
START_TEST(test_pool_memory_counts_until_the_pool_gives_it_back)
{
	static const char *const steps[] = { "freed-kept", "stream-sync", "kept-past-sync",
		"trimmed", "event-sync-threshold", "device-sync", "all-freed", "empty" };
	char bin[512], out[1024];
	const struct shm_gpu_mem *m = NULL;
	struct tp_collector c;
	struct tp_workload w;

	if (!cudart_begin("test_pool_memory_counts_until_the_pool_gives_it_back", "zw_mempool",
			  bin, sizeof(bin), &c, &w))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		unsigned long long want;
		int ok = 0;

		ck_assert_msg(tp_workload_collect(&w, "WAIT", out, sizeof(out), 20000) == 0,
			      "the workload stopped before %s:\n%s", steps[i], out);
		want = said(out, "HOLDS", steps[i]);
		/* Each step holds another figure than the one before: wait for it. */
		for (int k = 0; k < 200 && !ok; k++) {
			ok = tp_snapshot(&c) == 0 &&
			     (m = tp_gpu_mem(&c, (uint32_t)w.pid, 0)) != NULL &&
			     m->used_bytes == want;
			if (!ok)
				tu_sleep_ms(50);
		}
		ck_assert_msg(ok, "after %s the driver says %llu bytes, the collector %llu (see %s)",
			      steps[i], want, m ? (unsigned long long)m->used_bytes : 0ull, c.log);
		tp_workload_go(&w);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 20000), 0);
	/* Every call counted once: 1 cudaMalloc and 5 cudaMallocAsync, and their frees. */
	ck_assert_uint_eq(m->alloc_calls, 6);
	ck_assert_uint_eq(m->free_calls, 6);
	ck_assert_uint_eq(m->peak_bytes, 6 * 1048576ull);
	ck_assert_int_eq(tp_workload_finish(&w), 0);
	tp_collector_stop(&c);
}
END_TEST

/* A GPU row of the snapshot, or NULL. */
static const struct shm_gpu *gpu_of(const struct tp_collector *c, uint32_t id)
{
	uint32_t n;
	const struct shm_gpu *g = shm_snapshot_gpus(&c->snap, &n);

	for (uint32_t i = 0; g && i < n; i++)
		if (g[i].gpu_id == id)
			return &g[i];
	return NULL;
}

/*
 * Runs zw_cudart on one fake device with env, under a collector that sees
 * four GPUs through NVML, and returns (in *row) its memory row.
 */
static void run_selected(struct tp_collector *c, const char *bin, const char *const *env,
			 struct shm_gpu_mem *row, unsigned long long *held)
{
	char out[4096];
	const struct shm_gpu_mem *m;
	struct tp_workload w;
	uint32_t n;
	int ok = 0;

	cudart_start(&w, bin, env);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 20000), 0);
	wait_watched(c, w.pid);
	tp_workload_go(&w);
	ck_assert_msg(tp_workload_collect(&w, "DONE", out, sizeof(out), 30000) == 0,
		      "the workload did not finish:\n%s", out);
	*held = said(out, "HELD", "0");
	for (int i = 0; i < 600 && !ok; i++) {
		tu_sleep_ms(50);
		if (tp_snapshot(c) != 0)
			continue;
		m = shm_snapshot_gpu_mem(&c->snap, &n);
		for (uint32_t k = 0; m && k < n && !ok; k++)
			if (m[k].pid == (uint32_t)w.pid && m[k].used_bytes == *held) {
				*row = m[k];
				ok = 1;
			}
	}
	ck_assert_msg(ok, "no memory row of pid %d holding %llu bytes (see %s)", (int)w.pid,
		      *held, c->log);
	ck_assert_uint_eq(tp_gpu_mem_rows(c, (uint32_t)w.pid), 1);
	ck_assert_int_eq(tp_workload_finish(&w), 0);
}

START_TEST(test_visible_device_three_is_gpu_three)
{
	static const char *const pci_order[] = { "CUDA_VISIBLE_DEVICES=3",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "FAKE_CUDA_DEVICES=1", NULL };
	static const char *const default_order[] = { "CUDA_VISIBLE_DEVICES=3",
		"FAKE_CUDA_DEVICES=1", NULL };
	static const char *const uuid[] = {
		"CUDA_VISIBLE_DEVICES=GPU-00000002-1111-4222-8333-000000000002",
		"FAKE_CUDA_DEVICES=1", NULL };
	static const char *const nvml[] = { "FAKE_NVML_TOTALS=1000,2000,3000,4000", NULL };
	char bin[512], lib[512];
	unsigned long long held;
	const struct shm_gpu *g;
	struct shm_gpu_mem row;
	struct tp_collector c;

	if (!cudart_workload("test_visible_device_three_is_gpu_three", bin, sizeof(bin),
			     "zw_cudart"))
		return;
	/* The collector finds the fake NVML where the loader looks for libnvidia-ml.so.1. */
	tu_build_path(lib, sizeof(lib), "tests/fakes/nvml");
	setenv("LD_LIBRARY_PATH", lib, 1);
	env_apply(nvml, 1);
	ck_assert_msg(tp_collector_start(&c, NULL, 0) == 0, "collector did not start, see %s", c.log);
	unsetenv("LD_LIBRARY_PATH");
	env_apply(nvml, 0);

	/* Index 3 in PCI order: NVML's GPU 3, named as NVML names it. */
	run_selected(&c, bin, pci_order, &row, &held);
	ck_assert_uint_eq(row.gpu_id, 3);
	ck_assert_uint_eq(row.cuda_device, 0);
	ck_assert_str_eq(shm_gpu_map_name(row.gpu_map), "pci_order");
	ck_assert_uint_gt(held, 0);
	g = gpu_of(&c, 3);
	ck_assert_ptr_nonnull(g);
	ck_assert_str_eq(g->uuid, "GPU-00000003-1111-4222-8333-000000000003");
	ck_assert_str_eq(g->model_name, "NVIDIA Fake GPU");
	ck_assert_uint_eq(g->total_bytes, 4000);
	/* Its used memory is the driver's (the fake's quarter), not the rows' sum. */
	ck_assert_uint_eq(g->used_source, SHM_USED_DRIVER);
	ck_assert_uint_eq(g->used_bytes, 1000);

	/* A UUID names its GPU in any order. */
	run_selected(&c, bin, uuid, &row, &held);
	ck_assert_uint_eq(row.gpu_id, 2);
	ck_assert_str_eq(shm_gpu_map_name(row.gpu_map), "uuid");

	/* CUDA's default order is not documented: not known, and said so, never GPU 0. */
	run_selected(&c, bin, default_order, &row, &held);
	ck_assert_uint_eq(row.gpu_id, SHM_GPU_UNKNOWN);
	ck_assert_uint_eq(row.cuda_device, 0);
	ck_assert_str_eq(shm_gpu_map_name(row.gpu_map), "fastest_first");
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_cudart_suite(void);
Suite *probes_cudart_suite(void)
{
	Suite *s = suite_create("probes_cudart");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_real_runtime_calls_counted_once_each);
	tcase_add_test(tc, test_real_runtime_calls_counted_once_each_per_thread_stream);
	tcase_add_test(tc, test_static_runtime_calls_counted_once_each);
	tcase_add_test(tc, test_pool_memory_counts_until_the_pool_gives_it_back);
	tcase_add_test(tc, test_visible_device_three_is_gpu_three);
	tcase_add_test(tc, test_system_runtime_probed_before_any_process_loads_it);
	suite_add_tcase(s, tc);
	return s;
}
