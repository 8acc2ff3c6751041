/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus's protobuf exposition (io.prometheus.client.MetricFamily,
 * length-delimited), made from the exporter's own text exposition: the
 * text is rendered once from the catalog (prom.h, alerts.h), and this
 * transcodes it family by family, so the two formats cannot disagree and
 * every family, the alert engine's included, has both.  Counters, gauges,
 * summaries and untyped samples map one to one.
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
 * Unprivileged, on the request path: reads well-formed text (ours) and
 * refuses anything else with -EINVAL; memory is one family's messages at
 * a time, and the output is bounded by out's limit.
 */
#ifndef ZERNEL_PROM_PROTO_H
#define ZERNEL_PROM_PROTO_H

#include <stddef.h>

#include "common/sbuf.h"
#include "exporter/prom/prom_native.h"

#define PROM_PROTO_CONTENT_TYPE \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; " \
	"encoding=delimited"

#define PROM_PROTO_SCHEMA	6

/*
 * Appends the length-delimited MetricFamily messages of the exposition
 * text[0..len) to out, a histogram's native buckets from natives where it
 * has the series (NULL: none).  Returns 0 or -errno (-EINVAL: not text as
 * prom_write.h writes it; -ENOMEM; out's error).
 */
int prom_proto_from_text(struct sbuf *out, const char *text, size_t len,
			 const struct prom_natives *natives);

/* The native bucket index of v > 0 seconds at PROM_PROTO_SCHEMA. */
int prom_proto_native_index(double v);

#endif /* ZERNEL_PROM_PROTO_H */
