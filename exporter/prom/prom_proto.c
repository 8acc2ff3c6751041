/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The protobuf encoder of the series model (see prom_proto.h): a family's
 * messages are built in an arena as its series come, and packed when the
 * next family starts.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom/prom_native.h"
#include "exporter/prom/prom_proto.h"
#include "proto/io/prometheus/client/metrics.pb-c.h"

typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;
typedef Io__Prometheus__Client__LabelPair pb_label;
typedef Io__Prometheus__Client__Histogram pb_histogram;
typedef Io__Prometheus__Client__Bucket pb_bucket;
typedef Io__Prometheus__Client__BucketSpan pb_span;
typedef Io__Prometheus__Client__Quantile pb_quantile;

/* Labels a series may have (a process's identity is about 12). */
#define PROTO_MAX_LABELS	64
/* The Go client's default zero bucket: nothing we measure is that small. */
#define PROTO_ZERO_THRESHOLD	0x1p-128

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* Bump allocation, freed a family at a time: no per-message free. */
struct arena {
	struct chunk *head;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	struct chunk *c = a->head;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->cap - c->used < n) {
		size_t cap = n > (64u << 10) ? n : (64u << 10);

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

static char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

struct prom_proto {
	struct sbuf *out;
	struct arena arena;
	pb_family fam;
	int open;			/* a family is being filled */
	pb_metric **metrics;		/* in the arena */
	size_t cap;
};

/* The sink protobuf-c packs into. */
struct sbuf_sink {
	ProtobufCBuffer base;
	struct sbuf *b;
};

static void sink_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	sbuf_append(((struct sbuf_sink *)buf)->b, (const char *)data, len);
}

static void fail(struct prom_proto *t, int err)
{
	if (!t->out->error)
		t->out->error = err;
}

int prom_proto_native_index(double v)
{
	const double per = (double)(1 << PROM_PROTO_SCHEMA);
	int i = (int)ceil(log2(v) * per);

	/* log2 may round across a boundary: bucket i is (2^((i-1)/per), 2^(i/per)]. */
	if (v > exp2(i / per))
		i++;
	else if (v <= exp2((i - 1) / per))
		i--;
	return i;
}

double prom_proto_seconds(uint64_t ns)
{
	char text[32];

	/*
	 * The double nearest the decimal the text writes: up to 2^53 ns (104
	 * days) ns and 1e9 are exact and the division rounds once; past it
	 * ns itself would round first, so the decimal is read as a scraper
	 * of the text reads it.
	 */
	if (ns <= (1ull << 53))
		return (double)ns / 1e9;
	snprintf(text, sizeof(text), "%" PRIu64 ".%09" PRIu64, ns / 1000000000u,
		 ns % 1000000000u);
	return strtod(text, NULL);
}

/*
 * Fills h's native part at PROM_PROTO_SCHEMA: k buckets with samples,
 * idx increasing, n[j] samples in bucket idx[j]; zero samples of 0.
 */
static int native_spans(struct prom_proto *t, pb_histogram *h, const int32_t *idx, const uint64_t *n,
			size_t k, uint64_t zero)
{
	size_t nspans = 0;
	pb_span **spans;

	for (size_t j = 1; j < k; j++)
		if (idx[j] <= idx[j - 1])
			return -EINVAL;
	h->has_schema = 1;
	h->schema = PROM_PROTO_SCHEMA;
	h->has_zero_threshold = 1;
	h->zero_threshold = PROTO_ZERO_THRESHOLD;
	h->has_zero_count = 1;
	h->zero_count = zero;
	spans = arena_alloc(&t->arena, (k + 1) * sizeof(*spans));
	h->positive_delta = arena_alloc(&t->arena, (k + 1) * sizeof(*h->positive_delta));
	if (!spans || !h->positive_delta)
		return -ENOMEM;
	for (size_t j = 0; j < k; j++) {
		if (j == 0 || idx[j] != idx[j - 1] + 1) {
			pb_span *s = arena_alloc(&t->arena, sizeof(*s));

			if (!s)
				return -ENOMEM;
			io__prometheus__client__bucket_span__init(s);
			s->has_offset = s->has_length = 1;
			s->offset = j == 0 ? idx[0] : idx[j] - idx[j - 1] - 1;
			spans[nspans++] = s;
		}
		spans[nspans - 1]->length++;
		/* An unsigned difference: no undefined overflow whatever a hostile segment counts. */
		h->positive_delta[j] = (int64_t)(n[j] - (j ? n[j - 1] : 0));
	}
	if (!k) {
		/* No sample yet: a no-op span still says "native". */
		pb_span *s = arena_alloc(&t->arena, sizeof(*s));

		if (!s)
			return -ENOMEM;
		io__prometheus__client__bucket_span__init(s);
		s->has_offset = s->has_length = 1;
		spans[nspans++] = s;
	}
	h->n_positive_span = nspans;
	h->positive_span = spans;
	h->n_positive_delta = k;
	return 0;
}

