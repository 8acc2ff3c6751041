/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The zernel client: URL and feed parsing, the frame renderer on a mock
 * terminal, and the binary itself: usage errors, --once and --json against
 * a simulated collector + real exporter (figures compared with /metrics of
 * the same publish), and a hostile feed that must never crash it.  The
 * parser and the views read snapshots the real exporter sent, recorded in
 * tests/fixtures/ (tests/exporter/check_feed_contract.c keeps them true),
 * and expected figures are worked out from those snapshots.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/sbuf.h"
#include "cli/feed.h"
#include "cli/fmt.h"
#include "cli/spark.h"
#include "cli/text.h"
#include "cli/url.h"
#include "cli/view.h"
#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PY "/usr/bin/python3"

/* ---- helpers ---------------------------------------------------------- */

static struct cli_feed *parse_ok(const char *json)
{
	struct cli_feed *f = malloc(sizeof(*f));

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cli_feed_parse(json, strlen(json), f), 0);
	return f;
}

/*
 * A mock terminal: applies a frame (text, \r\n, ESC[H, ESC[r;1H, ESC[K,
 * ESC[J, SGR) to a rows x cols grid of cells and reports any write outside
 * it.  Cells hold one UTF-8 glyph each.
 */
struct screen {
	int rows, cols;
	char cell[CLI_VIEW_MAX_ROWS][CLI_VIEW_MAX_COLS][5];
	int overflow;		/* a glyph fell outside the grid */
	int sgr;		/* SGR sequences seen */
	int colour;		/* SGR sequences with a colour (30-47) */
	int bad_escape;		/* an escape sequence the view should never send */
};

static void screen_apply(struct screen *s, const char *f)
{
	int r = 0, c = 0;

	memset(s->cell, 0, sizeof(s->cell));
	s->overflow = s->sgr = s->colour = s->bad_escape = 0;
	while (*f) {
		if (f[0] == '\x1b' && f[1] == '[') {
			const char *p = f + 2;
			char fin;

			while (*p && ((*p >= '0' && *p <= '9') || *p == ';' || *p == '?'))
				p++;
			fin = *p;
			if (fin == 'H') {
				int row = 1;

				sscanf(f + 2, "%d", &row);
				r = p == f + 2 ? 0 : row - 1;
				c = 0;
			} else if (fin == 'm') {
				s->sgr++;
				for (const char *q = f + 2; q < p; q++)
					if (q[0] == '3' && q[1] >= '0' && q[1] <= '7' &&
					    (q == f + 2 || q[-1] == ';'))
						s->colour++;
			} else if (fin != 'K' && fin != 'J') {
				s->bad_escape++;
			}
			f = *p ? p + 1 : p;
			continue;
		}
		if (*f == '\x1b' || ((unsigned char)*f < 0x20 && *f != '\r' && *f != '\n')) {
			s->bad_escape++;
			f++;
			continue;
		}
		if (*f == '\r') {
			c = 0;
			f++;
			continue;
		}
		if (*f == '\n') {
			r++;
			f++;
			continue;
		}
		{
			size_t n = (unsigned char)*f < 0x80 ? 1 : (unsigned char)*f < 0xe0 ? 2 :
				   (unsigned char)*f < 0xf0 ? 3 : 4;

			if (r >= s->rows || c >= s->cols)
				s->overflow++;
			else
				memcpy(s->cell[r][c], f, n);
			c++;
			f += n;
		}
	}
	if (r >= s->rows)
		s->overflow++;
}

/* Row r as text (empty cells as spaces, trailing blanks cut). */
static const char *screen_row(const struct screen *s, int r, char *buf, size_t len)
{
	size_t o = 0;

	for (int c = 0; c < s->cols; c++) {
		const char *g = s->cell[r][c][0] ? s->cell[r][c] : " ";
		size_t n = strlen(g);

		if (o + n + 1 >= len)
			break;
		memcpy(buf + o, g, n);
		o += n;
	}
	while (o > 0 && buf[o - 1] == ' ')
		o--;
	buf[o] = '\0';
	return buf;
}

/* Row index holding needle, or -1. */
static int screen_find(const struct screen *s, const char *needle)
{
	char row[CLI_VIEW_MAX_COLS * 5];

	for (int r = 0; r < s->rows; r++)
		if (strstr(screen_row(s, r, row, sizeof(row)), needle))
			return r;
	return -1;
}

static struct screen scr;

static void render(const struct cli_feed *f, int rows, int cols, int colour, int utf8,
		   enum cli_ws_state state)
{
	struct cli_view v;
	struct sbuf out;
	struct cli_view_input in = {
		.feed = f, .url = "ws://127.0.0.1:9092", .rows = rows, .cols = cols,
		.now_mono_ns = 5000000000ull,
	};

	in.ws.state = state;
	in.ws.messages = 3;
	in.ws.last_rx_mono_ns = 4000000000ull;
	in.ws.retry_at_mono_ns = 7500000000ull;
	snprintf(in.ws.error, sizeof(in.ws.error), "connection refused");
	cli_view_init(&v, colour, utf8);
	if (f)
		for (int i = 0; i < 5; i++)
			cli_view_push(&v, f);
	sbuf_init(&out, 4u << 20, 0);
	ck_assert_int_eq(cli_view_render(&v, &in, &out), 0);
	scr.rows = rows;
	scr.cols = cols;
	screen_apply(&scr, out.data);
	sbuf_free(&out);
}

/* ---- recorded snapshots of the real exporter (tests/fixtures) ---------- */

static const char *const fixtures[] = { "steady", "oom", "straggler", "dataloader-stall", "down" };

/* The text of tests/fixtures/feed-NAME.json, as the exporter sent it. */
static char *fixture(const char *name)
{
	char path[1024];
	char *text;

	snprintf(path, sizeof(path), "%s/tests/fixtures/feed-%s.json", tu_src_dir(), name);
	text = tu_read_file(path, NULL);
	ck_assert_msg(text != NULL, "cannot read %s (make feed-contract records it)", path);
	return text;
}

static struct json_object *fixture_json(const char *name)
{
	char *text = fixture(name);
	struct json_object *o = json_tokener_parse(text);

	ck_assert_msg(o != NULL, "fixture %s is not JSON", name);
	free(text);
	return o;
}

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "feed lacks %s", key);
	return v;
}

static double jnum(struct json_object *o, const char *key)
{
	return json_object_get_double(jget(o, key));
}

static const char *jstr(struct json_object *o, const char *key)
{
	return json_object_get_string(jget(o, key));
}

static struct json_object *jrow(struct json_object *o, const char *array, size_t i)
{
	return json_object_array_get_idx(jget(o, array), i);
}

static size_t jlen(struct json_object *o, const char *array)
{
	return json_object_array_length(jget(o, array));
}

/* A figure in a unit the feed spells (us, ms, s) in nanoseconds: as the view gets it. */
#define ck_ns(got, json_value, unit) \
	ck_assert_double_eq_tol((got), (json_value) * (unit), 1e-6 * (json_value) * (unit) + 1e-6)

/* The oom snapshot: GPU 0 past the 95% mark, GpuOomWarning firing. */
static struct cli_feed *oom_feed(struct json_object **json)
{
	char *text = fixture("oom");
	struct cli_feed *f = parse_ok(text);

	free(text);
	if (json)
		*json = fixture_json("oom");
	return f;
}

