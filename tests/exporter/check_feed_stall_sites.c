/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stall sites in the feed: each pushed process carries its longest
 * CAT_FEED_TOP_SITES sites, GET /snapshot every one, each written as
 * /api/stalls writes it (same keys, same values, the same bounded and
 * escaped text).  On a crafted segment, and live: a push of the
 * simulator's dataloader-stall job against /api/stalls of that publish.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "common/util.h"
#include "exporter/explain/stalls_json.h"
#include "exporter/feed/feed_json.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define QUOTED_FILE	"/srv/job/a \"quoted\" \\back\\slash.py"

static const struct cat_status fresh = { .status = SHM_READ_OK, .reason = "", .seen = 1 };

struct fixture {
	char name[64];
	char long_file[SHM_SITE_FILE_LEN];	/* as long as the segment keeps */
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
};

static struct fixture fx;

static void site(struct shm_stall_site *s, uint32_t pid, uint32_t state, const char *file,
		 uint32_t line, uint64_t ms)
{
	s->pid = pid;
	s->state = state;
	s->line = s->leaf_line = line;
	s->stalls = ms / 10 + 1;
	s->total_ns = ms * 1000000ull;
	s->max_ns = s->total_ns / s->stalls;
	s->native_stack = -1;
	snprintf(s->file, sizeof(s->file), "%s", file);
	snprintf(s->func, sizeof(s->func), "step_%u", line);
	snprintf(s->leaf_file, sizeof(s->leaf_file), "%s", file);
	snprintf(s->leaf_func, sizeof(s->leaf_func), "step_%u", line);
}

/*
 * Three processes: 300 with five sites (more than a push carries), in no
 * order of time, the longest with quotes and backslashes in its file and
 * the next with a file as long as the segment keeps; 301 with one; 302
 * with none.
 */
static void setup(void)
{
	struct shm_writer_opts o;
	struct shm_header_fields *h;
	struct shm_stall_site *s;
	struct shm_proc *p;
	char reason[256];

	memset(&fx, 0, sizeof(fx));
	memset(fx.long_file, 'f', sizeof(fx.long_file) - 1);
	fx.long_file[0] = '/';
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	h = &fx.w.base->h;
	shm_writer_begin(&fx.w);
	p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	for (uint32_t i = 0; i < 3; i++) {
		p[i].pid = 300 + i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_CUDA;
	}
	s = shm_writer_table(&fx.w, SHM_TABLE_STALL_SITES);
	site(&s[0], 300, SHM_STALL_LOCK, "/srv/job/train.py", 10, 200);
	site(&s[1], 300, SHM_STALL_INPUT, QUOTED_FILE, 20, 900);
	site(&s[2], 301, SHM_STALL_SLEEP, "/srv/job/other.py", 5, 50);
	site(&s[3], 300, SHM_STALL_COLLECTIVE, "/srv/job/train.py", 30, 100);
	site(&s[4], 300, SHM_STALL_RUNQ, fx.long_file, 40, 700);
	site(&s[5], 300, SHM_STALL_GPU, "/srv/job/train.py", 50, 400);
	h->table[SHM_TABLE_PROCS].count = 3;
	h->table[SHM_TABLE_STALL_SITES].count = 6;
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

static struct json_object *key(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "key %s missing", k);
	return v;
}

/* The process object of pid in a document's processes. */
static struct json_object *proc_of(struct json_object *doc, uint32_t pid)
{
	struct json_object *list = key(doc, "processes");

	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *p = json_object_array_get_idx(list, i);

		if ((uint32_t)json_object_get_uint64(key(p, "pid")) == pid)
			return p;
	}
	ck_abort_msg("pid %u not in the document", pid);
	return NULL;
}

/* A feed document (a push, or GET /snapshot with full) of the crafted segment. */
static struct json_object *feed(int full, struct sbuf *text)
{
	struct exporter_stats stats;
	struct json_object *doc;

	memset(&stats, 0, sizeof(stats));
	sbuf_init(text, FEED_MAX_BYTES, 0);
	ck_assert_int_eq((full ? feed_render_full : feed_render)(text, &fx.snap, &fresh, &stats,
								 NULL), 0);
	doc = json_tokener_parse(text->data);
	ck_assert_msg(doc != NULL, "not JSON: %.200s", text->data);
	return doc;
}

