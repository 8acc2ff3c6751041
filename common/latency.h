/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One latency series as the collector keeps it: cumulative count, sum and
 * Prometheus buckets (exact at the SHM_LAT_BOUNDS_NS_INIT bounds), plus a
 * sliding window of log-linear histograms for the summary quantiles, so that
 * p50/p99 describe the last window (default 60 s) rather than all time.
 *
 * The window is a ring of sub-windows; closed sub-windows are kept in a
 * compact sparse form and the open one as a full struct hist allocated only
 * while the series receives samples, so an idle series costs little memory.
 */
#ifndef ZERNEL_LATENCY_H
#define ZERNEL_LATENCY_H

#include <stdint.h>

#include "shm/shm_layout.h"

#define LATENCY_DEFAULT_WINDOW_NS	(60ull * 1000000000ull)
#define LATENCY_WINDOW_SLOTS		6u	/* sub-windows of window/6 */

struct latency_window;	/* private to common/latency.c */

struct latency_series {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t bucket[SHM_LAT_BUCKETS];
	uint64_t window_ns;
	struct latency_window *window;	/* NULL until the first sample */
};

/* Index into SHM_LAT_BOUNDS_NS_INIT (SHM_LAT_FINITE_BUCKETS for +Inf). */
unsigned int latency_bucket_of(uint64_t value_ns);

void latency_init(struct latency_series *s, uint64_t window_ns);
/* Returns 0, or -ENOMEM (the sample still counts in count/sum/buckets). */
int latency_record(struct latency_series *s, uint64_t now_ns, uint64_t value_ns);
/* Fills out: cumulative fields and the quantiles of the window ending now. */
void latency_export(struct latency_series *s, uint64_t now_ns, struct shm_latency *out);
void latency_destroy(struct latency_series *s);

#endif /* ZERNEL_LATENCY_H */