/*
 * The native buckets of the classic ones (see prom_proto.h): one native
 * bucket per non-empty classic bucket, at the classic bucket's upper edge.
 */
static int native_from_classic(struct prom_proto *t, pb_histogram *h, const struct shm_latency *l)
{
	int32_t idx[SHM_LAT_BUCKETS];
	uint64_t n[SHM_LAT_BUCKETS];
	size_t k = 0;

	for (unsigned int j = 0; j < SHM_LAT_FINITE_BUCKETS; j++) {
		if (l->bucket[j]) {
			idx[k] = prom_proto_native_index(prom_le_seconds(j));
			n[k++] = l->bucket[j];
		}
	}
	if (l->bucket[SHM_LAT_FINITE_BUCKETS]) {
		idx[k] = prom_proto_native_index(prom_le_seconds(SHM_LAT_FINITE_BUCKETS - 1)) + 1;
		n[k++] = l->bucket[SHM_LAT_FINITE_BUCKETS];
	}
	return native_spans(t, h, idx, n, k, 0);
}

/* From the log-linear buckets where the series has them and they add up (prom_native.h). */
static int native(struct prom_proto *t, pb_histogram *h, const struct shm_latency *l,
		  const uint64_t *fine)
{
	struct prom_native_hist nh;

	if (fine && prom_native_of(fine, l->count, &nh) == 0)
		return native_spans(t, h, nh.index, nh.counts, nh.n, nh.zero_count);
	return native_from_classic(t, h, l);
}

/* The classic buckets, cumulative, without +Inf (optional: the count says it). */
static int classic(struct prom_proto *t, pb_histogram *h, const struct shm_latency *l)
{
	uint64_t cum = 0;

	h->bucket = arena_alloc(&t->arena, SHM_LAT_FINITE_BUCKETS * sizeof(*h->bucket));
	if (!h->bucket)
		return -ENOMEM;
	for (unsigned int j = 0; j < SHM_LAT_FINITE_BUCKETS; j++) {
		pb_bucket *b = arena_alloc(&t->arena, sizeof(*b));

		if (!b)
			return -ENOMEM;
		cum += l->bucket[j];
		io__prometheus__client__bucket__init(b);
		b->has_cumulative_count = b->has_upper_bound = 1;
		b->cumulative_count = cum;
		b->upper_bound = prom_le_seconds(j);
		h->bucket[j] = b;
	}
	h->n_bucket = SHM_LAT_FINITE_BUCKETS;
	return 0;
}

static int add_metric(struct prom_proto *t, pb_metric *m)
{
	if (t->fam.n_metric == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		pb_metric **bigger = arena_alloc(&t->arena, cap * sizeof(*bigger));

		if (!bigger)
			return -ENOMEM;
		if (t->fam.n_metric)
			memcpy(bigger, t->metrics, t->fam.n_metric * sizeof(*bigger));
		t->metrics = bigger;
		t->cap = cap;
	}
	t->metrics[t->fam.n_metric++] = m;
	t->fam.metric = t->metrics;
	return 0;
}

