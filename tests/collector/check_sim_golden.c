/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulator on a synthetic clock, pinned to what it published before
 * the probe ABI was typed: each scenario runs 120 ticks of 100 ms from
 * t = 1000 s (8 processes, 4 GPUs, seed 0x5eed) and publishes every 10
 * ticks; every publish is read back with shm_reader and folded into one
 * digest (rows and header, with the fields that name the writer or time
 * the publish zeroed).  The expected values were produced by the code
 * before the simulator went through the probes' decoder, and must not
 * move, with these intended differences: the simulator makes its
 * processes and communicators known by records, as the probes do, and the
 * decoder counts every record as an event (see SG_REGISTRATION); and since
 * NCCL waits follow streams, the job also runs all_to_all, scatter and
 * gather (more random draws), each wait is a call record followed by the
 * synchronisation of its stream, communicators carry their rank's wait,
 * gap and pending calls and are named by the commHash of one uniqueId, and
 * the straggler scenario's slow rank waits the usual time itself.  A
 * trainer's step also ends in a stream synchronisation (the CUDA sync
 * family), and the identity table (pods, ranks, run id of the simulated
 * job) is folded in last.  Memory rows carry the driver's figure, zero
 * and unknown here (the simulator has no driver), so only the segment's
 * layout moved the digests, not one figure.  Last, a trainer's compute is
 * split, with no new draw, into its own time on the CPU and the time it
 * spins in the driver's synchronisations (its gpu thread state): the
 * digests moved, every count above them stayed.  Then the workload
 * histograms came into the segment (folded in after the identity) and
 * NCCL's per-op rows gained their log-linear buckets: the digests moved
 * again, every count stayed, and every sample of the node's series is in
 * exactly one workload's (checked on each run).  Last, that spin is also
 * a stall at the line that synchronises (loss.item()), as the real
 * collector reports a spinning sync: one more record a step, so
 * events_total and the digests moved, every count stayed.  Then each
 * collective (not point-to-point) also reports its time on the GPU, as
 * Zernel's NCCL profiler plugin does, into a field communicators gained:
 * one more record a collective, events_total and the digests moved, every
 * count stayed.
 * ZERNEL_GOLDEN_PRINT=1 prints the table this run produced.  Unprivileged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg.h"
#include "collector/probes/decode.h"
#include "collector/sim/scenario.h"
#include "collector/sim/simulate.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define SG_GPUS		4u
#define SG_PROCESSES	8u
/*
 * Records that register the job, events since the simulator became a
 * source of probe records: a watch record per process and a communicator
 * record per trainer (one per GPU).  Before, it called the aggregation
 * directly for these and did not count them.
 */
#define SG_REGISTRATION	(SG_PROCESSES + SG_GPUS)
#define SG_TICKS	120
#define SG_T0_NS	(1000ull * NSEC_PER_SEC)
#define SG_REAL0_NS	(1700000000ull * NSEC_PER_SEC)

struct sg_result {
	uint64_t events_total;
	uint64_t node_count[SHM_FAMILY_COUNT];
	uint64_t nccl_calls[SHM_NCCL_OP_COUNT];
	uint64_t gpu_used[SG_GPUS];
	uint32_t procs;
	uint32_t gpu_mem_rows;
	uint64_t digest;		/* every publish, see sg_fold */
};

/*
 * What the old code published, per scenario.  events_total does not enter
 * the digest: it is compared on its own, SG_REGISTRATION added.
 */
static const struct sg_result sg_expected[SIM_SCENARIO_COUNT] = {
	/* steady */
	{ 99181ull,
	  { 78600ull, 524ull, 2358ull, 3113ull, 262ull, 1821ull, 262ull, },
	  { 1048ull, 54ull, 28ull, 4ull, 8ull, 16ull, 16ull, 52ull, 26ull, 26ull, },
	  { 47966060544ull, 54121201664ull, 49050288128ull, 51581550592ull, },
	  8, 4, 0x9a064b22ee3c4f30ull },
	/* oom */
	{ 98554ull,
	  { 78000ull, 520ull, 2340ull, 3090ull, 260ull, 1810ull, 260ull, },
	  { 1040ull, 52ull, 28ull, 4ull, 8ull, 16ull, 16ull, 52ull, 24ull, 24ull, },
	  { 83214991360ull, 54121201664ull, 49050288128ull, 51751419904ull, },
	  8, 4, 0x22bff89a0e3ea819ull },
	/* straggler */
	{ 86322ull,
	  { 68100ull, 454ull, 2043ull, 2732ull, 227ull, 1607ull, 227ull, },
	  { 908ull, 47ull, 25ull, 4ull, 8ull, 13ull, 13ull, 46ull, 22ull, 22ull, },
	  { 47884271616ull, 54121201664ull, 49050288128ull, 51698991104ull, },
	  8, 4, 0x8688854c16beb9e7ull },
	/* dataloader-stall */
	{ 54106ull,
	  { 42300ull, 282ull, 1269ull, 1789ull, 141ull, 1088ull, 141ull, },
	  { 564ull, 29ull, 16ull, 4ull, 4ull, 8ull, 8ull, 28ull, 13ull, 13ull, },
	  { 48028975104ull, 54121201664ull, 49050288128ull, 51592036352ull, },
	  8, 4, 0x12edec40036f0361ull },
};

