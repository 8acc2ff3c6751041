/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every family rendered from a segment whose every field holds the most
 * extreme value the layout allows (UINT32_MAX pids, INT_MIN ranks, 64-bit
 * ids and counters, process names that escape or sanitise to their longest),
 * checked by the project's validator and by promtool: a legal value must
 * never make a line invalid or drop a series.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "common/util.h"
#include "common/sbuf.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"
#include "exporter/stats.h"
#include "shm/shm_hist.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/exporter/pb_read.h"
#include "tests/exporter/prom_validate.h"
#include "tests/support/testutil.h"

#define PROMTOOL	"/usr/bin/promtool"
#define ROWS		4u

/* Names that grow most when escaped or sanitised, one per row. */
static const unsigned char comm_fill[ROWS] = { 0xff, '"', '\\', '\n' };

static void fill_text(char *s, size_t len, char c)
{
	memset(s, c, len - 1);
	s[len - 1] = '\0';
}

/* A latency at the limits that still keeps the reader's invariants. */
static void extreme_latency(struct shm_latency *l)
{
	memset(l, 0, sizeof(*l));
	l->bucket[0] = UINT64_MAX - 1;
	l->bucket[SHM_LAT_FINITE_BUCKETS] = 1;
	l->count = UINT64_MAX;
	l->sum_ns = UINT64_MAX;
	l->window_count = UINT64_MAX;
	l->window_p50_ns = l->window_p90_ns = l->window_p99_ns = l->window_max_ns = UINT64_MAX;
}

/* The same with count samples at most (a series a counter bounds). */
static void bounded_latency(struct shm_latency *l, uint64_t count)
{
	extreme_latency(l);
	l->bucket[0] = count - 1;
	l->count = l->window_count = count;
}

/* A workload's latency at the limits: both sets of buckets add up to UINT64_MAX. */
static void extreme_workload_latency(struct shm_workload_latency *l)
{
	memset(l, 0, sizeof(*l));
	l->count = l->sum_ns = UINT64_MAX;
	l->bucket[0] = UINT64_MAX - 1;
	l->bucket[SHM_LAT_FINITE_BUCKETS] = 1;
	l->fine[0] = UINT64_MAX - 1;
	l->fine[HIST_BUCKETS - 1] = 1;
}

/*
 * Workload rows, one of each kind with a text, each at its longest and
 * of the bytes that grow most when escaped.
 */
static void fill_workloads(struct shm_workload *wl)
{
	static const uint32_t kinds[ROWS] = { SHM_WORKLOAD_POD, SHM_WORKLOAD_POD_UID,
					      SHM_WORKLOAD_CONTAINER, SHM_WORKLOAD_RUN };

	memset(wl, 0, sizeof(*wl) * ROWS);
	for (uint32_t i = 0; i < ROWS; i++) {
		wl[i].kind = kinds[i];
		wl[i].processes = SHM_LIMIT_PROCS;
		if (kinds[i] == SHM_WORKLOAD_POD)
			fill_text(wl[i].namespace, sizeof(wl[i].namespace), '"');
		fill_text(wl[i].name, sizeof(wl[i].name), i % 2 ? '\\' : '"');
		for (int f = 0; f < SHM_FAMILY_COUNT; f++)
			extreme_workload_latency(&wl[i].lat[f]);
	}
}

/*
 * Rows start as all-ones bytes, so a field this test does not name gets
 * its maximum too; then the few invariants the reader checks are restored.
 */
