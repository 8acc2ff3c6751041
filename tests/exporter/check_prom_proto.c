/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protobuf exposition (exporter/prom/prom_proto.h) read back with
 * libprotobuf-c and held against the text the same render writes (the two
 * encoders of prom_write.h): the same families with the same types, the
 * same series with the same values, and
 * native histograms whose buckets are, for a workload's, its log-linear
 * buckets moved to the native bucket of their midpoint (prom_native.h),
 * and for the others the classic ones moved to the native bucket of their
 * upper edge, as prom_proto.h states.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "common/util.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"
#include "exporter/stats.h"
#include "proto/io/prometheus/client/metrics.pb-c.h"
#include "shm/shm_hist.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/exporter/pb_read.h"
#include "tests/exporter/strmap.h"
#include "tests/support/testutil.h"

static char shm_name[64];
static struct shm_writer writer;
static struct shm_reader reader;
static struct shm_snapshot snap;
static struct sbuf text, pb;

/* Samples of a text exposition: "name{labels}" -> value. */
struct samples {
	struct strmap map;
	double *v;
	size_t n;
};

static void fill(struct shm_latency *l, unsigned int i, uint64_t scale)
{
	memset(l, 0, sizeof(*l));
	l->bucket[0] = i * scale;		/* (0, 100 ns] */
	l->bucket[2] = (i + 1) * scale;		/* (250 ns, 500 ns] */
	l->bucket[3] = 2 * scale;		/* next to it: one native span */
	l->bucket[9 + i % 5] = 3 * scale;	/* a gap: a second span */
	l->bucket[SHM_LAT_FINITE_BUCKETS] = i % 2;	/* above 100 s */
	for (unsigned int b = 0; b < SHM_LAT_BUCKETS; b++)
		l->count += l->bucket[b];
	l->sum_ns = 12345 * l->count + 7;
	l->window_count = i ? l->count : 0;	/* one with NaN quantiles */
	l->window_p50_ns = 400;
	l->window_p90_ns = 150000;
	l->window_p99_ns = 180000;
	l->window_max_ns = 190000;
}

/* The values a workload's samples take (ns), far enough apart to land in native buckets of their own. */
static const uint64_t wl_values[] = { 0, 5, 100, 777, 3000, 123456, 5000000, 2000000000 };
#define WL_VALUES	(sizeof(wl_values) / sizeof(wl_values[0]))

/* The classic bucket of v: the first bound at or above it, else +Inf. */
static unsigned int classic_of(uint64_t v)
{
	static const uint64_t bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
	unsigned int i = 0;

	while (i < SHM_LAT_FINITE_BUCKETS && v > bounds[i])
		i++;
	return i;
}

/* Value k of wl_values, (k + 1) * scale times, in classic and log-linear buckets. */
static void fill_values(uint64_t *count, uint64_t *sum_ns, uint64_t *bucket, uint64_t *fine,
			uint64_t scale)
{
	for (size_t k = 0; k < WL_VALUES; k++) {
		uint64_t n = (k + 1) * scale;

		bucket[classic_of(wl_values[k])] += n;
		fine[hist_bucket_index(wl_values[k])] += n;
		*count += n;
		*sum_ns += n * wl_values[k];
	}
}

static void fill_workload(struct shm_workload_latency *l, uint64_t scale)
{
	memset(l, 0, sizeof(*l));
	fill_values(&l->count, &l->sum_ns, l->bucket, l->fine, scale);
}