/* Packs the family so far, varint length first, and frees its messages. */
static int flush(struct prom_proto *t)
{
	struct sbuf_sink sink = { .base = { .append = sink_append }, .b = t->out };
	uint8_t prefix[10];
	size_t len, n;

	if (!t->open)
		return 0;
	/* A family with no sample has no message, as client libraries do. */
	if (t->fam.n_metric) {
		len = protobuf_c_message_get_packed_size(&t->fam.base);
		for (n = 0; len >= 0x80; len >>= 7)
			prefix[n++] = (uint8_t)(len | 0x80);
		prefix[n++] = (uint8_t)len;
		sbuf_append(t->out, (const char *)prefix, n);
		protobuf_c_message_pack_to_buffer(&t->fam.base, &sink.base);
	}
	arena_free(&t->arena);
	t->open = 0;
	t->metrics = NULL;
	t->cap = 0;
	return sbuf_error(t->out);
}

/* [s, e) with the text format's escapes (\\, \" and \n) undone. */
static char *unescape(struct arena *a, const char *s, const char *e)
{
	char *d = arena_alloc(a, (size_t)(e - s) + 1), *o = d;

	if (!d)
		return NULL;
	for (; s < e; s++) {
		if (*s == '\\' && s + 1 < e) {
			s++;
			*o++ = *s == 'n' ? '\n' : *s;
		} else {
			*o++ = *s;
		}
	}
	return d;
}

#define TYPE_BIT(type)	(1u << IO__PROMETHEUS__CLIENT__METRIC_TYPE__##type)

/*
 * A metric of the family being filled, whose type is one of the types
 * (TYPE_BIT), with the pairs of the label list text (as prom_label_put
 * writes it: name="value",..., values escaped), or NULL: the error is in
 * the output (-EINVAL: no family yet, or one of another type).
 */
static pb_metric *metric(struct prom_proto *t, unsigned int types, const char *labels)
{
	pb_label *pairs[PROTO_MAX_LABELS];
	const char *p = labels, *end = labels + strlen(labels);
	pb_metric *m;
	size_t n = 0;
	int err = -EINVAL;

	if (!t->open || !(types & (1u << t->fam.type)))
		goto fail;
	err = -ENOMEM;
	m = arena_alloc(&t->arena, sizeof(*m));
	if (!m)
		goto fail;
	io__prometheus__client__metric__init(m);
	while (p < end) {
		const char *eq = memchr(p, '=', (size_t)(end - p)), *v, *ve;

		err = -EINVAL;
		if (!eq || eq + 1 >= end || eq[1] != '"' || n == PROTO_MAX_LABELS)
			goto fail;
		v = ve = eq + 2;
		while (ve < end && *ve != '"')
			ve += *ve == '\\' ? 2 : 1;
		if (ve >= end)
			goto fail;
		err = -ENOMEM;
		pairs[n] = arena_alloc(&t->arena, sizeof(*pairs[n]));
		if (!pairs[n])
			goto fail;
		io__prometheus__client__label_pair__init(pairs[n]);
		pairs[n]->name = arena_strndup(&t->arena, p, (size_t)(eq - p));
		pairs[n]->value = unescape(&t->arena, v, ve);
		if (!pairs[n]->name || !pairs[n]->value)
			goto fail;
		n++;
		p = ve + 1;
		if (p < end && *p == ',')
			p++;
	}
	m->label = arena_alloc(&t->arena, (n + 1) * sizeof(*m->label));
	if (!m->label)
		goto fail;
	memcpy(m->label, pairs, n * sizeof(*pairs));
	m->n_label = n;
	return m;
fail:
	fail(t, err);
	return NULL;
}

void prom_proto_family(struct prom_proto *t, const char *name, enum prom_type type,
		       const char *help)
{
	static const Io__Prometheus__Client__MetricType types[] = {
		[PROM_COUNTER] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER,
		[PROM_GAUGE] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE,
		[PROM_SUMMARY] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__SUMMARY,
		[PROM_HISTOGRAM] = IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM,
	};
	int err = flush(t);

	if (err) {
		fail(t, err);
		return;
	}
	io__prometheus__client__metric_family__init(&t->fam);
	t->fam.name = arena_strndup(&t->arena, name, strlen(name));
	t->fam.help = arena_strndup(&t->arena, help, strlen(help));
	if (!t->fam.name || !t->fam.help) {
		fail(t, -ENOMEM);
		return;
	}
	t->fam.has_type = 1;
	t->fam.type = types[type];
	t->open = 1;
}

