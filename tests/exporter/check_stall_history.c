/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /api/stalls?since= on crafted segments published 5 s apart: the
 * verdict and the sites come from the span asked, not from the lifetime
 * totals; a site that appears late counts whole; a reused pid is another
 * process; a history shorter than asked says so, and a full one holds
 * ten minutes; trainers keep their place in a sample over its bound.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/explain/stall_history.h"
#include "exporter/explain/stalls_json.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define MS	1000000ull
#define S	1000000000ull

struct fixture {
	char name[64];
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
	struct stall_history *h;
	uint64_t t0;
};

static struct fixture fx;

static void open_segment(uint32_t procs)
{
	struct shm_writer_opts o;

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ procs, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	shm_reader_init(&fx.r, fx.name);
	fx.h = stall_history_new();
	ck_assert_ptr_nonnull(fx.h);
	fx.t0 = now_mono_ns();
	shm_writer_begin(&fx.w);
}

static void setup(void)
{
	open_segment(8);
}

static void setup_many(void)
{
	open_segment(300);
}

static void teardown(void)
{
	stall_history_free(fx.h);
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
}

/* A trainer (it launches kernels) with its threads' cumulative time by state, in ms. */
static void trainer(uint32_t i, uint32_t pid, uint64_t start, uint64_t oncpu_ms,
		    uint64_t gpu_ms, uint64_t input_ms)
{
	struct shm_proc *p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	struct shm_proc_recent *r = shm_writer_table(&fx.w, SHM_TABLE_PROC_RECENT);

	memset(&p[i], 0, sizeof(p[i]));
	p[i].pid = pid;
	p[i].ppid = 1;
	p[i].start_time_ns = start;
	p[i].watch_reason = SHM_WATCH_CUDA;
	p[i].lat[SHM_FAMILY_CUDA_LAUNCH].count = 100;
	p[i].lat[SHM_FAMILY_CUDA_LAUNCH].bucket[6] = 100;
	p[i].lat[SHM_FAMILY_CUDA_LAUNCH].sum_ns = 100 * 8000;
	p[i].thread_state_ns[SHM_STATE_ONCPU] = oncpu_ms * MS;
	p[i].thread_state_ns[SHM_STATE_GPU] = gpu_ms * MS;
	p[i].thread_state_ns[SHM_STATE_INPUT] = input_ms * MS;
	/* The collector's own window: its lifetime here, so that the two answers differ. */
	memset(&r[i], 0, sizeof(r[i]));
	r[i].pid = pid;
	r[i].covered_ns = (oncpu_ms + gpu_ms + input_ms) * MS;
	memcpy(r[i].thread_state_ns, p[i].thread_state_ns, sizeof(r[i].thread_state_ns));
}

static void site(uint32_t i, uint32_t pid, uint32_t state, uint32_t line, uint64_t stalls,
		 uint64_t ms)
{
	struct shm_stall_site *s = shm_writer_table(&fx.w, SHM_TABLE_STALL_SITES);

	memset(&s[i], 0, sizeof(s[i]));
	s[i].pid = pid;
	s[i].state = state;
	s[i].line = line;
	s[i].leaf_line = line;
	s[i].stalls = stalls;
	s[i].total_ns = ms * MS;
	s[i].max_ns = ms * MS;
	s[i].native_stack = -1;
	snprintf(s[i].file, sizeof(s[i].file), "/workspace/train.py");
	snprintf(s[i].func, sizeof(s[i].func), "train");
	snprintf(s[i].leaf_file, sizeof(s[i].leaf_file), "/workspace/train.py");
	snprintf(s[i].leaf_func, sizeof(s[i].leaf_func), "train");
}

/* Publishes what the rows hold as the collector's k-th publish, 5 s apart; the history sees it. */
static void publish(uint32_t k, uint32_t procs, uint32_t sites)
{
	struct shm_header_fields *h = &fx.w.base->h;
	char reason[256];
	enum shm_read_status st;

	h->table[SHM_TABLE_PROCS].count = procs;
	h->table[SHM_TABLE_PROC_RECENT].count = procs;
	h->table[SHM_TABLE_STALL_SITES].count = sites;
	h->heartbeat_mono_ns = fx.t0 + k * 5 * S;
	shm_writer_end(&fx.w);
	st = shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason));
	ck_assert_msg(st == SHM_READ_OK || st == SHM_READ_STALE, "crafted segment rejected: %s",
		      reason);
	stall_history_note(fx.h, &fx.snap);
	shm_writer_begin(&fx.w);
}

static struct json_object *answer(uint64_t since_s)
{
	size_t len;
	char *text = since_s ? stalls_json_render_since(&fx.snap, fx.h, since_s, &len) :
			       stalls_json_render(&fx.snap, &len);
	struct json_object *doc;

	ck_assert_ptr_nonnull(text);
	doc = json_tokener_parse(text);
	ck_assert_msg(doc != NULL, "not JSON: %s", text);
	free(text);
	return doc;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return v;
}

static struct json_object *process(struct json_object *doc, uint32_t pid)
{
	struct json_object *list = get(doc, "processes");

	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *p = json_object_array_get_idx(list, i);