/* Index of the GPU row over the OOM mark in the oom snapshot. */
static size_t oom_gpu(struct json_object *j)
{
	for (size_t i = 0; i < jlen(j, "gpus"); i++) {
		struct json_object *g = jrow(j, "gpus", i);

		if (jnum(g, "used_bytes") >= 0.95 * jnum(g, "total_bytes"))
			return i;
	}
	ck_abort_msg("the oom snapshot has no GPU over 95%%: make feed-contract again");
	return 0;
}

/* ---- URL -------------------------------------------------------------- */

START_TEST(test_url_accepts_feed_addresses)
{
	struct url u;

	ck_assert_int_eq(cli_url_parse("ws://localhost:9092", &u, NULL), 0);
	ck_assert_str_eq(u.host, "localhost");
	ck_assert_uint_eq(u.port, 9092);
	ck_assert_str_eq(u.path, "/");
	ck_assert_int_eq(cli_url_parse("ws://10.0.0.7", &u, NULL), 0);
	ck_assert_uint_eq(u.port, CLI_URL_DEFAULT_PORT);
	ck_assert_int_eq(cli_url_parse("WS://[::1]:1/feed?x=1", &u, NULL), 0);
	ck_assert_str_eq(u.host, "::1");
	ck_assert_uint_eq(u.port, 1);
	ck_assert_str_eq(u.path, "/feed?x=1");
	ck_assert_int_eq(cli_url_parse("wss://node-3.example", &u, NULL), 0);
	ck_assert(cli_url_tls(&u));
	ck_assert_uint_eq(u.port, 443);
}
END_TEST

START_TEST(test_url_rejects_nonsense_with_a_reason)
{
	static const char *const bad[] = {
		"", "localhost:9092", "http://localhost:9092", "ws://", "ws://:9092",
		"ws://host:0", "ws://host:65536", "ws://host:99999999999", "ws://host:-1",
		"ws://host:12ab", "ws://ho st:1", "ws://[::1", "ws://[zz]:1", "ws://host:1/a b",
		"ws://host:1/\x1b[2J",
	};
	struct url u;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;

		ck_assert_msg(cli_url_parse(bad[i], &u, &why) == -EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_ptr_nonnull(why);
		ck_assert_int_gt(strlen(why), 5);
	}
	ck_assert_int_eq(cli_url_parse(NULL, &u, NULL), -EINVAL);
}
END_TEST

/* ---- feed ------------------------------------------------------------- */

/* Every value of a recorded snapshot arrives, in its unit, and nothing is skipped. */
START_TEST(test_feed_reads_every_recorded_snapshot)
{
	for (size_t k = 0; k < sizeof(fixtures) / sizeof(fixtures[0]); k++) {
		char *text = fixture(fixtures[k]);
		struct cli_feed *f = parse_ok(text);
		struct json_object *j = json_tokener_parse(text), *t;

		ck_assert_msg(f->rows_skipped == 0, "%s: %zu rows ignored", fixtures[k],
			      f->rows_skipped);
		ck_assert_int_eq(f->collector_up, json_object_get_boolean(jget(j, "collector_up")));
		ck_assert_str_eq(f->status, jstr(j, "status"));
		ck_assert_double_eq(f->generation, jnum(j, "generation"));
		ck_assert_double_eq(f->age_ms, jnum(j, "age_ms"));
		ck_ns(f->cuda_p50_ns, jnum(j, "cuda_latency_p50_us"), 1e3);
		ck_ns(f->cuda_p99_ns, jnum(j, "cuda_latency_p99_us"), 1e3);
		ck_ns(f->nccl_allreduce_p50_ns, jnum(j, "nccl_allreduce_p50_ms"), 1e6);
		ck_ns(f->nccl_allreduce_p99_ns, jnum(j, "nccl_allreduce_p99_ms"), 1e6);
		ck_ns(f->dataloader_p50_ns, jnum(j, "dataloader_wait_p50_ms"), 1e6);
		ck_ns(f->dataloader_p99_ns, jnum(j, "dataloader_wait_p99_ms"), 1e6);

		ck_assert_uint_eq(f->n_mem, jlen(j, "gpu_utilization"));
		for (size_t i = 0; i < f->n_mem; i++) {
			struct json_object *e = jrow(j, "gpu_utilization", i);
			char key[32];

			snprintf(key, sizeof(key), "%u:%u", f->mem[i].pid, f->mem[i].gpu_id);
			ck_assert_str_eq(key, jstr(e, "key"));
			ck_assert_double_eq((double)f->mem[i].used_bytes, jnum(e, "current_bytes"));
			ck_assert_double_eq((double)f->mem[i].peak_bytes, jnum(e, "peak_bytes"));
		}
		ck_assert_uint_eq(f->n_gpu, jlen(j, "gpus"));
		for (size_t i = 0; i < f->n_gpu; i++) {
			struct json_object *e = jrow(j, "gpus", i);

			ck_assert_double_eq(f->gpu[i].gpu_id, jnum(e, "gpu_id"));
			ck_assert_double_eq((double)f->gpu[i].total_bytes, jnum(e, "total_bytes"));
			ck_assert_double_eq((double)f->gpu[i].used_bytes, jnum(e, "used_bytes"));
			ck_assert_double_eq(f->gpu[i].processes, jnum(e, "processes"));
		}
		ck_assert_uint_eq(f->n_proc, jlen(j, "processes"));
		for (size_t i = 0; i < f->n_proc; i++) {
			const struct cli_proc *p = &f->proc[i];
			struct json_object *e = jrow(j, "processes", i);

			ck_assert_double_eq(p->pid, jnum(e, "pid"));
			ck_assert_double_eq(p->ppid, jnum(e, "ppid"));
			ck_assert_str_eq(p->comm, jstr(e, "comm"));
			ck_ns(p->launch.p50_ns, jnum(e, "cuda_launch_p50_us"), 1e3);
			ck_ns(p->launch.p99_ns, jnum(e, "cuda_launch_p99_us"), 1e3);
			ck_assert_double_eq(p->launch.count, jnum(e, "cuda_launch_count"));
			ck_ns(p->dataloader.p50_ns, jnum(e, "dataloader_wait_p50_ms"), 1e6);
			ck_ns(p->dataloader.p99_ns, jnum(e, "dataloader_wait_p99_ms"), 1e6);
			ck_ns(p->futex.p99_ns, jnum(e, "futex_wait_p99_ms"), 1e6);
			ck_ns(p->barrier.p99_ns, jnum(e, "barrier_wait_p99_ms"), 1e6);
			ck_ns(p->runq.p99_ns, jnum(e, "runq_delay_p99_us"), 1e3);
			ck_ns(p->offcpu_preempted_ns, jnum(e, "offcpu_preempted_s"), 1e9);
			ck_ns(p->offcpu_blocked_ns, jnum(e, "offcpu_blocked_s"), 1e9);
			ck_assert_double_eq(p->involuntary_switches, jnum(e, "involuntary_switches"));
			ck_assert_double_eq(p->voluntary_switches, jnum(e, "voluntary_switches"));
			ck_assert_double_eq(p->migrations, jnum(e, "migrations"));
			ck_assert_double_eq(p->gpu_bytes, jnum(e, "gpu_bytes"));
		}
		ck_assert_uint_eq(f->n_nccl, jlen(j, "nccl"));
		for (size_t i = 0; i < f->n_nccl; i++) {
			const struct cli_nccl *n = &f->nccl[i];
			struct json_object *e = jrow(j, "nccl", i);

			ck_assert_str_eq(n->op, jstr(e, "op"));
			ck_assert_double_eq(n->calls, jnum(e, "calls"));
			ck_assert_double_eq(n->bytes, jnum(e, "bytes"));
			ck_assert_double_eq(n->errors, jnum(e, "errors"));
			ck_ns(n->duration.p50_ns, jnum(e, "duration_p50_ms"), 1e6);
			ck_ns(n->duration.p99_ns, jnum(e, "duration_p99_ms"), 1e6);
			ck_ns(n->wait.p50_ns, jnum(e, "wait_p50_ms"), 1e6);
			ck_ns(n->wait.p99_ns, jnum(e, "wait_p99_ms"), 1e6);
		}
		ck_assert_uint_eq(f->n_alert, jlen(j, "alerts"));
		for (size_t i = 0; i < f->n_alert; i++) {
			struct json_object *e = jrow(j, "alerts", i);

			ck_assert_str_eq(f->alert[i].name, jstr(e, "alertname"));
			ck_assert_str_eq(f->alert[i].severity, jstr(e, "severity"));
			ck_assert_str_eq(f->alert[i].summary, jstr(e, "summary"));
			ck_assert_int_eq(f->alert[i].firing, strcmp(jstr(e, "state"), "firing") == 0);
			ck_assert_int_eq(f->alert[i].pending, strcmp(jstr(e, "state"), "pending") == 0);
		}
		t = jget(j, "telemetry");
		ck_assert_double_eq(cli_feed_telemetry(f, CAT_ID_EVENTS),
				    json_object_object_get_ex(t, "events_total", NULL) ?
				    jnum(t, "events_total") : -1);
		json_object_object_foreach(t, key, v) {
			double want = 0;

			if (json_object_is_type(v, json_type_string))
				continue;
			if (json_object_is_type(v, json_type_object)) {
				json_object_object_foreach(v, k2, v2) {
					(void)k2;
					want += json_object_get_double(v2);
				}
			} else {
				want = json_object_get_double(v);
			}
			for (size_t i = 0; i <= f->n_telemetry; i++) {
				ck_assert_msg(i < f->n_telemetry, "%s: telemetry %s not read",
					      fixtures[k], key);
				if (strcmp(f->telemetry[i].key, key) == 0) {
					ck_assert_double_eq(f->telemetry[i].value, want);
					break;
				}
			}
		}
		json_object_put(j);
		free(f);
		free(text);
	}
}
END_TEST