static struct json_object *api_stalls(const struct shm_snapshot *snap)
{
	size_t len;
	char *text = stalls_json_render(snap, &len);
	struct json_object *doc;

	ck_assert_ptr_nonnull(text);
	doc = json_tokener_parse(text);
	ck_assert_msg(doc != NULL, "not JSON: %.200s", text);
	free(text);
	return doc;
}

/*
 * Each key of a feed site has the value of /api/stalls' site: texts and
 * integers equal, seconds and share within the precision the feed prints
 * them with (nine digits).
 */
static void same_site(struct json_object *fs, struct json_object *as, uint32_t pid, size_t i)
{
	json_object_object_foreach(fs, k, v) {
		struct json_object *a = key(as, k);

		if (json_object_is_type(v, json_type_double) || json_object_is_type(a, json_type_double)) {
			double x = json_object_get_double(v), y = json_object_get_double(a);

			ck_assert_msg(fabs(x - y) <= 1e-8 * fmax(1, fabs(y)),
				      "pid %u site %zu: %s is %.9g in the feed, %.9g in /api/stalls",
				      pid, i, k, x, y);
		} else {
			ck_assert_msg(strcmp(json_object_to_json_string(v),
					     json_object_to_json_string(a)) == 0,
				      "pid %u site %zu: %s is %s in the feed, %s in /api/stalls", pid,
				      i, k, json_object_to_json_string(v),
				      json_object_to_json_string(a));
		}
	}
}

/*
 * The sites of each process of a feed document: at most bound (0: every
 * one), the first of /api/stalls' for it, stall_sites_total all of them.
 */
static void sites_match(struct json_object *feed_doc, struct json_object *api, uint32_t bound)
{
	struct json_object *list = key(feed_doc, "processes");

	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *p = json_object_array_get_idx(list, i);
		uint32_t pid = (uint32_t)json_object_get_uint64(key(p, "pid"));
		struct json_object *fs = key(p, "stall_sites"), *as = key(proc_of(api, pid), "sites");
		size_t all = json_object_array_length(as), want = bound && all > bound ? bound : all;

		ck_assert_uint_eq(json_object_get_uint64(key(p, "stall_sites_total")), all);
		ck_assert_msg(json_object_array_length(fs) == want, "pid %u: %zu sites, want %zu",
			      pid, json_object_array_length(fs), want);
		for (size_t k = 0; k < want; k++)
			same_site(json_object_array_get_idx(fs, k), json_object_array_get_idx(as, k),
				  pid, k);
	}
}

static double num(struct json_object *site, const char *k)
{
	return json_object_get_double(key(site, k));
}

START_TEST(push_carries_each_process_longest_sites_as_api_stalls_writes_them)
{
	struct sbuf text;
	struct json_object *doc = feed(0, &text), *api = api_stalls(&fx.snap);
	struct json_object *sites = key(proc_of(doc, 300), "stall_sites");

	sites_match(doc, api, CAT_FEED_TOP_SITES);
	ck_assert_uint_eq(json_object_array_length(sites), CAT_FEED_TOP_SITES);
	/* Longest first; each a part of all five sites' 2.3 s. */
	ck_assert_double_eq_tol(num(json_object_array_get_idx(sites, 0), "seconds"), 0.9, 1e-9);
	ck_assert_double_eq_tol(num(json_object_array_get_idx(sites, 1), "seconds"), 0.7, 1e-9);
	ck_assert_double_eq_tol(num(json_object_array_get_idx(sites, 2), "seconds"), 0.4, 1e-9);
	ck_assert_double_eq_tol(num(json_object_array_get_idx(sites, 0), "share"), 0.9 / 2.3, 1e-9);
	ck_assert_uint_eq(json_object_array_length(key(proc_of(doc, 302), "stall_sites")), 0);
	json_object_put(doc);
	json_object_put(api);
	sbuf_free(&text);
}
END_TEST

START_TEST(snapshot_on_request_carries_every_site)
{
	struct sbuf text;
	struct json_object *doc = feed(1, &text), *api = api_stalls(&fx.snap);
	struct json_object *sites = key(proc_of(doc, 300), "stall_sites");
	double share = 0;

	sites_match(doc, api, 0);
	ck_assert_uint_eq(json_object_array_length(sites), 5);
	for (size_t i = 0; i < 5; i++)
		share += num(json_object_array_get_idx(sites, i), "share");
	ck_assert_double_eq_tol(share, 1, 1e-9);
	json_object_put(doc);
	json_object_put(api);
	sbuf_free(&text);
}
END_TEST

