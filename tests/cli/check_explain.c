/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `zernel explain` against a real collector and exporter: each simulator
 * scenario gives its verdict with its evidence and names its stall sites
 * as file:line in function; the JSON form is well-formed and agrees with
 * the text; bad arguments and an unreachable exporter say so; --since
 * answers over the span asked, not the lifetime totals.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

static char zernel_bin[1024];

static int have_explain_stack(const char *test)
{
	if (tu_have_binary("zernel") && tu_have_binary("zernel-collector") &&
	    tu_have_binary("zernel-exporter")) {
		tu_build_path(zernel_bin, sizeof(zernel_bin), "zernel");
		return 1;
	}
	tu_skip_missing("%s: zernel, zernel-collector or zernel-exporter is not built\n", test);
	return 0;
}

/* Runs the scenario for secs, then `zernel explain` with args; its output. */
static char *explain_on(const char *scenario, unsigned int secs, const char *args, int *status)
{
	struct tu_stack st;
	char cmd[2048], *out;

	ck_assert_int_eq(tu_stack_start(&st, scenario, 500, 0), 0);
	tu_sleep_ms(secs * 1000);
	snprintf(cmd, sizeof(cmd), "%s explain --url http://127.0.0.1:%u %s 2>&1", zernel_bin,
		 st.metrics_port, args);
	out = tu_capture(cmd, status);
	tu_stack_stop(&st);
	ck_assert_ptr_nonnull(out);
	return out;
}

/* The process of rank in explain's JSON. */
static struct json_object *rank_of(struct json_object *doc, int rank)
{
	struct json_object *list = NULL;

	ck_assert(json_object_object_get_ex(doc, "processes", &list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *p = json_object_array_get_idx(list, i), *r = NULL;

		if (json_object_object_get_ex(p, "rank", &r) && json_object_get_int(r) == rank)
			return p;
	}
	ck_abort_msg("no rank %d in explain's output", rank);
	return NULL;
}

static const char *str_at(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_string(v);
}

static double num_at(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_double(v);
}

/*
 * The first (largest) of p's top sites in state: its file:line and share
 * of p's stall time.
 */
static void site_in_state(struct json_object *p, const char *state, char *where,
			  size_t where_len, double *share)
{
	struct json_object *sites = NULL;

	ck_assert(json_object_object_get_ex(p, "top_sites", &sites));
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *site = json_object_array_get_idx(sites, i);

		if (strcmp(str_at(site, "state"), state) == 0) {
			snprintf(where, where_len, "%s:%d", str_at(site, "file"),
				 (int)num_at(site, "line"));
			*share = num_at(site, "share");
			ck_assert_double_gt(num_at(site, "seconds"), 0);
			return;
		}
	}
	ck_abort_msg("no %s site among the top sites", state);
}

/*
 * Shares add up to the wall time; the largest site of the verdict's state
 * is the one named.  (The GPU spin of every step has a site of its own,
 * the line that synchronises, which may come first.)
 */
static void check_process(struct json_object *p, const char *verdict, const char *state,
			  const char *file_line)
{
	struct json_object *shares = NULL;
	double sum = 0, share;
	char where[256];

	ck_assert_str_eq(str_at(p, "verdict"), verdict);
	ck_assert(json_object_object_get_ex(p, "shares", &shares));
	json_object_object_foreach(shares, k, v) {
		(void)k;
		ck_assert(json_object_get_double(v) >= 0);
		sum += json_object_get_double(v);
	}
	ck_assert_msg(sum > 0.99 && sum < 1.01, "shares add up to %f", sum);
	ck_assert_double_gt(num_at(p, "window_seconds"), 4);
	site_in_state(p, state, where, sizeof(where), &share);
	ck_assert_str_eq(where, file_line);
	ck_assert_double_gt(share, 0.15);
	ck_assert(strlen(str_at(p, "recommendation")) > 20);
}

START_TEST(explain_dataloader_stall_is_data_bound)
{
	struct json_object *doc;
	char *out;
	int status;

	if (!have_explain_stack("explain_dataloader_stall_is_data_bound"))
		return;
	out = explain_on("dataloader-stall", 8, "--json", &status);
	ck_assert_msg(status == 0, "explain failed: %s", out);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	check_process(rank_of(doc, 0), "data-bound", "input", "/workspace/train.py:142");
	ck_assert_double_gt(num_at(json_object_object_get(rank_of(doc, 0), "shares"), "input"),
			    0.2);
	json_object_put(doc);
	free(out);
}
END_TEST