START_TEST(test_feed_collector_down_is_said)
{
	char *text = fixture("down");
	struct cli_feed *f = parse_ok(text);

	ck_assert_int_eq(f->collector_up, 0);
	ck_assert_str_eq(f->status, "missing");
	ck_assert_ptr_nonnull(strstr(f->stale_reason, "missing"));
	ck_assert_uint_eq(f->n_gpu + f->n_mem + f->n_proc + f->n_nccl, 0);
	ck_assert_str_eq(f->mode, "");
	ck_assert_double_eq(cli_feed_telemetry(f, CAT_ID_EVENTS), -1);
	ck_assert_uint_eq(f->n_alert, 1);
	ck_assert_str_eq(f->alert[0].name, "CollectorDown");
	ck_assert_int_eq(f->alert[0].pending, 1);
	ck_assert_str_eq(f->alert[0].starts_at, "");
	free(f);
	free(text);
}
END_TEST

START_TEST(test_feed_refuses_what_is_not_a_snapshot)
{
	static const char *const bad[] = {
		"", "x", "null", "[]", "42", "\"s\"", "{", "{\"gpu_utilization\": [", "{}",
		"{\"gpu_utilization\": {}}", "{\"gpu_utilization\": []} trailing",
		"{\"gpu_utilization\": [], \"a\": 'x'}",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	};
	struct cli_feed *f = malloc(sizeof(*f));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(cli_feed_parse(bad[i], strlen(bad[i]), f) == -EINVAL,
			      "accepted \"%s\"", bad[i]);
		ck_assert_uint_eq(f->n_gpu + f->n_mem + f->n_proc, 0);
		ck_assert_double_lt(f->cuda_p99_ns, 0);
	}
	ck_assert_int_eq(cli_feed_parse("{}", CLI_FEED_MAX_BYTES + 1, f), -E2BIG);
	free(f);
}
END_TEST

/* A recorded snapshot with hostile values put in: parts go, the rest stays. */
START_TEST(test_feed_skips_odd_rows_and_bounds_tables)
{
	struct json_object *j = fixture_json("steady"), *arr, *p, *gpus;
	struct cli_feed *f;
	const char *text;
	size_t real_mem = jlen(j, "gpu_utilization"), real_procs = jlen(j, "processes");

	arr = jget(j, "gpu_utilization");
	json_object_array_add(arr, json_tokener_parse("{\"key\": \"1:0\", \"current_bytes\": 1}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": -1, \"gpu_id\": 0, \"current_bytes\": 1}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": \"7\", \"gpu_id\": 0, \"current_bytes\": 1}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": 7, \"gpu_id\": 99999999999, \"current_bytes\": 1}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": 7, \"gpu_id\": 0, \"current_bytes\": -5}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": 7, \"gpu_id\": 0, \"current_bytes\": 1e300}"));
	json_object_array_add(arr, json_tokener_parse("{\"pid\": 7, \"gpu_id\": 0, \"current_bytes\": 1.5}"));
	json_object_array_add(arr, json_object_new_int(3));
	json_object_array_add(arr, NULL);
	json_object_object_add(j, "cuda_latency_p99_us", json_object_new_string("fast"));
	json_object_object_add(j, "cuda_latency_p50_us", json_object_new_double(-3));
	json_object_object_add(j, "age_ms", json_object_new_string("soon"));
	json_object_object_add(j, "nccl", json_tokener_parse("[1, \"a\", null, {\"op\": 5}]"));
	json_object_object_add(j, "alerts",
			       json_tokener_parse("[null, 3, {\"labels\": 5, \"state\": \"firing?\"}]"));
	json_object_object_add(j, "telemetry", json_object_new_array());
	p = json_tokener_parse("{\"pid\": 7, \"comm\": \"a\\u001b[2J\\u0007\\u00e9\\u4e2db\"}");
	json_object_array_add(jget(j, "processes"), p);
	json_object_array_add(jget(j, "processes"), json_tokener_parse("{\"comm\": \"no pid\"}"));
	gpus = json_object_new_array();
	for (int i = 0; i < 20000; i++) {
		struct json_object *g = json_object_new_object();

		json_object_object_add(g, "gpu_id", json_object_new_int(i));
		json_object_object_add(g, "total_bytes", json_object_new_int(1));
		json_object_array_add(gpus, g);
	}
	json_object_object_add(j, "gpus", gpus);
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	f = parse_ok(text);

	ck_assert_uint_eq(f->n_mem, real_mem);		/* the exporter's rows only */
	ck_assert_uint_ge(f->rows_skipped, 9 + 4 + 1);
	ck_assert_uint_eq(f->n_gpu, CLI_FEED_MAX_GPUS);
	ck_assert_uint_eq(f->gpu_dropped, 20000 - CLI_FEED_MAX_GPUS);
	ck_assert_double_lt(f->cuda_p99_ns, 0);
	ck_assert_double_lt(f->cuda_p50_ns, 0);
	ck_assert_double_lt(f->age_ms, 0);
	ck_assert_uint_eq(f->n_nccl, 0);
	ck_assert_uint_eq(f->n_alert, 1);
	ck_assert_int_eq(f->alert[0].firing + f->alert[0].pending, 0);
	ck_assert_uint_eq(f->n_telemetry, 0);
	ck_assert_uint_eq(f->n_proc, real_procs + 1);
	/* Control characters and non-ASCII never reach a terminal. */
	ck_assert_str_eq(f->proc[real_procs].comm, "a?[2J???b");
	ck_assert_double_lt(f->proc[real_procs].launch.p99_ns, 0);
	free(f);
	json_object_put(j);
}
END_TEST