		if ((uint32_t)json_object_get_uint64(get(p, "pid")) == pid)
			return p;
	}
	ck_abort_msg("pid %u not in /api/stalls", pid);
	return NULL;
}

static const char *verdict(struct json_object *p)
{
	return json_object_get_string(get(get(p, "explain"), "verdict"));
}

static double window_of(struct json_object *p)
{
	return json_object_get_double(get(get(p, "explain"), "window_seconds"));
}

/* Line and seconds of p's i-th site. */
static void site_at(struct json_object *p, size_t i, int *line, double *secs)
{
	struct json_object *s = json_object_array_get_idx(get(p, "sites"), i);

	ck_assert_ptr_nonnull(s);
	*line = (int)json_object_get_int(get(s, "line"));
	*secs = json_object_get_double(get(s, "seconds"));
}

/* Share of p's i-th site: its part of the time of all p's sites answered. */
static double share_at(struct json_object *p, size_t i)
{
	return json_object_get_double(get(json_object_array_get_idx(get(p, "sites"), i),
					  "share"));
}

/*
 * Up to its first sample: waits for its DataLoader (site 142, 20 s of
 * 22), with a lock stall at 158 then.  The 10 s after: waits for its
 * GPU, and backward (151) appears.
 */
START_TEST(since_judges_and_ranks_sites_over_the_span_asked)
{
	struct json_object *doc, *p;
	double secs;
	int line;

	trainer(0, 300, 1, 2000, 0, 20000);
	site(0, 300, SHM_STALL_INPUT, 142, 20, 20000);
	site(1, 300, SHM_STALL_LOCK, 158, 2, 500);
	publish(0, 1, 2);
	trainer(0, 300, 1, 2900, 4000, 20100);
	site(0, 300, SHM_STALL_INPUT, 142, 21, 20100);
	site(1, 300, SHM_STALL_LOCK, 158, 2, 500);
	site(2, 300, SHM_STALL_COLLECTIVE, 151, 10, 3000);
	publish(1, 1, 3);
	/* The collector's table reorders: rows are matched by what they are, not where. */
	trainer(0, 300, 1, 3800, 8000, 20200);
	site(0, 300, SHM_STALL_COLLECTIVE, 151, 20, 6000);
	site(1, 300, SHM_STALL_LOCK, 158, 2, 500);
	site(2, 300, SHM_STALL_INPUT, 142, 22, 20200);
	publish(2, 1, 3);

	/* Lifetime: the DataLoader's site first, and the old verdict. */
	doc = answer(0);
	p = process(doc, 300);
	ck_assert_str_eq(verdict(p), "data-bound");
	site_at(p, 0, &line, &secs);
	ck_assert_int_eq(line, 142);
	ck_assert_ptr_null(json_object_object_get(doc, "since_seconds_asked"));
	json_object_put(doc);

	/* The last 5 s: GPU-bound, backward first, the idle lock site gone. */
	doc = answer(5);
	ck_assert_double_eq_tol(json_object_get_double(get(doc, "window_seconds")), 5, 1e-6);
	ck_assert(json_object_get_boolean(get(doc, "covered")));
	ck_assert_int_eq(json_object_get_int(get(doc, "since_seconds_asked")), 5);
	p = process(doc, 300);
	ck_assert_str_eq(verdict(p), "GPU-bound");
	ck_assert_double_eq_tol(window_of(p), 5, 1e-6);
	ck_assert_double_eq_tol(json_object_get_double(get(get(get(p, "explain"), "shares"),
							   "gpu")), 0.8, 1e-9);
	ck_assert_int_eq(json_object_array_length(get(p, "sites")), 2);
	site_at(p, 0, &line, &secs);
	ck_assert_int_eq(line, 151);
	ck_assert_double_eq_tol(secs, 3, 1e-9);
	ck_assert_int_eq(json_object_get_int(get(json_object_array_get_idx(get(p, "sites"), 0),
						 "stalls")), 10);
	site_at(p, 1, &line, &secs);
	ck_assert_int_eq(line, 142);
	ck_assert_double_eq_tol(secs, 0.1, 1e-9);
	/* Shares are of the span too: 3 s and 0.1 s of 3.1, the idle lock site in neither. */
	ck_assert_double_eq_tol(share_at(p, 0), 3 / 3.1, 1e-9);
	ck_assert_double_eq_tol(share_at(p, 1), 0.1 / 3.1, 1e-9);
	json_object_put(doc);

	/* The last 10 s: backward appeared after the start, so all its 6 s count. */
	doc = answer(10);
	p = process(doc, 300);
	ck_assert_double_eq_tol(window_of(p), 10, 1e-6);
	site_at(p, 0, &line, &secs);
	ck_assert_int_eq(line, 151);
	ck_assert_double_eq_tol(secs, 6, 1e-9);
	site_at(p, 1, &line, &secs);
	ck_assert_int_eq(line, 142);
	ck_assert_double_eq_tol(secs, 0.2, 1e-9);
	json_object_put(doc);
}
END_TEST

/*
 * pid 300 waited for its DataLoader, exited, and a new process took its
 * pid between two samples: the new one's window starts at its own first
 * sample, never at the old one's figures.
 */
