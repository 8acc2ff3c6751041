/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text exposition (format 0.0.4) of one snapshot.  Output comes
 * in two parts so that the HTTP server can cache the large one:
 *   - prom_render_data (prom.c): every family read from the segment; rendered only
 *     from a fresh snapshot, identical for the same publish;
 *   - prom_render_self (prom_self.c): collector up/status, publish age, generation and
 *     the exporter's own counters; rendered at every scrape.
 * The two parts share no family, so their concatenation is one valid
 * exposition.  Metric names and meanings are listed in the README.
 */
#ifndef ZERNEL_PROM_H
#define ZERNEL_PROM_H

#include <stdint.h>

#include "common/sbuf.h"
#include "exporter/source.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"

#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/* The two quantiles every summary carries (the seed's). */
#define PROM_Q50	"0.5"
#define PROM_Q99	"0.99"

/* Appends the data families of a validated, fresh snapshot. */
int prom_render_data(struct sbuf *out, const struct shm_snapshot *snap);

/* Appends the self-telemetry families. */
int prom_render_self(struct sbuf *out, const struct source_status *st,
		     const struct exporter_stats *stats);

/* "le" label value of finite bucket i, e.g. "2.5e-07". */
const char *prom_le(unsigned int i);

#endif /* ZERNEL_PROM_H */
