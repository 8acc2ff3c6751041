/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The zernel client: URL and feed parsing, the frame renderer on a mock
 * terminal, and the binary itself: usage errors, --once and --json against
 * a simulated collector + real exporter (figures compared with /metrics of
 * the same publish), and a hostile feed that must never crash it.
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
	ck_assert_int_eq(cli_feed_parse(json, strlen(json), 0, f), 0);
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

/* A node like a busy 8-GPU box: gpu 3 past the OOM mark, two alerts firing. */
static char *busy_feed_json(void)
{
	struct sbuf b;

	sbuf_init(&b, 1u << 20, 0);
	sbuf_puts(&b, "{\"gpu_utilization\": [");
	for (int g = 0; g < 8; g++)
		sbuf_printf(&b, "%s{\"key\": \"%d:%d\", \"current_bytes\": %llu, \"peak_bytes\": %llu}",
			       g ? "," : "", 1000 + g, g,
			       g == 3 ? 83000000000ull : 40000000000ull + (unsigned long long)g,
			       g == 3 ? 84000000000ull : 41000000000ull);
	sbuf_puts(&b, "], \"gpus\": [");
	for (int g = 0; g < 8; g++)
		sbuf_printf(&b, "%s{\"gpu_id\": %d, \"total_bytes\": 85899345920, \"used_bytes\": %llu, \"processes\": 1}",
			       g ? "," : "", g, g == 3 ? 83000000000ull : 40000000000ull + (unsigned long long)g);
	sbuf_puts(&b, "], \"processes\": [");
	for (int p = 0; p < 12; p++)
		sbuf_printf(&b, "%s{\"pid\": %d, \"ppid\": 1, \"comm\": \"trainer%d\", \"gpu_bytes\": 1,"
			       " \"cuda_launch_p50_us\": 6.5, \"cuda_launch_p99_us\": 15, \"cuda_launch_count\": 100,"
			       " \"dataloader_wait_p99_ms\": %d, \"futex_wait_p99_ms\": 0.5, \"barrier_wait_p99_ms\": 2,"
			       " \"runq_delay_p99_us\": 80, \"offcpu_preempted_s\": 0.25, \"involuntary_switches\": 10,"
			       " \"migrations\": 3}", p ? "," : "", 1000 + p, p, p == 5 ? 250 : 4);
	sbuf_puts(&b, "], \"nccl\": [{\"op\": \"all_reduce\", \"calls\": 1000, \"bytes\": 1e9,"
		     " \"duration_p50_ms\": 0.025, \"duration_p99_ms\": 0.05, \"wait_p50_ms\": 3, \"wait_p99_ms\": 7},"
		     " {\"op\": \"all_gather\", \"calls\": 10, \"bytes\": 1e6, \"duration_p50_ms\": 0.02,"
		     " \"duration_p99_ms\": 0.04, \"wait_p50_ms\": 1, \"wait_p99_ms\": 2},"
		     " {\"op\": \"send\", \"calls\": 0}],"
		     " \"cuda_latency_p50_us\": 6.5, \"cuda_latency_p99_us\": 15.25,"
		     " \"nccl_allreduce_p50_ms\": 0.025, \"nccl_allreduce_p99_ms\": 0.05,"
		     " \"dataloader_wait_p50_ms\": 0.5, \"dataloader_wait_p99_ms\": 4.5,"
		     " \"last_update_ms\": 1, \"age_ms\": 120, \"collector_up\": true, \"generation\": 9,"
		     " \"telemetry\": {\"mode\": \"simulate\", \"scenario\": \"oom\", \"events_total\": 5000,"
		     " \"events_dropped\": 0, \"processes_tracked\": 12, \"table_overflows\": {\"procs\": 0, \"gpus\": 0}},"
		     " \"alerts\": [{\"alertname\": \"GpuMemoryNearOom\", \"severity\": \"critical\","
		     " \"summary\": \"gpu 3 at 96.6%\", \"state\": \"firing\", \"startsAt\": \"2026-01-01T00:00:00Z\"},"
		     " {\"labels\": {\"alertname\": \"DataLoaderStall\", \"severity\": \"warning\"},"
		     " \"annotations\": {\"summary\": \"pid 1005 waits 250 ms\"}, \"status\": \"firing\"},"
		     " {\"alertname\": \"Resolved\", \"state\": \"inactive\"},"
		     " {\"alertname\": \"SlowLaunch\", \"severity\": \"warning\", \"state\": \"pending\","
		     " \"summary\": \"p99 rising\"}]}");
	ck_assert_int_eq(b.error, 0);
	return b.data;
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

START_TEST(test_feed_reads_the_seed_keys)
{
	struct cli_feed *f = parse_ok("{\"gpu_utilization\": [{\"key\": \"1000:0\", \"current_bytes\": 5,"
				      " \"peak_bytes\": 9}], \"cuda_latency_p50_us\": 1.5,"
				      " \"cuda_latency_p99_us\": 20, \"nccl_allreduce_p50_ms\": 2,"
				      " \"nccl_allreduce_p99_ms\": 4.25, \"dataloader_wait_p50_ms\": 0.5,"
				      " \"last_update_ms\": 1000}");

	ck_assert_uint_eq(f->n_mem, 1);
	ck_assert_uint_eq(f->mem[0].pid, 1000);
	ck_assert_uint_eq(f->mem[0].gpu_id, 0);
	ck_assert_uint_eq(f->mem[0].used_bytes, 5);
	ck_assert_uint_eq(f->mem[0].peak_bytes, 9);
	ck_assert_double_eq(f->cuda_p50_ns, 1500);
	ck_assert_double_eq(f->cuda_p99_ns, 20000);
	ck_assert_double_eq(f->nccl_allreduce_p99_ns, 4250000);
	ck_assert_double_eq(f->dataloader_p50_ns, 500000);
	ck_assert_double_lt(f->dataloader_p99_ns, 0);	/* absent: unknown */
	/* No gpus table: the device is still known from the memory rows. */
	ck_assert_uint_eq(f->n_gpu, 1);
	ck_assert_uint_eq(f->gpu[0].used_bytes, 5);
	ck_assert_uint_eq(f->gpu[0].total_bytes, 0);
	ck_assert_int_eq(f->collector_up, -1);
	free(f);
}
END_TEST

START_TEST(test_feed_reads_the_exporter_details)
{
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);

	ck_assert_uint_eq(f->n_gpu, 8);
	ck_assert_uint_eq(f->gpu[3].used_bytes, 83000000000ull);
	ck_assert_uint_eq(f->gpu[3].total_bytes, 85899345920ull);
	ck_assert_uint_eq(f->n_proc, 12);
	ck_assert_str_eq(f->proc[2].comm, "trainer2");
	ck_assert_double_eq(f->proc[0].launch.p99_ns, 15000);
	ck_assert_double_eq(f->proc[0].launch.count, 100);
	ck_assert_double_eq(f->proc[5].dataloader.p99_ns, 250e6);
	ck_assert_double_eq(f->proc[0].runq.p99_ns, 80000);
	ck_assert_double_eq(f->proc[0].offcpu_preempted_ns, 0.25e9);
	ck_assert_uint_eq(f->n_nccl, 3);
	ck_assert_double_eq(f->nccl[0].wait.p99_ns, 7e6);
	ck_assert_uint_eq(f->n_alert, 4);
	ck_assert_uint_eq(cli_feed_firing(f), 2);
	ck_assert_int_eq(f->alert[2].pending, 0);
	ck_assert_int_eq(f->alert[3].pending, 1);
	ck_assert_str_eq(f->alert[1].name, "DataLoaderStall");
	ck_assert_str_eq(f->alert[1].severity, "warning");
	ck_assert_str_eq(f->alert[1].summary, "pid 1005 waits 250 ms");
	ck_assert_int_eq(f->collector_up, 1);
	ck_assert_double_eq(f->generation, 9);
	ck_assert_double_eq(f->age_ms, 120);
	ck_assert_str_eq(f->mode, "simulate");
	ck_assert_str_eq(f->scenario, "oom");
	free(f);
	free(json);
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
		ck_assert_msg(cli_feed_parse(bad[i], strlen(bad[i]), 0, f) == -EINVAL,
			      "accepted \"%s\"", bad[i]);
		ck_assert_uint_eq(f->n_gpu + f->n_mem + f->n_proc, 0);
		ck_assert_double_lt(f->cuda_p99_ns, 0);
	}
	ck_assert_int_eq(cli_feed_parse("{}", CLI_FEED_MAX_BYTES + 1, 0, f), -E2BIG);
	free(f);
}
END_TEST

