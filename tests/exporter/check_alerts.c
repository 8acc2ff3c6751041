/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The alert engine on crafted segments whose every value is known: each
 * publish goes through shm_writer into a real segment and is read back by
 * shm_reader, as in the exporter.  Time is passed in, so `for` is checked
 * to the nanosecond.  Also the rules file: every kind of error with its
 * message, the example in docs/, reload semantics and --check-config.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/alerts/alert_engine.h"
#include "exporter/alerts/alert_metrics.h"
#include "exporter/alerts/alert_rules.h"
#include "exporter/alerts/alert_template.h"
#include "exporter/alerts/alerts.h"
#include "exporter/prom/prom_write.h"
#include "tests/exporter/prom_validate.h"
#include "common/sbuf.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define S	1000000000ull
#define GB	1000000000ull
#define T0_REAL	1700000000000000000ull	/* 2023-11-14T22:13:20Z */

/* What one crafted publish holds. */
struct world {
	uint64_t gpu0_used[2];		/* pids 100 and 101 on GPU 0 (total 100 GB) */
	uint64_t gpu1_used;		/* pid 102 on GPU 1 (total 50 GB) */
	uint64_t gpu0_driver_used;	/* NVML's used memory of GPU 0; 0: not read */
	uint64_t allreduce_wait_p99_ns;	/* 0: no sample in the window */
	uint64_t broadcast_wait_p99_ns;
	uint64_t dl_p99_ns[2];		/* per pid 100, 101; node-wide is the max */
};

static struct {
	char name[64];
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
	char dir[64];
} fx;

/* A latency series with n samples in one bucket and the given window p99. */
static void latency(struct shm_latency *l, uint64_t p99_ns)
{
	memset(l, 0, sizeof(*l));
	if (!p99_ns)
		return;
	l->count = 10;
	l->bucket[SHM_LAT_FINITE_BUCKETS] = 10;
	l->sum_ns = 10 * p99_ns;
	l->window_count = 10;
	l->window_p50_ns = p99_ns / 2;
	l->window_p90_ns = p99_ns;
	l->window_p99_ns = p99_ns;
	l->window_max_ns = p99_ns;
}

static const struct shm_snapshot *publish(const struct world *wd)
{
	struct shm_header_fields *h = &fx.w.base->h;
	struct shm_proc *p;
	struct shm_gpu_mem *m;
	struct shm_gpu *g;
	struct shm_nccl_op *ops;
	char reason[256];

	shm_writer_begin(&fx.w);
	p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	memset(p, 0, 3 * sizeof(*p));
	for (int i = 0; i < 3; i++) {
		p[i].pid = 100 + (uint32_t)i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_SIMULATED;
		snprintf(p[i].comm, SHM_COMM_LEN, i == 1 ? "loader\"x" : "trainer");
		if (i < 2)
			latency(&p[i].lat[SHM_FAMILY_DATALOADER_WAIT], wd->dl_p99_ns[i]);
	}
	h->table[SHM_TABLE_PROCS].count = 3;

	m = shm_writer_table(&fx.w, SHM_TABLE_GPU_MEM);
	/* Peaks far above use: the ratio must divide by the total, never the peak. */
	m[0] = (struct shm_gpu_mem){ .pid = 100, .gpu_id = 0, .used_bytes = wd->gpu0_used[0],
				     .peak_bytes = 300 * GB };
	m[1] = (struct shm_gpu_mem){ .pid = 101, .gpu_id = 0, .used_bytes = wd->gpu0_used[1],
				     .peak_bytes = 300 * GB };
	m[2] = (struct shm_gpu_mem){ .pid = 102, .gpu_id = 1, .used_bytes = wd->gpu1_used,
				     .peak_bytes = wd->gpu1_used };
	h->table[SHM_TABLE_GPU_MEM].count = 3;
	g = shm_writer_table(&fx.w, SHM_TABLE_GPUS);
	g[0] = (struct shm_gpu){ .gpu_id = 0, .total_source = SHM_TOTAL_FLAG,
				 .total_bytes = 100 * GB,
				 .used_bytes = wd->gpu0_driver_used ? wd->gpu0_driver_used :
					       wd->gpu0_used[0] + wd->gpu0_used[1],
				 .used_source = wd->gpu0_driver_used ? SHM_USED_DRIVER :
						SHM_USED_PROCESSES, .processes = 2 };
	g[1] = (struct shm_gpu){ .gpu_id = 1, .total_source = SHM_TOTAL_NVML,
				 .total_bytes = 50 * GB, .used_bytes = wd->gpu1_used, .processes = 1 };
	g[2] = (struct shm_gpu){ .gpu_id = 2, .total_source = SHM_TOTAL_UNKNOWN };
	h->table[SHM_TABLE_GPUS].count = 3;

	ops = shm_writer_table(&fx.w, SHM_TABLE_NCCL_OPS);
	latency(&ops[SHM_NCCL_ALL_REDUCE].wait, wd->allreduce_wait_p99_ns);
	latency(&ops[SHM_NCCL_BROADCAST].wait, wd->broadcast_wait_p99_ns);
	latency(&h->node[SHM_FAMILY_DATALOADER_WAIT],
		wd->dl_p99_ns[0] > wd->dl_p99_ns[1] ? wd->dl_p99_ns[0] : wd->dl_p99_ns[1]);
	h->heartbeat_mono_ns = now_mono_ns();
	h->heartbeat_real_ns = now_real_ns();
	h->stats.publishes++;
	shm_writer_end(&fx.w);

	ck_assert_msg(shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
	return &fx.snap;
}

static void setup(void)
{
	struct shm_writer_opts o;

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	shm_reader_init(&fx.r, fx.name);
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/zernel-alerts-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(fx.dir));
}

