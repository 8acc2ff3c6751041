/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Low-level writers of Prometheus text format 0.0.4, shared by the segment
 * part (prom.c) and the self-telemetry part (prom_self.c).  labels and extra
 * are pre-rendered label lists without braces ("pid=\"1\"") or "".  Errors
 * stick in the buffer (sbuf_error).
 */
#ifndef ZERNEL_PROM_WRITE_H
#define ZERNEL_PROM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"
#include "shm/shm_layout.h"

/* "# HELP name help" and "# TYPE name type". */
void prom_family(struct sbuf *b, const char *name, const char *type, const char *help);
/* "name+suffix{labels,extra} " */
void prom_series_head(struct sbuf *b, const char *name, const char *suffix,
		      const char *labels, const char *extra);
void prom_series_u64(struct sbuf *b, const char *name, const char *suffix,
		     const char *labels, uint64_t v);
/* ns written as exact decimal seconds. */
void prom_series_sec(struct sbuf *b, const char *name, const char *suffix,
		     const char *labels, uint64_t ns);
/* A family of one unlabelled series. */
void prom_single_u64(struct sbuf *b, const char *name, const char *type,
		     const char *help, uint64_t v);
/* The seed's summary: window quantiles 0.5 and 0.99, cumulative _sum and _count. */
void prom_summary(struct sbuf *b, const char *name, const char *labels,
		  const struct shm_latency *l);
/* A classic histogram at the SHM_LAT_BOUNDS_NS_INIT bounds. */
void prom_histogram(struct sbuf *b, const char *name, const char *labels,
		    const struct shm_latency *l);
/* pid="N" plus ",extra" when extra is neither NULL nor "". */
void prom_pid_labels(char *buf, size_t len, uint32_t pid, const char *extra);

#endif /* ZERNEL_PROM_WRITE_H */
