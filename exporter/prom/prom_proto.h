/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus's protobuf exposition (io.prometheus.client.MetricFamily,
 * length-delimited): the protobuf encoder of the series model
 * (prom_write.h), beside the text one, so every family, the alert
 * engine's included, has both forms with the same series and values.
 * Counters, gauges and summaries map one to one; a value in seconds is
 * the double nearest the decimal the text writes.
 *
 * Histograms carry their classic buckets and a native (sparse exponential)
 * histogram, which is what Prometheus stores when started with
 * --enable-feature=native-histograms, at schema PROM_PROTO_SCHEMA (6:
 * bucket i is (2^((i-1)/64), 2^(i/64)], 1.09% wide).  The native buckets
 * of workload histograms and NCCL's per op come from the collector's
 * log-linear buckets (prom_native.h: a quantile within 2.7%).  Per-pid
 * histograms (--per-pid-histograms) have only their 28 classic buckets in
 * the segment, and their native buckets are derived from those, exactly
 * as follows:
 *   - the samples of classic bucket (b', b] all go to the native bucket
 *     that holds b; those above the last bound (100 s) to the native
 *     bucket after the one that holds 100 s; the zero bucket is empty
 *     (threshold 2^-128 s, the Go client's default) and no bucket is
 *     negative.
 * Counts, _sum and _count are exact.  What a quantile of it is worth:
 * histogram_quantile over it lands in the native bucket of the upper edge
 * b of the classic bucket (b', b] holding the true quantile q, so
 * q <= reported <= b * 2^(1/64), and reported / q < b / b' * 2^(1/64),
 * at most 2.5 * 1.011 (the classic bucket's width, as for histogram_quantile
 * over the classic buckets, which interpolates inside (b', b] instead).
 *
 * Unprivileged, on the request path: memory is one family's messages at a
 * time, and the output is bounded by out's limit.  A call out of order (a
 * series before any family, a value in a histogram family) or a label
 * list not as prom_label_put writes it fails the exposition with -EINVAL.
 */
#ifndef ZERNEL_PROM_PROTO_H
#define ZERNEL_PROM_PROTO_H

#include <stddef.h>

#include "common/sbuf.h"
#include "exporter/prom/prom_write.h"

#define PROM_PROTO_CONTENT_TYPE \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; " \
	"encoding=delimited"

#define PROM_PROTO_SCHEMA	6

/*
 * Starts a protobuf exposition into out: the series model's calls on o
 * append its length-delimited MetricFamily messages.  Returns 0 or
 * -ENOMEM (then out has the error too).
 */
int prom_out_proto(struct prom_out *o, struct sbuf *out);
/* Ends it: the last family packed, memory freed.  Returns sbuf_error(out). */
int prom_out_proto_end(struct prom_out *o);

/* The encoder's side of the series model (prom_write.c calls these). */
void prom_proto_family(struct prom_proto *t, const char *name, enum prom_type type,
		       const char *help);
void prom_proto_value(struct prom_proto *t, const char *labels, double v);
void prom_proto_summary(struct prom_proto *t, const char *labels, const struct shm_latency *l);
void prom_proto_histogram(struct prom_proto *t, const char *labels, const struct shm_latency *l,
			  const uint64_t *fine);

/* ns as seconds: the double nearest the exact decimal. */
double prom_proto_seconds(uint64_t ns);

/* The native bucket index of v > 0 seconds at PROM_PROTO_SCHEMA. */
int prom_proto_native_index(double v);

#endif /* ZERNEL_PROM_PROTO_H */