/* A full node at the exporter's bounds (4096 memory rows, 1024 processes), from recorded rows. */
START_TEST(test_feed_parses_a_full_node_in_bounded_time)
{
	struct json_object *j = fixture_json("steady"), *mem, *procs;
	struct json_object *m0 = jrow(j, "gpu_utilization", 0), *p0 = jrow(j, "processes", 0);
	struct cli_feed *f = malloc(sizeof(*f));
	double runq_us = jnum(p0, "runq_delay_p99_us");
	const char *text;
	uint64_t t0, t1;

	mem = json_object_new_array();
	procs = json_object_new_array();
	for (int i = 0; i < 4096; i++) {
		struct json_object *m = NULL;

		json_object_deep_copy(m0, &m, NULL);
		json_object_object_add(m, "pid", json_object_new_int(100000 + i));
		json_object_object_add(m, "current_bytes", json_object_new_int(i));
		json_object_array_add(mem, m);
	}
	for (int i = 0; i < 1024; i++) {
		struct json_object *p = NULL;

		json_object_deep_copy(p0, &p, NULL);
		json_object_object_add(p, "pid", json_object_new_int(100000 + i));
		json_object_object_add(p, "cuda_launch_count", json_object_new_int(i));
		json_object_array_add(procs, p);
	}
	json_object_object_add(j, "gpu_utilization", mem);
	json_object_object_add(j, "processes", procs);
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	t0 = now_mono_ns();
	ck_assert_int_eq(cli_feed_parse(text, strlen(text), f), 0);
	t1 = now_mono_ns();
	ck_assert_uint_eq(f->n_mem, 4096);
	ck_assert_uint_eq(f->n_proc, 1024);
	ck_assert_uint_eq(f->mem[4095].used_bytes, 4095);
	ck_assert_double_eq(f->proc[1023].launch.count, 1023);
	ck_ns(f->proc[1023].runq.p99_ns, runq_us, 1e3);
	/* Tens of ms here; a quadratic parser would take seconds. */
	ck_assert_msg(t1 - t0 < 1000 * NSEC_PER_MSEC, "parse took %llu ms",
		      (unsigned long long)((t1 - t0) / NSEC_PER_MSEC));
	free(f);
	json_object_put(j);
}
END_TEST

/* ---- formatting, sparkline, text report -------------------------------- */

START_TEST(test_fmt_units)
{
	char b[CLI_FMT_LEN];

	ck_assert_str_eq(cli_fmt_bytes(b, sizeof(b), 0), "0 B");
	ck_assert_str_eq(cli_fmt_bytes(b, sizeof(b), 1536), "1.50 KiB");
	ck_assert_str_eq(cli_fmt_bytes(b, sizeof(b), 85899345920.0), "80.0 GiB");
	ck_assert_str_eq(cli_fmt_bytes(b, sizeof(b), -1), "-");
	ck_assert_str_eq(cli_fmt_dur(b, sizeof(b), 850), "850 ns");
	ck_assert_str_eq(cli_fmt_dur(b, sizeof(b), 15250), "15.2 us");
	ck_assert_str_eq(cli_fmt_dur(b, sizeof(b), 4.56e6), "4.56 ms");
	ck_assert_str_eq(cli_fmt_dur(b, sizeof(b), 120e9), "120 s");
	ck_assert_str_eq(cli_fmt_dur(b, sizeof(b), NAN), "-");
	ck_assert_str_eq(cli_fmt_count(b, sizeof(b), 12345), "12.3k");
}
END_TEST

START_TEST(test_spark_scales_between_min_and_max)
{
	struct cli_spark s;
	char out[256];

	cli_spark_reset(&s);
	for (int i = 0; i < 8; i++)
		cli_spark_push(&s, 100 + i * 10);
	cli_spark_push(&s, -1);		/* unknown: skipped */
	cli_spark_push(&s, NAN);
	ck_assert_uint_eq(cli_spark_render(&s, 8, 0, out, sizeof(out)), 8);
	ck_assert_str_eq(out, "_.:-=+*#");
	ck_assert_uint_eq(cli_spark_render(&s, 3, 1, out, sizeof(out)), 3);
	ck_assert_str_eq(out, "\u2581\u2585\u2588");	/* the last three, rescaled */
	for (unsigned int i = 0; i < 2 * CLI_SPARK_POINTS; i++)
		cli_spark_push(&s, 5);
	ck_assert_uint_eq(s.n, CLI_SPARK_POINTS);
	ck_assert_uint_eq(cli_spark_render(&s, 4, 0, out, sizeof(out)), 4);
	ck_assert_str_eq(out, "____");
}
END_TEST

START_TEST(test_text_report_has_exact_figures)
{
	struct json_object *j;
	struct cli_feed *f = oom_feed(&j);
	struct json_object *g = jrow(j, "gpus", oom_gpu(j)), *a = jrow(j, "alerts", 0);
	char want[256], p50[CLI_FMT_LEN], p99[CLI_FMT_LEN];
	struct sbuf out;

	sbuf_init(&out, 1u << 20, 0);
	ck_assert_int_eq(cli_text_report(&out, f, "ws://x:1"), 0);
	ck_assert_ptr_nonnull(strstr(out.data, "zernel snapshot from ws://x:1"));
	ck_assert_ptr_nonnull(strstr(out.data, "collector: up (simulate, scenario oom)"));
	ck_assert_ptr_nonnull(strstr(out.data, "ALERTS (1 firing)"));
	snprintf(want, sizeof(want), "FIRING   warning   GpuOomWarning: %s  since %s",
		 jstr(a, "summary"), jstr(a, "startsAt"));
	ck_assert_msg(strstr(out.data, want), "no \"%s\" in:\n%s", want, out.data);
	/* The GPU over the mark, with its exact bytes. */
	snprintf(want, sizeof(want), "%4.1f%%  YES", 100 * jnum(g, "used_bytes") / jnum(g, "total_bytes"));
	ck_assert_msg(strstr(out.data, want), "no \"%s\"", want);
	snprintf(want, sizeof(want), "  %15.0f  %15.0f\n", jnum(g, "used_bytes"), jnum(g, "total_bytes"));
	ck_assert_msg(strstr(out.data, want), "no \"%s\"", want);
	snprintf(want, sizeof(want), "CUDA LAUNCH (node)       p50 %s  p99 %s",
		 cli_fmt_dur(p50, sizeof(p50), jnum(j, "cuda_latency_p50_us") * 1e3),
		 cli_fmt_dur(p99, sizeof(p99), jnum(j, "cuda_latency_p99_us") * 1e3));
	ck_assert_msg(strstr(out.data, want), "no \"%s\"", want);
	/* Each recorded process with its pod and rank, as the exporter sent them. */
	for (int i = 0; i < 2; i++) {
		struct json_object *p = jrow(j, "processes", i);

		snprintf(want, sizeof(want), "  %-16s  %s r%s ", jstr(p, "comm"), jstr(p, "pod"),
			 jstr(p, "rank"));
		ck_assert_msg(strstr(out.data, want), "no \"%s\" in:\n%s", want, out.data);
	}
	ck_assert_ptr_null(strchr(out.data, '\x1b'));
	sbuf_free(&out);
	json_object_put(j);
	free(f);
}
END_TEST

