/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text format 0.0.4 into a bounded buffer (see prom_text.h).
 * Unprivileged, on the request path: no allocation beyond the buffer's
 * own, nothing fatal.
 */
#include <pthread.h>
#include <stdio.h>

#include "exporter/prom/prom_text.h"

static char le_label[SHM_LAT_FINITE_BUCKETS][32];	/* le="..." */
static pthread_once_t le_label_once = PTHREAD_ONCE_INIT;

static void le_label_init(void)
{
	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++)
		snprintf(le_label[i], sizeof(le_label[i]), "le=\"%.20s\"", prom_le(i));
}

/* le="..." of each finite bucket, as a label list's entry. */
static const char (*le_labels(void))[32]
{
	pthread_once(&le_label_once, le_label_init);
	return le_label;
}

static const char *const type_names[] = {
	[PROM_COUNTER] = "counter", [PROM_GAUGE] = "gauge",
	[PROM_SUMMARY] = "summary", [PROM_HISTOGRAM] = "histogram",
};

void prom_text_family(struct sbuf *b, const char *name, enum prom_type type, const char *help)
{
	sbuf_puts(b, "# HELP ");
	sbuf_puts(b, name);
	sbuf_append(b, " ", 1);
	sbuf_puts(b, help);
	sbuf_puts(b, "\n# TYPE ");
	sbuf_puts(b, name);
	sbuf_append(b, " ", 1);
	sbuf_puts(b, type_names[type]);
	sbuf_append(b, "\n", 1);
}

/* name+suffix{labels[,extra]} and a space; labels and extra may be "". */
static void series_head(struct sbuf *b, const char *name, const char *suffix,
			const char *labels, const char *extra)
{
	sbuf_puts(b, name);
	sbuf_puts(b, suffix);
	if (*labels || *extra) {
		sbuf_append(b, "{", 1);
		sbuf_puts(b, labels);
		if (*labels && *extra)
			sbuf_append(b, ",", 1);
		sbuf_puts(b, extra);
		sbuf_append(b, "}", 1);
	}
	sbuf_append(b, " ", 1);
}

static void series_u64(struct sbuf *b, const char *name, const char *suffix,
		       const char *labels, uint64_t v)
{
	series_head(b, name, suffix, labels, "");
	sbuf_u64(b, v);
	sbuf_append(b, "\n", 1);
}

static void series_sec(struct sbuf *b, const char *name, const char *suffix,
		       const char *labels, uint64_t ns)
{
	series_head(b, name, suffix, labels, "");
	sbuf_seconds(b, ns);
	sbuf_append(b, "\n", 1);
}

void prom_text_u64(struct sbuf *b, const char *name, const char *labels, uint64_t v)
{
	series_u64(b, name, "", labels, v);
}

void prom_text_sec(struct sbuf *b, const char *name, const char *labels, uint64_t ns)
{
	series_sec(b, name, "", labels, ns);
}

/* No sample in the window: the quantile is unknown, as client libraries say. */
static void quantile(struct sbuf *b, const char *name, const char *labels,
		     const char *q, const struct shm_latency *l, uint64_t ns)
{
	series_head(b, name, "", labels, q);
	if (l->window_count)
		sbuf_seconds(b, ns);
	else
		sbuf_puts(b, "NaN");
	sbuf_append(b, "\n", 1);
}

void prom_text_summary(struct sbuf *b, const char *name, const char *labels,
		       const struct shm_latency *l)
{
	quantile(b, name, labels, "quantile=\"" PROM_Q50 "\"", l, l->window_p50_ns);
	quantile(b, name, labels, "quantile=\"" PROM_Q99 "\"", l, l->window_p99_ns);
	series_sec(b, name, "_sum", labels, l->sum_ns);
	series_u64(b, name, "_count", labels, l->count);
}

void prom_text_histogram(struct sbuf *b, const char *name, const char *labels,
			 const struct shm_latency *l)
{
	const char (*le)[32] = le_labels();
	uint64_t cum = 0;

	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		cum += l->bucket[i];
		series_head(b, name, "_bucket", labels, le[i]);
		sbuf_u64(b, cum);
		sbuf_append(b, "\n", 1);
	}
	/* The reader checked that the buckets add up to count. */
	series_head(b, name, "_bucket", labels, "le=\"+Inf\"");
	sbuf_u64(b, l->count);
	sbuf_append(b, "\n", 1);
	series_sec(b, name, "_sum", labels, l->sum_ns);
	series_u64(b, name, "_count", labels, l->count);
}
