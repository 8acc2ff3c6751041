/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /api/stalls on a crafted segment: which processes get a verdict.  A
 * trainer whose Python frames are not read (an interpreter the collector
 * does not support) and that is no NCCL rank is still judged, from its
 * training threads' states, when it launches kernels; its DataLoader
 * worker, forked with the same libraries mapped, launches nothing and is
 * not judged.  Two jobs on one node: each names the straggler among its
 * own ranks, joined by their communicator or, where its id is their own,
 * by their run id, and the straggler is told it is.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/explain/stalls_json.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define SJ_WINDOW_NS	10000000000ull

struct fixture {
	char name[64];
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
};

static struct fixture fx;

/* One watched process and its window: states in ms of the 10 s window. */
static void proc(struct shm_proc *p, struct shm_proc_recent *r, uint32_t pid, uint64_t launches,
		 uint64_t oncpu_ms, uint64_t gpu_ms, uint64_t input_ms)
{
	p->pid = pid;
	p->ppid = 1;
	p->watch_reason = SHM_WATCH_CUDA;
	/* Launches of 5-10 us: buckets and sum as the validator wants them. */
	p->lat[SHM_FAMILY_CUDA_LAUNCH].count = launches;
	p->lat[SHM_FAMILY_CUDA_LAUNCH].bucket[6] = launches;
	p->lat[SHM_FAMILY_CUDA_LAUNCH].sum_ns = launches * 8000;
	r->pid = pid;
	r->covered_ns = SJ_WINDOW_NS;
	r->thread_state_ns[SHM_STATE_ONCPU] = oncpu_ms * 1000000ull;
	r->thread_state_ns[SHM_STATE_GPU] = gpu_ms * 1000000ull;
	r->thread_state_ns[SHM_STATE_INPUT] = input_ms * 1000000ull;
}