static void teardown(void)
{
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
	tu_system("rm -rf '%s'", fx.dir);
}

/* ---- notices ----------------------------------------------------------- */

#define MAX_NOTICES 32
static struct alert_notice notices[MAX_NOTICES];
static int n_notices;

static void record(void *arg, const struct alert_notice *n)
{
	(void)arg;
	if (n_notices < MAX_NOTICES)
		notices[n_notices] = *n;
	n_notices++;
}

static const char *notice_label(const struct alert_notice *n, const char *name)
{
	for (unsigned int i = 0; i < n->n_labels; i++)
		if (strcmp(n->labels[i].name, name) == 0)
			return n->labels[i].value;
	return NULL;
}

static struct alert_engine *engine_from(const char *json)
{
	struct alert_ruleset rs;
	struct alert_engine *e;
	char err[1024];

	ck_assert_msg(alert_rules_parse(json, strlen(json), "test.json", &rs, err,
					sizeof(err)) == 0, "rules rejected: %s", err);
	n_notices = 0;
	e = alert_engine_new(&rs, record, NULL);
	ck_assert_ptr_nonnull(e);
	return e;
}

static struct alert_engine *default_engine(void)
{
	struct alert_ruleset rs;
	struct alert_engine *e;

	ck_assert_int_eq(alert_rules_default(&rs), 0);
	n_notices = 0;
	e = alert_engine_new(&rs, record, NULL);
	ck_assert_ptr_nonnull(e);
	return e;
}

static char *render(struct alert_engine *e)
{
	static struct sbuf b;
	char err[256];

	sbuf_free(&b);
	sbuf_init(&b, 1u << 20, 0);
	ck_assert_int_eq(alert_engine_render_prom(e, &(struct prom_out){ .b = &b }), 0);
	ck_assert_msg(prom_validate(b.data, b.len, err, sizeof(err)) == 0,
		      "alert families are not valid exposition: %s\n%s", err, b.data);
	return b.data;
}

/* ---- metrics ----------------------------------------------------------- */

struct got {
	int n;
	char labels[8][128];
	double value[8];
};

static int collect_cb(void *arg, const struct alert_series *s)
{
	struct got *g = arg;
	size_t o = 0;

	if (g->n >= 8)
		return 1;
	g->labels[g->n][0] = '\0';
	for (unsigned int i = 0; i < s->n_labels; i++)
		o += (size_t)snprintf(g->labels[g->n] + o, sizeof(g->labels[0]) - o, "%s%s=%s",
				      i ? "," : "", s->label_name[i], s->label_value[i]);
	g->value[g->n++] = s->value;
	return 0;
}

static struct got collect(const char *metric, const struct shm_snapshot *snap)
{
	struct got g;
	unsigned int id;

	memset(&g, 0, sizeof(g));
	ck_assert_msg(alert_metric_lookup(metric, &id) == 0, "no metric %s", metric);
	ck_assert_int_eq(alert_metric_collect(id, snap, 0, collect_cb, &g), 0);
	return g;
}

/* Every alert name the catalog gives can be used in a rule, however many there are. */
START_TEST(every_catalog_alert_name_resolves)
{
	unsigned int want = 0, id;
	char name[ALERT_METRIC_NAME_MAX];

	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];

		if (!m->alert)
			continue;
		for (unsigned int q = 0; q < (m->kind == CAT_LATENCY ? CAT_Q_COUNT : 1u); q++) {
			if (m->kind == CAT_LATENCY)
				snprintf(name, sizeof(name), "%s_%s_seconds", m->alert,
					 cat_quantile_name((enum cat_quantile)q));
			else
				snprintf(name, sizeof(name), "%s", m->alert);
			ck_assert_msg(alert_metric_lookup(name, &id) == 0, "no alert metric %s", name);
			ck_assert_str_eq(alert_metric_name(id), name);
			want++;
		}
	}
	ck_assert_uint_eq(alert_metric_count(), want);
	ck_assert_int_eq(alert_metric_lookup("collector_up", &id), 0);
}
END_TEST

START_TEST(metric_gpu_ratio_sums_processes_and_divides_by_total)
{
	struct world wd = { .gpu0_used = { 50 * GB, 46 * GB }, .gpu1_used = 10 * GB };
	const struct shm_snapshot *snap = publish(&wd);
	struct got g = collect("gpu_memory_used_ratio", snap);

	/* GPU 2 has no known total: no series. */
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.labels[0], "gpu_id=0");
	ck_assert_double_eq_tol(g.value[0], 0.96, 1e-12);
	ck_assert_str_eq(g.labels[1], "gpu_id=1");
	ck_assert_double_eq_tol(g.value[1], 0.2, 1e-12);
	g = collect("gpu_memory_used_bytes", snap);
	ck_assert_int_eq(g.n, 3);
	ck_assert_double_eq(g.value[0], 96.0 * GB);
	ck_assert_double_eq(g.value[2], 0.0);
}
END_TEST

START_TEST(metric_gpu_ratio_judges_the_drivers_figure_where_known)
{
	/* The probes see 60 GB on GPU 0; the driver counts 97 (contexts, older memory). */
	struct world wd = { .gpu0_used = { 50 * GB, 10 * GB }, .gpu1_used = 49 * GB,
			    .gpu0_driver_used = 97 * GB };
	const struct shm_snapshot *snap = publish(&wd);
	struct got g = collect("gpu_memory_used_ratio", snap);

	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.labels[0], "gpu_id=0");
	ck_assert_double_eq_tol(g.value[0], 0.97, 1e-12);
	/* GPU 1 has no driver figure: its processes' sum. */
	ck_assert_str_eq(g.labels[1], "gpu_id=1");
	ck_assert_double_eq_tol(g.value[1], 0.98, 1e-12);
	g = collect("gpu_memory_used_bytes", snap);
	ck_assert_double_eq(g.value[0], 97.0 * GB);
	ck_assert_double_eq(g.value[1], 49.0 * GB);
}
END_TEST