START_TEST(test_feed_skips_odd_rows_and_bounds_tables)
{
	struct sbuf b;
	struct cli_feed *f;

	sbuf_init(&b, 32u << 20, 0);
	sbuf_puts(&b, "{\"gpu_utilization\": [{\"key\": \"1:\", \"current_bytes\": 1},"
		     "{\"key\": \":1\", \"current_bytes\": 1}, {\"key\": \"-1:0\", \"current_bytes\": 1},"
		     "{\"key\": \"1:0x\", \"current_bytes\": 1}, {\"key\": \"99999999999:0\", \"current_bytes\": 1},"
		     "{\"key\": \"1:0\", \"current_bytes\": -5}, {\"key\": \"1:0\", \"current_bytes\": 1e300},"
		     "{\"key\": \"1:0\", \"current_bytes\": 1.5}, {\"key\": 7, \"current_bytes\": 1}, 3, null,"
		     "{\"key\": \"2:1\", \"current_bytes\": 10}],"
		     " \"cuda_latency_p99_us\": \"fast\", \"cuda_latency_p50_us\": -3, \"age_ms\": 1e999,"
		     " \"nccl\": [1, \"a\", null, {\"op\": 5}], \"alerts\": [null, 3, {\"labels\": 5, \"firing\": false}],"
		     " \"processes\": [{\"comm\": \"no pid\"}, {\"pid\": 7, \"comm\": \"a\\u001b[2J\\u0007\\u00e9\\u4e2db\"}],"
		     " \"telemetry\": [], \"gpus\": [");
	for (int i = 0; i < 20000; i++)
		sbuf_printf(&b, "%s{\"gpu_id\": %d, \"total_bytes\": 1}", i ? "," : "", i);
	sbuf_puts(&b, "]}");
	ck_assert_int_eq(b.error, 0);
	f = malloc(sizeof(*f));
	ck_assert_int_eq(cli_feed_parse(b.data, b.len, 0, f), 0);
	ck_assert_uint_eq(f->n_mem, 1);		/* only "2:1" is a row */
	ck_assert_uint_eq(f->mem[0].pid, 2);
	ck_assert_uint_eq(f->mem[0].used_bytes, 10);
	ck_assert_uint_ge(f->rows_skipped, 11);
	ck_assert_uint_eq(f->n_gpu, CLI_FEED_MAX_GPUS);
	ck_assert_uint_eq(f->gpu_dropped, 20000 - CLI_FEED_MAX_GPUS);
	ck_assert_double_lt(f->cuda_p99_ns, 0);
	ck_assert_double_lt(f->cuda_p50_ns, 0);
	ck_assert_double_lt(f->age_ms, 0);
	ck_assert_uint_eq(f->n_nccl, 0);
	ck_assert_uint_eq(f->n_alert, 1);
	ck_assert_int_eq(f->alert[0].firing, 0);
	ck_assert_uint_eq(f->n_proc, 1);
	/* Control characters and non-ASCII never reach a terminal. */
	ck_assert_str_eq(f->proc[0].comm, "a?[2J???b");
	free(f);
	sbuf_free(&b);
}
END_TEST