/* ---- the frame renderer on a mock terminal ----------------------------- */

START_TEST(test_view_fits_80x24_with_the_essentials)
{
	struct json_object *j;
	struct cli_feed *f = oom_feed(&j);
	const struct cli_proc *worst = NULL;
	char row[2048], name[32], want[128], d[CLI_FMT_LEN];
	size_t hot = oom_gpu(j);
	int r;

	render(f, 24, 80, 1, 1, CLI_WS_CONNECTED);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_eq(scr.bad_escape, 0);
	ck_assert_int_gt(scr.colour, 0);
	for (size_t i = 0; i < jlen(j, "gpus"); i++) {
		snprintf(name, sizeof(name), " gpu%.0f ", jnum(jrow(j, "gpus", i), "gpu_id"));
		r = screen_find(&scr, name);
		ck_assert_msg(r >= 0, "no row for%s", name);
		/* The GPU over the 95% mark says so; the others do not. */
		ck_assert_int_eq(strstr(screen_row(&scr, r, row, sizeof(row)), "OOM RISK") != NULL,
				 i == hot);
		/* The 95% mark is inside every bar. */
		ck_assert_ptr_nonnull(strstr(row, "\u2502"));
	}
	ck_assert_int_ge(screen_find(&scr, "ALERT GpuOomWarning [warning] GPU"), 0);
	ck_assert_int_ge(screen_find(&scr, "CUDA launch"), 0);
	snprintf(want, sizeof(want), "p99 %s", cli_fmt_dur(d, sizeof(d), f->cuda_p99_ns));
	ck_assert_int_ge(screen_find(&scr, want), 0);
	ck_assert_int_ge(screen_find(&scr, "all_reduce"), 0);
	ck_assert_int_ge(screen_find(&scr, "DataLoader wait"), 0);
	for (size_t i = 0; i < f->n_proc; i++)
		if (f->proc[i].dataloader.p99_ns > 0 &&
		    (!worst || f->proc[i].dataloader.p99_ns > worst->dataloader.p99_ns))
			worst = &f->proc[i];
	ck_assert_ptr_nonnull(worst);
	snprintf(want, sizeof(want), "worst pid %u p99 %s", worst->pid,
		 cli_fmt_dur(d, sizeof(d), worst->dataloader.p99_ns));
	ck_assert_int_ge(screen_find(&scr, want), 0);
	ck_assert_int_ge(screen_find(&scr, "Scheduler"), 0);
	ck_assert_int_ge(screen_find(&scr, "collector up (simulate: oom)"), 0);
	/* The snapshot's age plus 1 s since it arrived. */
	snprintf(want, sizeof(want), "age %s", cli_fmt_dur(d, sizeof(d), (f->age_ms + 1000) * 1e6));
	ck_assert_int_ge(screen_find(&scr, want), 0);
	ck_assert_int_eq(screen_find(&scr, "q quit"), 23);	/* footer on the last row */
	ck_assert_int_eq(screen_find(&scr, "zernel watch"), 0);
	json_object_put(j);
	free(f);
}
END_TEST

/* The training threads' states: each its share of their time, summed over processes. */
static void assert_thread_states_line(const struct cli_feed *f)
{
	static const char *const names[SHM_STATE_COUNT] = {
		"cpu", "runq", "input", "gpu", "coll", "lock", "sleep", "other",
	};
	double sum[SHM_STATE_COUNT] = { 0 }, total = 0;
	char want[256];
	size_t o = 0;

	for (size_t i = 0; i < f->n_proc; i++)
		for (unsigned int st = 0; st < SHM_STATE_COUNT; st++)
			sum[st] += f->proc[i].state_ns[st] > 0 ? f->proc[i].state_ns[st] : 0;
	for (unsigned int st = 0; st < SHM_STATE_COUNT; st++)
		total += sum[st];
	ck_assert_msg(total > 0, "the fixture has no thread states");
	for (unsigned int st = 0; st < SHM_STATE_COUNT && o < sizeof(want); st++)
		o += (size_t)snprintf(want + o, sizeof(want) - o, "%s %.0f%%%s", names[st],
				      100.0 * sum[st] / total, st + 1 < SHM_STATE_COUNT ? "  " : "");
	ck_assert_msg(screen_find(&scr, want) >= 0, "no \"%s\"", want);
}

START_TEST(test_view_uses_more_room_when_there_is_more)
{
	struct json_object *j;
	struct cli_feed *f = oom_feed(&j);
	char needle[128];

	render(f, 24, 80, 0, 1, CLI_WS_CONNECTED);
	ck_assert_int_lt(screen_find(&scr, "launch99"), 0);	/* no room for the table */
	render(f, 60, 160, 0, 1, CLI_WS_CONNECTED);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_ge(screen_find(&scr, "launch99"), 0);
	assert_thread_states_line(f);
	for (size_t i = 0; i < f->n_proc; i++) {
		char who[64], rank[32];

		cli_proc_who(who, sizeof(who), &f->proc[i], 18);
		snprintf(needle, sizeof(needle), " %-8u %-15.15s %-18s ", f->proc[i].pid,
			 f->proc[i].comm, who);
		ck_assert_msg(screen_find(&scr, needle) >= 0, "no process row \"%s\"", needle);
		/* The rank survives a pod name too long for the column. */
		snprintf(rank, sizeof(rank), " r%s", f->proc[i].rank);
		ck_assert_msg(strcmp(f->proc[i].rank, "unknown") == 0 ||
			      (strlen(who) <= 18 && strstr(who, rank)), "who \"%s\"", who);
	}
	for (size_t i = 0; i < f->n_mem; i++) {	/* per-process memory */
		snprintf(needle, sizeof(needle), "pid %-8u", f->mem[i].pid);
		ck_assert_msg(screen_find(&scr, needle) >= 0, "no memory row \"%s\"", needle);
	}
	/* Every op that was called has a row; one never called (bar all_reduce) has none. */
	for (size_t i = 0; i < f->n_nccl; i++) {
		snprintf(needle, sizeof(needle), " %s ", f->nccl[i].op);
		ck_assert_msg((screen_find(&scr, needle) >= 0) ==
			      (f->nccl[i].calls > 0 || strcmp(f->nccl[i].op, "all_reduce") == 0),
			      "op %s shown or not as its calls say", f->nccl[i].op);
	}
	ck_assert_int_eq(screen_find(&scr, "q quit"), 59);
	/* Without colour there is no SGR at all. */
	ck_assert_int_eq(scr.sgr, 0);
	json_object_put(j);
	free(f);
}
END_TEST

