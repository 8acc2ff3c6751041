/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `zernel trace` against a real collector and exporter: the file is
 * Chrome's trace event format as Perfetto reads it: every event
 * well-formed (phase, name, pid, tid, microsecond times), complete events
 * of a thread nested, async pairs matched, every process and thread named
 * before its events, and only the last N seconds.
 */
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define TR_MAX_THREADS	256
#define TR_MAX_DEPTH	64

struct tr_thread {
	long pid, tid;
	double stack[TR_MAX_DEPTH];	/* ends of the open complete events */
	int depth;
	double last_start;
};

static int get(struct json_object *o, const char *k, enum json_type t, struct json_object **v)
{
	return json_object_object_get_ex(o, k, v) && json_object_is_type(*v, t);
}

static double number(struct json_object *e, const char *k)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(e, k, &v) &&
		      (json_object_is_type(v, json_type_double) ||
		       json_object_is_type(v, json_type_int)), "event without a numeric %s: %s", k,
		      json_object_to_json_string(e));
	return json_object_get_double(v);
}

/* Checks the document; returns the number of complete events. */
static int check_trace_doc(struct json_object *doc, double seconds)
{
	static struct tr_thread th[TR_MAX_THREADS];
	struct json_object *events = NULL, *v = NULL;
	long named_pids[TR_MAX_THREADS];
	int n_th = 0, n_pids = 0, complete = 0, open_async = 0;
	double lo = INFINITY, hi = 0;

	ck_assert(get(doc, "traceEvents", json_type_array, &events));
	ck_assert(get(doc, "displayTimeUnit", json_type_string, &v));
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		struct json_object *e = json_object_array_get_idx(events, i), *ph, *name, *args;
		long pid, tid;
		struct tr_thread *t = NULL;
		const char *p;

		ck_assert(json_object_is_type(e, json_type_object));
		ck_assert(get(e, "ph", json_type_string, &ph));
		ck_assert(get(e, "name", json_type_string, &name));
		ck_assert(strlen(json_object_get_string(name)) > 0);
		pid = (long)number(e, "pid");
		tid = (long)number(e, "tid");
		ck_assert(pid > 0 && tid > 0);
		p = json_object_get_string(ph);
		for (int k = 0; k < n_th; k++)
			if (th[k].pid == pid && th[k].tid == tid)
				t = &th[k];
		if (strcmp(p, "M") == 0) {
			ck_assert(get(e, "args", json_type_object, &args));
			ck_assert(get(args, "name", json_type_string, &v));
			if (strcmp(json_object_get_string(name), "process_name") == 0) {
				ck_assert_int_lt(n_pids, TR_MAX_THREADS);
				named_pids[n_pids++] = pid;
			} else {
				ck_assert_str_eq(json_object_get_string(name), "thread_name");
				ck_assert_msg(t == NULL, "thread %ld named twice", tid);
				ck_assert_int_lt(n_th, TR_MAX_THREADS);
				memset(&th[n_th], 0, sizeof(th[n_th]));
				th[n_th].pid = pid;
				th[n_th].tid = tid;
				th[n_th].last_start = -1;
				n_th++;
			}
			continue;
		}
		/* Named before its first event. */
		ck_assert_msg(t != NULL, "event on unnamed thread %ld: %s", tid,
			      json_object_to_json_string(e));
		ck_assert(n_pids > 0 && named_pids[n_pids - 1] == pid);
		ck_assert(get(e, "cat", json_type_string, &v));
		if (strcmp(p, "X") == 0) {
			double ts = number(e, "ts"), dur = number(e, "dur");

			ck_assert(ts > 0 && dur >= 0);
			ck_assert_msg(ts >= t->last_start, "thread %ld: events out of order", tid);
			t->last_start = ts;
			/*
			 * One that ends where this one starts is a sibling: times are
			 * microseconds as doubles, so ts + dur of events that touch to
			 * the nanosecond can round past the next one's ts.
			 */
			while (t->depth && t->stack[t->depth - 1] <= ts + 1e-3)
				t->depth--;
			ck_assert_msg(!t->depth || ts + dur <= t->stack[t->depth - 1] + 1e-3,
				      "thread %ld: %s ends after the event it starts in",
				      tid, json_object_to_json_string(e));
			ck_assert_int_lt(t->depth, TR_MAX_DEPTH);
			t->stack[t->depth++] = ts + dur;
			lo = fmin(lo, ts + dur);
			hi = fmax(hi, ts + dur);
			complete++;
		} else if (strcmp(p, "b") == 0 || strcmp(p, "e") == 0) {
			ck_assert(get(e, "id", json_type_string, &v));
			ck_assert(number(e, "ts") > 0);
			open_async += p[0] == 'b' ? 1 : -1;
			ck_assert(open_async >= 0);
		} else {
			ck_abort_msg("unexpected phase %s", p);
		}
	}
	ck_assert_int_eq(open_async, 0);
	/* Only the last N seconds (and the publish interval): ends within N s of each other. */
	if (complete)
		ck_assert_msg(hi - lo <= (seconds + 1) * 1e6, "events span %f s", (hi - lo) / 1e6);
	return complete;
}

