/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-workload sums of per-process histograms (see prom_workload.h).
 * Buckets add exactly, so a workload's histogram is the one its
 * processes' samples would have made together.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_workload.h"
#include "exporter/prom_write.h"

struct prom_wl_row {
	const char *key;		/* its label list, in labels */
	size_t off;			/* the same as an offset, while labels grows */
	uint32_t row;			/* index in the process rows */
};

/* Longest label list of a workload: namespace and pod, escaped. */
#define WL_LABELS_MAX	1024u

static int by_labels(const void *a, const void *b)
{
	const struct prom_wl_row *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->row > y->row) - (x->row < y->row);
}

static void workload_labels(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	struct cat_workload w;

	buf[0] = '\0';
	cat_proc_workload(in, row, &w);
	switch (w.kind) {
	case CAT_WORKLOAD_POD:
		if (prom_label_add(buf, len, "namespace", w.a) < 0 ||
		    prom_label_add(buf, len, "pod", w.b) < 0)
			buf[0] = '\0';
		break;
	/*
	 * Each label is named as on zernel_process_info, so a workload's
	 * histogram joins its processes; none is "job" or "instance", which
	 * Prometheus gives every series of the target.
	 */
	case CAT_WORKLOAD_POD_UID:
		if (prom_label_add(buf, len, "pod_uid", w.a) < 0)
			buf[0] = '\0';
		break;
	case CAT_WORKLOAD_CONTAINER:
		if (prom_label_add(buf, len, "container_id", w.a) < 0)
			buf[0] = '\0';
		break;
	case CAT_WORKLOAD_SLURM_JOB:
		if (prom_label_add(buf, len, "slurm_job", w.a) < 0)
			buf[0] = '\0';
		break;
	case CAT_WORKLOAD_RUN:
		if (prom_label_add(buf, len, "torchelastic_run_id", w.a) < 0)
			buf[0] = '\0';
		break;
	default:
		break;
	}
}

int prom_workloads_build(struct prom_workloads *w, const struct cat_input *in)
{
	struct cat_rowset rs;
	char labels[WL_LABELS_MAX];
	size_t used = 0, cap;

	memset(w, 0, sizeof(*w));
	w->ready = 1;
	cat_rowset(CAT_ROWS_PROCS, in, &rs);
	if (!rs.n)
		return 0;
	/* Most label lists are short: start small, grow by doubling. */
	cap = (size_t)rs.n * 64;
	w->rows = calloc(rs.n, sizeof(*w->rows));
	w->labels = malloc(cap);
	if (!w->rows || !w->labels)
		goto nomem;
	for (uint32_t i = 0; i < rs.n; i++) {
		size_t l;

		workload_labels(labels, sizeof(labels), in, cat_row(&rs, i));
		l = strlen(labels) + 1;
		if (used + l > cap) {
			char *bigger;

			while (used + l > cap)
				cap *= 2;
			bigger = realloc(w->labels, cap);
			if (!bigger)
				goto nomem;
			w->labels = bigger;
		}
		memcpy(w->labels + used, labels, l);
		w->rows[i] = (struct prom_wl_row){ .row = i, .off = used };
		used += l;
	}
	for (uint32_t i = 0; i < rs.n; i++)
		w->rows[i].key = w->labels + w->rows[i].off;
	qsort(w->rows, rs.n, sizeof(*w->rows), by_labels);
	w->n = rs.n;
	return 0;
nomem:
	prom_workloads_free(w);
	w->ready = 1;
	return -ENOMEM;
}

void prom_workloads_free(struct prom_workloads *w)
{
	free(w->rows);
	free(w->labels);
	memset(w, 0, sizeof(*w));
}

/* Adds l into acc, saturating: a hostile segment cannot wrap a count. */
static void add_latency(struct shm_latency *acc, const struct shm_latency *l)
{
	if (__builtin_add_overflow(acc->count, l->count, &acc->count))
		acc->count = UINT64_MAX;
	if (__builtin_add_overflow(acc->sum_ns, l->sum_ns, &acc->sum_ns))
		acc->sum_ns = UINT64_MAX;
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
		if (__builtin_add_overflow(acc->bucket[i], l->bucket[i], &acc->bucket[i]))
			acc->bucket[i] = UINT64_MAX;
}

void prom_workload_histograms(struct sbuf *b, const struct cat_metric *g, size_t n,
			      const struct cat_input *in, const struct prom_workloads *w)
{
	struct cat_rowset rs;
	char labels[PROM_LABELS_MAX];
	struct shm_latency acc;

	cat_rowset(CAT_ROWS_PROCS, in, &rs);
	if (rs.n != w->n)
		return;		/* built for another snapshot: nothing rather than wrong */
	for (uint32_t i = 0; i < w->n;) {
		const char *key = w->rows[i].key;
		uint32_t end = i + 1;

		while (end < w->n && strcmp(w->rows[end].key, key) == 0)
			end++;
		for (size_t k = 0; k < n; k++) {
			const struct cat_metric *m = &g[k];
			size_t o;

			memset(&acc, 0, sizeof(acc));
			for (uint32_t r = i; r < end; r++)
				add_latency(&acc, cat_latency(m, in, cat_row(&rs, w->rows[r].row)));
			if (!acc.count)
				continue;
			snprintf(labels, sizeof(labels), "%s", key);
			o = strlen(labels);
			if (m->prom_labels)
				snprintf(labels + o, sizeof(labels) - o, "%s%s", o ? "," : "",
					 m->prom_labels);
			prom_histogram(b, m->prom_hist, labels, &acc);
		}
		i = end;
	}
}