START_TEST(test_view_survives_any_size)
{
	static const int sizes[][2] = { { 1, 1 }, { 2, 10 }, { 5, 20 }, { 24, 80 }, { 10, 400 },
					{ 500, 400 }, { 0, 0 }, { -3, -7 } };

	for (size_t k = 0; k < sizeof(fixtures) / sizeof(fixtures[0]); k++) {
		char *text = fixture(fixtures[k]);
		struct cli_feed *f = parse_ok(text);

		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			int rows = sizes[i][0] > 0 ? sizes[i][0] : CLI_VIEW_MIN_ROWS;
			int cols = sizes[i][1] > 0 ? sizes[i][1] : CLI_VIEW_MIN_COLS;
			struct cli_view v;
			struct sbuf out;
			struct cli_view_input in = { .feed = f, .url = "ws://h:1",
						     .rows = sizes[i][0], .cols = sizes[i][1] };

			cli_view_init(&v, 1, i % 2);
			sbuf_init(&out, 8u << 20, 0);
			ck_assert_int_eq(cli_view_render(&v, &in, &out), 0);
			scr.rows = rows;
			scr.cols = cols;
			screen_apply(&scr, out.data);
			ck_assert_msg(scr.overflow == 0, "%s: frame overflows %dx%d", fixtures[k],
				      rows, cols);
			sbuf_free(&out);
		}
		free(f);
		free(text);
	}
}
END_TEST

START_TEST(test_view_shows_the_collector_down_and_a_pending_alert)
{
	char *text = fixture("down");
	struct cli_feed *f = parse_ok(text);

	render(f, 40, 120, 1, 1, CLI_WS_CONNECTED);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_ge(screen_find(&scr, "collector DOWN: missing"), 0);
	ck_assert_int_ge(screen_find(&scr, "no GPU memory seen yet"), 0);
	ck_assert_int_ge(screen_find(&scr, "pending CollectorDown [critical] zernel-collector is "
					   "not publishing"), 0);
	ck_assert_int_ge(screen_find(&scr, "alerts: none firing"), 0);
	free(f);
	free(text);
}
END_TEST

START_TEST(test_view_shows_disconnected_and_keeps_the_last_figures)
{
	struct cli_feed *f = oom_feed(NULL);

	render(f, 24, 80, 1, 0, CLI_WS_WAITING);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_ge(screen_find(&scr, "[DISCONNECTED]"), 0);
	/* Retry at 7.5 s, now 5 s: "in 3s" (rounded up). */
	ck_assert_int_ge(screen_find(&scr, "disconnected, retrying in 3s: connection refused"), 0);
	ck_assert_int_ge(screen_find(&scr, "last snapshot, received 1.00 s ago"), 0);
	ck_assert_int_ge(screen_find(&scr, " gpu0 "), 0);
	/* ASCII fallback: no UTF-8 in the frame. */
	for (int r = 0; r < scr.rows; r++)
		for (int c = 0; c < scr.cols; c++)
			ck_assert_int_lt((unsigned char)scr.cell[r][c][0], 0x80);
	render(NULL, 24, 80, 1, 1, CLI_WS_CONNECTING);
	ck_assert_int_ge(screen_find(&scr, "connecting to ws://127.0.0.1:9092"), 0);
	ck_assert_int_ge(screen_find(&scr, "waiting for the first snapshot"), 0);
	free(f);
}
END_TEST

/* ---- the binary --------------------------------------------------------- */

static char zernel[1024];

static int have_zernel(const char *test)
{
	if (tu_have_binary("zernel")) {
		tu_build_path(zernel, sizeof(zernel), "zernel");
		return 1;
	}
	tu_skip_missing("%s: %s/zernel is not built\n", test, tu_build_dir());
	return 0;
}

static int have_stack(const char *test)
{
	if (!have_zernel(test))
		return 0;
	if (tu_have_binary("zernel-collector") && tu_have_binary("zernel-exporter"))
		return 1;
	tu_skip_missing("%s: zernel-collector or zernel-exporter is not built\n", test);
	return 0;
}

START_TEST(test_usage_errors_exit_2)
{
	static const char *const bad[] = {
		"", "frobnicate", "watch --bogus", "watch --url", "watch --url http://x:1",
		"watch --url ws://x:0", "watch --count 0 --json", "watch --count 3",
		"watch --timeout-ms abc --once", "watch --json extra", "--versionx",
	};
	char cmd[2048];
	int st;

	if (!have_zernel("test_usage_errors_exit_2"))
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out;

		snprintf(cmd, sizeof(cmd), "%s %s 2>&1", zernel, bad[i]);
		out = tu_capture(cmd, &st);
		ck_assert_msg(st == 2, "`zernel %s` exited %d", bad[i], st);
		ck_assert_msg(out && strlen(out) > 10, "`zernel %s` said nothing", bad[i]);
		free(out);
	}
	snprintf(cmd, sizeof(cmd), "%s --help", zernel);
	free(tu_capture(cmd, &st));
	ck_assert_int_eq(st, 0);
	snprintf(cmd, sizeof(cmd), "%s watch --help", zernel);
	{
		char *out = tu_capture(cmd, &st);

		ck_assert_int_eq(st, 0);
		ck_assert_ptr_nonnull(strstr(out, "--once"));
		free(out);
	}
	snprintf(cmd, sizeof(cmd), "%s --version", zernel);
	{
		char *out = tu_capture(cmd, &st);

		ck_assert_int_eq(st, 0);
		ck_assert_str_eq(out, "zernel " ZERNEL_VERSION "\n");
		free(out);
	}
}
END_TEST

START_TEST(test_once_without_exporter_fails_clearly)
{
	char cmd[2048];
	char *out;
	int st;

	if (!have_zernel("test_once_without_exporter_fails_clearly"))
		return;
	snprintf(cmd, sizeof(cmd), "%s watch --once --timeout-ms 1500 --url ws://127.0.0.1:%u 2>&1",
		 zernel, tu_free_port());
	out = tu_capture(cmd, &st);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(out, "no snapshot from ws://127.0.0.1:") != NULL, "said: %s", out);
	ck_assert_msg(strstr(out, "cannot connect") != NULL, "said: %s", out);
	free(out);
}
END_TEST

/* Runs `cmd` between two scrapes until all three saw the same publish. */
static char *same_publish(uint16_t port, const char *cmd, double (*publishes_of)(const char *),
			  char **metrics)
{
	for (int attempt = 0; attempt < 6; attempt++) {
		char *a = tu_scrape(port), *b, *out;
		double pa = -1, pb = -2;
		int st;

		out = tu_capture(cmd, &st);
		b = tu_scrape(port);
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ck_assert_msg(st == 0, "`%s` exited %d", cmd, st);
		tu_metric(a, "zernel_collector_publishes_total", NULL, &pa);
		tu_metric(b, "zernel_collector_publishes_total", NULL, &pb);
		free(b);
		if (pa == pb && publishes_of(out) == pa) {
			*metrics = a;
			return out;
		}
		free(a);
		free(out);
	}
	ck_abort_msg("never saw one publish through both /metrics and the feed");
	return NULL;
}

static double text_publishes(const char *out)
{
	const char *p = strstr(out, "\n  publishes ");
	double v = -1;

	if (p)
		sscanf(p + strlen("\n  publishes "), "%lf", &v);
	return v;
}

static double json_publishes(const char *out)
{
	struct json_object *o = json_tokener_parse(out), *t, *p;
	double v = -1;

	if (o && json_object_object_get_ex(o, "telemetry", &t) &&
	    json_object_object_get_ex(t, "publishes", &p))
		v = json_object_get_double(p);
	json_object_put(o);
	return v;
}

/* The lines of one section of the --once report. */
static const char *section(const char *out, const char *title)
{
	const char *s = strstr(out, title);

	ck_assert_msg(s != NULL, "no section %s", title);
	s = strchr(s + 1, '\n');	/* end of the title line */
	s = strchr(s + 1, '\n');	/* end of the column header */
	return s + 1;
}