void prom_proto_value(struct prom_proto *t, const char *labels, double v)
{
	pb_metric *m = metric(t, TYPE_BIT(COUNTER) | TYPE_BIT(GAUGE), labels);
	int err = -ENOMEM;

	if (!m)
		return;
	if (t->fam.type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER) {
		m->counter = arena_alloc(&t->arena, sizeof(*m->counter));
		if (!m->counter)
			goto fail;
		io__prometheus__client__counter__init(m->counter);
		m->counter->has_value = 1;
		m->counter->value = v;
	} else {
		m->gauge = arena_alloc(&t->arena, sizeof(*m->gauge));
		if (!m->gauge)
			goto fail;
		io__prometheus__client__gauge__init(m->gauge);
		m->gauge->has_value = 1;
		m->gauge->value = v;
	}
	err = add_metric(t, m);
	if (!err)
		return;
fail:
	fail(t, err);
}

void prom_proto_summary(struct prom_proto *t, const char *labels, const struct shm_latency *l)
{
	static const double qs[2] = { 0.5, 0.99 };
	const uint64_t at[2] = { l->window_p50_ns, l->window_p99_ns };
	pb_metric *m = metric(t, TYPE_BIT(SUMMARY), labels);
	int err = -ENOMEM;

	if (!m)
		return;
	m->summary = arena_alloc(&t->arena, sizeof(*m->summary));
	if (!m->summary)
		goto fail;
	io__prometheus__client__summary__init(m->summary);
	m->summary->quantile = arena_alloc(&t->arena, 2 * sizeof(pb_quantile *));
	if (!m->summary->quantile)
		goto fail;
	for (unsigned int i = 0; i < 2; i++) {
		pb_quantile *q = arena_alloc(&t->arena, sizeof(*q));

		if (!q)
			goto fail;
		io__prometheus__client__quantile__init(q);
		q->has_quantile = q->has_value = 1;
		q->quantile = qs[i];
		/* No sample in the window: unknown, as client libraries say. */
		q->value = l->window_count ? prom_proto_seconds(at[i]) : NAN;
		m->summary->quantile[i] = q;
	}
	m->summary->n_quantile = 2;
	m->summary->has_sample_sum = m->summary->has_sample_count = 1;
	m->summary->sample_sum = prom_proto_seconds(l->sum_ns);
	m->summary->sample_count = l->count;
	err = add_metric(t, m);
	if (!err)
		return;
fail:
	fail(t, err);
}

void prom_proto_histogram(struct prom_proto *t, const char *labels, const struct shm_latency *l,
			  const uint64_t *fine)
{
	pb_metric *m = metric(t, TYPE_BIT(HISTOGRAM), labels);
	pb_histogram *h;
	int err = -ENOMEM;

	if (!m)
		return;
	h = m->histogram = arena_alloc(&t->arena, sizeof(*h));
	if (!h)
		goto fail;
	io__prometheus__client__histogram__init(h);
	h->has_sample_sum = h->has_sample_count = 1;
	h->sample_sum = prom_proto_seconds(l->sum_ns);
	h->sample_count = l->count;
	err = classic(t, h, l);
	if (!err)
		err = native(t, h, l, fine);
	if (!err)
		err = add_metric(t, m);
	if (!err)
		return;
fail:
	fail(t, err);
}

int prom_out_proto(struct prom_out *o, struct sbuf *out)
{
	o->b = out;
	o->pb = calloc(1, sizeof(*o->pb));
	if (!o->pb) {
		if (!out->error)
			out->error = -ENOMEM;
		return -ENOMEM;
	}
	o->pb->out = out;
	return 0;
}

int prom_out_proto_end(struct prom_out *o)
{
	int err;

	if (!o->pb)
		return sbuf_error(o->b);
	err = flush(o->pb);
	if (err)
		fail(o->pb, err);
	arena_free(&o->pb->arena);
	free(o->pb);
	o->pb = NULL;
	return sbuf_error(o->b);
}