static void setup(void)
{
	static const char hostile[] = "x\"y\\z\n\xff\tq";
	struct shm_writer_opts o;
	struct shm_header_fields *h;
	struct shm_proc *p;
	struct shm_workload *wl;
	struct shm_nccl_op *ops;
	char reason[256];
	struct cat_status st = { .status = SHM_READ_OK, .reason = "", .seen = 1,
				 .generation = 42, .age_ns = 250000000,
				 .last_update_real_ns = 1700000000123456789ull };
	struct exporter_stats stats;
	struct prom_out out;

	tu_unique_shm_name(shm_name, sizeof(shm_name));
	tu_shm_opts(&o, shm_name, (struct shm_capacity){ 64, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&writer, &o), 0);
	h = &writer.base->h;
	shm_writer_begin(&writer);
	p = shm_writer_table(&writer, SHM_TABLE_PROCS);
	for (unsigned int i = 0; i < 12; i++) {
		p[i].pid = 100 + i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_CUDA;
		snprintf(p[i].comm, SHM_COMM_LEN, "trainer-%u", i % 1000u);
		for (int f = 0; f < SHM_FAMILY_COUNT; f++)
			fill(&p[i].lat[f], i, f + 1);
		p[i].voluntary_switches = 1000 * i;
	}
	memcpy(p[3].comm, hostile, sizeof(hostile));
	/* Past 2^53 ns a double cannot hold the nanoseconds: the decimal's nearest double. */
	p[5].lat[SHM_FAMILY_CUDA_LAUNCH].sum_ns = 9007199319293187ull;
	p[5].offcpu_blocked_ns = 18446744073709551557ull;
	h->table[SHM_TABLE_PROCS].count = 12;
	/* Two workloads, a pod (with a hostile name) and the node, every family. */
	wl = shm_writer_table(&writer, SHM_TABLE_WORKLOADS);
	wl[0].kind = SHM_WORKLOAD_POD;
	wl[0].processes = 12;
	snprintf(wl[0].namespace, sizeof(wl[0].namespace), "ml");
	memcpy(wl[0].name, hostile, sizeof(hostile));
	for (int f = 0; f < SHM_FAMILY_COUNT; f++) {
		fill_workload(&wl[0].lat[f], f + 1);
		fill_workload(&wl[1].lat[f], 2 * f + 3);
	}
	h->table[SHM_TABLE_WORKLOADS].count = 2;
	/*
	 * NCCL: durations with their log-linear buckets, waits without (a
	 * writer that keeps none): native buckets from the classic ones.
	 */
	ops = shm_writer_table(&writer, SHM_TABLE_NCCL_OPS);
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		struct shm_latency *d = &ops[op].duration;

		memset(d, 0, sizeof(*d));
		memset(ops[op].duration_fine, 0, sizeof(ops[op].duration_fine));
		fill_values(&d->count, &d->sum_ns, d->bucket, ops[op].duration_fine, op + 1);
		fill(&ops[op].wait, op, 2);
	}
	fill(&h->node[SHM_FAMILY_CUDA_LAUNCH], 4, 1);
	h->heartbeat_mono_ns = now_mono_ns();
	h->heartbeat_real_ns = 1700000000123456789ull;
	shm_writer_end(&writer);
	shm_reader_init(&reader, shm_name);
	ck_assert_msg(shm_reader_snapshot(&reader, &snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);

	memset(&stats, 0, sizeof(stats));
	sbuf_init(&text, 64u << 20, 0);
	sbuf_init(&pb, 64u << 20, 0);
	ck_assert_int_eq(prom_render_data(&(struct prom_out){ .b = &text }, &snap), 0);
	ck_assert_int_eq(prom_render_self(&(struct prom_out){ .b = &text }, &st, &stats), 0);
	ck_assert_int_eq(prom_out_proto(&out, &pb), 0);
	ck_assert_int_eq(prom_render_data(&out, &snap), 0);
	ck_assert_int_eq(prom_render_self(&out, &st, &stats), 0);
	ck_assert_int_eq(prom_out_proto_end(&out), 0);
}

static void teardown(void)
{
	sbuf_free(&text);
	sbuf_free(&pb);
	shm_snapshot_free(&snap);
	shm_reader_close(&reader);
	shm_writer_close(&writer, 1);
}

static void samples_of(const char *t, struct samples *s)
{
	const char *p = t;

	memset(s, 0, sizeof(*s));
	s->v = calloc(1u << 20, sizeof(*s->v));
	ck_assert_ptr_nonnull(s->v);
	while (*p) {
		const char *nl = strchr(p, '\n'), *e = nl ? nl : p + strlen(p);

		if (*p != '#' && e > p) {
			const char *sp = e;
			char key[8192];

			while (sp > p && sp[-1] != ' ')
				sp--;
			ck_assert(sp > p && (size_t)(sp - p) < sizeof(key));
			memcpy(key, p, (size_t)(sp - p - 1));
			key[sp - p - 1] = '\0';
			s->v[s->n] = strtod(sp, NULL);
			ck_assert_msg(strmap_get(&s->map, key, &(size_t){ 0 }) == 0, "twice: %s", key);
			ck_assert_int_eq(strmap_put(&s->map, key, s->n), 0);
			s->n++;
		}
		p = nl ? nl + 1 : e;
	}
}