START_TEST(oom_fires_from_the_drivers_figure)
{
	struct alert_engine *e = default_engine();
	struct world low = { .gpu0_used = { 10 * GB, 10 * GB }, .gpu1_used = 1 * GB,
			     .gpu0_driver_used = 96 * GB };
	struct world gone = low;
	uint64_t t = 1000 * S;

	alert_engine_eval(e, publish(&low), 0, t, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_PENDING);
	alert_engine_eval(e, publish(&low), 0, t + 10 * S, T0_REAL + 10 * S);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_FIRING);
	ck_assert_int_eq(n_notices, 1);
	ck_assert_double_eq_tol(notices[0].value, 0.96, 1e-12);
	ck_assert_str_eq(notices[0].description, "More than 95% of GPU 0's memory is in use (the "
			 "driver's figure where NVML gives it, else the watched processes' sum); the "
			 "next allocation may fail with out-of-memory.");
	/* NVML lost the GPU: the processes' 20% is judged, and the alert resolves. */
	gone.gpu0_driver_used = 0;
	alert_engine_eval(e, publish(&gone), 0, t + 11 * S, T0_REAL + 11 * S);
	ck_assert_int_eq(n_notices, 2);
	ck_assert_int_eq(notices[1].resolved, 1);
	alert_engine_free(e);
}
END_TEST

START_TEST(metric_latencies_without_samples_have_no_series)
{
	struct world wd = { .allreduce_wait_p99_ns = 250000000, .dl_p99_ns = { 0, 3 * S } };
	const struct shm_snapshot *snap = publish(&wd);
	struct got g = collect("nccl_wait_p99_seconds", snap);

	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.labels[0], "op=all_reduce");
	ck_assert_double_eq_tol(g.value[0], 0.25, 1e-12);
	g = collect("nccl_wait_p50_seconds", snap);
	ck_assert_double_eq_tol(g.value[0], 0.125, 1e-12);
	g = collect("process_dataloader_wait_p99_seconds", snap);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.labels[0], "pid=101,comm=loader\"x");
	ck_assert_double_eq_tol(g.value[0], 3.0, 1e-12);
	g = collect("dataloader_wait_p99_seconds", snap);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.labels[0], "");
	ck_assert_int_eq(collect("cuda_launch_p99_seconds", snap).n, 0);
	g = collect("collector_up", snap);
	ck_assert_int_eq(g.n, 1);
	ck_assert_double_eq(g.value[0], 1.0);
	g = collect("collector_up", NULL);
	ck_assert_double_eq(g.value[0], 0.0);
	ck_assert_int_eq(collect("gpu_memory_used_ratio", NULL).n, 0);
}
END_TEST

/* ---- the state machine -------------------------------------------------- */

START_TEST(oom_fires_after_for_and_resolves)
{
	struct alert_engine *e = default_engine();
	struct world hot = { .gpu0_used = { 50 * GB, 46 * GB }, .gpu1_used = 49 * GB };
	struct world cool = { .gpu0_used = { 50 * GB, 10 * GB }, .gpu1_used = 49 * GB };
	uint64_t t = 1000 * S;
	char *text;
	struct json_object *arr;

	/* GPU 1 is at 98% too: two label sets, each with its own clock. */
	alert_engine_eval(e, publish(&cool), 0, t, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"1\""), ALERT_PENDING);
	alert_engine_eval(e, publish(&hot), 0, t + 5 * S, T0_REAL + 5 * S);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_PENDING);
	text = render(e);
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_pending{alertname=\"GpuOomWarning\","
				     "severity=\"warning\",gpu_id=\"0\"} 1\n"));

	/* GPU 1: 10 s since t; GPU 0: 5 s since t + 5 s, one nanosecond short of 10 s later. */
	alert_engine_eval(e, publish(&hot), 0, t + 10 * S, T0_REAL + 10 * S);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"1\""), ALERT_FIRING);
	alert_engine_eval(e, publish(&hot), 0, t + 15 * S - 1, T0_REAL + 15 * S);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_PENDING);
	ck_assert_int_eq(n_notices, 1);
	alert_engine_eval(e, publish(&hot), 0, t + 15 * S, T0_REAL + 15 * S);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_FIRING);
	ck_assert_int_eq(n_notices, 2);
	ck_assert_int_eq(notices[1].resolved, 0);
	ck_assert_str_eq(notice_label(&notices[1], "alertname"), "GpuOomWarning");
	ck_assert_str_eq(notice_label(&notices[1], "severity"), "warning");
	ck_assert_str_eq(notice_label(&notices[1], "gpu_id"), "0");
	ck_assert_str_eq(notices[1].summary, "GPU 0 memory used: 0.96 of the total");
	ck_assert_uint_eq(notices[1].starts_real_ns, T0_REAL + 15 * S);
	ck_assert_double_eq_tol(notices[1].value, 0.96, 1e-12);

	text = render(e);
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_firing{alertname=\"GpuOomWarning\","
				     "severity=\"warning\",gpu_id=\"0\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_transitions_total{alertname="
				     "\"GpuOomWarning\",to=\"firing\"} 2\n"));
	arr = alert_engine_feed_json(e);
	ck_assert_int_eq((int)json_object_array_length(arr), 2);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(
		json_object_array_get_idx(arr, 0), "state")), "firing");
	json_object_put(arr);

	/* Still hot: no new notice.  Then GPU 0 cools: one resolved notice. */
	alert_engine_eval(e, publish(&hot), 0, t + 16 * S, T0_REAL + 16 * S);
	ck_assert_int_eq(n_notices, 2);
	alert_engine_eval(e, publish(&cool), 0, t + 17 * S, T0_REAL + 17 * S);
	ck_assert_int_eq(n_notices, 3);
	ck_assert_int_eq(notices[2].resolved, 1);
	ck_assert_str_eq(notice_label(&notices[2], "gpu_id"), "0");
	ck_assert_uint_eq(notices[2].ends_real_ns, T0_REAL + 17 * S);
	ck_assert_uint_eq(notices[2].starts_real_ns, T0_REAL + 15 * S);
	ck_assert_uint_eq(notices[2].fingerprint, notices[1].fingerprint);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_INACTIVE);
	ck_assert_uint_eq(alert_engine_transitions(e, "GpuOomWarning", 1), 1);
	text = render(e);
	ck_assert_ptr_null(strstr(text, "gpu_id=\"0\"} 1"));
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_transitions_total{alertname="
				     "\"GpuOomWarning\",to=\"resolved\"} 1\n"));
	alert_engine_free(e);
}
END_TEST