START_TEST(trace_file_is_a_well_formed_chrome_trace)
{
	struct json_object *doc;
	struct tu_stack st;
	char cmd[1400], bin[1024], path[256], *out;
	int status, complete;

	if (!tu_have_binary("zernel") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("trace_file_is_a_well_formed_chrome_trace: binaries not built\n");
		return;
	}
	ck_assert_int_eq(tu_stack_start(&st, "straggler", 500, 0), 0);
	tu_sleep_ms(6000);
	snprintf(path, sizeof(path), "/tmp/zernel-trace-%d.json", (int)getpid());
	snprintf(cmd, sizeof(cmd), "%s trace --url http://127.0.0.1:%u --seconds 3 -o %s 2>&1",
		 tu_build_path(bin, sizeof(bin), "zernel"), st.metrics_port, path);
	out = tu_capture(cmd, &status);
	tu_stack_stop(&st);
	ck_assert_msg(status == 0, "zernel trace: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "written to"));
	free(out);
	doc = json_object_from_file(path);
	ck_assert_msg(doc != NULL, "%s is not JSON", path);
	complete = check_trace_doc(doc, 3);
	/* Four trainers over 3 s: stalls at the script's lines and NCCL calls. */
	ck_assert_int_gt(complete, 100);
	out = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(strstr(out, "\"name\":\"\\/workspace\\/train.py:151 in train\""));
	ck_assert_ptr_nonnull(strstr(out, "\"name\":\"nccl all_reduce\""));
	ck_assert_ptr_nonnull(strstr(out, "\"name\":\"pt_main_thread (pid "));
	free(out);
	json_object_put(doc);
	unlink(path);
}
END_TEST

START_TEST(trace_refuses_bad_arguments)
{
	char cmd[1200], bin[1024], *out;
	int status;

	if (!tu_have_binary("zernel"))
		return;
	tu_build_path(bin, sizeof(bin), "zernel");
	snprintf(cmd, sizeof(cmd), "%s trace --seconds 5 2>&1", bin);
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 2);
	ck_assert_ptr_nonnull(strstr(out, "-o FILE is required"));
	free(out);
	snprintf(cmd, sizeof(cmd), "%s trace --seconds 0 -o - 2>&1", bin);
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 2);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s trace --url http://127.0.0.1:%u -o - 2>&1", bin,
		 tu_free_port());
	out = tu_capture(cmd, &status);
	ck_assert_int_eq(status, 1);
	free(out);
}
END_TEST

Suite *trace_suite(void);
Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, trace_file_is_a_well_formed_chrome_trace);
	tcase_add_test(t, trace_refuses_bad_arguments);
	suite_add_tcase(s, t);
	return s;
}