/* The text writer's series key for name+suffix, m's labels, and extra. */
static void key_of(char *out, size_t len, const char *name, const char *suffix,
		   const Io__Prometheus__Client__Metric *m, const char *extra)
{
	size_t o = (size_t)snprintf(out, len, "%s%s", name, suffix);

	if (!m->n_label && !*extra)
		return;
	out[o++] = '{';
	for (size_t i = 0; i < m->n_label; i++) {
		o += (size_t)snprintf(out + o, len - o, "%s%s=\"", i ? "," : "", m->label[i]->name);
		for (const char *v = m->label[i]->value; *v; v++) {
			if (*v == '\\' || *v == '"' || *v == '\n')
				out[o++] = '\\';
			out[o++] = *v == '\n' ? 'n' : *v;
		}
		out[o++] = '"';
	}
	o += (size_t)snprintf(out + o, len - o, "%s%s}", m->n_label && *extra ? "," : "", extra);
}

static size_t seen;

static void expect(const struct samples *s, const char *key, double v)
{
	size_t i;

	ck_assert_msg(strmap_get(&s->map, key, &i), "protobuf has %s, the text does not", key);
	ck_assert_msg((isnan(v) && isnan(s->v[i])) || v == s->v[i],
		      "%s: protobuf %.17g, text %.17g", key, v, s->v[i]);
	seen++;
}

/* The native buckets of h are the classic ones at their upper edges. */
static void check_native(const Io__Prometheus__Client__Histogram *h)
{
	int64_t idx = 0, count = 0, total = 0;
	size_t d = 0;
	uint64_t prev = 0;
	int64_t want_idx[64];
	uint64_t want_n[64];
	size_t k = 0, got = 0;

	ck_assert(h->has_schema && h->schema == PROM_PROTO_SCHEMA);
	ck_assert(h->zero_threshold > 0 && h->zero_count == 0);
	ck_assert_uint_eq(h->n_negative_span, 0);
	for (size_t j = 0; j < h->n_bucket; j++) {
		if (h->bucket[j]->cumulative_count > prev) {
			want_idx[k] = prom_proto_native_index(h->bucket[j]->upper_bound);
			want_n[k++] = h->bucket[j]->cumulative_count - prev;
		}
		prev = h->bucket[j]->cumulative_count;
	}
	if (h->sample_count > prev) {
		want_idx[k] = prom_proto_native_index(h->bucket[h->n_bucket - 1]->upper_bound) + 1;
		want_n[k++] = h->sample_count - prev;
	}
	for (size_t s = 0; s < h->n_positive_span; s++) {
		idx += h->positive_span[s]->offset;
		for (uint32_t b = 0; b < h->positive_span[s]->length; b++, idx++, d++) {
			ck_assert_uint_lt(d, h->n_positive_delta);
			count += h->positive_delta[d];
			ck_assert_int_gt(count, 0);
			ck_assert_uint_lt(got, k);
			ck_assert_int_eq(idx, want_idx[got]);
			ck_assert_int_eq((uint64_t)count, want_n[got]);
			got++;
			total += count;
		}
	}
	ck_assert_uint_eq(d, h->n_positive_delta);
	ck_assert_uint_eq(got, k);
	ck_assert_int_eq((uint64_t)total, h->sample_count);
}

/*
 * Whether name's series carry log-linear buckets here: a per-process
 * family's (one per workload) or NCCL's durations.
 */
static int fine_family(const char *name)
{
	if (strcmp(name, "zernel_nccl_collective_seconds") == 0)
		return 1;
	for (size_t i = 0; i < cat_metrics_count; i++)
		if (cat_metrics[i].rows == CAT_ROWS_PROCS && cat_metrics[i].prom_hist &&
		    strcmp(cat_metrics[i].prom_hist, name) == 0)
			return 1;
	return 0;
}

/*
 * A workload's native buckets hold its samples, in order: wl_values[k]
 * (k + 1) * scale times, each in a native bucket within 1/64 of it (its
 * log-linear bucket's midpoint is), zeros in the zero bucket.
 */