START_TEST(pending_that_clears_sends_nothing)
{
	struct alert_engine *e = default_engine();
	struct world hot = { .gpu0_used = { 50 * GB, 46 * GB } };
	struct world cool = { .gpu0_used = { 50 * GB, 0 } };

	alert_engine_eval(e, publish(&hot), 0, 100 * S, T0_REAL);
	alert_engine_eval(e, publish(&cool), 0, 109 * S, T0_REAL);
	/* The clock restarts: 9 s more is not enough. */
	alert_engine_eval(e, publish(&hot), 0, 110 * S, T0_REAL);
	alert_engine_eval(e, publish(&hot), 0, 119 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_PENDING);
	ck_assert_int_eq(n_notices, 0);
	ck_assert_uint_eq(alert_engine_transitions(e, "GpuOomWarning", 0), 0);
	alert_engine_eval(e, publish(&hot), 0, 120 * S, T0_REAL);
	ck_assert_int_eq(n_notices, 1);
	alert_engine_free(e);
}
END_TEST

START_TEST(collector_down_resolves_data_alerts_then_fires)
{
	struct alert_engine *e = default_engine();
	struct world hot = { .gpu0_used = { 50 * GB, 46 * GB } };

	alert_engine_eval(e, publish(&hot), 0, 0 * S + 1, T0_REAL);
	alert_engine_eval(e, publish(&hot), 0, 10 * S + 1, T0_REAL);
	ck_assert_int_eq(n_notices, 1);
	/* No fresh data: GpuOomWarning resolves, CollectorDown waits 30 s. */
	alert_engine_eval(e, NULL, 2 * S, 11 * S, T0_REAL);
	ck_assert_int_eq(n_notices, 2);
	ck_assert_int_eq(notices[1].resolved, 1);
	ck_assert_int_eq(alert_engine_state(e, "CollectorDown", ""), ALERT_PENDING);
	alert_engine_eval(e, NULL, 31 * S, 40 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "CollectorDown", ""), ALERT_PENDING);
	alert_engine_eval(e, NULL, 32 * S, 41 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "CollectorDown", ""), ALERT_FIRING);
	ck_assert_int_eq(n_notices, 3);
	ck_assert_str_eq(notice_label(&notices[2], "severity"), "critical");
	ck_assert_ptr_nonnull(strstr(render(e), "zernel_alert_firing{alertname=\"CollectorDown\","
					   "severity=\"critical\"} 1\n"));
	alert_engine_eval(e, publish(&(struct world){ 0 }), 0, 42 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "CollectorDown", ""), ALERT_INACTIVE);
	ck_assert_int_eq(n_notices, 4);
	alert_engine_free(e);
}
END_TEST

START_TEST(scope_selects_label_values)
{
	struct alert_engine *e = engine_from(
		"{\"rules\": ["
		" {\"name\": \"AllReduceWait\", \"metric\": \"nccl_wait_p99_seconds\","
		"  \"comparison\": \">=\", \"threshold\": 0.1, \"scope\": {\"op\": \"all_reduce\"},"
		"  \"summary\": \"{{ $labels.op }} wait {{ $value }} s\"},"
		" {\"name\": \"LoaderSlow\", \"metric\": \"process_dataloader_wait_p99_seconds\","
		"  \"comparison\": \">\", \"threshold\": 1, \"scope\": {\"pid\": \"101\"},"
		"  \"for\": 0, \"severity\": \"info\", \"labels\": {\"team\": \"data\"},"
		"  \"summary\": \"{{ $labels.comm }} ({{ $labels.pid }}) {{ $labels.team }}\"}]}");
	struct world wd = { .allreduce_wait_p99_ns = 50000000, .broadcast_wait_p99_ns = 2 * S,
			    .dl_p99_ns = { 5 * S, 2 * S } };
	char *text;

	/* Broadcast is far above but out of scope; all_reduce is below. */
	alert_engine_eval(e, publish(&wd), 0, S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "AllReduceWait", "op=\"broadcast\""), ALERT_INACTIVE);
	ck_assert_int_eq(alert_engine_state(e, "AllReduceWait", "op=\"all_reduce\""), ALERT_INACTIVE);
	/* pid 100 is slower, but only pid 101 is in scope; for 0 fires at once. */
	ck_assert_int_eq(n_notices, 1);
	ck_assert_str_eq(notice_label(&notices[0], "pid"), "101");
	ck_assert_str_eq(notice_label(&notices[0], "team"), "data");
	ck_assert_str_eq(notices[0].summary, "loader\"x (101) data");
	text = render(e);
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_firing{alertname=\"LoaderSlow\","
				     "severity=\"info\",pid=\"101\",comm=\"loader\\\"x\","
				     "team=\"data\"} 1\n"));

	wd.allreduce_wait_p99_ns = 100000000;	/* >= 0.1 s holds at equality */
	alert_engine_eval(e, publish(&wd), 0, 2 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "AllReduceWait", "op=\"all_reduce\""), ALERT_FIRING);
	ck_assert_str_eq(notices[1].summary, "all_reduce wait 0.1 s");
	alert_engine_free(e);
}
END_TEST