/* A full node at the exporter's caps (4096 memory rows, 1024 processes). */
START_TEST(test_feed_parses_a_full_node_in_bounded_time)
{
	struct sbuf b;
	struct cli_feed *f = malloc(sizeof(*f));
	uint64_t t0, t1;

	sbuf_init(&b, 8u << 20, 0);
	sbuf_puts(&b, "{\"gpu_utilization\": [");
	for (int i = 0; i < 4096; i++)
		sbuf_printf(&b, "%s{\"key\": \"%d:%d\", \"current_bytes\": %d, \"peak_bytes\": 2}",
			       i ? "," : "", 100000 + i, i % 16, i);
	sbuf_puts(&b, "], \"processes\": [");
	for (int i = 0; i < 1024; i++)
		sbuf_printf(&b, "%s{\"pid\": %d, \"ppid\": 1, \"comm\": \"pt_main_thread\","
			       " \"gpu_bytes\": 1, \"cuda_launch_p50_us\": 5.9, \"cuda_launch_p99_us\": 14.7,"
			       " \"cuda_launch_count\": %d, \"dataloader_wait_p50_ms\": 0.4,"
			       " \"dataloader_wait_p99_ms\": 4, \"futex_wait_p99_ms\": 0.3,"
			       " \"barrier_wait_p99_ms\": 2, \"runq_delay_p99_us\": 50,"
			       " \"offcpu_preempted_s\": 0.001, \"involuntary_switches\": 3, \"migrations\": 1}",
			       i ? "," : "", 100000 + i, i);
	sbuf_puts(&b, "]}");
	ck_assert_int_eq(b.error, 0);
	t0 = now_mono_ns();
	ck_assert_int_eq(cli_feed_parse(b.data, b.len, 0, f), 0);
	t1 = now_mono_ns();
	ck_assert_uint_eq(f->n_mem, 4096);
	ck_assert_uint_eq(f->n_proc, 1024);
	ck_assert_uint_eq(f->mem[4095].used_bytes, 4095);
	ck_assert_double_eq(f->proc[1023].launch.count, 1023);
	ck_assert_double_eq(f->proc[1023].runq.p99_ns, 50000);
	/* About 35 ms here; a quadratic parser would take seconds. */
	ck_assert_msg(t1 - t0 < 1000 * NSEC_PER_MSEC, "parse took %llu ms",
		      (unsigned long long)((t1 - t0) / NSEC_PER_MSEC));
	free(f);
	sbuf_free(&b);
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
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);
	struct sbuf out;

	sbuf_init(&out, 1u << 20, 0);
	ck_assert_int_eq(cli_text_report(&out, f, "ws://x:1"), 0);
	ck_assert_ptr_nonnull(strstr(out.data, "zernel snapshot from ws://x:1"));
	ck_assert_ptr_nonnull(strstr(out.data, "collector: up (simulate, scenario oom)"));
	ck_assert_ptr_nonnull(strstr(out.data, "ALERTS (2 firing)"));
	ck_assert_ptr_nonnull(strstr(out.data, "FIRING   critical  GpuMemoryNearOom: gpu 3 at 96.6%"));
	/* gpu 3: 83000000000 of 85899345920 bytes is 96.6%, over the mark. */
	ck_assert_ptr_nonnull(strstr(out.data, "96.6%  YES"));
	ck_assert_ptr_nonnull(strstr(out.data, "83000000000      85899345920"));
	ck_assert_ptr_nonnull(strstr(out.data, "84000000000"));
	ck_assert_ptr_nonnull(strstr(out.data, "p50 6.50 us  p99 15.2 us"));
	ck_assert_ptr_nonnull(strchr(out.data, '\x1b') == NULL ? out.data : NULL);
	sbuf_free(&out);
	free(f);
	free(json);
}
END_TEST

