/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Workload histograms (collector/agg/agg_workload.c) against what the test
 * fed: each sample in the row of the workload its process belonged to at
 * that moment, counts that never fall when processes exit, both sets of
 * buckets adding up, and rows that make room for new workloads without
 * losing one that still has processes.  Read back through shm_reader,
 * which validates every row.  Unprivileged.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "collector/agg/agg.h"
#include "collector/agg/hist.h"
#include "collector/agg/latency.h"
#include "common/util.h"
#include "tests/collector/tu_agg.h"

static struct tu_agg fx;

static void setup(void)
{
	tu_agg_open(&fx, (struct shm_capacity){ .procs = 16, .gpu_mem = 4, .gpus = 2,
						.nccl_comms = 2 }, SHM_MODE_SIMULATE);
}

static void teardown(void)
{
	tu_agg_close(&fx);
}

static void watch(uint32_t pid)
{
	ck_assert_int_eq(agg_proc_watch(fx.a, pid, 1, SHM_WATCH_PID, "w", 0), 0);
}

/* pid's identity: a pod when pod is set, else its UID, else a Slurm job. */
static void identify(uint32_t pid, const char *ns, const char *pod, const char *uid,
		     uint64_t slurm_job)
{
	struct shm_identity id;

	memset(&id, 0, sizeof(id));
	id.rank = id.local_rank = id.world_size = id.group_rank = -1;
	snprintf(id.namespace, sizeof(id.namespace), "%s", ns);
	snprintf(id.pod, sizeof(id.pod), "%s", pod);
	snprintf(id.pod_uid, sizeof(id.pod_uid), "%s", uid);
	id.slurm_job_id = slurm_job;
	ck_assert_int_eq(agg_proc_set_identity(fx.a, pid, &id, now_mono_ns()), 0);
}

static void samples(uint32_t pid, unsigned int n, uint64_t value_ns)
{
	for (unsigned int i = 0; i < n; i++)
		ck_assert_int_eq(agg_latency(fx.a, pid, SHM_FAMILY_DATALOADER_WAIT,
					     now_mono_ns(), value_ns), 0);
}

static uint64_t count_of(uint32_t kind, const char *name)
{
	const struct shm_workload *w = tu_agg_workload(&fx, kind, name);

	return w ? w->lat[SHM_FAMILY_DATALOADER_WAIT].count : 0;
}

/*
 * A DataLoader worker exits at every epoch's end: its pod's count keeps
 * its samples (a sum over live processes would fall, a counter reset to
 * Prometheus), and the next epoch's worker adds to it.
 */
START_TEST(workload_counts_keep_the_samples_of_processes_gone)
{
	const struct shm_workload *w;

	watch(100);
	watch(101);
	identify(100, "ml", "trainer-0", "", 0);
	identify(101, "ml", "trainer-0", "", 0);
	samples(100, 7, 2000000);
	samples(101, 5, 40000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "trainer-0"), 12);

	agg_proc_exit(fx.a, 101);
	tu_agg_publish(&fx, NULL);
	w = tu_agg_workload(&fx, SHM_WORKLOAD_POD, "trainer-0");
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(w->lat[SHM_FAMILY_DATALOADER_WAIT].count, 12);
	ck_assert_uint_eq(w->lat[SHM_FAMILY_DATALOADER_WAIT].sum_ns, 7 * 2000000 + 5 * 40000);
	ck_assert_uint_eq(w->processes, 1);
	ck_assert_str_eq(w->namespace, "ml");

	watch(102);
	identify(102, "ml", "trainer-0", "", 0);
	samples(102, 3, 40000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "trainer-0"), 15);
}
END_TEST

/*
 * A sample counts where its process was when it was taken: before its
 * identity is read, in the node's row; then in its pod's, known by UID
 * until the kubelet's directory names it.  Earlier rows keep theirs.
 */