/* ---- configuration errors ---------------------------------------------- */

static const char good_rule[] =
	"{\"name\": \"A\", \"metric\": \"gpu_memory_used_ratio\", \"comparison\": \">\", "
	"\"threshold\": 0.9}";

/* Parses text; expects failure with every needle in the message. */
static void expect_error(const char *text, const char *n1, const char *n2, const char *n3)
{
	struct alert_ruleset rs = { 0 };
	char err[1024] = "";
	int r = alert_rules_parse(text, strlen(text), "bad.json", &rs, err, sizeof(err));

	ck_assert_msg(r == -EINVAL, "accepted: %s", text);
	ck_assert_ptr_null(rs.rules);
	ck_assert_msg(strncmp(err, "bad.json: ", 10) == 0, "message lacks the file: %s", err);
	ck_assert_msg(!n1 || strstr(err, n1), "message \"%s\" lacks \"%s\"", err, n1);
	ck_assert_msg(!n2 || strstr(err, n2), "message \"%s\" lacks \"%s\"", err, n2);
	ck_assert_msg(!n3 || strstr(err, n3), "message \"%s\" lacks \"%s\"", err, n3);
}

static void expect_rule_error(const char *rule, const char *n1, const char *n2, const char *n3)
{
	char text[2048];

	snprintf(text, sizeof(text), "{\"rules\": [%s, %s]}", good_rule, rule);
	expect_error(text, n1, n2, n3);
}

START_TEST(config_not_json_names_line_and_column)
{
	expect_error("{\"rules\": [\n  {\"name\": \"A\",,}\n]}", "not valid JSON",
		     "line 2, column", NULL);
	expect_error("{\"rules\": [", "not valid JSON", "unexpected end of file", NULL);
	expect_error("", "not valid JSON", NULL, NULL);
	expect_error("{\"rules\": []} x", "not valid JSON", "line 1, column 15", NULL);
	expect_error("[1]", "expected an object with a \"rules\" array", NULL, NULL);
	expect_error("{\"rules\": {}}", "field \"rules\"", "expected an array", NULL);
	expect_error("{}", "field \"rules\"", "missing", NULL);
	expect_error("{\"rules\": [], \"global\": 1}", "field \"global\"", "unknown field", NULL);
}
END_TEST

START_TEST(config_rule_errors_name_rule_and_field)
{
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": 0.9, \"treshold\": 1}",
			  "rule 2 (B)", "field \"treshold\"", "unknown field");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used\", "
			  "\"comparison\": \">\", \"threshold\": 0.9}",
			  "rule 2 (B)", "field \"metric\"", "unknown metric \"gpu_memory_used\"");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": \"high\"}",
			  "rule 2 (B)", "field \"threshold\"", "expected a number, got a string");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": 95}",
			  "rule 2 (B)", "field \"threshold\"", "95 is outside 0..1");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"nccl_wait_p99_seconds\", "
			  "\"comparison\": \">\", \"threshold\": -1}",
			  "rule 2 (B)", "field \"threshold\"", "not a finite number >= 0");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \"=>\", \"threshold\": 0.5}",
			  "rule 2 (B)", "field \"comparison\"", "one of >, >=, <, <=, ==, !=");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": 0.5, \"for\": \"10 s\"}",
			  "rule 2 (B)", "field \"for\"", "not a duration");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": 0.5, \"for\": -3}",
			  "rule 2 (B)", "field \"for\"", "not in 0..604800");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"gpu_memory_used_ratio\", "
			  "\"comparison\": \">\", \"threshold\": 0.5, \"for\": \"8d\"}",
			  "rule 2 (B)", "field \"for\"", "longer than a week");
	expect_rule_error("{\"metric\": \"gpu_memory_used_ratio\", \"comparison\": \">\", "
			  "\"threshold\": 0.5}", "rule 2 (unnamed)", "field \"name\"", "missing");
	expect_rule_error("{\"name\": \"has space\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0}",
			  "rule 2 (unnamed)", "field \"name\"", "not a valid alert name");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"nccl_wait_p99_seconds\", "
			  "\"comparison\": \">\", \"threshold\": 1, \"scope\": {\"gpu_id\": \"0\"}}",
			  "rule 2 (B)", "field \"scope\"", "has no label \"gpu_id\" (its labels: op)");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"summary\": \"{{ $labels.op }}\"}",
			  "rule 2 (B)", "field \"summary\"", "no label \"op\"");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"summary\": \"{{ $value \"}",
			  "rule 2 (B)", "field \"summary\"", "without \"}}\"");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"severity\": \"x\"}}",
			  "rule 2 (B)", "field \"labels\"", "set by the alert itself");
	expect_rule_error("{\"name\": \"A\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0}",
			  "rule 2 (A)", "field \"name\"", "same name and severity");
	expect_rule_error("42", "rule 2 (unnamed)", "expected an object", NULL);
}
END_TEST

