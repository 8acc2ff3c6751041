/* SPDX-License-Identifier: BSD-2-Clause */
/* Workload histograms from the segment's workload rows (see prom_workload.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_workload.h"
#include "exporter/prom_write.h"

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

void prom_workload_histograms(struct sbuf *b, const struct cat_metric *g, size_t n,
			      const struct cat_input *in, struct prom_natives *natives)
{
	const struct shm_workload *rows;
	char labels[PROM_LABELS_MAX];
	char (*keys)[WL_LABELS_MAX];
	uint32_t nrows;

	rows = shm_snapshot_rows(in->snap, SHM_TABLE_WORKLOADS, &nrows);
	if (!rows || !nrows)
		return;
	keys = calloc(nrows, sizeof(*keys));
	if (!keys) {
		b->error = b->error ? b->error : -ENOMEM;	/* a 500, not a histogram missing */
		return;
	}
	for (uint32_t i = 0; i < nrows; i++)
		workload_labels(keys[i], sizeof(keys[i]), &rows[i]);
	for (uint32_t i = 0; i < nrows; i++) {
		int seen = 0;

		/*
		 * Rows the validator tells apart can still read alike once
		 * their texts are checked (two unreadable names both say
		 * "unknown"), and a series written twice fails the scrape.
		 */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = strcmp(keys[j], keys[i]) == 0;
		if (seen)
			continue;
		for (size_t k = 0; k < n; k++) {
			const struct cat_metric *m = &g[k];
			int f = cat_proc_latency_family(m);
			const struct shm_workload_latency *wl;
			struct shm_latency l = { 0 };
			size_t o;

			if (f < 0)
				continue;
			wl = &rows[i].lat[f];
			if (!wl->count)
				continue;
			l.count = wl->count;
			l.sum_ns = wl->sum_ns;
			memcpy(l.bucket, wl->bucket, sizeof(l.bucket));
			snprintf(labels, sizeof(labels), "%s", keys[i]);
			o = strlen(labels);
			if (m->prom_labels)
				snprintf(labels + o, sizeof(labels) - o, "%s%s", o ? "," : "",
					 m->prom_labels);
			prom_histogram(b, m->prom_hist, labels, &l);
			/* Without memory for them, the render fails (500) rather than serve less. */
			if (natives && prom_natives_add(natives, m->prom_hist, labels, wl->count, wl->fine) < 0 &&
			    !b->error)
				b->error = -ENOMEM;
		}
	}
	free(keys);
}