/* ---- the frame renderer on a mock terminal ----------------------------- */

START_TEST(test_view_fits_80x24_with_the_essentials)
{
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);
	char row[2048];
	int r;

	render(f, 24, 80, 1, 1, CLI_WS_CONNECTED);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_eq(scr.bad_escape, 0);
	ck_assert_int_gt(scr.colour, 0);
	for (int g = 0; g < 8; g++) {
		char name[16];

		snprintf(name, sizeof(name), " gpu%d ", g);
		ck_assert_msg(screen_find(&scr, name) >= 0, "no row for gpu%d", g);
	}
	/* The OOM-risk GPU says so; the others do not. */
	r = screen_find(&scr, " gpu3 ");
	ck_assert_ptr_nonnull(strstr(screen_row(&scr, r, row, sizeof(row)), "OOM RISK"));
	ck_assert_ptr_null(strstr(screen_row(&scr, screen_find(&scr, " gpu2 "), row, sizeof(row)), "OOM"));
	/* The 95% mark is inside every bar. */
	ck_assert_ptr_nonnull(strstr(screen_row(&scr, r, row, sizeof(row)), "\u2502"));
	ck_assert_int_ge(screen_find(&scr, "ALERT GpuMemoryNearOom [critical] gpu 3 at 96.6%"), 0);
	ck_assert_int_ge(screen_find(&scr, "ALERT DataLoaderStall [warning]"), 0);
	ck_assert_int_lt(screen_find(&scr, "Resolved"), 0);
	ck_assert_int_ge(screen_find(&scr, "CUDA launch"), 0);
	ck_assert_int_ge(screen_find(&scr, "p99 15.2 us"), 0);
	ck_assert_int_ge(screen_find(&scr, "all_reduce"), 0);
	ck_assert_int_ge(screen_find(&scr, "DataLoader wait"), 0);
	ck_assert_int_ge(screen_find(&scr, "worst pid 1005 p99 250 ms"), 0);
	ck_assert_int_ge(screen_find(&scr, "Scheduler"), 0);
	ck_assert_int_ge(screen_find(&scr, "collector up (simulate: oom)"), 0);
	ck_assert_int_ge(screen_find(&scr, "age 1.12 s"), 0);	/* 120 ms + 1 s since */
	ck_assert_int_eq(screen_find(&scr, "q quit"), 23);	/* footer on the last row */
	ck_assert_int_eq(screen_find(&scr, "zernel watch"), 0);
	free(f);
	free(json);
}
END_TEST

