/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA launch latency through the real probes: launches of a known,
 * injected duration through every entry point; counts must be exact
 * (a runtime launch reaching the driver counts once), graph launches in
 * their own series, and quantiles within the histogram's bound plus the
 * probe cost measured in the same run.  Needs root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "collector/agg/hist.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

#define DELAY_NS	200000ull	/* well above the probe cost of a slow VM */

static const struct shm_latency *lat(const struct tp_collector *c, pid_t pid, int family)
{
	const struct shm_proc *p = tp_proc(c, (uint32_t)pid);

	return p ? &p->lat[family] : NULL;
}

static int wait_count(struct tp_collector *c, pid_t pid, int family, uint64_t want)
{
	for (int i = 0; i < 50; i++) {
		const struct shm_latency *l;

		tu_sleep_ms(100);
		if (tp_snapshot(c) != 0)
			continue;
		l = lat(c, pid, family);
		if (l && l->count >= want)
			return 0;
	}
	return -1;
}

/*
 * The published quantile must lie between the injected time (a floor for
 * every sample) and the workload's own quantile of the same calls timed
 * around them (a ceiling for every sample: it includes the probe cost),
 * each widened by the histogram's error bound.
 */
static void assert_within(const char *what, const struct shm_latency *l, uint64_t floor_ns,
			  uint64_t own_p50, uint64_t own_p99)
{
	double lo = (double)floor_ns * (1.0 - HIST_MAX_REL_ERROR);
	double e = 1.0 + HIST_MAX_REL_ERROR;

	fprintf(stderr, "%s: p50 %llu (own %llu), p99 %llu (own %llu), floor %llu ns\n", what,
		(unsigned long long)l->window_p50_ns, (unsigned long long)own_p50,
		(unsigned long long)l->window_p99_ns, (unsigned long long)own_p99,
		(unsigned long long)floor_ns);
	ck_assert_msg(l->window_p50_ns >= lo && l->window_p50_ns <= own_p50 * e,
		      "%s p50 %llu ns outside [%.0f, %.0f]", what,
		      (unsigned long long)l->window_p50_ns, lo, own_p50 * e);
	ck_assert_msg(l->window_p99_ns >= lo && l->window_p99_ns <= own_p99 * e,
		      "%s p99 %llu ns outside [%.0f, %.0f]", what,
		      (unsigned long long)l->window_p99_ns, lo, own_p99 * e);
}

