/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classic histograms of per-process latencies, summed per workload: a
 * pod (labels namespace, pod), else a container (container_id), else a
 * job (job: the Slurm job id or torchelastic run id), else the node (no
 * label).  29 buckets a series make per-pid histograms the bulk of any
 * exposition (about 180 series per process); per workload they cost that
 * once per pod.  The per-pid summaries stay.  --per-pid-histograms in the
 * exporter brings back one histogram per process instead.  Unprivileged,
 * on the request path: memory is bounded by the snapshot's process count.
 */
#ifndef ZERNEL_PROM_WORKLOAD_H
#define ZERNEL_PROM_WORKLOAD_H

#include "catalog/catalog.h"
#include "common/sbuf.h"

/* Each process row's workload, sorted so that a workload's rows are adjacent. */
struct prom_workloads {
	uint32_t n;			/* process rows */
	struct prom_wl_row *rows;	/* sorted by labels */
	char *labels;			/* every row's label list, NUL-separated */
	int ready;			/* built (or failed: n is 0) */
};

/* Builds w for the process rows of in; on failure w holds no row (-ENOMEM). */
int prom_workloads_build(struct prom_workloads *w, const struct cat_input *in);
void prom_workloads_free(struct prom_workloads *w);

/*
 * Writes the histograms of the n latency entries at g (rows
 * CAT_ROWS_PROCS, same prom_hist), one series per workload and entry that
 * has samples.
 */
void prom_workload_histograms(struct sbuf *b, const struct cat_metric *g, size_t n,
			      const struct cat_input *in, const struct prom_workloads *w);

#endif /* ZERNEL_PROM_WORKLOAD_H */