START_TEST(test_once_matches_metrics)
{
	struct tu_stack st;
	char cmd[2048], *out, *metrics = NULL;
	const char *line;
	int rows = 0, gpus = 0, samples = 0;

	if (!have_stack("test_once_matches_metrics"))
		return;
	/* Slow publishes: the feed and two scrapes fit between two of them. */
	ck_assert_int_eq(tu_stack_start(&st, NULL, 2500, 100), 0);
	ck_assert_int_eq(tu_wait_metric(st.metrics_port, "zernel_gpu_memory_used_bytes", 4, 15000), 0);
	snprintf(cmd, sizeof(cmd), "%s watch --once --url ws://127.0.0.1:%u", zernel, st.ws_port);
	out = same_publish(st.metrics_port, cmd, text_publishes, &metrics);

	ck_assert_ptr_nonnull(strstr(out, "collector: up (simulate, scenario steady)"));
	for (line = section(out, "\nGPU MEMORY PER PROCESS"); line[0] == ' ' && line[2] != 'n';
	     line = strchr(line, '\n') + 1) {
		unsigned int pid, gpu;
		unsigned long long used, peak;
		double mu = -1, mp = -1;
		char labels[96];
		const char *end = strchr(line, '\n'), *p = end;

		ck_assert_int_eq(sscanf(line, "%u %u", &pid, &gpu), 2);
		while (p[-1] != ' ')	/* last two fields: used_bytes peak_bytes */
			p--;
		peak = strtoull(p, NULL, 10);
		p--;
		while (*p == ' ')
			p--;
		while (p[-1] != ' ')
			p--;
		used = strtoull(p, NULL, 10);
		snprintf(labels, sizeof(labels), "pid=\"%u\",gpu_id=\"%u\"", pid, gpu);
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_used_bytes", labels, &mu), 0);
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_peak_bytes", labels, &mp), 0);
		ck_assert_msg((double)used == mu, "pid %u gpu %u used %llu vs /metrics %.0f", pid, gpu, used, mu);
		ck_assert_msg((double)peak == mp, "pid %u gpu %u peak %llu vs /metrics %.0f", pid, gpu, peak, mp);
		rows++;
	}
	for (line = section(out, "\nGPUS"); line[0] == ' ' && line[2] != 'n';
	     line = strchr(line, '\n') + 1) {
		unsigned int gpu;
		unsigned long long total;
		double mt = -1;
		char labels[64];
		const char *p = strchr(line, '\n');

		ck_assert_int_eq(sscanf(line, "%u", &gpu), 1);
		while (p[-1] != ' ')
			p--;
		total = strtoull(p, NULL, 10);
		snprintf(labels, sizeof(labels), "gpu_id=\"%u\"", gpu);
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_total_bytes", labels, &mt), 0);
		ck_assert_msg((double)total == mt, "gpu %u total %llu vs /metrics %.0f", gpu, total, mt);
		gpus++;
	}
	for (line = metrics; (line = strstr(line, "\nzernel_gpu_memory_used_bytes{")); line++)
		samples++;
	ck_assert_int_eq(rows, samples);
	ck_assert_int_eq(rows, 4);	/* the simulator's default: 4 trainers, one per GPU */
	ck_assert_int_eq(gpus, 4);
	free(out);
	free(metrics);
	tu_stack_stop(&st);
}
END_TEST

START_TEST(test_json_matches_metrics)
{
	struct tu_stack st;
	char cmd[2048], *out, *metrics = NULL;
	struct json_object *root, *arr;
	size_t n;

	if (!have_stack("test_json_matches_metrics"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, NULL, 2500, 100), 0);
	ck_assert_int_eq(tu_wait_metric(st.metrics_port, "zernel_gpu_memory_used_bytes", 4, 15000), 0);
	snprintf(cmd, sizeof(cmd), "%s watch --json --count 1 --url ws://127.0.0.1:%u", zernel, st.ws_port);
	out = same_publish(st.metrics_port, cmd, json_publishes, &metrics);
	/* Exactly one line, one JSON object. */
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	root = json_tokener_parse(out);
	ck_assert_ptr_nonnull(root);

	ck_assert(json_object_object_get_ex(root, "gpu_utilization", &arr));
	n = json_object_array_length(arr);
	ck_assert_uint_eq(n, 4);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i), *k;
		unsigned int pid, gpu;
		char labels[96];
		double mu = -1, mp = -1;

		ck_assert(json_object_object_get_ex(e, "key", &k));
		ck_assert_int_eq(sscanf(json_object_get_string(k), "%u:%u", &pid, &gpu), 2);
		snprintf(labels, sizeof(labels), "pid=\"%u\",gpu_id=\"%u\"", pid, gpu);
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_used_bytes", labels, &mu), 0);
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_peak_bytes", labels, &mp), 0);
		ck_assert_double_eq(jnum(e, "current_bytes"), mu);
		ck_assert_double_eq(jnum(e, "peak_bytes"), mp);
	}
	ck_assert(json_object_object_get_ex(root, "processes", &arr));
	n = json_object_array_length(arr);
	ck_assert_uint_eq(n, 8);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		char labels[96];
		double count = -1, q99 = -1;

		snprintf(labels, sizeof(labels), "pid=\"%.0f\"", jnum(e, "pid"));
		if (jnum(e, "cuda_launch_count") == 0)
			continue;	/* DataLoader workers launch nothing */
		ck_assert_int_eq(tu_metric(metrics, "zernel_cuda_launch_latency_seconds_count", labels, &count), 0);
		ck_assert_double_eq(jnum(e, "cuda_launch_count"), count);
		strcat(labels, ",quantile=\"0.99\"");
		ck_assert_int_eq(tu_metric(metrics, "zernel_cuda_launch_latency_seconds", labels, &q99), 0);
		ck_assert_double_eq_tol(jnum(e, "cuda_launch_p99_us"), q99 * 1e6, 1e-6 * q99 * 1e6 + 1e-9);
	}
	json_object_put(root);
	free(out);
	free(metrics);
	tu_stack_stop(&st);
}
END_TEST

/*
 * The fake feed (tests/py/fake_feed.py) on a free port, sending junk and
 * the recorded steady snapshot; 0 when it cannot run.
 */
static pid_t start_fake_feed(const char *mode, uint16_t *port)
{
	char script[1024], log[1024], port_s[8], recorded[1024];
	char *argv[] = { PY, script, port_s, (char *)mode, recorded, NULL };
	pid_t pid;

	if (tu_system(PY " -c 'import websockets' 2>/dev/null") != 0) {
		tu_skip_missing("fake feed: %s has no websockets module (python3-websockets)\n", PY);
		return 0;
	}
	*port = tu_free_port();
	snprintf(port_s, sizeof(port_s), "%u", *port);
	snprintf(script, sizeof(script), "%s/tests/py/fake_feed.py", tu_src_dir());
	snprintf(recorded, sizeof(recorded), "%s/tests/fixtures/feed-steady.json", tu_src_dir());
	snprintf(log, sizeof(log), "%s/tests/fake_feed.log", tu_build_dir());
	pid = tu_spawn(argv, log);
	ck_assert_int_gt(pid, 0);
	for (int waited = 0; waited < 10000; waited += 50) {
		char *text = tu_read_file(log, NULL);
		int ready = text && strstr(text, "ready");

		free(text);
		if (ready)
			return pid;
		tu_sleep_ms(50);
	}
	tu_stop(pid, SIGKILL, 1000);
	ck_abort_msg("fake feed did not start");
	return 0;
}

