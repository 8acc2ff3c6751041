/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Text exposition to delimited protobuf (see prom_proto.h).  One pass over
 * the lines; a family's messages live in an arena until it is packed.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom/prom_proto.h"
#include "proto/io/prometheus/client/metrics.pb-c.h"

typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;
typedef Io__Prometheus__Client__LabelPair pb_label;
typedef Io__Prometheus__Client__Histogram pb_histogram;
typedef Io__Prometheus__Client__Bucket pb_bucket;
typedef Io__Prometheus__Client__BucketSpan pb_span;
typedef Io__Prometheus__Client__Quantile pb_quantile;

/* Classic buckets a histogram may have: the segment's 28, with room. */
#define PROTO_MAX_BUCKETS	64
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

enum fam_type { FAM_NONE, FAM_COUNTER, FAM_GAUGE, FAM_SUMMARY, FAM_HISTOGRAM, FAM_UNTYPED };

struct tx {
	struct sbuf *out;
	struct arena arena;
	pb_family fam;
	enum fam_type type;
	size_t name_len;
	pb_metric **metrics;		/* in the arena */
	size_t cap;
	pb_metric *cur;			/* a summary or histogram being filled */
	const char *cur_key;		/* its labels, le and quantile aside */
	size_t cur_key_len;
	pb_quantile *q[2];
	size_t nq;
	double le[PROTO_MAX_BUCKETS];
	uint64_t cum[PROTO_MAX_BUCKETS];
	size_t nle;
	const struct prom_natives *natives;	/* finer native buckets, NULL: none */
	size_t natives_at;			/* where to look next */
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

/*
 * Fills h's native part at PROM_PROTO_SCHEMA: k buckets with samples,
 * idx increasing, n[j] samples in bucket idx[j]; zero samples of 0.
 */
static int native_spans(struct tx *t, pb_histogram *h, const int32_t *idx, const uint64_t *n,
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
static int native_from_classic(struct tx *t, pb_histogram *h, uint64_t count)
{
	int32_t idx[PROTO_MAX_BUCKETS + 1];
	uint64_t n[PROTO_MAX_BUCKETS + 1];
	size_t k = 0;
	uint64_t prev = 0;

	for (size_t j = 0; j < t->nle; j++) {
		if (t->cum[j] < prev || !(t->le[j] > 0))
			return -EINVAL;
		if (t->cum[j] > prev) {
			idx[k] = prom_proto_native_index(t->le[j]);
			n[k++] = t->cum[j] - prev;
		}
		prev = t->cum[j];
	}
	if (count < prev)
		return -EINVAL;
	if (count > prev) {
		idx[k] = t->nle ? prom_proto_native_index(t->le[t->nle - 1]) + 1 : 0;
		n[k++] = count - prev;
	}
	return native_spans(t, h, idx, n, k, 0);
}

/* The series' finer native buckets when the render kept them (prom_native.h). */
static int native(struct tx *t, pb_histogram *h, uint64_t count)
{
	const struct prom_native_hist *fine;

	fine = prom_natives_find(t->natives, &t->natives_at, t->fam.name, t->name_len,
				 t->cur_key, t->cur_key_len);
	if (fine && fine->count == count)
		return native_spans(t, h, fine->index, fine->counts, fine->n, fine->zero_count);
	return native_from_classic(t, h, count);
}

/* The classic buckets, without +Inf (optional: _count says it). */
static int classic(struct tx *t, pb_histogram *h)
{
	h->bucket = arena_alloc(&t->arena, (t->nle + 1) * sizeof(*h->bucket));
	if (!h->bucket)
		return -ENOMEM;
	for (size_t j = 0; j < t->nle; j++) {
		pb_bucket *b = arena_alloc(&t->arena, sizeof(*b));

		if (!b)
			return -ENOMEM;
		io__prometheus__client__bucket__init(b);
		b->has_cumulative_count = b->has_upper_bound = 1;
		b->cumulative_count = t->cum[j];
		b->upper_bound = t->le[j];
		h->bucket[j] = b;
	}
	h->n_bucket = t->nle;
	return 0;
}

static int add_metric(struct tx *t, pb_metric *m)
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
static int flush(struct tx *t)
{
	struct sbuf_sink sink = { .base = { .append = sink_append }, .b = t->out };
	uint8_t prefix[10];
	size_t len, n;

	if (t->type == FAM_NONE)
		return 0;
	if (t->cur)
		return -EINVAL;	/* a summary or histogram without its _count */
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
	t->type = FAM_NONE;
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

static int new_family(struct tx *t, const char *name, size_t nlen, const char *help,
		      size_t hlen, enum fam_type type)
{
	int err = flush(t);

	if (err)
		return err;
	io__prometheus__client__metric_family__init(&t->fam);
	t->fam.name = arena_strndup(&t->arena, name, nlen);
	t->fam.help = help ? unescape(&t->arena, help, help + hlen) : NULL;
	if (!t->fam.name || (help && !t->fam.help))
		return -ENOMEM;
	t->name_len = nlen;
	t->type = type;
	t->fam.has_type = 1;
	t->fam.type = type == FAM_COUNTER ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER :
		      type == FAM_GAUGE ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE :
		      type == FAM_SUMMARY ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__SUMMARY :
		      type == FAM_HISTOGRAM ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM :
		      IO__PROMETHEUS__CLIENT__METRIC_TYPE__UNTYPED;
	return 0;
}

static enum fam_type type_of(const char *s, const char *e)
{
	static const struct { const char *name; enum fam_type t; } types[] = {
		{ "counter", FAM_COUNTER }, { "gauge", FAM_GAUGE },
		{ "summary", FAM_SUMMARY }, { "histogram", FAM_HISTOGRAM },
		{ "untyped", FAM_UNTYPED },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((size_t)(e - s) == strlen(types[i].name) &&
		    memcmp(s, types[i].name, (size_t)(e - s)) == 0)
			return types[i].t;
	return FAM_NONE;
}

/*
 * "# HELP name text" then "# TYPE name type": one family.  Other comments
 * are skipped.  HELP is remembered until its TYPE line.
 */
static int comment(struct tx *t, const char *s, const char *e, const char **help,
		   size_t *hlen, const char **hname, size_t *hnlen)
{
	const char *name, *sp;

	if (e - s > 7 && memcmp(s, "# HELP ", 7) == 0) {
		name = s + 7;
		sp = memchr(name, ' ', (size_t)(e - name));
		*hname = name;
		*hnlen = sp ? (size_t)(sp - name) : (size_t)(e - name);
		*help = sp ? sp + 1 : e;
		*hlen = sp ? (size_t)(e - sp - 1) : 0;
		return 0;
	}
	if (e - s > 7 && memcmp(s, "# TYPE ", 7) == 0) {
		enum fam_type type;

		name = s + 7;
		sp = memchr(name, ' ', (size_t)(e - name));
		if (!sp || (type = type_of(sp + 1, e)) == FAM_NONE)
			return -EINVAL;
		if (!*hname || *hnlen != (size_t)(sp - name) || memcmp(*hname, name, *hnlen))
			*help = NULL, *hlen = 0;
		return new_family(t, name, (size_t)(sp - name), *help, *hlen, type);
	}
	return 0;
}

struct sample {
	const char *name;
	size_t name_len;
	const char *labels, *labels_end;	/* between the braces */
	const char *value, *value_end;
};

static int parse_sample(const char *s, const char *e, struct sample *x)
{
	const char *p = s;

	memset(x, 0, sizeof(*x));
	while (p < e && *p != '{' && *p != ' ')
		p++;
	x->name = s;
	x->name_len = (size_t)(p - s);
	if (!x->name_len || p == e)
		return -EINVAL;
	if (*p == '{') {
		int quoted = 0;

		x->labels = ++p;
		for (; p < e; p++) {
			if (quoted && *p == '\\')
				p++;
			else if (*p == '"')
				quoted = !quoted;
			else if (!quoted && *p == '}')
				break;
		}
		if (p >= e)
			return -EINVAL;
		x->labels_end = p++;
	}
	if (p >= e || *p != ' ')
		return -EINVAL;
	x->value = p + 1;
	x->value_end = memchr(x->value, ' ', (size_t)(e - x->value));
	if (!x->value_end)
		x->value_end = e;
	return x->value < x->value_end ? 0 : -EINVAL;
}

static int number(const char *s, const char *e, double *v)
{
	char buf[64], *end;

	if ((size_t)(e - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t)(e - s));
	buf[e - s] = '\0';
	*v = strtod(buf, &end);
	return *end ? -EINVAL : 0;
}

static int count_of(const char *s, const char *e, uint64_t *v)
{
	char buf[32], *end;

	if ((size_t)(e - s) >= sizeof(buf) || s == e || *s < '0' || *s > '9')
		return -EINVAL;
	memcpy(buf, s, (size_t)(e - s));
	buf[e - s] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

/*
 * The labels of x as pairs, except le and quantile, whose value goes to
 * *special (*has_special 0 when none); *key receives the kept text, what
 * tells one series of a summary or histogram from the next.  With m NULL,
 * only the key and the special value.
 */
static int labels_of(struct tx *t, const struct sample *x, pb_metric *m, double *special,
		     int *has_special, const char **key, size_t *key_len)
{
	pb_label *pairs[PROTO_MAX_LABELS];
	const char *p = x->labels;
	size_t n = 0;

	*has_special = 0;
	*key = x->labels;
	*key_len = 0;
	while (p && p < x->labels_end) {
		const char *eq = memchr(p, '=', (size_t)(x->labels_end - p)), *v, *ve;

		if (!eq || eq + 1 >= x->labels_end || eq[1] != '"')
			return -EINVAL;
		v = ve = eq + 2;
		while (ve < x->labels_end && *ve != '"')
			ve += *ve == '\\' ? 2 : 1;
		if (ve >= x->labels_end)
			return -EINVAL;
		if ((eq - p == 2 && memcmp(p, "le", 2) == 0) ||
		    (eq - p == 8 && memcmp(p, "quantile", 8) == 0)) {
			if (number(v, ve, special) < 0)
				return -EINVAL;
			*has_special = 1;
		} else if (!m) {
			*key_len = (size_t)(ve + 1 - x->labels);
		} else {
			if (n == PROTO_MAX_LABELS)
				return -EINVAL;
			pairs[n] = arena_alloc(&t->arena, sizeof(*pairs[n]));
			if (!pairs[n])
				return -ENOMEM;
			io__prometheus__client__label_pair__init(pairs[n]);
			pairs[n]->name = arena_strndup(&t->arena, p, (size_t)(eq - p));
			pairs[n]->value = unescape(&t->arena, v, ve);
			if (!pairs[n]->name || !pairs[n]->value)
				return -ENOMEM;
			n++;
			*key_len = (size_t)(ve + 1 - x->labels);
		}
		p = ve + 1;
		if (p < x->labels_end && *p == ',')
			p++;
	}
	if (!m)
		return 0;
	m->label = arena_alloc(&t->arena, (n + 1) * sizeof(*m->label));
	if (!m->label)
		return -ENOMEM;
	memcpy(m->label, pairs, n * sizeof(*pairs));
	m->n_label = n;
	return 0;
}

static int suffix_is(const struct sample *x, size_t base, const char *suffix)
{
	size_t n = strlen(suffix);

	return x->name_len == base + n && memcmp(x->name + base, suffix, n) == 0;
}

/* A summary's or histogram's line: adds to the current series or starts one. */
static int compound(struct tx *t, const struct sample *x)
{
	size_t base = t->name_len;
	int hist = t->type == FAM_HISTOGRAM;
	pb_metric *first = NULL;
	const char *key;
	size_t key_len;
	double special;
	int has_special, err;

	/* The first line of a series gives its labels; the others only compare. */
	if (!t->cur) {
		first = arena_alloc(&t->arena, sizeof(*first));
		if (!first)
			return -ENOMEM;
		io__prometheus__client__metric__init(first);
	}
	err = labels_of(t, x, first, &special, &has_special, &key, &key_len);
	if (err)
		return err;
	if (t->cur && (key_len != t->cur_key_len ||
		       (key_len && memcmp(key, t->cur_key, key_len))))
		return -EINVAL;		/* the previous series ended without _count */
	if (!t->cur) {
		t->cur = first;
		t->cur_key = key;
		t->cur_key_len = key_len;
		t->nq = 0;
		t->nle = 0;
		if (hist) {
			t->cur->histogram = arena_alloc(&t->arena, sizeof(pb_histogram));
			if (!t->cur->histogram)
				return -ENOMEM;
			io__prometheus__client__histogram__init(t->cur->histogram);
		} else {
			t->cur->summary = arena_alloc(&t->arena, sizeof(*t->cur->summary));
			if (!t->cur->summary)
				return -ENOMEM;
			io__prometheus__client__summary__init(t->cur->summary);
		}
	}
	if (!hist && x->name_len == base && has_special) {
		pb_quantile *q = arena_alloc(&t->arena, sizeof(*q));

		if (!q || t->nq == sizeof(t->q) / sizeof(t->q[0]))
			return q ? -EINVAL : -ENOMEM;
		io__prometheus__client__quantile__init(q);
		q->has_quantile = q->has_value = 1;
		q->quantile = special;
		t->q[t->nq++] = q;
		return number(x->value, x->value_end, &q->value);
	}
	if (hist && suffix_is(x, base, "_bucket") && has_special) {
		if (isinf(special))
			return 0;	/* +Inf is _count */
		if (t->nle == PROTO_MAX_BUCKETS)
			return -EINVAL;
		t->le[t->nle] = special;
		return count_of(x->value, x->value_end, &t->cum[t->nle++]);
	}
	if (suffix_is(x, base, "_sum")) {
		double v = 0;

		err = number(x->value, x->value_end, &v);
		if (hist) {
			t->cur->histogram->has_sample_sum = 1;
			t->cur->histogram->sample_sum = v;
		} else {
			t->cur->summary->has_sample_sum = 1;
			t->cur->summary->sample_sum = v;
		}
		return err;
	}
	if (suffix_is(x, base, "_count")) {
		uint64_t n;
		pb_metric *m = t->cur;

		err = count_of(x->value, x->value_end, &n);
		if (err)
			return err;
		if (hist) {
			m->histogram->has_sample_count = 1;
			m->histogram->sample_count = n;
			err = classic(t, m->histogram);
			if (!err)
				err = native(t, m->histogram, n);
		} else {
			m->summary->has_sample_count = 1;
			m->summary->sample_count = n;
			m->summary->n_quantile = t->nq;
			m->summary->quantile = arena_alloc(&t->arena, (t->nq + 1) * sizeof(pb_quantile *));
			if (!m->summary->quantile)
				return -ENOMEM;
			memcpy(m->summary->quantile, t->q, t->nq * sizeof(pb_quantile *));
		}
		t->cur = NULL;
		return err ? err : add_metric(t, m);
	}
	return -EINVAL;
}

/* A counter's, gauge's or untyped line: one metric. */
static int simple(struct tx *t, const struct sample *x)
{
	pb_metric *m = arena_alloc(&t->arena, sizeof(*m));
	const char *key;
	size_t key_len;
	double special, v;
	int has_special, err;

	if (!m)
		return -ENOMEM;
	io__prometheus__client__metric__init(m);
	err = labels_of(t, x, m, &special, &has_special, &key, &key_len);
	if (!err)
		err = number(x->value, x->value_end, &v);
	if (err)
		return err;
	if (has_special)
		return -EINVAL;	/* le or quantile on a plain metric: not ours */
	if (t->type == FAM_COUNTER) {
		m->counter = arena_alloc(&t->arena, sizeof(*m->counter));
		if (!m->counter)
			return -ENOMEM;
		io__prometheus__client__counter__init(m->counter);
		m->counter->has_value = 1;
		m->counter->value = v;
	} else if (t->type == FAM_GAUGE) {
		m->gauge = arena_alloc(&t->arena, sizeof(*m->gauge));
		if (!m->gauge)
			return -ENOMEM;
		io__prometheus__client__gauge__init(m->gauge);
		m->gauge->has_value = 1;
		m->gauge->value = v;
	} else {
		m->untyped = arena_alloc(&t->arena, sizeof(*m->untyped));
		if (!m->untyped)
			return -ENOMEM;
		io__prometheus__client__untyped__init(m->untyped);
		m->untyped->has_value = 1;
		m->untyped->value = v;
	}
	return add_metric(t, m);
}

static int sample(struct tx *t, const char *s, const char *e)
{
	struct sample x;
	int err = parse_sample(s, e, &x);

	if (err)
		return err;
	/* A sample outside the family before it: an untyped family of its own. */
	if (t->type == FAM_NONE || x.name_len < t->name_len ||
	    memcmp(x.name, t->fam.name, t->name_len) != 0 ||
	    ((t->type != FAM_SUMMARY && t->type != FAM_HISTOGRAM) &&
	     x.name_len != t->name_len)) {
		err = new_family(t, x.name, x.name_len, NULL, 0, FAM_UNTYPED);
		if (err)
			return err;
	}
	if (t->type == FAM_SUMMARY || t->type == FAM_HISTOGRAM)
		return compound(t, &x);
	return simple(t, &x);
}

int prom_proto_from_text(struct sbuf *out, const char *text, size_t len,
			 const struct prom_natives *natives)
{
	struct tx t = { .out = out, .natives = natives };
	const char *p = text, *end = text + len;
	const char *help = NULL, *hname = NULL;
	size_t hlen = 0, hnlen = 0;
	int err = 0;

	while (!err && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;

		if (e > p)
			err = *p == '#' ? comment(&t, p, e, &help, &hlen, &hname, &hnlen) :
					  sample(&t, p, e);
		p = nl ? nl + 1 : end;
	}
	if (!err)
		err = flush(&t);
	arena_free(&t.arena);
	return err ? err : sbuf_error(out);
}
