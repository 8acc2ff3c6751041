/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text of the catalog's families (see prom.h): one walk of the
 * table, family by family, row by row.  Runs unprivileged on the
 * exporter's request path: it reads only a private, validated snapshot and
 * writes into a bounded buffer, so bad data can truncate the output (the
 * caller answers 500) but never crash or grow memory without bound.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exporter/prom/prom.h"
#include "exporter/prom/prom_workload.h"

/* Set once at start-up (--per-pid-histograms), before any render. */
static int per_pid_histograms;

void prom_set_per_pid_histograms(int on)
{
	per_pid_histograms = on;
}

/*
 * Room for one label's value: every text label is bounded by the segment
 * field it comes from (a process name sanitised is at most three bytes a
 * byte), with a wide margin.  A value that fills it is refused rather than
 * cut short (check_prom's extreme-values test pins that none does).
 */
#define LABEL_TEXT_MAX	1024
/* A label set is never cut: it grows in its own buffer up to this. */
#define LABELS_LIMIT	(64u << 10)

static int add_labels(struct sbuf *b, const struct cat_label *l, unsigned int n,
		      const struct cat_input *in, const void *row)
{
	char v[LABEL_TEXT_MAX];
	int known;

	for (unsigned int i = 0; i < n; i++) {
		if (!l[i].name)
			continue;	/* feed only */
		if (cat_label_text(&l[i], in, row, v, sizeof(v), &known) < 0 ||
		    strnlen(v, sizeof(v)) >= sizeof(v) - 1 ||
		    prom_label_put(b, l[i].name, v) < 0)
			return -ENOENT;
	}
	return 0;
}

/*
 * The labels of one series: the row's, the entry's fixed ones, an info
 * entry's.  -ENOENT when the row cannot name its series (no series then).
 */
static int series_labels(struct sbuf *b, const struct cat_metric *m,
			 const struct cat_input *in, const void *row)
{
	const struct cat_rows_def *rd = &cat_rows_defs[m->rows];

	sbuf_reset(b);
	if (add_labels(b, rd->labels, rd->n_labels, in, row) < 0)
		return -ENOENT;
	if (m->prom_labels) {
		if (b->len)
			sbuf_append(b, ",", 1);
		sbuf_puts(b, m->prom_labels);
	}
	if (add_labels(b, m->labels, m->n_labels, in, row) < 0 || sbuf_error(b))
		return -ENOENT;
	return 0;
}

static void series(struct prom_out *o, const struct cat_metric *m, const char *labels,
		   const struct cat_input *in, const void *row)
{
	uint64_t v = cat_value(m, in, row);

	if (m->unit == CAT_UNIT_NS)
		prom_series_sec(o, m->prom, labels, v);
	else if (m->unit == CAT_UNIT_MS)
		prom_series_sec(o, m->prom, labels, v * 1000000ull);
	else
		prom_series_u64(o, m->prom, labels, v);
}

/* What a pass over a family's rows writes. */
enum rows_form { ROWS_VALUES, ROWS_SUMMARIES, ROWS_HISTOGRAMS };

/* One pass over the rows for the n entries of a family. */
static void rows_of(struct prom_out *o, const struct cat_metric *g, size_t n,
		    const struct cat_input *in, enum rows_form form)
{
	struct cat_rowset rs;
	struct sbuf labels;

	sbuf_init(&labels, LABELS_LIMIT, 0);
	if (sbuf_puts(&labels, "") < 0) {
		prom_out_fail(o, -ENOMEM);
		return;
	}
	cat_rowset(g->rows, in, &rs);
	for (uint32_t i = 0; i < rs.n; i++) {
		const void *row = cat_row(&rs, i);

		for (size_t k = 0; k < n; k++) {
			const struct cat_metric *m = &g[k];

			if (series_labels(&labels, m, in, row) < 0)
				continue;
			if (form != ROWS_VALUES) {
				const struct shm_latency *l = cat_latency(m, in, row);

				/* A process with no sample in a family has no series in it. */
				if ((m->flags & CAT_F_SAMPLED) && !l->count)
					continue;
				if (form == ROWS_SUMMARIES)
					prom_summary(o, m->prom, labels.data, l);
				else
					prom_histogram(o, m->prom_hist, labels.data, l,
						       cat_fine_buckets(m, row));
			} else if (m->known ? m->known(in, row) :
				   cat_value(m, in, row) || !(m->flags & (CAT_F_KNOWN | CAT_F_SPARSE))) {
				series(o, m, labels.data, in, row);
			}
		}
	}
	sbuf_free(&labels);
}

/* The family of the n entries at g, which share its name. */
static void family(struct prom_out *o, const struct cat_metric *g, size_t n,
		   const struct cat_input *in)
{
	/* Before a segment was seen, its age and generation have no family. */
	if ((g->flags & CAT_F_SEEN) && (!in->status || !in->status->seen))
		return;
	prom_family_of(o, g, 0);
	if (g->kind != CAT_LATENCY) {
		rows_of(o, g, n, in, ROWS_VALUES);
		return;
	}
	rows_of(o, g, n, in, ROWS_SUMMARIES);
	if (!g->prom_hist)
		return;	/* a summary only: see the family in catalog.c */
	prom_family_of(o, g, 1);
	if (g->rows != CAT_ROWS_PROCS || per_pid_histograms) {
		rows_of(o, g, n, in, ROWS_HISTOGRAMS);
		return;
	}
	prom_workload_histograms(o, g, n, in);
}

int prom_render_catalog(struct prom_out *o, const struct cat_input *in, int segment)
{
	for (size_t i = 0; i < cat_metrics_count;) {
		const struct cat_metric *g = &cat_metrics[i];
		size_t n = cat_family_size(i);

		i += n;
		if (!g->prom || cat_rows_segment(g->rows) != segment ||
		    g->rows == CAT_ROWS_ALERTS || g->rows == CAT_ROWS_WEBHOOKS)
			continue;
		family(o, g, n, in);
	}
	return prom_out_error(o);
}

int prom_render_data(struct prom_out *o, const struct shm_snapshot *snap)
{
	struct cat_input in = { .snap = snap };

	return prom_render_catalog(o, &in, 1);
}