static void check_native_fine(const Io__Prometheus__Client__Histogram *h)
{
	const double step = exp2(1.0 / (1 << PROM_PROTO_SCHEMA));
	uint64_t scale = h->zero_count;		/* value 0 is k = 0: 1 * scale */
	size_t k = 1;
	int64_t idx = 0, count = 0;
	size_t d = 0;

	ck_assert(h->has_schema && h->schema == PROM_PROTO_SCHEMA);
	ck_assert_uint_gt(scale, 0);
	ck_assert_uint_eq(h->n_negative_span, 0);
	for (size_t sp = 0; sp < h->n_positive_span; sp++) {
		idx += h->positive_span[sp]->offset;
		for (uint32_t b = 0; b < h->positive_span[sp]->length; b++, idx++, d++) {
			double lo = exp2((double)(idx - 1) / (1 << PROM_PROTO_SCHEMA)) * 1e9;
			double v;

			count += h->positive_delta[d];
			if (count == 0)
				continue;	/* a gap inside a span */
			ck_assert_uint_lt(k, WL_VALUES);
			v = (double)wl_values[k];
			ck_assert_int_eq(count, (int64_t)((k + 1) * scale));
			ck_assert_msg(v <= lo * step * (1 + 1.0 / 64) && v >= lo * (1 - 1.0 / 64),
				      "%g ns in native bucket (%g, %g] ns", v, lo, lo * step);
			k++;
		}
	}
	ck_assert_uint_eq(d, h->n_positive_delta);
	ck_assert_uint_eq(k, WL_VALUES);
}

START_TEST(proto_has_the_texts_families_series_and_values)
{
	static const char *const types[] = { "counter", "gauge", "summary", "untyped", "histogram" };
	const uint8_t *p = (const uint8_t *)pb.data, *end = p + pb.len;
	struct samples s;
	size_t families = 0, histograms = 0, text_families = 0, fine = 0;
	char key[8192], extra[64], want[512];

	samples_of(text.data, &s);
	seen = 0;
	while (p < end) {
		Io__Prometheus__Client__MetricFamily *f = pb_next_family(&p, end);

		families++;
		ck_assert_uint_gt(f->n_metric, 0);
		snprintf(want, sizeof(want), "\n# TYPE %s %s\n", f->name, types[f->type]);
		ck_assert_msg(strstr(text.data, want), "family %s is not a %s in the text",
			      f->name, types[f->type]);
		for (size_t i = 0; i < f->n_metric; i++) {
			const Io__Prometheus__Client__Metric *m = f->metric[i];

			switch (f->type) {
			case IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER:
				key_of(key, sizeof(key), f->name, "", m, "");
				expect(&s, key, m->counter->value);
				break;
			case IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE:
				key_of(key, sizeof(key), f->name, "", m, "");
				expect(&s, key, m->gauge->value);
				break;
			case IO__PROMETHEUS__CLIENT__METRIC_TYPE__SUMMARY:
				ck_assert_uint_eq(m->summary->n_quantile, 2);
				for (size_t q = 0; q < m->summary->n_quantile; q++) {
					snprintf(extra, sizeof(extra), "quantile=\"%g\"",
						 m->summary->quantile[q]->quantile);
					key_of(key, sizeof(key), f->name, "", m, extra);
					expect(&s, key, m->summary->quantile[q]->value);
				}
				key_of(key, sizeof(key), f->name, "_sum", m, "");
				expect(&s, key, m->summary->sample_sum);
				key_of(key, sizeof(key), f->name, "_count", m, "");
				expect(&s, key, (double)m->summary->sample_count);
				break;
			case IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM:
				histograms++;
				ck_assert_uint_eq(m->histogram->n_bucket, SHM_LAT_FINITE_BUCKETS);
				for (size_t b = 0; b < m->histogram->n_bucket; b++) {
					snprintf(extra, sizeof(extra), "le=\"%g\"",
						 m->histogram->bucket[b]->upper_bound);
					key_of(key, sizeof(key), f->name, "_bucket", m, extra);
					expect(&s, key, (double)m->histogram->bucket[b]->cumulative_count);
				}
				key_of(key, sizeof(key), f->name, "_bucket", m, "le=\"+Inf\"");
				expect(&s, key, (double)m->histogram->sample_count);
				key_of(key, sizeof(key), f->name, "_sum", m, "");
				expect(&s, key, m->histogram->sample_sum);
				key_of(key, sizeof(key), f->name, "_count", m, "");
				expect(&s, key, (double)m->histogram->sample_count);
				if (fine_family(f->name)) {
					check_native_fine(m->histogram);
					fine++;
				} else {
					check_native(m->histogram);
				}
				break;
			default:
				ck_abort_msg("family %s: untyped", f->name);
			}
		}
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
	}
	/* Every sample of the text, and every family that has one, was there. */
	ck_assert_uint_eq(seen, s.n);
	for (const char *t = strstr(text.data, "# TYPE "); t; t = strstr(t + 1, "\n# TYPE "))
		text_families++;
	ck_assert_uint_gt(families, 20);
	ck_assert_uint_le(families, text_families);
	ck_assert_uint_gt(histograms, 10);
	/* Two workloads, every per-process family (dist sync twice), and NCCL's durations. */
	ck_assert_uint_eq(fine, 2 * SHM_FAMILY_COUNT + SHM_NCCL_OP_COUNT);
	fprintf(stderr, "protobuf: %zu families, %zu samples, %zu histograms; %zu bytes, text %zu\n",
		families, seen, histograms, pb.len, text.len);
	strmap_free(&s.map);
	free(s.v);
}
END_TEST