static void setup(void)
{
	struct shm_writer_opts o;
	struct shm_header_fields *h;
	struct shm_proc *p;
	struct shm_proc_recent *r;
	char reason[256];

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	h = &fx.w.base->h;
	shm_writer_begin(&fx.w);
	p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	r = shm_writer_table(&fx.w, SHM_TABLE_PROC_RECENT);
	/* Waits on the GPU, spinning in its syncs: 7 s of 10 in the gpu state. */
	proc(&p[0], &r[0], 300, 5000, 3000, 7000, 0);
	/* Waits for its DataLoader 6 s of 10. */
	proc(&p[1], &r[1], 301, 800, 3000, 1000, 6000);
	/* A worker of 301: the same libraries mapped, no launch. */
	proc(&p[2], &r[2], 302, 0, 9000, 0, 1000);
	h->table[SHM_TABLE_PROCS].count = 3;
	h->table[SHM_TABLE_PROC_RECENT].count = 3;
	h->window_ns = SJ_WINDOW_NS;
	h->heartbeat_mono_ns = now_mono_ns();
	shm_writer_end(&fx.w);

	shm_reader_init(&fx.r, fx.name);
	ck_assert_msg(shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
}

static void teardown(void)
{
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
}

/*
 * Rank rank of a 4-rank job on row i: collective_ms of its 10 s waiting
 * in collectives, the rest on its GPU and CPU; comm_id its communicator,
 * local when the id is its own, run_id its job's ("": none).
 */
static void rank_row(uint32_t i, uint32_t pid, int32_t rank, uint64_t comm_id, int local,
		     const char *run_id, uint64_t collective_ms)
{
	struct shm_proc *p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	struct shm_proc_recent *r = shm_writer_table(&fx.w, SHM_TABLE_PROC_RECENT);
	struct shm_nccl_comm *c = shm_writer_table(&fx.w, SHM_TABLE_NCCL_COMMS);
	struct shm_identity *id = shm_writer_table(&fx.w, SHM_TABLE_IDENTITY);

	proc(&p[i], &r[i], pid, 5000, 2000, 8000 - collective_ms, 0);
	r[i].thread_state_ns[SHM_STATE_COLLECTIVE] = collective_ms * 1000000ull;
	c[i].pid = pid;
	c[i].rank = rank;
	c[i].nranks = 4;
	c[i].gpu_id = UINT32_MAX;
	c[i].comm_id = comm_id;
	c[i].flags = local ? SHM_NCCL_COMM_LOCAL_ID : 0;
	id[i].pid = pid;
	id[i].rank = id[i].local_rank = id[i].world_size = id[i].group_rank = -1;
	snprintf(id[i].run_id, sizeof(id[i].run_id), "%s", run_id);
}

/*
 * Job A (communicator 0xa1): rank 1 waits least.  Job B (ids of their
 * own, run "job-b"): rank 2 waits less than any rank of either job.
 */
static void setup_two_jobs(void)
{
	static const uint64_t coll_a[4] = { 3000, 400, 3200, 2800 };
	static const uint64_t coll_b[4] = { 4000, 4200, 100, 3800 };
	struct shm_writer_opts o;
	struct shm_header_fields *h;
	char reason[256];

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 8 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	h = &fx.w.base->h;
	shm_writer_begin(&fx.w);
	for (uint32_t i = 0; i < 4; i++) {
		rank_row(i, 400 + i, (int32_t)i, 0xa1, 0, "", coll_a[i]);
		rank_row(4 + i, 500 + i, (int32_t)i, 0xb000 + i, 1, "job-b", coll_b[i]);
	}
	h->table[SHM_TABLE_PROCS].count = 8;
	h->table[SHM_TABLE_PROC_RECENT].count = 8;
	h->table[SHM_TABLE_NCCL_COMMS].count = 8;
	h->table[SHM_TABLE_IDENTITY].count = 8;
	h->window_ns = SJ_WINDOW_NS;
	h->heartbeat_mono_ns = now_mono_ns();
	shm_writer_end(&fx.w);

	shm_reader_init(&fx.r, fx.name);
	ck_assert_msg(shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
}

/* The "explain" object of pid in doc; NULL when it has none. */
static struct json_object *explain_of(struct json_object *doc, uint32_t pid)
{
	struct json_object *list, *o, *v;

	ck_assert(json_object_object_get_ex(doc, "processes", &list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		o = json_object_array_get_idx(list, i);
		ck_assert(json_object_object_get_ex(o, "pid", &v));
		if ((uint32_t)json_object_get_uint64(v) != pid)
			continue;
		return json_object_object_get_ex(o, "explain", &v) ? v : NULL;
	}
	ck_abort_msg("pid %u not in /api/stalls", pid);
	return NULL;
}

static const char *verdict(struct json_object *explain)
{
	struct json_object *v;

	ck_assert_ptr_nonnull(explain);
	ck_assert(json_object_object_get_ex(explain, "verdict", &v));
	return json_object_get_string(v);
}

static const char *evidence(struct json_object *explain)
{
	struct json_object *v;

	ck_assert(json_object_object_get_ex(explain, "evidence", &v));
	return json_object_get_string(v);
}

static double share(struct json_object *explain, const char *state)
{
	struct json_object *shares, *v;

	ck_assert(json_object_object_get_ex(explain, "shares", &shares));
	ck_assert(json_object_object_get_ex(shares, state, &v));
	return json_object_get_double(v);
}

START_TEST(processes_that_launch_kernels_are_judged_without_python_frames)
{
	size_t len;
	char *text = stalls_json_render(&fx.snap, &len);
	struct json_object *doc;

	ck_assert_ptr_nonnull(text);
	doc = json_tokener_parse(text);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(verdict(explain_of(doc, 300)), "GPU-bound");
	ck_assert_double_eq_tol(share(explain_of(doc, 300), "gpu"), 0.7, 1e-9);
	ck_assert_ptr_nonnull(strstr(evidence(explain_of(doc, 300)),
				     "70% of the wall time waiting for the GPU"));
	ck_assert_str_eq(verdict(explain_of(doc, 301)), "data-bound");
	ck_assert_double_eq_tol(share(explain_of(doc, 301), "input"), 0.6, 1e-9);
	ck_assert_ptr_null(explain_of(doc, 302));
	json_object_put(doc);
	free(text);
}
END_TEST

START_TEST(each_job_names_its_own_straggler_and_the_straggler_is_told)
{
	size_t len;
	char *text = stalls_json_render(&fx.snap, &len);
	struct json_object *doc;

	ck_assert_ptr_nonnull(text);
	doc = json_tokener_parse(text);
	ck_assert_ptr_nonnull(doc);
	for (uint32_t i = 0; i < 4; i++) {
		if (i != 1) {
			ck_assert_str_eq(verdict(explain_of(doc, 400 + i)), "communication-bound");
			ck_assert_msg(strstr(evidence(explain_of(doc, 400 + i)), "rank 1 (pid 401)"),
				      "%s", evidence(explain_of(doc, 400 + i)));
		}
		if (i != 2) {
			ck_assert_str_eq(verdict(explain_of(doc, 500 + i)), "communication-bound");
			ck_assert_msg(strstr(evidence(explain_of(doc, 500 + i)), "rank 2 (pid 502)"),
				      "%s", evidence(explain_of(doc, 500 + i)));
		}
	}
	ck_assert_str_eq(verdict(explain_of(doc, 401)), "straggler");
	ck_assert_ptr_nonnull(strstr(evidence(explain_of(doc, 401)), "the other 3 ranks wait"));
	ck_assert_str_eq(verdict(explain_of(doc, 502)), "straggler");
	json_object_put(doc);
	free(text);
}
END_TEST

Suite *stalls_json_suite(void);
Suite *stalls_json_suite(void)
{
	Suite *s = suite_create("stalls_json");
	TCase *tc = tcase_create("verdicts");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, processes_that_launch_kernels_are_judged_without_python_frames);
	suite_add_tcase(s, tc);
	tc = tcase_create("jobs");
	tcase_add_checked_fixture(tc, setup_two_jobs, teardown);
	tcase_add_test(tc, each_job_names_its_own_straggler_and_the_straggler_is_told);
	suite_add_tcase(s, tc);
	return s;
}