START_TEST(explain_straggler_is_communication_bound_and_names_the_rank)
{
	struct json_object *doc, *p, *slow;
	char *out, where[256];
	double share;
	int status;

	if (!have_explain_stack("explain_straggler_is_communication_bound_and_names_the_rank"))
		return;
	/*
	 * Late enough that the collector's window holds only the slow phase:
	 * the slow rank's barrier waits then pass the lock bound.
	 */
	out = explain_on("straggler", 20, "--json", &status);
	ck_assert_msg(status == 0, "explain failed: %s", out);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	p = rank_of(doc, 0);
	check_process(p, "communication-bound", "collective", "/workspace/train.py:151");
	/* The simulator's slow rank is rank 1, which the others wait for. */
	ck_assert_msg(strstr(str_at(p, "evidence"), "rank 1 ") != NULL, "evidence: %s",
		      str_at(p, "evidence"));
	/* And rank 1 is told so, whatever it waits on itself. */
	slow = rank_of(doc, 1);
	ck_assert_msg(strcmp(str_at(slow, "verdict"), "straggler") == 0, "rank 1: %s: %s",
		      str_at(slow, "verdict"), str_at(slow, "evidence"));
	ck_assert_ptr_nonnull(strstr(str_at(slow, "evidence"), "the other 3 ranks wait for this "
				     "rank in collectives"));
	ck_assert_ptr_nonnull(strstr(str_at(slow, "recommendation"), "the whole job"));
	/* Its barrier waits are futex blocks: lock in its shares and at its site alike. */
	site_in_state(slow, "lock", where, sizeof(where), &share);
	ck_assert_str_eq(where, "/workspace/train.py:158");
	ck_assert_double_gt(share, 0.05);
	ck_assert_double_gt(num_at(json_object_object_get(slow, "shares"), "lock"), 0.05);
	json_object_put(doc);
	free(out);
}
END_TEST

START_TEST(explain_oom_is_gpu_bound_with_memory_evidence)
{
	struct json_object *doc, *p;
	char *out;
	int status;

	if (!have_explain_stack("explain_oom_is_gpu_bound_with_memory_evidence"))
		return;
	/* GPU 0's trainer passes 95% of its memory 8 s in. */
	out = explain_on("oom", 10, "--json", &status);
	ck_assert_msg(status == 0, "explain failed: %s", out);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	p = rank_of(doc, 0);
	ck_assert_str_eq(str_at(p, "verdict"), "GPU-bound");
	ck_assert_msg(strstr(str_at(p, "evidence"), "GPU 0 peaked at 9") != NULL, "evidence: %s",
		      str_at(p, "evidence"));
	/* GPU-bound, and the GPU wait is where the step synchronises, first of its sites. */
	{
		struct json_object *sites = NULL, *top;

		ck_assert(json_object_object_get_ex(p, "top_sites", &sites));
		ck_assert_int_gt(json_object_array_length(sites), 0);
		top = json_object_array_get_idx(sites, 0);
		ck_assert_str_eq(str_at(top, "state"), "gpu");
		ck_assert_str_eq(str_at(top, "file"), "/workspace/train.py");
		ck_assert_int_eq((int)num_at(top, "line"), 154);
		ck_assert_double_gt(num_at(top, "share"), 0.5);
	}
	ck_assert_ptr_nonnull(strstr(str_at(p, "recommendation"), "batch size"));
	/* The other ranks are in good health: no memory advice for them. */
	ck_assert_ptr_null(strstr(str_at(rank_of(doc, 1), "evidence"), "peaked"));
	json_object_put(doc);
	free(out);
}
END_TEST

START_TEST(explain_text_names_sites_file_line_in_function)
{
	char *out;
	int status;

	if (!have_explain_stack("explain_text_names_sites_file_line_in_function"))
		return;
	out = explain_on("dataloader-stall", 6, "", &status);
	ck_assert_msg(status == 0, "explain failed: %s", out);
	ck_assert_msg(strstr(out, "/workspace/train.py:142 in train  input") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "waiting in /usr/lib/python3/dist-packages/torch/"
				      "utils/data/dataloader.py:1328"));
	ck_assert_ptr_nonnull(strstr(out, "verdict: data-bound: "));
	ck_assert_ptr_nonnull(strstr(out, "recommendation: "));
	ck_assert_ptr_nonnull(strstr(out, "where the wall time went:"));
	free(out);
}
END_TEST

START_TEST(explain_bad_arguments_and_no_exporter_are_said)
{
	char cmd[1200], *out;
	int status;

	if (!have_explain_stack("explain_bad_arguments_and_no_exporter_are_said"))
		return;
	snprintf(cmd, sizeof(cmd), "%s explain --since soon 2>&1", zernel_bin);
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 2);
	ck_assert_ptr_nonnull(strstr(out, "--since wants a span"));
	free(out);
	snprintf(cmd, sizeof(cmd), "%s explain --url ws://127.0.0.1:9 2>&1", zernel_bin);
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 2);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s explain --url http://127.0.0.1:%u 2>&1", zernel_bin,
		 tu_free_port());
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 1);
	ck_assert_ptr_nonnull(strstr(out, "cannot connect"));
	free(out);
}
END_TEST

/* `zernel explain` with args against the running stack; its output. */
static char *explain_now(const struct tu_stack *st, const char *args, int *status)
{
	char cmd[2048], *out;

	snprintf(cmd, sizeof(cmd), "%s explain --url http://127.0.0.1:%u %s 2>&1", zernel_bin,
		 st->metrics_port, args);
	out = tu_capture(cmd, status);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(*status == 0, "explain %s failed: %s", args, out);
	return out;
}

