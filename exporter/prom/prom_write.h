/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one writer of Prometheus text format 0.0.4: family headers, series,
 * summaries and classic histograms, and the one label escaper.  Everything
 * the exporter puts on /metrics goes through here: the catalog's families
 * (prom.c, prom_self.c), the alert engine's and the webhooks'.  labels and
 * extra are pre-rendered label lists without braces ("pid=\"1\"") or "".
 * Errors stick in the buffer (sbuf_error).
 */
#ifndef ZERNEL_PROM_WRITE_H
#define ZERNEL_PROM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "shm/shm_layout.h"

#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/* The two quantiles every summary carries. */
#define PROM_Q50	"0.5"
#define PROM_Q99	"0.99"

/* Room for a series' labels: a process's identity, every text escaped, fits. */
#define PROM_LABELS_MAX	4096u

/*
 * Appends name="value" to the label list in buf (a comma first when buf
 * is not empty), value escaped: \\, \" and \n.  Returns 0, or -ENOSPC
 * (buf unchanged) when it does not fit in len.
 */
int prom_label_add(char *buf, size_t len, const char *name, const char *value);

/*
 * The same into a growable buffer, which no label set can outgrow short of
 * the buffer's own limit: labels built from the segment or from a rules
 * file go through this one, so a long legal value never truncates a line.
 * Returns sbuf_error(b).
 */
int prom_label_put(struct sbuf *b, const char *name, const char *value);

/* "# HELP name help" and "# TYPE name type". */
void prom_family(struct sbuf *b, const char *name, const char *type, const char *help);
/*
 * The header of a catalog entry's family.  A latency is two: its summary
 * (histogram 0; the help says the quantiles cover the window) and its
 * histogram (histogram 1).
 */
void prom_family_of(struct sbuf *b, const struct cat_metric *m, int histogram);
/* "name+suffix{labels,extra} " */
void prom_series_head(struct sbuf *b, const char *name, const char *suffix,
		      const char *labels, const char *extra);
void prom_series_u64(struct sbuf *b, const char *name, const char *suffix,
		     const char *labels, uint64_t v);
/* ns written as exact decimal seconds. */
void prom_series_sec(struct sbuf *b, const char *name, const char *suffix,
		     const char *labels, uint64_t ns);
/* Window quantiles 0.5 and 0.99, cumulative _sum and _count. */
void prom_summary(struct sbuf *b, const char *name, const char *labels,
		  const struct shm_latency *l);
/* A classic histogram at the SHM_LAT_BOUNDS_NS_INIT bounds. */
void prom_histogram(struct sbuf *b, const char *name, const char *labels,
		    const struct shm_latency *l);

/* "le" label value of finite bucket i, e.g. "2.5e-07"; "+Inf" past them. */
const char *prom_le(unsigned int i);

#endif /* ZERNEL_PROM_WRITE_H */