/* The traced process's text: JSON-escaped in the push, read back as it was, whole. */
START_TEST(site_text_is_escaped_and_kept_whole)
{
	struct sbuf text;
	struct json_object *doc = feed(0, &text);
	struct json_object *sites = key(proc_of(doc, 300), "stall_sites");

	ck_assert_ptr_nonnull(strstr(text.data, "a \\\"quoted\\\" \\\\back\\\\slash.py"));
	ck_assert_str_eq(json_object_get_string(key(json_object_array_get_idx(sites, 0), "file")),
			 QUOTED_FILE);
	ck_assert_str_eq(json_object_get_string(key(json_object_array_get_idx(sites, 1), "file")),
			 fx.long_file);
	ck_assert_uint_eq(strlen(fx.long_file), SHM_SITE_FILE_LEN - 1);
	json_object_put(doc);
	sbuf_free(&text);
}
END_TEST

/* The line of a helper's output that starts at line (0 the first), NUL-terminated in place. */
static char *line_at(char *out, int line)
{
	char *l = out, *nl;

	for (int i = 0; l && i < line; i++)
		l = (nl = strchr(l, '\n')) ? nl + 1 : NULL;
	ck_assert_msg(l && *l, "feed_stall_sites.py printed no line %d: %s", line, out);
	if ((nl = strchr(l, '\n')))
		*nl = '\0';
	return l;
}

START_TEST(live_push_has_the_sites_api_stalls_gives_for_the_same_publish)
{
	struct json_object *push, *api, *list;
	struct tu_stack st;
	char cmd[512], *out, *api_line;
	size_t with_sites = 0;
	int status;

	if (tu_system("/usr/bin/python3 -c 'import websockets' 2>/dev/null") != 0) {
		tu_skip_missing("live_push_has_the_sites_api_stalls_gives_for_the_same_publish: "
				"no python3-websockets\n");
		return;
	}
	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("live_push_has_the_sites_api_stalls_gives_for_the_same_publish: "
				"binaries not built\n");
		return;
	}
	/* Publishes far apart, pushes close together: two pushes often fall in one publish. */
	ck_assert_int_eq(tu_stack_start(&st, "dataloader-stall", 1000, 100), 0);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/py/feed_stall_sites.py %u %u 30",
		 tu_src_dir(), st.ws_port, st.metrics_port);
	out = tu_capture(cmd, &status);
	ck_assert_msg(out && status == 0, "feed_stall_sites.py: %s", out ? out : "(no output)");
	api_line = line_at(out, 1);
	push = json_tokener_parse(line_at(out, 0));
	api = json_tokener_parse(api_line);
	ck_assert_ptr_nonnull(push);
	ck_assert_ptr_nonnull(api);
	sites_match(push, api, CAT_FEED_TOP_SITES);
	list = key(push, "processes");
	for (size_t i = 0; i < json_object_array_length(list); i++)
		with_sites += json_object_array_length(
			key(json_object_array_get_idx(list, i), "stall_sites")) > 0;
	ck_assert_uint_gt(with_sites, 0);
	json_object_put(push);
	json_object_put(api);
	free(out);
	tu_stack_stop(&st);
}
END_TEST

Suite *feed_stall_sites_suite(void);
Suite *feed_stall_sites_suite(void)
{
	Suite *s = suite_create("feed_stall_sites");
	TCase *crafted = tcase_create("crafted");
	TCase *live = tcase_create("live");

	tcase_add_checked_fixture(crafted, setup, teardown);
	tcase_add_test(crafted, push_carries_each_process_longest_sites_as_api_stalls_writes_them);
	tcase_add_test(crafted, snapshot_on_request_carries_every_site);
	tcase_add_test(crafted, site_text_is_escaped_and_kept_whole);
	suite_add_tcase(s, crafted);
	tcase_set_timeout(live, 60);
	tcase_add_test(live, live_push_has_the_sites_api_stalls_gives_for_the_same_publish);
	suite_add_tcase(s, live);
	return s;
}
