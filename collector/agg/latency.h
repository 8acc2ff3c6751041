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

struct latency_window;	/* private to collector/agg/latency.c */

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
/*
 * Adds a batch of samples already bucketed elsewhere (an in-kernel
 * histogram), as if each had been recorded at now_ns: prom_counts
 * (SHM_LAT_BUCKETS, as latency_bucket_of) go to the cumulative fields,
 * which stay exact, and must add up to count; hist_counts (HIST_BUCKETS, as
 * hist_bucket_index; zeros allowed, NULL for none) go to the open
 * sub-window.  max_ns is the batch's largest sample (brought into the
 * batch's top bucket when it is not); the smallest is taken as the lower
 * edge of its bucket, so the window quantiles keep the histogram's bound
 * and equal those of one-by-one recording whenever the true minimum is
 * that edge (always below 64 ns).  The window's granularity becomes the
 * batches': a batch lands whole in one sub-window.  Returns 0, -EINVAL
 * (nothing recorded) or -ENOMEM (the cumulative fields still count the
 * batch).
 */
int latency_record_batch(struct latency_series *s, uint64_t now_ns, const uint64_t *hist_counts,
			 const uint64_t *prom_counts, uint64_t count, uint64_t sum_ns,
			 uint64_t max_ns);
/* Fills out: cumulative fields and the quantiles of the window ending now. */
void latency_export(struct latency_series *s, uint64_t now_ns, struct shm_latency *out);
void latency_destroy(struct latency_series *s);

#endif /* ZERNEL_LATENCY_H */