START_TEST(each_sample_counts_in_the_workload_of_its_moment)
{
	watch(200);
	samples(200, 2, 1000);
	identify(200, "", "", "0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", 0);
	samples(200, 3, 1000);
	identify(200, "ml", "trainer-1", "0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", 0);
	samples(200, 4, 1000);
	watch(201);
	identify(201, "", "", "", 77);
	samples(201, 6, 1000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_NODE, ""), 2);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD_UID, "0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"), 3);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "trainer-1"), 4);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_SLURM_JOB, "77"), 6);
	ck_assert_uint_eq(tu_agg_workload(&fx, SHM_WORKLOAD_POD_UID,
					  "0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b")->processes, 0);
}
END_TEST

/*
 * Each value lands in the log-linear bucket hist.h gives it and in its
 * classic bucket; a batch from the kernel whose log-linear counts lag or
 * lead its count (read while a sample was being recorded) still leaves
 * both sets adding up to the count.
 */
START_TEST(both_sets_of_buckets_hold_every_sample)
{
	static const uint64_t values[] = { 0, 1, 63, 64, 65, 1000, 123456, 999999999,
					   HIST_MAX_VALUE, HIST_MAX_VALUE + 12345 };
	uint64_t hist[HIST_BUCKETS] = { 0 }, prom[SHM_LAT_BUCKETS] = { 0 };
	const struct shm_workload_latency *l;
	uint64_t fine = 0;

	watch(300);
	identify(300, "ml", "p", "", 0);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		ck_assert_int_eq(agg_latency(fx.a, 300, SHM_FAMILY_CUDA_LAUNCH, now_mono_ns(),
					     values[i]), 0);
	tu_agg_publish(&fx, NULL);
	l = &tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p")->lat[SHM_FAMILY_CUDA_LAUNCH];
	ck_assert_uint_eq(l->count, 10);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		ck_assert_uint_ge(l->fine[hist_bucket_index(values[i])], 1);
		ck_assert_uint_ge(l->bucket[latency_bucket_of(values[i])], 1);
	}
	ck_assert_uint_eq(l->fine[0], 1);
	ck_assert_uint_eq(l->fine[HIST_BUCKETS - 1], 2);	/* the largest and the one above */

	/* 5 samples in the classic buckets, 4 in the log-linear ones: one more at the top. */
	prom[latency_bucket_of(3000)] = 5;
	hist[hist_bucket_index(3000)] = 3;
	hist[hist_bucket_index(3500)] = 1;
	ck_assert_int_eq(agg_latency_batch(fx.a, 300, SHM_FAMILY_RUNQ_DELAY, now_mono_ns(),
					   hist, prom, 5, 15500, 3600), 0);
	/* 2 samples, 3 log-linear counts: the one ahead taken back from the top. */
	memset(prom, 0, sizeof(prom));
	memset(hist, 0, sizeof(hist));
	prom[latency_bucket_of(3000)] = 2;
	hist[hist_bucket_index(3000)] = 3;
	ck_assert_int_eq(agg_latency_batch(fx.a, 300, SHM_FAMILY_RUNQ_DELAY, now_mono_ns(),
					   hist, prom, 2, 6000, 3000), 0);
	tu_agg_publish(&fx, NULL);
	l = &tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p")->lat[SHM_FAMILY_RUNQ_DELAY];
	ck_assert_uint_eq(l->count, 7);
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		fine += l->fine[i];
	ck_assert_uint_eq(fine, 7);
	ck_assert_uint_eq(l->fine[hist_bucket_index(3000)], 5);
	ck_assert_uint_eq(l->fine[hist_bucket_index(3500)], 2);
}
END_TEST

static void reopen(uint32_t procs)
{
	tu_agg_close(&fx);
	tu_agg_open(&fx, (struct shm_capacity){ .procs = procs, .gpu_mem = 4, .gpus = 2,
						.nccl_comms = 2 }, SHM_MODE_SIMULATE);
}

/* Process pid, alone in pod p<i>. */
static void in_own_pod(uint32_t pid, uint32_t i)
{
	char pod[16];

	watch(pid);
	snprintf(pod, sizeof(pod), "p%u", i);
	identify(pid, "ml", pod, "", 0);
}