START_TEST(test_view_uses_more_room_when_there_is_more)
{
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);

	render(f, 24, 80, 0, 1, CLI_WS_CONNECTED);
	ck_assert_int_lt(screen_find(&scr, "launch99"), 0);	/* no room for the table */
	render(f, 60, 160, 0, 1, CLI_WS_CONNECTED);
	ck_assert_int_eq(scr.overflow, 0);
	ck_assert_int_ge(screen_find(&scr, "launch99"), 0);
	ck_assert_int_ge(screen_find(&scr, "trainer11"), 0);
	ck_assert_int_ge(screen_find(&scr, "pid 1003"), 0);	/* per-process memory */
	ck_assert_int_ge(screen_find(&scr, "all_gather"), 0);
	ck_assert_int_lt(screen_find(&scr, " send "), 0);	/* no calls: not shown */
	ck_assert_int_ge(screen_find(&scr, "pending SlowLaunch [warning] p99 rising"), 0);
	ck_assert_int_lt(screen_find(&scr, "Resolved"), 0);
	ck_assert_int_eq(screen_find(&scr, "q quit"), 59);
	/* Without colour there is no SGR at all. */
	ck_assert_int_eq(scr.sgr, 0);
	free(f);
	free(json);
}
END_TEST

START_TEST(test_view_survives_any_size)
{
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);
	static const int sizes[][2] = { { 1, 1 }, { 2, 10 }, { 5, 20 }, { 24, 80 }, { 10, 400 },
					{ 500, 400 }, { 0, 0 }, { -3, -7 } };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int rows = sizes[i][0] > 0 ? sizes[i][0] : CLI_VIEW_MIN_ROWS;
		int cols = sizes[i][1] > 0 ? sizes[i][1] : CLI_VIEW_MIN_COLS;
		struct cli_view v;
		struct sbuf out;
		struct cli_view_input in = { .feed = f, .url = "ws://h:1", .rows = sizes[i][0],
					     .cols = sizes[i][1] };

		cli_view_init(&v, 1, i % 2);
		sbuf_init(&out, 8u << 20, 0);
		ck_assert_int_eq(cli_view_render(&v, &in, &out), 0);
		scr.rows = rows;
		scr.cols = cols;
		screen_apply(&scr, out.data);
		ck_assert_msg(scr.overflow == 0, "frame overflows %dx%d", rows, cols);
		sbuf_free(&out);
	}
	free(f);
	free(json);
}
END_TEST

START_TEST(test_view_shows_disconnected_and_keeps_the_last_figures)
{
	char *json = busy_feed_json();
	struct cli_feed *f = parse_ok(json);

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
	free(json);
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

static double jnum(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "feed lacks %s", key);
	return json_object_get_double(v);
}

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

