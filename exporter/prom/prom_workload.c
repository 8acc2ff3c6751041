/* SPDX-License-Identifier: BSD-2-Clause */
/* Workload histograms from the segment's workload rows (see prom_workload.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom/prom_workload.h"
#include "exporter/prom/prom_write.h"

/* A workload's labels, checked and escaped: "" for the node, or when they do not fit. */
static void workload_labels(char *buf, size_t len, const struct shm_workload *w)
{
	char text[SHM_ID_POD_LEN];
	const char *name;

	buf[0] = '\0';
	for (unsigned int i = 0; cat_workload_label(w, i, &name, text, sizeof(text)) == 0; i++)
		if (prom_label_add(buf, len, name, text) < 0) {
			buf[0] = '\0';
			return;
		}
}

/* Longest label list of a workload: namespace and pod, escaped. */
#define WL_LABELS_MAX	1024u

/*
 * acc += l when no count overflows, so that the buckets still add up to
 * the count (prom_histogram relies on it); else acc is left as it was
 * (a hostile segment's rows are not worth a wrong sum).
 */
static void add_latency(struct shm_workload_latency *acc, const struct shm_workload_latency *l)
{
	struct shm_workload_latency t;
	int over = 0;

	over |= __builtin_add_overflow(acc->count, l->count, &t.count);
	over |= __builtin_add_overflow(acc->sum_ns, l->sum_ns, &t.sum_ns);
	for (unsigned int b = 0; b < SHM_LAT_BUCKETS; b++)
		over |= __builtin_add_overflow(acc->bucket[b], l->bucket[b], &t.bucket[b]);
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		over |= __builtin_add_overflow(acc->fine[b], l->fine[b], &t.fine[b]);
	if (!over)
		*acc = t;
}

void prom_workload_histograms(struct prom_out *o, const struct cat_metric *g, size_t n,
			      const struct cat_input *in)
{
	struct shm_workload_latency sum;
	const struct shm_workload *rows;
	char labels[PROM_LABELS_MAX];
	char (*keys)[WL_LABELS_MAX];
	uint32_t nrows;

	rows = shm_snapshot_rows(in->snap, SHM_TABLE_WORKLOADS, &nrows);
	if (!rows || !nrows)
		return;
	keys = calloc(nrows, sizeof(*keys));
	if (!keys) {
		prom_out_fail(o, -ENOMEM);	/* a 500, not a histogram missing */
		return;
	}
	for (uint32_t i = 0; i < nrows; i++)
		workload_labels(keys[i], sizeof(keys[i]), &rows[i]);
	for (uint32_t i = 0; i < nrows; i++) {
		int seen = 0;

		/*
		 * Rows the validator tells apart can still read alike once
		 * their texts are checked (two unreadable names both say
		 * "unknown"): a series written twice fails the scrape, so the
		 * first of them writes their sum, and the others nothing.
		 */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = strcmp(keys[j], keys[i]) == 0;
		if (seen)
			continue;
		for (size_t k = 0; k < n; k++) {
			const struct cat_metric *m = &g[k];
			int f = cat_proc_latency_family(m);
			struct shm_latency l = { 0 };
			size_t at;

			if (f < 0)
				continue;
			sum = rows[i].lat[f];
			for (uint32_t j = i + 1; j < nrows; j++)
				if (strcmp(keys[j], keys[i]) == 0)
					add_latency(&sum, &rows[j].lat[f]);
			if (!sum.count)
				continue;
			l.count = sum.count;
			l.sum_ns = sum.sum_ns;
			memcpy(l.bucket, sum.bucket, sizeof(l.bucket));
			snprintf(labels, sizeof(labels), "%s", keys[i]);
			at = strlen(labels);
			if (m->prom_labels)
				snprintf(labels + at, sizeof(labels) - at, "%s%s", at ? "," : "",
					 m->prom_labels);
			prom_histogram(o, m->prom_hist, labels, &l, sum.fine);
		}
	}
	free(keys);
}