START_TEST(a_reused_pid_is_another_process)
{
	struct json_object *doc, *p;
	double secs;
	int line;

	trainer(0, 300, 1, 1000, 0, 50000);
	site(0, 300, SHM_STALL_INPUT, 142, 100, 40000);
	publish(0, 1, 1);
	trainer(0, 300, 2, 500, 1000, 100);
	site(0, 300, SHM_STALL_INPUT, 142, 1, 100);
	publish(1, 1, 1);
	trainer(0, 300, 2, 1000, 5000, 200);
	site(0, 300, SHM_STALL_INPUT, 142, 3, 300);
	publish(2, 1, 1);

	doc = answer(10);
	p = process(doc, 300);
	ck_assert_double_eq_tol(window_of(p), 5, 1e-6);
	ck_assert_str_eq(verdict(p), "GPU-bound");
	ck_assert_double_eq_tol(json_object_get_double(get(get(get(p, "explain"), "shares"),
							   "input")), 0.1 / 4.6, 1e-9);
	site_at(p, 0, &line, &secs);
	ck_assert_double_eq_tol(secs, 0.2, 1e-9);
	json_object_put(doc);
}
END_TEST

START_TEST(a_history_shorter_than_asked_covers_what_it_holds)
{
	struct json_object *doc, *h;

	trainer(0, 300, 1, 1000, 1000, 0);
	publish(0, 1, 0);
	trainer(0, 300, 1, 2000, 5000, 0);
	publish(1, 1, 0);
	trainer(0, 300, 1, 3000, 9000, 0);
	publish(2, 1, 0);
	/* Far more than any history: all of it, and said so. */
	doc = answer(UINT64_MAX / 2);
	ck_assert(!json_object_get_boolean(get(doc, "covered")));
	ck_assert_double_eq_tol(json_object_get_double(get(doc, "window_seconds")), 10, 1e-6);
	ck_assert_uint_eq(json_object_get_uint64(get(doc, "since_seconds_asked")), UINT64_MAX / 2);
	h = get(doc, "history");
	ck_assert_double_eq_tol(json_object_get_double(get(h, "seconds")), 10, 1e-6);
	ck_assert_double_eq_tol(json_object_get_double(get(h, "period_seconds")), 5, 1e-9);
	ck_assert_double_eq_tol(window_of(process(doc, 300)), 10, 1e-6);
	json_object_put(doc);
}
END_TEST

/* 125 publishes 5 s apart: the oldest samples go, ten minutes stay. */
START_TEST(a_full_history_holds_ten_minutes_and_no_more)
{
	struct json_object *doc;

	for (uint32_t k = 0; k < 125; k++) {
		trainer(0, 300, 1, 10 * (k + 1), 40 * (k + 1), 0);
		publish(k, 1, 0);
	}
	doc = answer(600);
	ck_assert(json_object_get_boolean(get(doc, "covered")));
	ck_assert_double_eq_tol(json_object_get_double(get(doc, "window_seconds")), 600, 1e-6);
	json_object_put(doc);
	doc = answer(1000000);
	ck_assert(!json_object_get_boolean(get(doc, "covered")));
	ck_assert_double_eq_tol(json_object_get_double(get(doc, "window_seconds")), 600, 1e-6);
	ck_assert_double_eq_tol(json_object_get_double(get(get(doc, "history"), "seconds")), 600,
				1e-6);
	json_object_put(doc);
}
END_TEST

/* 299 DataLoader workers, then the trainer: the bound drops workers, and counts them. */
START_TEST(trainers_keep_their_place_in_a_full_sample)
{
	struct shm_proc *p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	struct json_object *doc, *h;

	for (uint32_t k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < 299; i++) {
			trainer(i, 1000 + i, 1, 1000 * (k + 1), 0, 0);
			memset(p[i].lat, 0, sizeof(p[i].lat));
		}
		trainer(299, 300, 1, 1000 * (k + 1), 4000 * (k + 1), 0);
		publish(k, 300, 0);
	}
	doc = answer(5);
	ck_assert_str_eq(verdict(process(doc, 300)), "GPU-bound");
	h = get(doc, "history");
	ck_assert_int_eq(json_object_get_int(get(h, "processes_dropped")),
			 300 - STALL_HISTORY_PROCS);
	json_object_put(doc);
}
END_TEST

Suite *stall_history_suite(void);
Suite *stall_history_suite(void)
{
	Suite *s = suite_create("stall_history");
	TCase *tc = tcase_create("window");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, since_judges_and_ranks_sites_over_the_span_asked);
	tcase_add_test(tc, a_reused_pid_is_another_process);
	tcase_add_test(tc, a_history_shorter_than_asked_covers_what_it_holds);
	tcase_add_test(tc, a_full_history_holds_ten_minutes_and_no_more);
	suite_add_tcase(s, tc);
	tc = tcase_create("bounds");
	tcase_add_checked_fixture(tc, setup_many, teardown);
	tcase_add_test(tc, trainers_keep_their_place_in_a_full_sample);
	suite_add_tcase(s, tc);
	return s;
}