/* The fake feed (tests/py/fake_feed.py) on a free port; 0 when it cannot run. */
static pid_t start_fake_feed(const char *mode, uint16_t *port)
{
	char script[1024], log[1024], port_s[8];
	char *argv[] = { PY, script, port_s, (char *)mode, NULL };
	pid_t pid;

	if (tu_system(PY " -c 'import websockets' 2>/dev/null") != 0) {
		tu_skip_missing("fake feed: %s has no websockets module (python3-websockets)\n", PY);
		return 0;
	}
	*port = tu_free_port();
	snprintf(port_s, sizeof(port_s), "%u", *port);
	snprintf(script, sizeof(script), "%s/tests/py/fake_feed.py", tu_src_dir());
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
	char cmd[2048], *out;
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
	/* The figures of the one valid snapshot the fake sends. */
	ck_assert_msg(strstr(out, "     4242     0  good?[2Jname") != NULL, "report: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "123456789        223456789"));
	ck_assert_ptr_nonnull(strstr(out, "123456789       1000000000"));
	ck_assert_ptr_nonnull(strstr(out, "p50 7.50 us  p99 99.2 us"));
	ck_assert_ptr_nonnull(strstr(out, "generation 77"));
	ck_assert_ptr_null(strchr(out, '\x1b'));
	free(out);
	tu_stop(fake, SIGTERM, 2000);
}
END_TEST

START_TEST(test_odd_feed_never_crashes_the_client)
{
	char cmd[2048], *out, *line;
	uint16_t port;
	pid_t fake, view;
	int st, lines = 0, good = 0;

	if (!have_zernel("test_odd_feed_never_crashes_the_client"))
		return;
	fake = start_fake_feed("odd", &port);
	if (!fake)
		return;
	/* --json: every line printed is one JSON object, and the good one gets through. */
	snprintf(cmd, sizeof(cmd), "%s watch --json --count 12 --url ws://127.0.0.1:%u 2>/dev/null",
		 zernel, port);
	out = tu_capture(cmd, &st);
	ck_assert_int_eq(st, 0);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct json_object *o = json_tokener_parse(line);

		ck_assert_msg(o && json_object_is_type(o, json_type_object), "not an object: %.80s", line);
		good += strstr(line, "31337") != NULL;
		lines++;
		json_object_put(o);
	}
	ck_assert_int_eq(lines, 12);
	ck_assert_int_ge(good, 1);
	free(out);

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

Suite *cli_suite(void);

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *unit = tcase_create("unit");
	TCase *bin = tcase_create("binary");

	tcase_add_test(unit, test_url_accepts_feed_addresses);
	tcase_add_test(unit, test_url_rejects_nonsense_with_a_reason);
	tcase_add_test(unit, test_feed_reads_the_seed_keys);
	tcase_add_test(unit, test_feed_reads_the_exporter_details);
	tcase_add_test(unit, test_feed_refuses_what_is_not_a_snapshot);
	tcase_add_test(unit, test_feed_skips_odd_rows_and_bounds_tables);
	tcase_add_test(unit, test_feed_parses_a_full_node_in_bounded_time);
	tcase_add_test(unit, test_fmt_units);
	tcase_add_test(unit, test_spark_scales_between_min_and_max);
	tcase_add_test(unit, test_text_report_has_exact_figures);
	tcase_add_test(unit, test_view_fits_80x24_with_the_essentials);
	tcase_add_test(unit, test_view_uses_more_room_when_there_is_more);
	tcase_add_test(unit, test_view_survives_any_size);
	tcase_add_test(unit, test_view_shows_disconnected_and_keeps_the_last_figures);
	tcase_set_timeout(unit, 30);
	suite_add_tcase(s, unit);

	tcase_add_test(bin, test_usage_errors_exit_2);
	tcase_add_test(bin, test_once_without_exporter_fails_clearly);
	tcase_add_test(bin, test_once_matches_metrics);
	tcase_add_test(bin, test_json_matches_metrics);
	tcase_add_test(bin, test_junk_feed_is_skipped_and_the_snapshot_shown);
	tcase_add_test(bin, test_odd_feed_never_crashes_the_client);
	tcase_set_timeout(bin, 90);
	suite_add_tcase(s, bin);
	return s;
}
