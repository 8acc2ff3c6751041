/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The /metrics exposition, generated from the metric catalog
 * (catalog/catalog.h) into the series model (prom_write.h): text or
 * protobuf.  Two parts, so that the HTTP server can cache the large one:
 *   - prom_render_data (prom.c): the families read from the segment;
 *     rendered only from a fresh snapshot, identical for the same publish;
 *   - prom_render_self (prom_self.c): the collector's status as this
 *     exporter sees it, and the exporter's own counters; every scrape.
 * The two parts share no family, so their concatenation is one valid
 * exposition (the alert and webhook families follow: alerts.h).
 */
#ifndef ZERNEL_PROM_H
#define ZERNEL_PROM_H

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "exporter/prom/prom_write.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"

/*
 * Per-process latency histograms: per workload (the default; see
 * prom_workload.h), or one per process when on is non-zero.  Call once at
 * start-up.
 */
void prom_set_per_pid_histograms(int on);

/* Appends the data families of a validated, fresh snapshot.  Returns prom_out_error(o). */
int prom_render_data(struct prom_out *o, const struct shm_snapshot *snap);

/* Appends the status and self-telemetry families. */
int prom_render_self(struct prom_out *o, const struct cat_status *st,
		     const struct exporter_stats *stats);

/* Appends the families of the entries whose rows are in in: the walk both parts share. */
int prom_render_catalog(struct prom_out *o, const struct cat_input *in, int segment);

#endif /* ZERNEL_PROM_H */