static void fill_extremes(struct shm_writer *w)
{
	struct shm_header_fields *h = &w->base->h;
	struct shm_proc *p = shm_writer_table(w, SHM_TABLE_PROCS);
	struct shm_gpu_mem *m = shm_writer_table(w, SHM_TABLE_GPU_MEM);
	struct shm_gpu *g = shm_writer_table(w, SHM_TABLE_GPUS);
	struct shm_nccl_op *ops = shm_writer_table(w, SHM_TABLE_NCCL_OPS);
	struct shm_nccl_comm *c = shm_writer_table(w, SHM_TABLE_NCCL_COMMS);
	struct shm_identity *id = shm_writer_table(w, SHM_TABLE_IDENTITY);

	memset(p, 0xff, sizeof(*p) * ROWS);
	memset(id, 0xff, sizeof(*id) * ROWS);
	memset(m, 0xff, sizeof(*m) * ROWS);
	memset(g, 0xff, sizeof(*g) * ROWS);
	memset(ops, 0xff, sizeof(*ops) * SHM_NCCL_OP_COUNT);
	memset(c, 0xff, sizeof(*c) * ROWS);
	for (uint32_t i = 0; i < ROWS; i++) {
		p[i].pid = UINT32_MAX - i;
		p[i].ppid = UINT32_MAX;
		p[i].watch_reason = SHM_WATCH_ALL_BITS;
		memset(p[i].comm, comm_fill[i], SHM_COMM_LEN);	/* no NUL at all */
		for (int f = 0; f < SHM_FAMILY_COUNT; f++)
			extreme_latency(&p[i].lat[f]);
		m[i].pid = UINT32_MAX - i;
		m[i].gpu_id = UINT32_MAX - 1 - i;
		m[i].gpu_map = SHM_GPU_MAP_UUID;
		m[i].cuda_device = SHM_LIMIT_GPUS - 1;
		/* Every flag a row of the probes' figures takes, and the largest driver figure. */
		m[i].flags = SHM_GPU_MEM_F_FROM_START | SHM_GPU_MEM_F_DRIVER;
		m[i].reserved0 = 0;
		m[i].driver_used_bytes = UINT64_MAX - 1;
		/* Identity texts at their longest legal length. */
		id[i].pid = p[i].pid;
		id[i].runtime = SHM_ID_RUNTIME_MAX;
		id[i].flags = SHM_ID_F_ALL_BITS;
		id[i].rank = id[i].local_rank = id[i].world_size = id[i].group_rank = SHM_ID_RANK_MAX;
		id[i].slurm_job_id = SHM_ID_SLURM_JOB_MAX;
		id[i].reserved0 = 0;
		fill_text(id[i].slurm_step, sizeof(id[i].slurm_step), '9');
		fill_text(id[i].container_id, sizeof(id[i].container_id), 'f');
		memset(id[i].pod_uid, 0, sizeof(id[i].pod_uid));
		memcpy(id[i].pod_uid, "ffffffff-ffff-ffff-ffff-ffffffffffff", 37);
		fill_text(id[i].namespace, sizeof(id[i].namespace), 'a');
		fill_text(id[i].pod, sizeof(id[i].pod), 'a');
		fill_text(id[i].container, sizeof(id[i].container), 'a');
		fill_text(id[i].run_id, sizeof(id[i].run_id), 'a');
		g[i].gpu_id = UINT32_MAX - 1 - i;
		g[i].total_source = SHM_TOTAL_MAX_SOURCE;
		g[i].used_source = SHM_USED_MAX_SOURCE;
		fill_text(g[i].uuid, sizeof(g[i].uuid), '"');
		fill_text(g[i].model_name, sizeof(g[i].model_name), '\\');
		c[i].pid = UINT32_MAX - i;
		/* The widest ranks a reader takes: unknown (-1) or the last of the most. */
		c[i].rank = i % 2 ? SHM_NCCL_MAX_RANKS - 1 : -1;
		c[i].nranks = i % 2 ? SHM_NCCL_MAX_RANKS : -1;
		c[i].gpu_id = UINT32_MAX - 1 - i;
		c[i].comm_id = UINT64_MAX - i;
		c[i].parent_id = UINT64_MAX;
		c[i].origin = SHM_NCCL_ORIGIN_COUNT - 1;
		/* Counters at the bounds the reader still believes. */
		c[i].flags = SHM_NCCL_COMM_LOCAL_ID;
		c[i].calls = c[i].pending = SHM_NCCL_MAX_CALLS;
		c[i].bytes = SHM_NCCL_MAX_BYTES;
		c[i].stalled_ns = SHM_NCCL_MAX_STALL_NS;
		bounded_latency(&c[i].wait, SHM_NCCL_MAX_CALLS);
		bounded_latency(&c[i].gap, SHM_NCCL_MAX_CALLS);
		bounded_latency(&c[i].gpu, SHM_NCCL_MAX_CALLS);
	}
	for (uint32_t op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		ops[op].op = op;
		extreme_latency(&ops[op].duration);
		extreme_latency(&ops[op].wait);
		/* Their log-linear buckets as extreme_latency's classic ones. */
		memset(ops[op].duration_fine, 0, sizeof(ops[op].duration_fine));
		ops[op].duration_fine[0] = UINT64_MAX - 1;
		ops[op].duration_fine[HIST_BUCKETS - 1] = 1;
		memcpy(ops[op].wait_fine, ops[op].duration_fine, sizeof(ops[op].wait_fine));
	}
	fill_workloads(shm_writer_table(w, SHM_TABLE_WORKLOADS));
	/*
	 * The Python stall tables feed /api/stalls and the trace, not
	 * Prometheus: empty here, only their overflow counts at the limit.
	 */
	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		h->table[i].count = i == SHM_TABLE_NCCL_OPS ? SHM_NCCL_OP_COUNT :
				    i == SHM_TABLE_WORKLOADS ? ROWS :
				    i >= SHM_TABLE_PY_PROCS ? 0 : ROWS;
		h->table[i].overflows = UINT64_MAX;
	}
	for (int f = 0; f < SHM_FAMILY_COUNT; f++)
		extreme_latency(&h->node[f]);
	memset(&h->stats, 0xff, sizeof(h->stats));
	memset(h->scenario, 0xff, sizeof(h->scenario));
	h->heartbeat_mono_ns = now_mono_ns();
	h->heartbeat_real_ns = UINT64_MAX;
}

