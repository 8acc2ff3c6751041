/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a watched process costs in series: the real exporter serving the
 * simulated job (pods per rank, DataLoader workers in their trainer's pod).
 * By default per-pid series are summaries, gauges and counters only, at
 * most 40 a process, and the latency histograms come once per workload
 * (pod), their buckets the exact sums of the processes'; with
 * --per-pid-histograms they come per process again.  The WebSocket feed
 * pushes the top processes only (GPU memory first), every process being
 * one GET /snapshot away.  Unprivileged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "catalog/catalog.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PROCS	64
#define GPUS	4		/* = ranks = pods */
#define PER_PROCESS_MAX	40

struct count {
	unsigned int series;		/* sample lines */
	unsigned int with_pid;		/* of which carry a pid label */
	unsigned int buckets;		/* _bucket lines */
	unsigned int buckets_with_pid;
	unsigned int pod_buckets;	/* _bucket lines labelled with a pod */
};

/* A bucket of a per-process latency family (not, say, a communicator's). */
static int process_histogram(const char *line)
{
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];
		size_t n;

		if (m->rows != CAT_ROWS_PROCS || !m->prom_hist)
			continue;
		n = strlen(m->prom_hist);
		if (strncmp(line, m->prom_hist, n) == 0 && strncmp(line + n, "_bucket{", 8) == 0)
			return 1;
	}
	return 0;
}

static void count_series(const char *text, struct count *c)
{
	memset(c, 0, sizeof(*c));
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		char line[4096];

		if (n && l[0] != '#' && n < sizeof(line)) {
			memcpy(line, l, n);
			line[n] = '\0';
			c->series++;
			if (strstr(line, "{pid=\"") || strstr(line, ",pid=\""))
				c->with_pid++;
			if (strstr(line, "_bucket{")) {
				c->buckets++;
				if (strstr(line, "pid=\"") && process_histogram(line))
					c->buckets_with_pid++;
				if (strstr(line, "pod=\""))
					c->pod_buckets++;
			}
		}
		l += n + (end != NULL);
	}
}

static char *scrape_job(struct tu_stack *st, const char *const *exporter_args)
{
	const char *args[] = { "--publish-interval", "200", "--processes", "64", "--gpus", "4", NULL };
	char *m = NULL;

	tu_stack_init(st);
	st->exporter_args = exporter_args;
	ck_assert_int_eq(tu_stack_start_collector(st, args), 0);
	ck_assert_int_eq(tu_stack_start_exporter(st), 0);
	ck_assert_int_eq(tu_stack_wait_up(st, 10000), 0);
	/* Every process's info series, and samples in the workers' families. */
	ck_assert_int_eq(tu_wait_metric(st->metrics_port, "zernel_process_info", PROCS, 10000), 0);
	tu_sleep_ms(1500);
	m = tu_scrape(st->metrics_port);
	ck_assert_ptr_nonnull(m);
	return m;
}

START_TEST(per_process_series_stay_within_budget)
{
	struct tu_stack st;
	struct count c;
	char *m;
	double pod0 = 0, sum = 0, v;
	char labels[128];

	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("per_process_series_stay_within_budget: binaries not built\n");
		return;
	}
	m = scrape_job(&st, NULL);
	count_series(m, &c);
	fprintf(stderr, "cardinality: %u series, %u with pid (%.1f per process), %u buckets "
		"(%u per pod)\n", c.series, c.with_pid, (double)c.with_pid / PROCS, c.buckets,
		c.pod_buckets / GPUS);
	ck_assert_msg(c.with_pid <= PER_PROCESS_MAX * PROCS, "%u per-pid series for %d processes",
		      c.with_pid, PROCS);
	ck_assert_uint_eq(c.buckets_with_pid, 0);
	ck_assert_uint_gt(c.pod_buckets, 0);
	/* Each pod's histogram: 29 buckets a family and kind, as many for every pod. */
	ck_assert_uint_eq(c.pod_buckets % (29 * GPUS), 0);

	/* A pod's launch count is the sum of its processes' summary counts. */
	ck_assert_int_eq(tu_metric(m, "zernel_cuda_launch_duration_seconds_count",
				   "namespace=\"ml-training\",pod=\"llama-ft-worker-0\"", &pod0), 0);
	for (const char *p = m; (p = strstr(p, "\nzernel_process_info{pid=\"")); p++) {
		unsigned int pid;

		if (sscanf(p, "\nzernel_process_info{pid=\"%u\"", &pid) != 1 ||
		    !strstr(p, "pod=\"llama-ft-worker-0\"") ||
		    strstr(p, "pod=\"llama-ft-worker-0\"") > strchr(p + 1, '\n'))
			continue;
		snprintf(labels, sizeof(labels), "pid=\"%u\"", pid);
		if (tu_metric(m, "zernel_cuda_launch_latency_seconds_count", labels, &v) == 0)
			sum += v;
	}
	ck_assert_msg(sum > 0 && sum == pod0, "pod sum %.0f, processes %.0f", pod0, sum);
	free(m);
	tu_stack_stop(&st);
}
END_TEST