/*
 * Rows are as many as the segment has processes, up to SHM_WORKLOADS.  A
 * row whose processes are gone lingers SHM_WORKLOAD_LINGER_NS, or less
 * when a new workload needs its place.
 */
START_TEST(rows_make_room_from_workloads_gone)
{
	uint64_t t = now_mono_ns();

	reopen(4);
	for (uint32_t i = 0; i < 4; i++) {
		in_own_pod(400 + i, i);
		samples(400 + i, 1 + i, 1000);
	}
	agg_proc_exit(fx.a, 403);
	in_own_pod(404, 4);
	samples(404, 9, 1000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(fx.snap.hdr->table[SHM_TABLE_WORKLOADS].capacity, 4);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p4"), 9);
	ck_assert_ptr_null(tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p3"));
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p0"), 1);

	/* p0 and p1 empty: their rows go to the next workloads. */
	agg_proc_exit(fx.a, 400);
	agg_proc_exit(fx.a, 401);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p1"), 2);
	in_own_pod(405, 5);
	samples(405, 2, 1000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p5"), 2);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p2"), 3);
	ck_assert_uint_eq(fx.snap.hdr->table[SHM_TABLE_WORKLOADS].overflows, 0);

	/* A row empty for the linger time goes at the next publish; the others stay. */
	agg_proc_exit(fx.a, 402);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p2"), 3);
	agg_publish(fx.a, &fx.w, t + SHM_WORKLOAD_LINGER_NS + 60 * NSEC_PER_SEC, now_real_ns(), NULL);
	tu_agg_publish(&fx, NULL);
	ck_assert_ptr_null(tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p2"));
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p4"), 9);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p5"), 2);
}
END_TEST

/*
 * A row with processes is never given up: with SHM_WORKLOADS workloads
 * each holding a process, one more finds no row, counted once as the
 * table's overflow however often its identity is read again, and its
 * samples are in its per-process series only.  Once a row is free, the
 * next identity read gives it one.
 */
START_TEST(a_full_table_of_live_workloads_counts_the_newcomer)
{
	const uint32_t late = 500 + SHM_WORKLOADS;

	reopen(SHM_WORKLOADS + 1);
	for (uint32_t i = 0; i < SHM_WORKLOADS; i++) {
		in_own_pod(500 + i, i);
		samples(500 + i, 1, 1000);
	}
	in_own_pod(late, SHM_WORKLOADS);
	samples(late, 3, 1000);
	identify(late, "ml", "p64", "", 0);	/* read again: still no row */
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(fx.snap.hdr->table[SHM_TABLE_WORKLOADS].count, SHM_WORKLOADS);
	ck_assert_uint_eq(fx.snap.hdr->table[SHM_TABLE_WORKLOADS].overflows, 1);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p0"), 1);
	ck_assert_ptr_null(tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p64"));
	ck_assert_uint_eq(tu_agg_proc(&fx, late)->lat[SHM_FAMILY_DATALOADER_WAIT].count, 3);

	agg_proc_exit(fx.a, 500);
	identify(late, "ml", "p64", "", 0);
	samples(late, 2, 1000);
	tu_agg_publish(&fx, NULL);
	ck_assert_uint_eq(count_of(SHM_WORKLOAD_POD, "p64"), 2);
	ck_assert_ptr_null(tu_agg_workload(&fx, SHM_WORKLOAD_POD, "p0"));
	ck_assert_uint_eq(fx.snap.hdr->table[SHM_TABLE_WORKLOADS].overflows, 1);
}
END_TEST

Suite *agg_workload_suite(void);
Suite *agg_workload_suite(void)
{
	Suite *s = suite_create("agg_workload");
	TCase *tc = tcase_create("workloads");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, workload_counts_keep_the_samples_of_processes_gone);
	tcase_add_test(tc, each_sample_counts_in_the_workload_of_its_moment);
	tcase_add_test(tc, both_sets_of_buckets_hold_every_sample);
	tcase_add_test(tc, rows_make_room_from_workloads_gone);
	tcase_add_test(tc, a_full_table_of_live_workloads_counts_the_newcomer);
	suite_add_tcase(s, tc);
	return s;
}
