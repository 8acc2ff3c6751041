/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log-linear histogram (see collector/hist.h for the bucket scheme and the
 * error bound).  Pure computation, no allocation: used by the collector on
 * its event path and by tests.
 */
#include <string.h>

#include "collector/hist.h"

#define HIST_SUB_COUNT	(1u << HIST_SUB_BITS)		/* 32 */
#define HIST_SUB_MASK	(HIST_SUB_COUNT - 1u)

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

/*
 * Below 64 the index is the value.  From 64 up, with e the position of the
 * top bit and shift = e - 5, the value is mantissa << shift plus a remainder
 * lost to the bucket, mantissa in [32, 64): index = shift * 32 + mantissa,
 * which continues the linear part without a gap (e = 6 starts at 64).
 */
size_t hist_bucket_index(uint64_t value)
{
	unsigned int shift;

	if (value < HIST_LINEAR_LIMIT)
		return (size_t)value;
	if (value > HIST_MAX_VALUE)
		return HIST_BUCKETS - 1;
	shift = 63u - (unsigned int)__builtin_clzll(value) - HIST_SUB_BITS;
	return ((size_t)shift << HIST_SUB_BITS) + (size_t)(value >> shift);
}

/*
 * Indices past the end name an empty bucket just above the range (lower
 * 2^37, width 0), so that a caller looping too far reads nothing.
 */
uint64_t hist_bucket_lower(size_t index)
{
	unsigned int shift;

	if (index < HIST_LINEAR_LIMIT)
		return index;
	if (index >= HIST_BUCKETS)
		return HIST_MAX_VALUE + 1;
	shift = (unsigned int)(index >> HIST_SUB_BITS) - 1u;
	return (uint64_t)((index & HIST_SUB_MASK) + HIST_SUB_COUNT) << shift;
}

uint64_t hist_bucket_width(size_t index)
{
	if (index < HIST_LINEAR_LIMIT)
		return 1;
	if (index >= HIST_BUCKETS)
		return 0;
	return 1ull << ((index >> HIST_SUB_BITS) - 1u);
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