/* The output names every family of the segment's and the exporter's own. */
static void assert_every_family(const char *text)
{
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];
		char want[160];

		if (!m->prom || m->rows == CAT_ROWS_ALERTS || m->rows == CAT_ROWS_WEBHOOKS)
			continue;
		snprintf(want, sizeof(want), "\n%s", m->prom);
		ck_assert_msg(strstr(text, want), "family %s has no series", m->prom);
		if (m->prom_hist) {
			snprintf(want, sizeof(want), "\n%s_bucket{", m->prom_hist);
			ck_assert_msg(strstr(text, want), "histogram %s has no series", m->prom_hist);
		}
	}
}

/* Every series of a family over rows has one line per row: none was dropped. */
static void assert_rows(const char *text, const char *series, unsigned int want)
{
	unsigned int n = 0;
	char head[160];

	snprintf(head, sizeof(head), "\n%s{", series);
	for (const char *p = strstr(text, head); p; p = strstr(p + 1, head))
		n++;
	ck_assert_msg(n == want, "%s: %u series, expected %u", series, n, want);
}

static void run_promtool(const char *text, size_t len)
{
	char file[96], out[96], *complaints;
	size_t clen = 0;
	FILE *f;
	int rc;

	ck_assert_msg(access(PROMTOOL, X_OK) == 0, PROMTOOL " is missing (make test-deps)");
	snprintf(file, sizeof(file), "/tmp/zernel-extremes-%d.txt", (int)getpid());
	snprintf(out, sizeof(out), "/tmp/zernel-extremes-%d.out", (int)getpid());
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	rc = tu_system(PROMTOOL " check metrics < %s > %s 2>&1", file, out);
	complaints = tu_read_file(out, &clen);
	/*
	 * Exit 1 is a text Prometheus cannot read; 3 is only lint.  The one
	 * lint allowed: the camelCase label names dcgm-exporter spells
	 * (modelName, ...), kept so that dashboards join on them.
	 */
	ck_assert_msg(rc == 0 || rc == 3, "promtool exit %d: %s", rc, complaints ? complaints : "");
	for (char *line = complaints; line && *line; line = strchr(line, '\n') + 1) {
		ck_assert_msg(strstr(line, "should be written in 'snake_case'") &&
			      strchr(line, '\n'), "promtool: %s", line);
	}
	free(complaints);
	unlink(file);
	unlink(out);
}