START_TEST(test_junk_feed_is_skipped_and_the_snapshot_shown)
{
	char cmd[2048], want[256], a[CLI_FMT_LEN], b[CLI_FMT_LEN], *out;
	struct json_object *j, *m;
	uint16_t port;
	pid_t fake;
	int st;

	if (!have_zernel("test_junk_feed_is_skipped_and_the_snapshot_shown"))
		return;
	fake = start_fake_feed("junk", &port);
	if (!fake)
		return;
	snprintf(cmd, sizeof(cmd), "%s watch --once --url ws://127.0.0.1:%u 2>/dev/null", zernel, port);
	out = tu_capture(cmd, &st);
	ck_assert_int_eq(st, 0);
	/* The figures of the one real snapshot the fake sends. */
	j = fixture_json("steady");
	for (size_t i = 0; i < jlen(j, "gpu_utilization"); i++) {
		m = jrow(j, "gpu_utilization", i);
		snprintf(want, sizeof(want), "  %7.0f  %4.0f  ", jnum(m, "pid"), jnum(m, "gpu_id"));
		ck_assert_msg(strstr(out, want) != NULL, "no \"%s\" in the report: %s", want, out);
		snprintf(want, sizeof(want), "  %15.0f  %15.0f\n", jnum(m, "current_bytes"),
			 jnum(m, "peak_bytes"));
		ck_assert_msg(strstr(out, want) != NULL, "no \"%s\" in the report", want);
	}
	snprintf(want, sizeof(want), "p50 %s  p99 %s",
		 cli_fmt_dur(a, sizeof(a), jnum(j, "cuda_latency_p50_us") * 1e3),
		 cli_fmt_dur(b, sizeof(b), jnum(j, "cuda_latency_p99_us") * 1e3));
	ck_assert_msg(strstr(out, want) != NULL, "no \"%s\" in the report", want);
	snprintf(want, sizeof(want), "generation %.0f", jnum(j, "generation"));
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_null(strchr(out, '\x1b'));
	json_object_put(j);
	free(out);
	tu_stop(fake, SIGTERM, 2000);
}
END_TEST

START_TEST(test_odd_feed_never_crashes_the_client)
{
	char cmd[2048], *out, *line, *recorded;
	uint16_t port;
	pid_t fake, view;
	int st, lines = 0, good = 0;

	if (!have_zernel("test_odd_feed_never_crashes_the_client"))
		return;
	recorded = fixture("steady");
	fake = start_fake_feed("odd", &port);
	if (!fake)
		return;
	/* --json: every line printed is one JSON object, and the real one gets through as sent. */
	snprintf(cmd, sizeof(cmd), "%s watch --json --count 12 --url ws://127.0.0.1:%u 2>/dev/null",
		 zernel, port);
	out = tu_capture(cmd, &st);
	ck_assert_int_eq(st, 0);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct json_object *o = json_tokener_parse(line);

		ck_assert_msg(o && json_object_is_type(o, json_type_object), "not an object: %.80s", line);
		good += strcmp(line, recorded) == 0;
		lines++;
		json_object_put(o);
	}
	ck_assert_int_eq(lines, 12);
	ck_assert_int_ge(good, 1);
	free(out);
	free(recorded);

	/* The live view, fed the same, draws for 3 s and ends cleanly on SIGTERM. */
	{
		char log[1024], url[64];
		char *argv[] = { zernel, "watch", "--url", url, NULL };

		snprintf(url, sizeof(url), "ws://127.0.0.1:%u", port);
		snprintf(log, sizeof(log), "%s/tests/cli_view_odd.log", tu_build_dir());
		view = tu_spawn(argv, log);
		ck_assert_int_gt(view, 0);
		tu_sleep_ms(3000);
		ck_assert_int_eq(waitpid(view, &st, WNOHANG), 0);	/* still running */
		st = tu_stop(view, SIGTERM, 3000);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "view ended with status 0x%x", st);
		out = tu_read_file(log, NULL);
		ck_assert_ptr_nonnull(out);
		ck_assert_ptr_nonnull(strstr(out, "gpu0"));
		/* Left the alternate screen and showed the cursor again. */
		ck_assert_ptr_nonnull(strstr(out, "\x1b[?25h\x1b[?1049l"));
		free(out);
	}
	tu_stop(fake, SIGTERM, 2000);
}
END_TEST

/*
 * The CLI reads the feed, never the segment: it formats snapshots through
 * the catalog and links the snapshot's accessors, not the reader that
 * maps the segment nor the validator (its symbol table says).
 */
START_TEST(test_the_cli_links_no_segment_reader)
{
	static const char *const absent[] = { "shm_reader_snapshot", "shm_reader_init", "shm_validate" };
	char prog[1024], cmd[1200], *syms;
	int status = -1;

	tu_build_path(prog, sizeof(prog), "zernel");
	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s'", prog);
	syms = tu_capture(cmd, &status);
	ck_assert_ptr_nonnull(syms);
	ck_assert_msg(status == 0, "nm %s: status %d", prog, status);
	/* The catalog's row accessors are there: the check reads the right table. */
	ck_assert_ptr_nonnull(strstr(syms, " shm_snapshot_procs\n"));
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), " %s\n", absent[i]);
		ck_assert_msg(!strstr(syms, want), "zernel links %s", absent[i]);
	}
	free(syms);
}
END_TEST

Suite *cli_suite(void);

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *unit = tcase_create("unit");
	TCase *bin = tcase_create("binary");

	tcase_add_test(unit, test_url_accepts_feed_addresses);
	tcase_add_test(unit, test_url_rejects_nonsense_with_a_reason);
	tcase_add_test(unit, test_feed_reads_every_recorded_snapshot);
	tcase_add_test(unit, test_feed_collector_down_is_said);
	tcase_add_test(unit, test_feed_refuses_what_is_not_a_snapshot);
	tcase_add_test(unit, test_feed_skips_odd_rows_and_bounds_tables);
	tcase_add_test(unit, test_feed_parses_a_full_node_in_bounded_time);
	tcase_add_test(unit, test_fmt_units);
	tcase_add_test(unit, test_spark_scales_between_min_and_max);
	tcase_add_test(unit, test_text_report_has_exact_figures);
	tcase_add_test(unit, test_view_fits_80x24_with_the_essentials);
	tcase_add_test(unit, test_view_uses_more_room_when_there_is_more);
	tcase_add_test(unit, test_view_survives_any_size);
	tcase_add_test(unit, test_view_shows_the_collector_down_and_a_pending_alert);
	tcase_add_test(unit, test_view_shows_disconnected_and_keeps_the_last_figures);
	tcase_set_timeout(unit, 30);
	suite_add_tcase(s, unit);

	tcase_add_test(bin, test_usage_errors_exit_2);
	tcase_add_test(bin, test_the_cli_links_no_segment_reader);
	tcase_add_test(bin, test_once_without_exporter_fails_clearly);
	tcase_add_test(bin, test_once_matches_metrics);
	tcase_add_test(bin, test_json_matches_metrics);
	tcase_add_test(bin, test_junk_feed_is_skipped_and_the_snapshot_shown);
	tcase_add_test(bin, test_odd_feed_never_crashes_the_client);
	tcase_set_timeout(bin, 90);
	suite_add_tcase(s, bin);
	return s;
}
