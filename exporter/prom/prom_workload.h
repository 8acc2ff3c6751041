/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classic histograms of per-process latencies per workload: a pod
 * (labels namespace, pod; pod_uid while its names are not known), else a
 * container (container_id), else a job (slurm_job, else
 * torchelastic_run_id), else the node (no label).  The collector keeps
 * them (struct shm_workload): they count every sample its processes took
 * while in it, including those of processes since gone, so their counts
 * never fall.  29 buckets a series make per-pid histograms the bulk of
 * any exposition; per workload they cost that once per pod.  The per-pid
 * summaries stay, and --per-pid-histograms in the exporter brings back
 * one histogram per process instead.  Unprivileged, on the request path.
 */
#ifndef ZERNEL_PROM_WORKLOAD_H
#define ZERNEL_PROM_WORKLOAD_H

#include "catalog/catalog.h"
#include "exporter/prom/prom_write.h"

/*
 * Writes the histograms of the n latency entries at g (rows
 * CAT_ROWS_PROCS, same prom_hist), one series per workload row and entry
 * that has samples, with its log-linear buckets for the protobuf
 * encoder's native ones.
 */
void prom_workload_histograms(struct prom_out *o, const struct cat_metric *g, size_t n,
			      const struct cat_input *in);

#endif /* ZERNEL_PROM_WORKLOAD_H */
