/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log-linear histogram (see collector/agg/hist.h for the bucket scheme and the
 * error bound).  Pure computation, no allocation: used by the collector on
 * its event path and by tests.
 */
#include <string.h>

#include "collector/agg/hist.h"

/*
 * A rank that q * count misses by a rounding error still means the integer:
 * 0.14 * 50 is 7.000000000000001 in binary floating point, and the 0.14
 * quantile of 50 samples is the 7th, not the 8th.  The product carries a
 * relative error of a few ulps (about 1e-16), far below this slack.
 */
#define HIST_RANK_SLACK	1e-12

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_record_n(struct hist *h, uint64_t value, uint64_t n)
{
	if (n == 0)
		return;
	h->count = add_sat(h->count, n);
	h->sum = add_sat(h->sum, mul_sat(value, n));
	if (value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
	if (value > HIST_MAX_VALUE)
		h->clamped = add_sat(h->clamped, n);
	h->bucket[hist_bucket_index(value)] += n;
}

void hist_record(struct hist *h, uint64_t value)
{
	hist_record_n(h, value, 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (src->count == 0)
		return;
	dst->count = add_sat(dst->count, src->count);
	dst->sum = add_sat(dst->sum, src->sum);
	dst->clamped = add_sat(dst->clamped, src->clamped);
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

static uint64_t rank_of(double q, uint64_t count)
{
	double x;
	uint64_t r;

	/* NaN fails both comparisons and reads as q = 0. */
	if (!(q > 0.0))
		return 1;
	if (q >= 1.0)
		return count;
	x = q * (double)count;
	r = (uint64_t)x;
	if ((double)r < x && x - (double)r > x * HIST_RANK_SLACK)
		r++;
	if (r < 1)
		r = 1;
	return r > count ? count : r;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	size_t i;

	if (h->count == 0)
		return 0;
	rank = rank_of(q, h->count);
	for (i = 0; i < HIST_BUCKETS - 1; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	/* Width 1 buckets report their value; wider ones their midpoint. */
	v = hist_bucket_lower(i) + hist_bucket_width(i) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}
