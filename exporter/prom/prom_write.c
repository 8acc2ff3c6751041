/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writers for Prometheus text format 0.0.4 into a bounded buffer (see
 * prom_write.h).  Unprivileged, on the request path: no allocation beyond
 * the buffer's own, nothing fatal.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exporter/prom/prom_write.h"

static const uint64_t lat_bounds_ns[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
static char le_text[SHM_LAT_FINITE_BUCKETS][24];
static char le_label[SHM_LAT_FINITE_BUCKETS][32];	/* le="..." */
static pthread_once_t le_once = PTHREAD_ONCE_INIT;

static void le_init(void)
{
	/* %g gives the short forms Prometheus clients use: 1e-07, 0.0025, 10. */
	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		snprintf(le_text[i], sizeof(le_text[i]), "%g", (double)lat_bounds_ns[i] / 1e9);
		snprintf(le_label[i], sizeof(le_label[i]), "le=\"%.20s\"", le_text[i]);
	}
}

const char *prom_le(unsigned int i)
{
	pthread_once(&le_once, le_init);
	return i < SHM_LAT_FINITE_BUCKETS ? le_text[i] : "+Inf";
}

int prom_label_add(char *buf, size_t len, const char *name, const char *value)
{
	size_t start = strnlen(buf, len), o = start;
	int n = snprintf(buf + o, len - o, "%s%s=\"", o ? "," : "", name);

	if (n < 0 || (size_t)n >= len - o)
		goto full;
	o += (size_t)n;
	for (const char *v = value; *v; v++) {
		int esc = *v == '\\' || *v == '"' || *v == '\n';

		if (o + (size_t)esc + 3 > len)	/* the character, '"' and NUL */
			goto full;
		if (esc)
			buf[o++] = '\\';
		buf[o++] = *v == '\n' ? 'n' : *v;
	}
	if (o + 2 > len)
		goto full;
	buf[o++] = '"';
	buf[o] = '\0';
	return 0;
full:
	buf[start] = '\0';
	return -ENOSPC;
}

int prom_label_put(struct sbuf *b, const char *name, const char *value)
{
	const char *v = value;

	if (b->len)
		sbuf_append(b, ",", 1);
	sbuf_puts(b, name);
	sbuf_append(b, "=\"", 2);
	while (*v) {
		size_t run = strcspn(v, "\\\"\n");

		sbuf_append(b, v, run);
		v += run;
		if (!*v)
			break;
		sbuf_append(b, *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : "\\n", 2);
		v++;
	}
	sbuf_append(b, "\"", 1);
	return sbuf_error(b);
}

void prom_family(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sbuf_puts(b, "# HELP ");
	sbuf_puts(b, name);
	sbuf_append(b, " ", 1);
	sbuf_puts(b, help);
	sbuf_puts(b, "\n# TYPE ");
	sbuf_puts(b, name);
	sbuf_append(b, " ", 1);
	sbuf_puts(b, type);
	sbuf_append(b, "\n", 1);
}

void prom_family_of(struct sbuf *b, const struct cat_metric *m, int histogram)
{
	if (m->kind != CAT_LATENCY) {
		prom_family(b, m->prom, m->kind == CAT_COUNTER ? "counter" : "gauge", m->help);
	} else if (histogram) {
		prom_family(b, m->prom_hist, "histogram", m->help);
	} else {
		sbuf_printf(b, "# HELP %s %.*s; quantiles over the summary window.\n"
			    "# TYPE %s summary\n", m->prom, (int)strlen(m->help) - 1, m->help,
			    m->prom);
	}
}

/* name+suffix{labels[,extra]} and a space; labels and extra may be "". */
void prom_series_head(struct sbuf *b, const char *name, const char *suffix,
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

void prom_series_u64(struct sbuf *b, const char *name, const char *suffix,
		       const char *labels, uint64_t v)
{
	prom_series_head(b, name, suffix, labels, "");
	sbuf_u64(b, v);
	sbuf_append(b, "\n", 1);
}

void prom_series_sec(struct sbuf *b, const char *name, const char *suffix,
		       const char *labels, uint64_t ns)
{
	prom_series_head(b, name, suffix, labels, "");
	sbuf_seconds(b, ns);
	sbuf_append(b, "\n", 1);
}

/* No sample in the window: the quantile is unknown, as client libraries say. */
static void prom_quantile(struct sbuf *b, const char *name, const char *labels,
			  const char *quantile, const struct shm_latency *l, uint64_t ns)
{
	prom_series_head(b, name, "", labels, quantile);
	if (l->window_count)
		sbuf_seconds(b, ns);
	else
		sbuf_puts(b, "NaN");
	sbuf_append(b, "\n", 1);
}

void prom_summary(struct sbuf *b, const char *name, const char *labels,
		    const struct shm_latency *l)
{
	prom_quantile(b, name, labels, "quantile=\"" PROM_Q50 "\"", l, l->window_p50_ns);
	prom_quantile(b, name, labels, "quantile=\"" PROM_Q99 "\"", l, l->window_p99_ns);
	prom_series_sec(b, name, "_sum", labels, l->sum_ns);
	prom_series_u64(b, name, "_count", labels, l->count);
}

void prom_histogram(struct sbuf *b, const char *name, const char *labels,
		      const struct shm_latency *l)
{
	uint64_t cum = 0;

	pthread_once(&le_once, le_init);
	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		cum += l->bucket[i];
		prom_series_head(b, name, "_bucket", labels, le_label[i]);
		sbuf_u64(b, cum);
		sbuf_append(b, "\n", 1);
	}
	/* The reader checked that the buckets add up to count. */
	prom_series_head(b, name, "_bucket", labels, "le=\"+Inf\"");
	sbuf_u64(b, l->count);
	sbuf_append(b, "\n", 1);
	prom_series_sec(b, name, "_sum", labels, l->sum_ns);
	prom_series_u64(b, name, "_count", labels, l->count);
}