START_TEST(config_durations_and_templates)
{
	static const char *const bad_templates[] = {
		"{{ $value | humanize }}", "{{ $value | humanizePercentage }}",
		"{{ $value | humanizeDuration }}", "{{ $labels.gpu_id | toUpper }}",
		"{{ .Value }}", "{{ $values }}", "{{ $labels. }}", "{{}}",
	};
	struct alert_rule r;
	struct alert_series s = { .n_labels = 1, .label_name = { "gpu_id" },
				  .label_value = { "3" }, .value = 0.9712 };
	uint64_t ns;
	char out[128];

	ck_assert_int_eq(alert_duration_parse("1m30s", &ns), 0);
	ck_assert_uint_eq(ns, 90 * S);
	ck_assert_int_eq(alert_duration_parse("500ms", &ns), 0);
	ck_assert_uint_eq(ns, 500000000ull);
	ck_assert_int_eq(alert_duration_parse("2h", &ns), 0);
	ck_assert_uint_eq(ns, 7200 * S);
	ck_assert_int_eq(alert_duration_parse("0", &ns), 0);
	ck_assert_uint_eq(ns, 0);
	ck_assert_int_eq(alert_duration_parse("10", &ns), -EINVAL);
	ck_assert_int_eq(alert_duration_parse("1x", &ns), -EINVAL);
	ck_assert_int_eq(alert_duration_parse("s", &ns), -EINVAL);
	ck_assert_int_eq(alert_duration_parse("99999999999999999999s", &ns), -ERANGE);

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "GpuOom");
	snprintf(r.severity, sizeof(r.severity), "page");
	alert_template_expand("{{$labels.alertname}}/{{ $labels.severity }} on {{ $labels.gpu_id }}: "
			      "{{ $value }}", &r, &s, out, sizeof(out));
	ck_assert_str_eq(out, "GpuOom/page on 3: 0.9712");
	s.value = 123456789;
	alert_template_expand("{{ $value }} and more text", &r, &s, out, 8);
	ck_assert_str_eq(out, "1.23457");
	/* Substitution only: no pipes, no other action. */
	for (size_t i = 0; i < sizeof(bad_templates) / sizeof(bad_templates[0]); i++) {
		char why[256] = "";

		ck_assert_msg(alert_template_check(bad_templates[i], &r, why, sizeof(why)) == -EINVAL,
			      "accepted %s", bad_templates[i]);
		ck_assert_msg(strstr(why, "unknown template"), "%s: %s", bad_templates[i], why);
	}
}
END_TEST

/* ---- files, reload, --check-config -------------------------------------- */

static char *write_file(const char *base, const char *text)
{
	static char path[2][128];
	static int k;
	char *p = path[k++ % 2];
	FILE *f;

	snprintf(p, sizeof(path[0]), "%s/%s", fx.dir, base);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return p;
}

START_TEST(reload_keeps_old_rules_on_a_bad_file)
{
	struct alert_engine *e = default_engine();
	struct world hot = { .gpu0_used = { 50 * GB, 46 * GB } };
	const char *good = write_file("good.json",
		"{\"rules\": [{\"name\": \"GpuOomWarning\", \"metric\": \"gpu_memory_used_ratio\","
		" \"comparison\": \">\", \"threshold\": 0.95, \"for\": \"10s\"},"
		" {\"name\": \"Extra\", \"metric\": \"collector_up\", \"comparison\": \"==\","
		" \"threshold\": 1}]}");
	const char *bad = write_file("bad.json",
		"{\"rules\": [{\"name\": \"X\", \"metric\": \"nope\", \"comparison\": \">\","
		" \"threshold\": 1}]}");
	char *text;

	alert_engine_eval(e, publish(&hot), 0, 100 * S, T0_REAL);
	alert_engine_eval(e, publish(&hot), 0, 110 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_FIRING);

	/* A bad file changes nothing but the reload counters. */
	ck_assert_int_eq(alert_engine_reload(e, bad, 110 * S, T0_REAL), -EINVAL);
	ck_assert_uint_eq(alert_engine_rule_count(e), 4);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_FIRING);
	ck_assert_int_eq(alert_engine_reload(e, "/nonexistent/alerts.json", 110 * S, T0_REAL),
			 -ENOENT);
	text = render(e);
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_config_reloads_total{result=\"failure\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_config_last_reload_successful 0\n"));
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_rules 4\n"));
	alert_engine_eval(e, publish(&hot), 0, 111 * S, T0_REAL);
	ck_assert_int_eq(n_notices, 1);

	/* A good file: the kept rule keeps its firing alert, with no new notice. */
	ck_assert_int_eq(alert_engine_reload(e, good, 111 * S, T0_REAL), 0);
	ck_assert_uint_eq(alert_engine_rule_count(e), 2);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_FIRING);
	alert_engine_eval(e, publish(&hot), 0, 112 * S, T0_REAL);
	ck_assert_int_eq(n_notices, 2);	/* Extra (for 0) fired; GpuOomWarning did not again */
	ck_assert_str_eq(notice_label(&notices[1], "alertname"), "Extra");
	text = render(e);
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_config_last_reload_successful 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "zernel_alert_rules 2\n"));

	/* Dropping a rule resolves its firing alerts. */
	good = write_file("good.json", "{\"rules\": []}");
	ck_assert_int_eq(alert_engine_reload(e, good, 113 * S, T0_REAL + S), 0);
	ck_assert_int_eq(n_notices, 4);
	ck_assert_int_eq(notices[2].resolved + notices[3].resolved, 2);
	ck_assert_uint_eq(alert_engine_firing_count(e), 0);
	alert_engine_free(e);
}
END_TEST