START_TEST(test_launch_counts_and_latency)
{
	struct tp_collector c;
	struct tp_workload w;
	char zw[512], rt[512], lib_arg[600], a[4][64];
	const struct shm_latency *l, *g;
	uint64_t n, lp50, lp99, gn, gp50, gp99;

	if (tu_skip_unless_root("test_launch_counts_and_latency"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	tp_zw_cuda(zw, sizeof(zw));
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));

	/* 300 + 200 + 200 + 100 launches of DELAY_NS, 60 + 40 graph launches. */
	snprintf(a[0], sizeof(a[0]), "launch:300:%llu", DELAY_NS);
	snprintf(a[1], sizeof(a[1]), "rtlaunch:200:%llu", DELAY_NS);
	snprintf(a[2], sizeof(a[2]), "exlaunch:200:%llu", DELAY_NS);
	snprintf(a[3], sizeof(a[3]), "ptsz:100:%llu", DELAY_NS);
	{
		char *argv[] = { zw, lib_arg, a[0], a[1], a[2], a[3], "graph:60:1000000",
				 "rtgraph:40:1000000", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_series(&w, "launch", &n, &lp50, &lp99, 30000), 0);
	ck_assert_int_eq(tp_workload_series(&w, "graph", &gn, &gp50, &gp99, 30000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 30000), 0);
	ck_assert_uint_eq(n, 800);
	ck_assert_uint_eq(gn, 100);
	ck_assert_int_eq(wait_count(&c, w.pid, SHM_FAMILY_CUDA_GRAPH_LAUNCH, 100), 0);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	l = lat(&c, w.pid, SHM_FAMILY_CUDA_LAUNCH);
	g = lat(&c, w.pid, SHM_FAMILY_CUDA_GRAPH_LAUNCH);
	ck_assert_ptr_nonnull(l);

	/* Once per launch: the runtime's launches reach the driver's. */
	ck_assert_uint_eq(l->count, 800);
	ck_assert_uint_eq(l->window_count, 800);
	ck_assert_uint_eq(g->count, 100);
	ck_assert_uint_eq(c.snap.hdr->node[SHM_FAMILY_CUDA_LAUNCH].count, 800);
	ck_assert_uint_eq(c.snap.hdr->node[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count, 100);
	ck_assert(l->sum_ns >= 800 * DELAY_NS);

	assert_within("launch", l, DELAY_NS, lp50, lp99);
	assert_within("graph launch", g, 1000000, gp50, gp99);

	/*
	 * The process exits: it is evicted, and its histograms are flushed
	 * and released without counting a launch twice or losing one.
	 */
	{
		pid_t pid = w.pid;
		int gone = 0;

		tp_workload_finish(&w);
		for (int i = 0; i < 50 && !gone; i++) {
			tu_sleep_ms(100);
			gone = tp_snapshot(&c) == 0 && !tp_proc(&c, (uint32_t)pid);
		}
		ck_assert_msg(gone, "exited workload still published");
		ck_assert_uint_eq(c.snap.hdr->node[SHM_FAMILY_CUDA_LAUNCH].count, 800);
		ck_assert_uint_eq(c.snap.hdr->node[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count, 100);
	}
	tp_collector_stop(&c);
}
END_TEST

/*
 * A pid reused while the collector has yet to read the launches of the
 * process that had it: children of a watched process, each forked the
 * moment the one before was reaped, with its pid, each launching while
 * the collector learns of the exit before it.  Every launch is counted
 * once, node-wide.
 */
START_TEST(test_reused_pid_loses_no_launch)
{
	enum { CHILDREN = 12, EACH = 3000 };
	struct tp_collector c;
	struct tp_workload w;
	char zw[512], lib[512], n[16], each[16], line[256];
	char *argv[] = { zw, lib, "chain", n, each, NULL };
	uint64_t want, node = 0;
	unsigned long long reused = 0;

	if (tu_skip_unless_root("test_reused_pid_loses_no_launch"))
		return;
	if (access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) {
		tu_skip_missing("a writable /proc/sys/kernel/ns_last_pid (pid reuse on demand)");
		return;
	}
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	tu_build_path(zw, sizeof(zw), "tests/workloads/zw_soak");
	tp_fake(lib, sizeof(lib), "libcuda.so.1");
	snprintf(n, sizeof(n), "%d", CHILDREN);
	snprintf(each, sizeof(each), "%d", EACH);
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "READY", 5000), 0);
	for (int i = 0; i < 100 && !(tp_snapshot(&c) == 0 && tp_proc(&c, (uint32_t)w.pid)); i++)
		tu_sleep_ms(100);
	ck_assert_msg(tp_proc(&c, (uint32_t)w.pid), "the parent was not found");
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_collect(&w, "DONE", line, sizeof(line), 120000), 0);
	ck_assert_int_eq(sscanf(line, "chain children %*u launches %llu reused %llu",
				(unsigned long long *)&want, &reused), 2);
	for (int i = 0; i < 50 && node != want; i++) {
		ck_assert_int_eq(tp_wait_publish(&c), 0);
		node = c.snap.hdr->node[SHM_FAMILY_CUDA_LAUNCH].count;
	}
	fprintf(stderr, "reused pids: %llu of %d children; launches %llu made, %llu counted\n",
		reused, CHILDREN, (unsigned long long)want, (unsigned long long)node);
	ck_assert_uint_eq(want, (uint64_t)CHILDREN * EACH);
	ck_assert_uint_ge(reused, CHILDREN / 2);
	ck_assert_uint_eq(node, want);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_launch_suite(void);
Suite *probes_launch_suite(void)
{
	Suite *s = suite_create("probes_launch");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_launch_counts_and_latency);
	tcase_add_test(tc, test_reused_pid_loses_no_launch);
	suite_add_tcase(s, tc);
	return s;
}