/* FNV-1a, 64-bit. */
static uint64_t sg_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Folds one validated snapshot into the digest. */
static uint64_t sg_fold(uint64_t h, const struct shm_snapshot *s)
{
	struct shm_header_fields hdr = *s->hdr;
	const void *rows;
	uint32_t n;

	/* Who wrote it and how long publishing took are not the simulation's. */
	hdr.generation = 0;
	hdr.writer_pid = 0;
	hdr.seq = 0;
	hdr.stats.last_publish_duration_ns = 0;
	hdr.stats.events_total = 0;
	h = sg_fnv(h, &hdr, sizeof(hdr));
	rows = shm_snapshot_procs(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_proc));
	rows = shm_snapshot_gpu_mem(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_gpu_mem));
	rows = shm_snapshot_gpus(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_gpu));
	rows = shm_snapshot_nccl_ops(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_nccl_op));
	rows = shm_snapshot_nccl_comms(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_nccl_comm));
	/* Who the processes are: the job's pods, ranks and run id. */
	rows = shm_snapshot_identity(s, &n);
	h = sg_fnv(h, rows, (size_t)n * sizeof(struct shm_identity));
	rows = shm_snapshot_rows(s, SHM_TABLE_WORKLOADS, &n);
	return sg_fnv(h, rows, (size_t)n * sizeof(struct shm_workload));
}

/* Each sample of the node's series counts in one workload's: the sums agree. */
static void sg_workloads_add_up(const struct shm_snapshot *s)
{
	const struct shm_workload *w;
	uint32_t n;

	w = shm_snapshot_rows(s, SHM_TABLE_WORKLOADS, &n);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++) {
		uint64_t sum = 0, sum_ns = 0;

		for (uint32_t i = 0; i < n; i++) {
			sum += w[i].lat[f].count;
			sum_ns += w[i].lat[f].sum_ns;
		}
		ck_assert_msg(sum == s->hdr->node[f].count && sum_ns == s->hdr->node[f].sum_ns,
			      "%s: workloads hold %llu samples, the node %llu",
			      shm_family_name(f), (unsigned long long)sum,
			      (unsigned long long)s->hdr->node[f].count);
	}
}

static void sg_snapshot(struct shm_reader *r, struct shm_snapshot *snap)
{
	enum shm_read_status st;
	char why[256] = "";

	st = shm_reader_snapshot(r, snap, why, sizeof(why));
	/* The heartbeat is the synthetic clock: stale is expected. */
	ck_assert_msg(st == SHM_READ_OK || st == SHM_READ_STALE, "snapshot: %s: %s",
		      shm_read_status_name(st), why);
}

static void sg_run(enum sim_scenario sc, struct sg_result *out)
{
	struct sim_opts so = { .scenario = sc, .processes = SG_PROCESSES, .gpus = SG_GPUS,
			       .seed = 0x5eed };
	struct shm_snapshot snap = { 0 };
	struct shm_writer w = { .fd = -1 };
	struct shm_writer_opts wo;
	struct shm_reader r;
	struct agg_opts ao;
	struct decode dec;
	struct agg *a;
	struct sim *s;
	uint64_t t = SG_T0_NS, h = 0xcbf29ce484222325ull;
	char name[64];
	uint32_t n;

	memset(&ao, 0, sizeof(ao));
	shm_capacity_default(&ao.cap);
	ao.window_ns = 60ull * NSEC_PER_SEC;
	a = agg_new(&ao);
	ck_assert_ptr_nonnull(a);
	tu_unique_shm_name(name, sizeof(name));
	tu_shm_opts(&wo, name, ao.cap);
	ck_assert_int_eq(shm_writer_create(&w, &wo), 0);
	shm_reader_init(&r, name);
	r.stale_intervals = 1000000000u;

	/* As zernel-collector --simulate: totals, then the job through a decoder. */
	for (uint32_t g = 0; g < so.gpus; g++)
		agg_gpu_total(a, g, sim_gpu_total(&so, g), SHM_TOTAL_SIMULATED);
	ck_assert_int_eq(decode_init(&dec, a, NULL), 0);
	s = sim_new(&dec, &so, t);
	ck_assert_ptr_nonnull(s);
	for (int i = 1; i <= SG_TICKS; i++) {
		t += 100 * NSEC_PER_MSEC;
		sim_tick(s, t);
		if (i % 10)
			continue;
		agg_publish(a, &w, t, SG_REAL0_NS + (t - SG_T0_NS), sim_scenario_name(sc));
		sg_snapshot(&r, &snap);
		sg_workloads_add_up(&snap);
		h = sg_fold(h, &snap);
	}

	memset(out, 0, sizeof(*out));
	out->digest = h;
	out->events_total = snap.hdr->stats.events_total;
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		out->node_count[f] = snap.hdr->node[f].count;
	{
		const struct shm_nccl_op *ops = shm_snapshot_nccl_ops(&snap, &n);

		for (uint32_t i = 0; i < n && i < SHM_NCCL_OP_COUNT; i++)
			out->nccl_calls[i] = ops[i].calls;
	}
	{
		const struct shm_gpu *g = shm_snapshot_gpus(&snap, &n);

		for (uint32_t i = 0; i < n; i++)
			if (g[i].gpu_id < SG_GPUS)
				out->gpu_used[g[i].gpu_id] = g[i].used_bytes;
	}
	shm_snapshot_procs(&snap, &out->procs);
	shm_snapshot_gpu_mem(&snap, &out->gpu_mem_rows);

	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	sim_free(s);
	decode_destroy(&dec);
	shm_writer_close(&w, 1);
	agg_free(a);
}