/* A feed alert's startsAt and activeAt, as stamped (0 for the zero time). */
static void feed_stamps(struct alert_engine *e, const char *gpu, char *starts, char *active)
{
	struct json_object *arr = alert_engine_feed_json(e);

	starts[0] = active[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *a = json_object_array_get_idx(arr, i);
		struct json_object *l = json_object_object_get(a, "labels");

		if (strcmp(json_object_get_string(json_object_object_get(l, "gpu_id")), gpu))
			continue;
		snprintf(starts, 40, "%s", json_object_get_string(json_object_object_get(a, "startsAt")));
		snprintf(active, 40, "%s", json_object_get_string(json_object_object_get(a, "activeAt")));
	}
	json_object_put(arr);
}

/*
 * The wall clock steps back an hour while an alert is pending, again while
 * it fires, and once more before a reload drops its rule: activeAt <=
 * startsAt <= endsAt throughout (Alertmanager refuses an end before the
 * start), durations are the monotonic ones, and endsAt is the clock's now.
 */
START_TEST(wall_clock_stepping_back_keeps_alert_times_in_order)
{
	struct alert_engine *e = default_engine();
	struct world hot = { .gpu0_used = { 50 * GB, 46 * GB } };
	struct world cool = { .gpu0_used = { 50 * GB, 10 * GB } };
	const uint64_t H = 3600 * S;
	char starts[40], active[40], want[40];
	const char *none;

	alert_engine_eval(e, publish(&hot), 0, 100 * S, T0_REAL);
	ck_assert_int_eq(alert_engine_state(e, "GpuOomWarning", "gpu_id=\"0\""), ALERT_PENDING);
	/* Back an hour at 103 s; GpuOomWarning's `for` is 10 s of the monotonic clock. */
	alert_engine_eval(e, publish(&hot), 0, 105 * S, T0_REAL + 5 * S - H);
	alert_engine_eval(e, publish(&hot), 0, 110 * S, T0_REAL + 10 * S - H);
	ck_assert_int_eq(n_notices, 1);
	ck_assert_uint_eq(notices[0].starts_real_ns, T0_REAL + 10 * S - H);
	feed_stamps(e, "0", starts, active);
	alert_time_rfc3339(T0_REAL - H, want, sizeof(want));
	ck_assert_str_eq(active, want);
	ck_assert_msg(strcmp(starts, active) >= 0, "startsAt %s before activeAt %s", starts, active);

	/* Back another hour at 115 s; resolved at 120 s, 10 s after it fired. */
	alert_engine_eval(e, publish(&hot), 0, 116 * S, T0_REAL + 16 * S - 2 * H);
	feed_stamps(e, "0", starts, active);
	alert_time_rfc3339(T0_REAL + 10 * S - 2 * H, want, sizeof(want));
	ck_assert_str_eq(starts, want);
	alert_engine_eval(e, publish(&cool), 0, 120 * S, T0_REAL + 20 * S - 2 * H);
	ck_assert_int_eq(n_notices, 2);
	ck_assert_int_eq(notices[1].resolved, 1);
	ck_assert_uint_eq(notices[1].ends_real_ns, T0_REAL + 20 * S - 2 * H);
	ck_assert_uint_eq(notices[1].starts_real_ns, T0_REAL + 10 * S - 2 * H);

	/* A step forward changes no stamp already made: the alert just looks longer. */
	alert_engine_eval(e, publish(&hot), 0, 130 * S, T0_REAL + 30 * S - 2 * H);
	alert_engine_eval(e, publish(&hot), 0, 140 * S, T0_REAL + 40 * S - H);
	ck_assert_int_eq(n_notices, 3);
	ck_assert_uint_eq(notices[2].starts_real_ns, T0_REAL + 40 * S - H);

	/* Back an hour, then a reload drops the rule: its resolve is in order too. */
	none = write_file("none.json", "{\"rules\": []}");
	ck_assert_int_eq(alert_engine_reload(e, none, 145 * S, T0_REAL + 45 * S - 2 * H), 0);
	ck_assert_int_eq(n_notices, 4);
	ck_assert_int_eq(notices[3].resolved, 1);
	ck_assert_uint_eq(notices[3].ends_real_ns, T0_REAL + 45 * S - 2 * H);
	ck_assert_uint_eq(notices[3].starts_real_ns, T0_REAL + 40 * S - 2 * H);
	alert_engine_free(e);
}
END_TEST

/* Runs alerts_check_config and returns its status, with stdout and stderr text. */
static int check_config(const char *path, char *out, char *err, size_t len)
{
	FILE *fo = tmpfile(), *fe = tmpfile();
	int st;
	size_t n;

	ck_assert_ptr_nonnull(fo);
	ck_assert_ptr_nonnull(fe);
	st = alerts_check_config(path, fo, fe);
	rewind(fo);
	rewind(fe);
	n = fread(out, 1, len - 1, fo);
	out[n] = '\0';
	n = fread(err, 1, len - 1, fe);
	err[n] = '\0';
	fclose(fo);
	fclose(fe);
	return st;
}

START_TEST(check_config_exit_status_and_example_file)
{
	char path[512], out[4096], err[4096];

	snprintf(path, sizeof(path), "%s/docs/alerts.example.json", tu_src_dir());
	ck_assert_msg(check_config(path, out, err, sizeof(out)) == 0, "example rejected: %s", err);
	ck_assert_ptr_nonnull(strstr(out, "rules OK"));
	ck_assert_ptr_nonnull(strstr(out, "GpuOomWarning: gpu_memory_used_ratio > 0.95 for 10s, "
				     "severity warning"));
	ck_assert_str_eq(err, "");

	ck_assert_int_eq(check_config(write_file("x.json", "{\"rules\": [{\"name\": 1}]}"), out,
				      err, sizeof(out)), 2);
	ck_assert_ptr_nonnull(strstr(err, "x.json: rule 1 (unnamed): field \"name\": expected a "
				     "string, got a number"));
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(check_config("/nonexistent.json", out, err, sizeof(out)), 2);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent.json: cannot open"));
}
END_TEST