START_TEST(proto_native_index_is_the_bucket_holding_the_value)
{
	/* Bucket i is (2^((i-1)/64), 2^(i/64)]: 1 closes bucket 0, 2 bucket 64. */
	ck_assert_int_eq(prom_proto_native_index(1.0), 0);
	ck_assert_int_eq(prom_proto_native_index(2.0), 64);
	ck_assert_int_eq(prom_proto_native_index(0.5), -64);
	ck_assert_int_eq(prom_proto_native_index(nextafter(1.0, 2.0)), 1);
	for (double v = 1e-7; v < 200; v *= 1.37) {
		int i = prom_proto_native_index(v);

		ck_assert(v > exp2((i - 1) / 64.0) && v <= exp2(i / 64.0));
	}
}
END_TEST

static const struct shm_latency one_sample = { .count = 1, .bucket = { 1 } };

/* A call of the series model: a family's, a series' or none. */
enum call { NONE, FAMILY_GAUGE, FAMILY_SUMMARY, FAMILY_HISTOGRAM, VALUE, SUMMARY, HISTOGRAM };

static void call(struct prom_out *o, enum call c, const char *labels)
{
	static const enum prom_type types[] = {
		[FAMILY_GAUGE] = PROM_GAUGE, [FAMILY_SUMMARY] = PROM_SUMMARY,
		[FAMILY_HISTOGRAM] = PROM_HISTOGRAM,
	};

	if (c == FAMILY_GAUGE || c == FAMILY_SUMMARY || c == FAMILY_HISTOGRAM)
		prom_family(o, "x", types[c], "x.");
	else if (c == VALUE)
		prom_series_u64(o, "x", labels, 1);
	else if (c == SUMMARY)
		prom_summary(o, "x", labels, &one_sample);
	else if (c == HISTOGRAM)
		prom_histogram(o, "x", labels, &one_sample, NULL);
}

/* The protobuf exposition of a family call, then a series call; its error. */
static int proto_of(enum call family, enum call series, const char *labels)
{
	struct prom_out o;
	struct sbuf b;
	int err;

	sbuf_init(&b, 1u << 20, 0);
	ck_assert_int_eq(prom_out_proto(&o, &b), 0);
	call(&o, family, labels);
	call(&o, series, labels);
	err = prom_out_proto_end(&o);
	sbuf_free(&b);
	return err;
}

START_TEST(proto_refuses_calls_it_cannot_encode)
{
	static const struct { enum call family, series; const char *labels; } bad[] = {
		{ NONE, VALUE, "" },				/* a series before any family */
		{ FAMILY_HISTOGRAM, VALUE, "" },		/* a plain value in a histogram */
		{ FAMILY_GAUGE, SUMMARY, "" },
		{ FAMILY_SUMMARY, HISTOGRAM, "" },
		{ FAMILY_GAUGE, VALUE, "a=\"1" },		/* an unterminated label */
		{ FAMILY_GAUGE, VALUE, "a" },			/* a label without a value */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(proto_of(bad[i].family, bad[i].series, bad[i].labels) == -EINVAL,
			      "call sequence %zu accepted", i);
	ck_assert_int_eq(proto_of(FAMILY_GAUGE, VALUE, "a=\"q\\\"\",b=\"2\""), 0);
	ck_assert_int_eq(proto_of(FAMILY_HISTOGRAM, HISTOGRAM, ""), 0);
	ck_assert_int_eq(proto_of(FAMILY_SUMMARY, SUMMARY, "a=\"1\""), 0);
}
END_TEST

Suite *prom_proto_suite(void);
Suite *prom_proto_suite(void)
{
	Suite *s = suite_create("prom_proto");
	TCase *tc = tcase_create("encode");
	TCase *pieces = tcase_create("pieces");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, proto_has_the_texts_families_series_and_values);
	suite_add_tcase(s, tc);
	tcase_add_test(pieces, proto_native_index_is_the_bucket_holding_the_value);
	tcase_add_test(pieces, proto_refuses_calls_it_cannot_encode);
	suite_add_tcase(s, pieces);
	return s;
}