/* Rank 0's explain window and its top site's seconds, from explain's JSON. */
static void rank0_figures(const char *out, double *window, double *top_seconds)
{
	struct json_object *doc = json_tokener_parse(out), *p, *sites = NULL;

	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	p = rank_of(doc, 0);
	*window = num_at(p, "window_seconds");
	ck_assert(json_object_object_get_ex(p, "top_sites", &sites));
	ck_assert_int_gt(json_object_array_length(sites), 0);
	ck_assert_str_eq(str_at(json_object_array_get_idx(sites, 0), "file"), "/workspace/train.py");
	*top_seconds = num_at(json_object_array_get_idx(sites, 0), "seconds");
	json_object_put(doc);
}

static int http_status(const struct tu_stack *st, const char *path)
{
	static char body[1u << 20];

	return tu_http_request(st->metrics_port, "GET", path, body, sizeof(body));
}

/*
 * 25 s into dataloader-stall, the lifetime figures hold 20 s and more of
 * DataLoader waits; --since 5 holds about 5 s of them (the exporter keeps
 * a sample every 5 s: the span is the nearest one's), and says so.
 */
START_TEST(explain_since_answers_over_the_span_asked)
{
	double life_window, life_top, window, top;
	struct json_object *doc;
	struct tu_stack st;
	char *out;
	int status;

	if (!have_explain_stack("explain_since_answers_over_the_span_asked"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, "dataloader-stall", 500, 0), 0);
	tu_sleep_ms(25000);
	out = explain_now(&st, "--json", &status);
	rank0_figures(out, &life_window, &life_top);
	free(out);
	out = explain_now(&st, "--json --since 5", &status);
	rank0_figures(out, &window, &top);
	doc = json_tokener_parse(out);
	ck_assert(json_object_get_boolean(json_object_object_get(doc, "covered")));
	ck_assert_int_eq(json_object_get_int(json_object_object_get(doc, "since_seconds_asked")), 5);
	ck_assert_double_eq_tol(num_at(doc, "window_seconds"), window, 1e-6);
	json_object_put(doc);
	free(out);
	ck_assert_msg(life_window > 20 && life_top > 10, "lifetime: %.1f s, top site %.1f s",
		      life_window, life_top);
	ck_assert_msg(window >= 2 && window <= 8, "--since 5 covered %.1f s", window);
	ck_assert_msg(top > 0 && top <= window + 0.5, "--since 5: top site %.1f s in %.1f s",
		      top, window);
	/* Longer than the exporter has run: all it holds, and said plainly. */
	out = explain_now(&st, "--since 1h", &status);
	ck_assert_msg(strstr(out, "the exporter's history holds only ") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "not 3600 s"));
	ck_assert_ptr_nonnull(strstr(out, "verdict: data-bound: "));
	free(out);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since=5"), 200);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since=99999999999999999999999"), 200);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since=0"), 400);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since=5m"), 400);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since="), 400);
	ck_assert_int_eq(http_status(&st, "/api/stalls?since=-5"), 400);
	ck_assert_int_eq(http_status(&st, "/api/stalls?window=5"), 400);
	tu_stack_stop(&st);
}
END_TEST

START_TEST(explain_since_takes_seconds_minutes_hours_and_refuses_junk)
{
	static const char *const bad[] = { "soon", "-5", "+5", " 5", "5x", "5ms", "0", "25h",
					   "1441m", "" };
	static const char *const good[] = { "60", "60s", "5m", "1h", "24h", "1440m" };
	char cmd[1200], *out;
	int status;

	if (!have_explain_stack("explain_since_takes_seconds_minutes_hours_and_refuses_junk"))
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s explain --since '%s' 2>&1", zernel_bin, bad[i]);
		out = tu_capture(cmd, &status);
		ck_assert_msg(status == 2, "--since '%s': %d: %s", bad[i], status, out);
		ck_assert_ptr_nonnull(strstr(out, "--since wants a span such as 60, 60s, 5m or 1h"));
		free(out);
	}
	/* Good spans reach the exporter: here none listens, which is the next error. */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s explain --url http://127.0.0.1:%u --since %s 2>&1",
			 zernel_bin, tu_free_port(), good[i]);
		out = tu_capture(cmd, &status);
		ck_assert_msg(status == 1 && strstr(out, "cannot connect"), "--since %s: %d: %s",
			      good[i], status, out);
		free(out);
	}
}
END_TEST

Suite *explain_suite(void);
Suite *explain_suite(void)
{
	Suite *s = suite_create("explain");
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, explain_dataloader_stall_is_data_bound);
	tcase_add_test(t, explain_straggler_is_communication_bound_and_names_the_rank);
	tcase_add_test(t, explain_oom_is_gpu_bound_with_memory_evidence);
	tcase_add_test(t, explain_text_names_sites_file_line_in_function);
	tcase_add_test(t, explain_bad_arguments_and_no_exporter_are_said);
	tcase_add_test(t, explain_since_answers_over_the_span_asked);
	tcase_add_test(t, explain_since_takes_seconds_minutes_hours_and_refuses_junk);
	suite_add_tcase(s, t);
	return s;
}