START_TEST(per_pid_histograms_on_request)
{
	static const char *const per_pid[] = { "--per-pid-histograms", NULL };
	struct tu_stack st;
	struct count c;
	char *m;

	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("per_pid_histograms_on_request: binaries not built\n");
		return;
	}
	m = scrape_job(&st, per_pid);
	count_series(m, &c);
	fprintf(stderr, "cardinality with --per-pid-histograms: %u series, %.1f per process\n",
		c.series, (double)c.with_pid / PROCS);
	ck_assert_uint_eq(c.pod_buckets, 0);
	ck_assert_uint_gt(c.buckets_with_pid, 29 * PROCS);
	ck_assert_uint_gt(c.with_pid, PER_PROCESS_MAX * PROCS);
	free(m);
	tu_stack_stop(&st);
}
END_TEST

START_TEST(feed_pushes_top_processes_and_serves_all_on_request)
{
	struct tu_stack st;
	struct json_object *full, *procs, *p, *v;
	char cmd[512], *m, *feed, *body = malloc(8u << 20);
	int status, st_http, lines = 0;
	size_t n;

	ck_assert_ptr_nonnull(body);
	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("feed_pushes_top_processes_and_serves_all_on_request: binaries not built\n");
		free(body);
		return;
	}
	m = scrape_job(&st, NULL);
	free(m);

	/* A push, read by a real client: the top 32, trainers (GPU memory) first. */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/py/ws_processes.py %u %d 20",
		 tu_src_dir(), st.ws_port, CAT_FEED_TOP_PROCS);
	feed = tu_capture(cmd, &status);
	ck_assert_msg(feed && status == 0, "ws_processes.py: %s", feed ? feed : "(no output)");
	for (char *l = strchr(feed, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		lines++;
		/* The four trainers hold GPU memory: they come first. */
		if (lines <= GPUS)
			ck_assert_msg(strstr(l, "\"comm\":\"pt_main_thread\""), "push row %d: %.200s",
				      lines, l + 1);
	}
	ck_assert_int_eq(lines, CAT_FEED_TOP_PROCS);
	ck_assert_ptr_nonnull(strstr(feed, "\"processes_total\":64"));
	ck_assert_ptr_nonnull(strstr(feed, "\"processes_truncated\":true"));
	free(feed);

	/* On request: every process. */
	st_http = tu_http_request(st.metrics_port, "GET", "/snapshot", body, 8u << 20);
	ck_assert_int_eq(st_http, 200);
	full = json_tokener_parse(body);
	ck_assert_ptr_nonnull(full);
	ck_assert(json_object_object_get_ex(full, "processes", &procs));
	n = json_object_array_length(procs);
	ck_assert_uint_eq(n, PROCS);
	p = json_object_array_get_idx(procs, 0);
	ck_assert(json_object_object_get_ex(p, "pod", &v));
	ck_assert_str_eq(json_object_get_string(v), "llama-ft-worker-0");
	json_object_put(full);
	free(body);
	tu_stack_stop(&st);
}
END_TEST

Suite *cardinality_suite(void);
Suite *cardinality_suite(void)
{
	Suite *s = suite_create("cardinality");
	TCase *tc = tcase_create("simulated_job");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, per_process_series_stay_within_budget);
	tcase_add_test(tc, per_pid_histograms_on_request);
	tcase_add_test(tc, feed_pushes_top_processes_and_serves_all_on_request);
	suite_add_tcase(s, tc);
	return s;
}
