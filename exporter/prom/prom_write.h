/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The series model of /metrics: every family the exporter serves (the
 * catalog's, prom.c and prom_self.c; the alert engine's and the webhooks')
 * is written as calls to these functions, and an encoder turns the calls
 * into bytes: Prometheus text format 0.0.4 (prom_text.c) or delimited
 * protobuf (prom_proto.c), side by side.  Both get the same families,
 * series and values, so the two formats cannot disagree.
 *
 * labels are pre-rendered label lists without braces ("pid=\"1\"") or "",
 * built with prom_label_put/prom_label_add: one form, built once, that the
 * text encoder copies and the protobuf one splits into pairs.  Values are
 * integers as the segment holds them: counts, or nanoseconds written as
 * exact decimal seconds.  Errors stick in the output buffer (sbuf_error).
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

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_SUMMARY, PROM_HISTOGRAM };

struct prom_proto;

/* An exposition being written into b: text, or protobuf when pb is set. */
struct prom_out {
	struct sbuf *b;
	struct prom_proto *pb;
};

/* A text exposition into b. */
static inline struct prom_out prom_out_text(struct sbuf *b)
{
	return (struct prom_out){ .b = b };
}

static inline int prom_out_error(const struct prom_out *o)
{
	return sbuf_error(o->b);
}

/* Marks the exposition failed with err, unless it failed already. */
void prom_out_fail(struct prom_out *o, int err);

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

/* "# head text", a line for people: the text has it, protobuf has no comments. */
void prom_comment(struct prom_out *o, const char *head, const char *text);

/* A family: its series follow, until the next family. */
void prom_family(struct prom_out *o, const char *name, enum prom_type type, const char *help);
/*
 * The family of a catalog entry.  A latency is two: its summary
 * (histogram 0; the help says the quantiles cover the window) and its
 * histogram (histogram 1).
 */
void prom_family_of(struct prom_out *o, const struct cat_metric *m, int histogram);
/* A counter's or gauge's series. */
void prom_series_u64(struct prom_out *o, const char *name, const char *labels, uint64_t v);
void prom_series_sec(struct prom_out *o, const char *name, const char *labels, uint64_t ns);
/* Window quantiles 0.5 and 0.99 (unknown without a sample in the window), cumulative sum and count. */
void prom_summary(struct prom_out *o, const char *name, const char *labels,
		  const struct shm_latency *l);
/*
 * A histogram at the SHM_LAT_BOUNDS_NS_INIT bounds; fine, when not NULL,
 * its log-linear buckets (HIST_BUCKETS), which the protobuf encoder makes
 * its native buckets from (prom_native.h).
 */
void prom_histogram(struct prom_out *o, const char *name, const char *labels,
		    const struct shm_latency *l, const uint64_t *fine);

/* "le" label value of finite bucket i, e.g. "2.5e-07"; "+Inf" past them. */
const char *prom_le(unsigned int i);
/* Its upper bound in seconds, as the text's value reads. */
double prom_le_seconds(unsigned int i);

#endif /* ZERNEL_PROM_WRITE_H */