static void sg_print(enum sim_scenario sc, const struct sg_result *g)
{
	printf("\t/* %s */\n\t{ %lluull,\n\t  {", sim_scenario_name(sc),
	       (unsigned long long)g->events_total);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		printf(" %lluull,", (unsigned long long)g->node_count[f]);
	printf(" },\n\t  {");
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++)
		printf(" %lluull,", (unsigned long long)g->nccl_calls[op]);
	printf(" },\n\t  {");
	for (unsigned int i = 0; i < SG_GPUS; i++)
		printf(" %lluull,", (unsigned long long)g->gpu_used[i]);
	printf(" },\n\t  %u, %u, 0x%016llxull },\n", g->procs, g->gpu_mem_rows,
	       (unsigned long long)g->digest);
	fflush(stdout);
}

static void sg_check(enum sim_scenario sc)
{
	const struct sg_result *want = &sg_expected[sc];
	const char *name = sim_scenario_name(sc);
	struct sg_result got;

	sg_run(sc, &got);
	if (getenv("ZERNEL_GOLDEN_PRINT"))
		sg_print(sc, &got);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		ck_assert_msg(got.node_count[f] == want->node_count[f], "%s: %s count %llu, want %llu",
			      name, shm_family_name(f), (unsigned long long)got.node_count[f],
			      (unsigned long long)want->node_count[f]);
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++)
		ck_assert_msg(got.nccl_calls[op] == want->nccl_calls[op], "%s: %s calls %llu, want %llu",
			      name, shm_nccl_op_name(op), (unsigned long long)got.nccl_calls[op],
			      (unsigned long long)want->nccl_calls[op]);
	for (unsigned int i = 0; i < SG_GPUS; i++)
		ck_assert_msg(got.gpu_used[i] == want->gpu_used[i], "%s: GPU %u used %llu, want %llu",
			      name, i, (unsigned long long)got.gpu_used[i],
			      (unsigned long long)want->gpu_used[i]);
	ck_assert_uint_eq(got.procs, want->procs);
	ck_assert_uint_eq(got.gpu_mem_rows, want->gpu_mem_rows);
	ck_assert_msg(got.digest == want->digest, "%s: segment digest %016llx, want %016llx",
		      name, (unsigned long long)got.digest, (unsigned long long)want->digest);
	ck_assert_msg(got.events_total == want->events_total + SG_REGISTRATION,
		      "%s: events_total %llu, want %llu + %u", name,
		      (unsigned long long)got.events_total,
		      (unsigned long long)want->events_total, SG_REGISTRATION);
}

START_TEST(steady_publishes_what_it_always_did)
{
	sg_check(SIM_STEADY);
}
END_TEST

START_TEST(oom_publishes_what_it_always_did)
{
	sg_check(SIM_OOM);
}
END_TEST

START_TEST(straggler_publishes_what_it_always_did)
{
	sg_check(SIM_STRAGGLER);
}
END_TEST

START_TEST(dataloader_stall_publishes_what_it_always_did)
{
	sg_check(SIM_DATALOADER_STALL);
}
END_TEST

Suite *sim_golden_suite(void);
Suite *sim_golden_suite(void)
{
	Suite *s = suite_create("sim_golden");
	TCase *tc = tcase_create("synthetic_clock");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, steady_publishes_what_it_always_did);
	tcase_add_test(tc, oom_publishes_what_it_always_did);
	tcase_add_test(tc, straggler_publishes_what_it_always_did);
	tcase_add_test(tc, dataloader_stall_publishes_what_it_always_did);
	suite_add_tcase(s, tc);
	return s;
}
