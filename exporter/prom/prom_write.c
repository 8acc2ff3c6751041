/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The series model (see prom_write.h): each call goes to the exposition's
 * encoder, text (prom_text.c) or protobuf (prom_proto.c).  Unprivileged,
 * on the request path: nothing fatal, errors stick in the output.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exporter/prom/prom_proto.h"
#include "exporter/prom/prom_text.h"
#include "exporter/prom/prom_write.h"

static const uint64_t lat_bounds_ns[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
static char le_text[SHM_LAT_FINITE_BUCKETS][24];
static pthread_once_t le_once = PTHREAD_ONCE_INIT;

static void le_init(void)
{
	/* %g gives the short forms Prometheus clients use: 1e-07, 0.0025, 10. */
	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		snprintf(le_text[i], sizeof(le_text[i]), "%g", (double)lat_bounds_ns[i] / 1e9);
	}
}

const char *prom_le(unsigned int i)
{
	pthread_once(&le_once, le_init);
	return i < SHM_LAT_FINITE_BUCKETS ? le_text[i] : "+Inf";
}

double prom_le_seconds(unsigned int i)
{
	return i < SHM_LAT_FINITE_BUCKETS ? (double)lat_bounds_ns[i] / 1e9 : INFINITY;
}

void prom_out_fail(struct prom_out *o, int err)
{
	if (!o->b->error)
		o->b->error = err;
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

void prom_comment(struct prom_out *o, const char *head, const char *text)
{
	if (o->pb)
		return;
	sbuf_puts(o->b, "# ");
	sbuf_puts(o->b, head);
	sbuf_puts(o->b, text);
	sbuf_append(o->b, "\n", 1);
}

void prom_family(struct prom_out *o, const char *name, enum prom_type type, const char *help)
{
	if (o->pb)
		prom_proto_family(o->pb, name, type, help);
	else
		prom_text_family(o->b, name, type, help);
}

void prom_family_of(struct prom_out *o, const struct cat_metric *m, int histogram)
{
	struct sbuf help;

	if (m->kind != CAT_LATENCY) {
		prom_family(o, m->prom, m->kind == CAT_COUNTER ? PROM_COUNTER : PROM_GAUGE,
			    m->help);
		return;
	}
	if (histogram) {
		prom_family(o, m->prom_hist, PROM_HISTOGRAM, m->help);
		return;
	}
	/* The catalog's help ends in a full stop; the window's note follows it. */
	sbuf_init(&help, 64u << 10, 0);
	sbuf_printf(&help, "%.*s; quantiles over the summary window.",
		    (int)strlen(m->help) - 1, m->help);
	if (sbuf_error(&help))
		prom_out_fail(o, sbuf_error(&help));
	else
		prom_family(o, m->prom, PROM_SUMMARY, help.data);
	sbuf_free(&help);
}

void prom_series_u64(struct prom_out *o, const char *name, const char *labels, uint64_t v)
{
	if (o->pb)
		prom_proto_value(o->pb, labels, (double)v);
	else
		prom_text_u64(o->b, name, labels, v);
}

void prom_series_sec(struct prom_out *o, const char *name, const char *labels, uint64_t ns)
{
	if (o->pb)
		prom_proto_value(o->pb, labels, prom_proto_seconds(ns));
	else
		prom_text_sec(o->b, name, labels, ns);
}

void prom_summary(struct prom_out *o, const char *name, const char *labels,
		  const struct shm_latency *l)
{
	if (o->pb)
		prom_proto_summary(o->pb, labels, l);
	else
		prom_text_summary(o->b, name, labels, l);
}

void prom_histogram(struct prom_out *o, const char *name, const char *labels,
		    const struct shm_latency *l, const uint64_t *fine)
{
	if (o->pb)
		prom_proto_histogram(o->pb, labels, l, fine);
	else
		prom_text_histogram(o->b, name, labels, l);
}