/* Label values and texts go raw into /metrics and the webhook's JSON: UTF-8 or refused. */
START_TEST(invalid_utf8_in_rules_is_refused_at_load_and_by_check_config)
{
	char out[4096], err[4096];

	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"team\": \"a\xff\"}}",
			  "rule 2 (B)", "field \"labels\"", "value of \"team\" is not valid UTF-8");
	/* An overlong '/', a lone surrogate written raw, a cut sequence. */
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"t\": \"\xc0\xaf\"}}",
			  "rule 2 (B)", "field \"labels\"", "not valid UTF-8");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"t\": \"\xed\xa0\x80\"}}",
			  "rule 2 (B)", "field \"labels\"", "not valid UTF-8");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"summary\": \"x\xe2\x82\"}",
			  "rule 2 (B)", "field \"summary\"", "not valid UTF-8");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"t\": \"a\\u0000b\"}}",
			  "rule 2 (B)", "field \"labels\"", "NUL byte");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"__x\": \"1\"}}",
			  "rule 2 (B)", "field \"labels\"", "\"__x\" is reserved");
	/* zernel_alert_firing is a gauge: these two would make its text invalid. */
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"quantile\": \"0\"}}",
			  "rule 2 (B)", "field \"labels\"", "\"quantile\" is reserved");
	expect_rule_error("{\"name\": \"B\", \"metric\": \"collector_up\", "
			  "\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"le\": \"1\"}}",
			  "rule 2 (B)", "field \"labels\"", "\"le\" is reserved");
	/* Valid multi-byte text is kept as it is. */
	{
		static const char ok[] = "{\"rules\": [{\"name\": \"B\", \"metric\": \"collector_up\", "
			"\"comparison\": \"==\", \"threshold\": 0, \"labels\": {\"t\": \"\xc3\xa9\xe2\x82\xac\"}}]}";
		struct alert_ruleset rs = { 0 };
		char why[1024];

		ck_assert_int_eq(alert_rules_parse(ok, strlen(ok), "ok.json", &rs, why, sizeof(why)), 0);
		ck_assert_str_eq(rs.rules[0].labels[0].value, "\xc3\xa9\xe2\x82\xac");
		alert_ruleset_free(&rs);
	}
	ck_assert_int_eq(check_config(write_file("u.json",
		"{\"rules\": [{\"name\": \"B\", \"metric\": \"collector_up\", \"comparison\": \"==\", "
		"\"threshold\": 0, \"labels\": {\"team\": \"\xff\"}}]}"), out, err, sizeof(out)), 2);
	ck_assert_ptr_nonnull(strstr(err, "u.json: rule 1 (B): field \"labels\": value of \"team\" "
				     "is not valid UTF-8"));
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(cli_flags_check_urls)
{
	struct alerts_options o;
	FILE *devnull = fopen("/dev/null", "w");

	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://127.0.0.1:9/x", devnull), 0);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "https://a.example/", devnull),
			 -EINVAL);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://", devnull), -EINVAL);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://h:0/", devnull), -EINVAL);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://h/a b", devnull), -EINVAL);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_ALERTS, "", devnull), -EINVAL);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_ALERTS, "a.json", devnull), 0);
	ck_assert_str_eq(o.rules_path, "a.json");
	for (unsigned int i = 1; i < WEBHOOK_MAX_TARGETS; i++)
		ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://[::1]/", devnull), 0);
	ck_assert_int_eq(alerts_options_set(&o, ALERTS_OPT_WEBHOOK, "http://[::1]/", devnull), -EINVAL);
	ck_assert_uint_eq(o.n_webhooks, WEBHOOK_MAX_TARGETS);
	fclose(devnull);
}
END_TEST

Suite *alerts_suite(void);

Suite *alerts_suite(void)
{
	Suite *s = suite_create("alerts");
	TCase *tc = tcase_create("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, every_catalog_alert_name_resolves);
	tcase_add_test(tc, metric_gpu_ratio_sums_processes_and_divides_by_total);
	tcase_add_test(tc, metric_gpu_ratio_judges_the_drivers_figure_where_known);
	tcase_add_test(tc, oom_fires_from_the_drivers_figure);
	tcase_add_test(tc, metric_latencies_without_samples_have_no_series);
	tcase_add_test(tc, oom_fires_after_for_and_resolves);
	tcase_add_test(tc, pending_that_clears_sends_nothing);
	tcase_add_test(tc, wall_clock_stepping_back_keeps_alert_times_in_order);
	tcase_add_test(tc, collector_down_resolves_data_alerts_then_fires);
	tcase_add_test(tc, scope_selects_label_values);
	tcase_add_test(tc, config_not_json_names_line_and_column);
	tcase_add_test(tc, config_rule_errors_name_rule_and_field);
	tcase_add_test(tc, config_durations_and_templates);
	tcase_add_test(tc, reload_keeps_old_rules_on_a_bad_file);
	tcase_add_test(tc, check_config_exit_status_and_example_file);
	tcase_add_test(tc, invalid_utf8_in_rules_is_refused_at_load_and_by_check_config);
	tcase_add_test(tc, cli_flags_check_urls);
	suite_add_tcase(s, tc);
	return s;
}