/*
 * Histograms of the protobuf exposition pb whose native buckets came from
 * log-linear ones: only those have samples in the zero bucket here.
 */
static size_t native_histograms(const struct sbuf *pb)
{
	const uint8_t *p = (const uint8_t *)pb->data, *end = p + pb->len;
	size_t found = 0;

	while (p < end) {
		Io__Prometheus__Client__MetricFamily *f = pb_next_family(&p, end);

		for (size_t i = 0; i < f->n_metric; i++)
			found += f->metric[i]->histogram && f->metric[i]->histogram->zero_count > 0;
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
	}
	return found;
}

START_TEST(every_family_at_extreme_values_passes_promtool)
{
	static const struct cat_status st = {
		.status = SHM_READ_OK, .reason = "", .seen = 1, .generation = UINT64_MAX,
		.age_ns = UINT64_MAX, .last_update_real_ns = UINT64_MAX,
	};
	struct shm_writer_opts o;
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
	struct exporter_stats stats;
	struct prom_out po;
	struct sbuf out, pb;
	char name[64], why[256];

	memset(&snap, 0, sizeof(snap));
	tu_unique_shm_name(name, sizeof(name));
	tu_shm_opts(&o, name, (struct shm_capacity){ ROWS, ROWS, ROWS, ROWS });
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_writer_begin(&w);
	fill_extremes(&w);
	shm_writer_end(&w);
	shm_reader_init(&r, name);
	ck_assert_msg(shm_reader_snapshot(&r, &snap, why, sizeof(why)) == SHM_READ_OK,
		      "extreme segment rejected: %s", why);

	memset(&stats, 0xff, sizeof(stats));
	sbuf_init(&out, 64u << 20, 0);
	po = prom_out_text(&out);
	ck_assert_int_eq(prom_render_data(&po, &snap), 0);
	ck_assert_int_eq(prom_render_self(&po, &st, &stats), 0);
	ck_assert_msg(prom_validate(out.data, out.len, why, sizeof(why)) == 0, "validator: %s", why);
	run_promtool(out.data, out.len);
	assert_every_family(out.data);
	assert_rows(out.data, "zernel_process_info", ROWS);
	assert_rows(out.data, "zernel_nccl_comm_info", ROWS);
	assert_rows(out.data, "zernel_gpu_memory_used_bytes", ROWS);
	assert_rows(out.data, "zernel_gpu_memory_driver_used_bytes", ROWS);
	ck_assert_ptr_nonnull(strstr(out.data, "rank=\"16777215\""));
	ck_assert_ptr_nonnull(strstr(out.data, "pid=\"4294967295\""));
	ck_assert_ptr_nonnull(strstr(out.data, "comm=\"0xffffffffffffffff\""));
	/* The protobuf form too, native buckets from counts at their limits. */
	sbuf_init(&pb, 64u << 20, 0);
	ck_assert_int_eq(prom_out_proto(&po, &pb), 0);
	ck_assert_int_eq(prom_render_data(&po, &snap), 0);
	ck_assert_int_eq(prom_render_self(&po, &st, &stats), 0);
	ck_assert_int_eq(prom_out_proto_end(&po), 0);
	ck_assert_uint_gt(native_histograms(&pb), 0);
	fprintf(stderr, "extremes: %zu bytes, validator and promtool clean; protobuf %zu bytes\n",
		out.len, pb.len);

	sbuf_free(&pb);
	sbuf_free(&out);
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

Suite *prom_extremes_suite(void);
Suite *prom_extremes_suite(void)
{
	Suite *s = suite_create("prom_extremes");
	TCase *tc = tcase_create("extremes");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, every_family_at_extreme_values_passes_promtool);
	suite_add_tcase(s, tc);
	return s;
}
