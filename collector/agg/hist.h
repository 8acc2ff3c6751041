/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fixed-size log-linear histogram of nanosecond values (HdrHistogram-like).
 * No per-sample storage: memory is HIST_BUCKETS counters whatever the
 * number of samples, and two histograms merge by adding buckets.
 *
 * Buckets: values 0..63 are counted exactly; above, each power of two
 * [2^e, 2^(e+1)) is split into 32 equal buckets of width 2^(e-5), up to
 * 2^37 ns (about 137 s).  Larger values land in the last bucket and are
 * counted in `clamped`.
 *
 * Error bound: a quantile is reported as the midpoint of the bucket that
 * holds the exact nearest-rank value, so for values in range its relative
 * error is at most half a bucket width over the bucket's lower edge:
 * 2^(e-6) / 2^e = 1/64 = 1.5625% (HIST_MAX_REL_ERROR), and zero below 64 ns.
 */
#ifndef ZERNEL_HIST_H
#define ZERNEL_HIST_H

#include <stddef.h>
#include <stdint.h>

/* HIST_SUB_BITS, HIST_BUCKETS, ...: the launch probe buckets with them too. */
#include "shm/shm_consts.h"
/* hist_bucket_index, hist_bucket_lower, hist_bucket_width */
#include "shm/shm_hist.h"

#define HIST_MAX_REL_ERROR	(1.0 / 64.0)

struct hist {
	uint64_t count;
	uint64_t sum;		/* saturating */
	uint64_t min;		/* UINT64_MAX when empty */
	uint64_t max;
	uint64_t clamped;	/* samples above HIST_MAX_VALUE */
	uint64_t bucket[HIST_BUCKETS];
};

void hist_reset(struct hist *h);
void hist_record(struct hist *h, uint64_t value);
void hist_record_n(struct hist *h, uint64_t value, uint64_t n);
/* dst += src; afterwards dst is what recording both streams into it gives. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * Nearest-rank quantile for q in [0, 1]: the value of rank ceil(q * count)
 * (rank 1 for q = 0), reported as its bucket's midpoint and clamped to
 * [min, max].  0 for an empty histogram.
 */
uint64_t hist_quantile(const struct hist *h, double q);

#endif /* ZERNEL_HIST_H */
